"""The phases of an analysis, its metrics and their measurements (Argo Rollouts' ``AnalysisPhase``).

>>> AnalysisPhase.FAILED.completed, AnalysisPhase.RUNNING.completed
(True, False)
>>> worse(AnalysisPhase.INCONCLUSIVE, AnalysisPhase.ERROR), worse(AnalysisPhase.FAILED, AnalysisPhase.ERROR)
(<AnalysisPhase.ERROR: 'Error'>, <AnalysisPhase.FAILED: 'Failed'>)
"""

from __future__ import annotations

from enum import StrEnum


class AnalysisPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCESSFUL = "Successful"
    INCONCLUSIVE = "Inconclusive"
    ERROR = "Error"
    FAILED = "Failed"

    @property
    def completed(self) -> bool:
        return self not in (AnalysisPhase.PENDING, AnalysisPhase.RUNNING)

    @property
    def stops_run(self) -> bool:
        """A metric in this phase ends the whole run early (upstream ``IsTerminating``)."""
        return self in (AnalysisPhase.FAILED, AnalysisPhase.ERROR, AnalysisPhase.INCONCLUSIVE)


_ORDER = tuple(AnalysisPhase)


def worse(a: AnalysisPhase, b: AnalysisPhase) -> AnalysisPhase:
    """The worse of two phases, in upstream's order (Pending < Running < Successful <
    Inconclusive < Error < Failed)."""
    return a if _ORDER.index(a) >= _ORDER.index(b) else b
