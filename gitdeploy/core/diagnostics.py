"""Problems found in desired state, pointing at the exact place a user must fix."""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNPRINTABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` with control characters (newlines, escape sequences; a tab stays) spelled as
    escapes, so a file name or a value from git cannot start a new log line or recolour a terminal.

    >>> printable("apps/web\\n12:00:00 INFO forged.yaml")
    'apps/web\\\\n12:00:00 INFO forged.yaml'
    """
    return _UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r"}.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )


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
        """``file:line:col: app: message (hint)``, the format every gitdeploy command prints, on
        one line (control characters escaped: see :func:`printable`)."""
        where = f"{self.file}:{self.line}:{self.column}"
        who = f" {self.app}:" if self.app else ""
        hint = f" ({self.hint})" if self.hint else ""
        return printable(f"{where}:{who} {self.message}{hint}")
