"""What the checks of one document share: where its problems are, and reading nested fields."""

from __future__ import annotations

from typing import Any

from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.manifests.documents import Document, FieldPath
from gitdeploy.manifests.schemas import dotted


class Problems:
    """The problems of one document of one app, each at the line of the field it names."""

    def __init__(self, doc: Document, app: str) -> None:
        self.doc = doc
        self.app = app
        self.items: list[Diagnostic] = []

    def add(self, path: FieldPath, message: str, hint: str = "") -> None:
        line, column = self.doc.position(path)
        self.items.append(Diagnostic(self.doc.file, line, column, self.app, message, hint, dotted(path)))


def get_field(data: Any, *path: str) -> Any:
    """``data[path[0]][path[1]]...``, or None where a level is missing or not a mapping."""
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data
