"""The part of Kubernetes' JSONPath that web metrics use to pick their result out of an answer:
``{$.data.ok}``, ``{.items[0].rate}``, ``$['a key'].x`` (braces and ``$`` optional). Filters,
wildcards, slices and unions are refused with :class:`JsonPathError`, never guessed at.

>>> pick("{$.data.items[1].ok}", {"data": {"items": [{"ok": False}, {"ok": True}]}})
True
>>> pick("", [1, 2]), pick("{$}", "x"), pick("$['a b']", {"a b": 3})
([1, 2], 'x', 3)
"""

from __future__ import annotations

import re
from typing import Any

_PART = re.compile(r"""\.([A-Za-z0-9_-]+)|\[(-?[0-9]+)\]|\[['"]([^'"]*)['"]\]""")


class JsonPathError(ValueError):
    """A jsonPath gitdeploy cannot follow, or an answer it finds nothing at."""


def _parts(path: str) -> list[str | int]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    text = text.removeprefix("$")
    parts: list[str | int] = []
    at = 0
    while at < len(text):
        match = _PART.match(text, at)
        if match is None:
            raise JsonPathError(
                f"jsonPath {path!r}: cannot read {text[at:]!r} (gitdeploy follows .name, [index] "
                "and ['name'], no filters, wildcards or slices)"
            )
        name, index, quoted = match.groups()
        parts.append(int(index) if index is not None else (name if name is not None else quoted))
        at = match.end()
    return parts


def pick(path: str, document: Any) -> Any:
    """The value at ``path`` in ``document`` (the whole document for an empty path or ``$``)."""
    value = document
    for part in _parts(path):
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            raise JsonPathError(f"jsonPath {path!r} finds nothing at {part!r} in the answer") from None
    return value
