"""``gitdeploy tag``'s TARGET and SOURCE: which texts name an image stream tag ``[NS/]STREAM:TAG``.

A registry image (``registry.test/web@sha256:…``, ``127.0.0.1:5000/web:1``) is not one: its host
is no namespace name. Taken for one, ``--source auto`` would read a stream state in a "namespace"
``registry.test``, which gitdeploy's namespaced Role forbids on a real cluster, and fail.
"""

from __future__ import annotations

import pytest

from gitdeploy.cli.tag_cmd import parse_stream_tag
from gitdeploy.errors import PermanentError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("shop/web:prod", ("shop", "web", "prod")),
        ("web:prod", ("default", "web", "prod")),
        ("team-a/web.api:v1.2_rc", ("team-a", "web.api", "v1.2_rc")),
    ],
)
def test_stream_tags_are_parsed(text: str, expected: tuple[str, str, str]) -> None:
    assert parse_stream_tag(text, "default") == expected


@pytest.mark.parametrize(
    "text",
    [
        "registry.test/web@sha256:" + "a" * 64,
        "127.0.0.1:5000/web:1.4",
        "quay.io/acme/web:1",
        "web@sha256:" + "b" * 64,
        "Shop/web:prod",
        "shop/web",
        "shop/web:",
    ],
)
def test_registry_images_and_malformed_names_are_not_stream_tags(text: str) -> None:
    with pytest.raises(PermanentError, match="is not an image stream tag"):
        parse_stream_tag(text, "default")
