"""The embedded cluster's shortcuts on the wire give what the stdlib's general paths give."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitdeploy.localcluster.store import dumps


@pytest.mark.parametrize(
    "value",
    [
        {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 3}},
        {"text": 'é ü 日本 "quoted" \\ back\nslash\t\u2028', "n": [1, -0.0, 2.5, 1e300, None, True, False]},
        {"nan": float("nan"), "inf": float("inf")},
        ["a", {}, [], ""],
        "a string",
        7,
        None,
    ],
)
def test_dumps_is_compact_json_without_ascii_escapes(value: Any) -> None:
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_dumps_refuses_what_json_cannot_encode() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"when": object()})
