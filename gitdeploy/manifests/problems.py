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


def is_zero(bound: int | str) -> bool:
    return bound in (0, "0%")


def check_bounds(
    path: FieldPath, max_surge: int | str, max_unavailable: int | str, problems: Problems
) -> None:
    """maxSurge and maxUnavailable (under ``path``) let a rollout move and stay within 100%."""
    if is_zero(max_surge) and is_zero(max_unavailable):
        problems.add(
            (*path, "maxUnavailable"),
            "maxSurge and maxUnavailable are both 0, so the rollout could never make progress",
            "allow at least one: maxSurge: 1 or maxUnavailable: 1",
        )
    if isinstance(max_unavailable, str) and int(max_unavailable[:-1]) > 100:
        problems.add(
            (*path, "maxUnavailable"),
            f"maxUnavailable {max_unavailable} is over 100%",
            "use a percentage between 0% and 100%",
        )
