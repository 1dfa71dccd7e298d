"""Problems found in desired state, pointing at the exact place a user must fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem: where it is, which app it concerns, what is wrong and what to do.

    ``line`` and ``column`` are 1-based (0 when unknown); ``path`` is the dotted field path inside
    the document (``spec.strategy.rollingParams.maxSurge``), empty for file-level problems; ``app``
    is ``namespace/name`` (or ``name`` when the namespace is not known yet), empty when the problem
    is not tied to an app (a file that is not valid YAML).
    """

    file: str
    line: int
    column: int
    app: str
    message: str
    hint: str = ""
    path: str = ""

    def render(self) -> str:
        """``file:line:col: app: message (hint)``, the format every gitdeploy command prints."""
        where = f"{self.file}:{self.line}:{self.column}"
        who = f" {self.app}:" if self.app else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}:{who} {self.message}{hint}"
