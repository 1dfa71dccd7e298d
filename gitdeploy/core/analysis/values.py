"""A measurement's result as the short text kept with it (in the cluster and the history).

>>> render([0.97, 1.0]), render(0.5), render("ok"), render(float("nan")), render({"a": [True]})
('[0.97,1.0]', '0.5', 'ok', 'NaN', '{"a":[true]}')
>>> len(render("x" * 500)) == MAX_VALUE_CHARS
True
"""

from __future__ import annotations

import json
from typing import Any

MAX_VALUE_CHARS = 120
"""Longer results are cut (the measurement keeps the beginning, with an ellipsis)."""


def render(result: Any) -> str:
    if isinstance(result, str):
        text = result
    else:
        text = json.dumps(result, separators=(",", ":"), sort_keys=True, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"
