"""The ``duration`` option type of the commands (``--interval 30s``, ``--timeout 5m``)."""

from __future__ import annotations

import re
from typing import Any

import click

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class Duration(click.ParamType):  # type: ignore[type-arg]
    """``300ms``, ``5s``, ``2m``, ``1h`` or plain seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        match = _DURATION.match(str(value).strip())
        if not match:
            self.fail(f"{value!r} is not a duration: write 5s, 2m, 300ms or 1h", param, ctx)
        return float(match.group(1)) * _UNITS[match.group(2)]
