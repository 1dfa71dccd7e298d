"""When prune may delete an app that left git: the evidence, the brake and the opt-out.

* **Evidence.** An app whose manifest file still names it, valid or not, is never an orphan. An
  orphan is deleted only at a commit whose every file parsed and validated and whose
  ``gitdeploy.yaml`` is good (:func:`prune_blocker`): a file that does not parse may still hold it.
* **The brake.** One commit may prune at most ``pruneLimit`` apps; above it, every prune of that
  commit is held until a person confirms them (``gitdeploy prune --confirm``) or raises the limit.
  The limit is a count (``7``) or a share of the apps gitdeploy manages (``"20%"``, rounded up);
  unset, the larger of :data:`DEFAULT_LIMIT_APPS` apps and :data:`DEFAULT_LIMIT_PERCENT` %.
* **The opt-out.** An app whose manifest carries ``gitdeploy.io/prune: "false"`` is never pruned:
  it shows as ``Orphaned`` and keeps running.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gitdeploy.core.diagnostics import Diagnostic

PRUNE_ANNOTATION = "gitdeploy.io/prune"
"""``"false"`` on an app's manifest: never prune the app (Argo CD's ``Prune=false`` sync option)."""
DEFAULT_LIMIT_APPS = 5
DEFAULT_LIMIT_PERCENT = 10
_LIMIT = re.compile(r"^(\d+)(%?)$")


@dataclass(frozen=True, slots=True)
class PruneLimit:
    """How many apps one commit may prune before its prunes are held.

    >>> [PruneLimit().of(n) for n in (0, 40, 51, 200)]
    [5, 5, 6, 20]
    >>> PruneLimit(apps=2).of(200), PruneLimit(percent=20).of(12), PruneLimit(apps=0).of(9)
    (2, 3, 0)
    """

    apps: int | None = None
    percent: int | None = None

    def of(self, managed: int) -> int:
        """The limit when gitdeploy manages ``managed`` apps."""
        if self.apps is not None:
            return self.apps
        if self.percent is not None:
            return math.ceil(managed * self.percent / 100)
        return max(DEFAULT_LIMIT_APPS, math.ceil(managed * DEFAULT_LIMIT_PERCENT / 100))

    def __str__(self) -> str:
        if self.apps is not None:
            return str(self.apps)
        if self.percent is not None:
            return f"{self.percent}%"
        return f"the default, {DEFAULT_LIMIT_APPS} apps or {DEFAULT_LIMIT_PERCENT}%, whichever is larger"


def parse_prune_limit(value: object) -> PruneLimit | None:
    """``7``, ``"7"`` or ``"20%"`` as a :class:`PruneLimit`; None when it is neither.

    >>> parse_prune_limit(7), parse_prune_limit("20%"), parse_prune_limit("-1"), parse_prune_limit(True)
    (PruneLimit(apps=7, percent=None), PruneLimit(apps=None, percent=20), None, None)
    """
    if isinstance(value, bool):
        return None
    match = _LIMIT.match(str(value).strip()) if isinstance(value, int | str) else None
    if match is None:
        return None
    number = int(match.group(1))
    return PruneLimit(percent=number) if match.group(2) else PruneLimit(apps=number)


def prune_opted_out(annotations: Iterable[tuple[str, str]]) -> bool:
    """Whether a manifest's annotations ask never to prune the app.

    >>> prune_opted_out([("gitdeploy.io/prune", "false")]), prune_opted_out([])
    (True, False)
    """
    return dict(annotations).get(PRUNE_ANNOTATION) == "false"


def prune_blocker(settings_error: str, diagnostics: Iterable[Diagnostic], shown: int = 3) -> str:
    """Why no app may be pruned at this commit ('' when prune may go ahead): the settings cannot be
    read, or a file did not parse or validate (it may still hold the app).

    >>> prune_blocker("", [])
    ''
    >>> prune_blocker("", [Diagnostic("apps/a.yaml", 3, 1, "", "bad"), Diagnostic("b.yaml", 1, 1, "", "x")])
    'not pruned while apps/a.yaml:3, b.yaml:1 do not validate (see `gitdeploy validate`)'
    """
    if settings_error:
        return f"not pruned while the settings cannot be used ({settings_error})"
    places = sorted({f"{d.file}:{d.line}" for d in diagnostics})
    if not places:
        return ""
    more = f" and {len(places) - shown} more" if len(places) > shown else ""
    return f"not pruned while {', '.join(places[:shown])}{more} do not validate (see `gitdeploy validate`)"


def held_message(count: int, head: str, limit: PruneLimit, managed: int) -> str:
    """What a held prune says, and the two ways out.

    >>> held_message(7, "abcdef123", PruneLimit(apps=5), 20).split(";")[0]
    'prune held: commit abcdef1 would prune 7 apps, over pruneLimit 5'
    """
    return (
        f"prune held: commit {head[:7]} would prune {count} apps, over pruneLimit {limit.of(managed)}"
        + ("" if limit.apps is not None else f" ({limit})")
        + "; `gitdeploy prune --confirm` deletes them, or raise pruneLimit in gitdeploy.yaml"
        " (or --prune-limit)"
    )
