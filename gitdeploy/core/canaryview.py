"""A canary as ``status``, ``rollout status`` and ``history`` show it, computed from what the
cluster shows now: the canary ReplicaSet's annotations (:mod:`gitdeploy.core.canarystate`) and
its pods, never a verdict stored by an earlier pass.

>>> from dataclasses import replace
>>> view = CanaryView(3, (SetWeight(25), Pause(), SetWeight(50), Pause(30)), step=0, replicas=4)
>>> view.describe(now=0.0)
'step 1/4, setWeight 25 (0/1 canary pods ready)'
>>> replace(view, step=1, paused_at=100.0).describe(now=130.0)
'step 2/4, paused (waiting for promote)'
>>> replace(view, step=3, paused_at=100.0).describe(now=118.0)
'step 4/4, pause 30s (resumes in 12s)'
>>> replace(view, step=3, paused_at=100.0).describe(now=None)  # without the countdown
'step 4/4, pause 30s'
>>> replace(view, step=4, canary_ready=3).describe(now=0.0)
'steps done (4/4), to full size (3/4 pods ready)'
>>> replace(view, step=1, aborted_by="ada@laptop").describe(now=0.0)
'aborted by ada@laptop at step 2/4'

A running analysis follows, a line per metric (:mod:`gitdeploy.core.analysis.measured`):

>>> from gitdeploy.core.canarysteps import AnalysisRef
>>> steps = (SetWeight(25), AnalysisStep(AnalysisRef(("error-rate",))))
>>> CanaryView(3, steps, 1, 4, analysis=("analysis error-rate: 2/5 measurements, last 0.01 (Successful)",)
...     ).describe(now=0.0)
'step 2/2, analysis error-rate; analysis error-rate: 2/5 measurements, last 0.01 (Successful)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gitdeploy.core.analysis.measured import run_lines
from gitdeploy.core.analysis.stored import decode_run
from gitdeploy.core.canarystate import (
    BACKGROUND_RUN_KEY,
    CANARY_ANALYSIS_ANNOTATION,
    CANARY_BACKGROUND_ANNOTATION,
    CANARY_RESTART,
    CANARY_STEPS_ANNOTATION,
    PROMOTE_FULL,
    own_value,
    read_canary_state,
    read_promotions,
)
from gitdeploy.core.canarysteps import (
    AnalysisStep,
    CanaryStep,
    Pause,
    SetWeight,
    decode_steps,
)
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.scaling.canaryshares import canary_shares

CANARY_VIEWED_ANNOTATIONS = (CANARY_STEPS_ANNOTATION, *CANARY_RESTART)
"""The annotations of a ReplicaSet that :func:`read_canary_view` reads: the walk's steps, and
what a retry clears of it."""


@dataclass(frozen=True, slots=True)
class CanaryView:
    """Where revision ``revision``'s canary is, and what it waits for."""

    revision: int
    steps: tuple[CanaryStep, ...]
    step: int
    """The index of the step it is at (``len(steps)``: past the last one)."""
    replicas: int
    canary_ready: int = 0
    paused_at: float | None = None
    aborted_by: str | None = None
    promotions: tuple[tuple[str, str], ...] = ()
    """``(step, who)``: who promoted which step (an index as text, or ``full``)."""
    analysis: tuple[str, ...] = ()
    """What the analysis under way (the step's, the background one) has measured, a line per
    metric (:func:`~gitdeploy.core.analysis.measured.run_lines`)."""

    @property
    def where(self) -> str:
        return f"{min(self.step + 1, len(self.steps))}/{len(self.steps)}"

    @property
    def waits_for_promote(self) -> bool:
        """At an indefinite pause that began (its sizes reached)."""
        current = self.current
        return isinstance(current, Pause) and current.duration_seconds is None and self.paused_at is not None

    @property
    def current(self) -> CanaryStep | None:
        return self.steps[self.step] if self.step < len(self.steps) else None

    def weight(self) -> int:
        """The weight in force at the step it is at (the last setWeight reached, else 0)."""
        earlier = [s.weight for s in self.steps[: self.step + 1] if isinstance(s, SetWeight)]
        return earlier[-1] if earlier else 0

    def describe(self, now: float | None) -> str:
        """One line for ``status`` at ``now``; with ``now`` None, without the countdown of a timed
        pause, so that ``rollout status`` prints a line per step (and per measurement), not per
        second."""
        line = self._at(now)
        if self.aborted_by is not None or not self.analysis:
            return line
        return "; ".join((line, *self.analysis))

    def _at(self, now: float | None) -> str:
        if self.aborted_by is not None:
            return f"aborted by {self.aborted_by} at step {self.where}"
        current = self.current
        if current is None:
            return f"steps done ({self.where}), to full size ({self.canary_ready}/{self.replicas} pods ready)"
        at = f"step {self.where}"
        if self.waits_for_promote:
            return f"{at}, paused (waiting for promote)"
        if isinstance(current, Pause) and current.duration_seconds is not None and self.paused_at is not None:
            timed = f"{at}, pause {current.duration_seconds}s"
            if now is None:
                return timed
            left = max(0, math.ceil(self.paused_at + current.duration_seconds - now))
            return f"{timed} (resumes in {left}s)"
        what = f"setWeight {current.weight}" if isinstance(current, SetWeight) else current.describe()
        if isinstance(current, SetWeight | Pause):
            wanted = canary_shares(self.replicas, self.weight())[0]
            return f"{at}, {what} ({self.canary_ready}/{wanted} canary pods ready)"
        return f"{at}, {what}"

    def summary(self) -> str:
        """The revision's canary for ``history``: the steps it reached, its pauses, who promoted
        and who aborted.

        >>> steps = (SetWeight(25), Pause(), SetWeight(50), Pause(30))
        >>> CanaryView(3, steps, 4, 4, promotions=(("1", "al@x"),)).summary()
        'all 4 steps (pauses: step 2 until promoted, step 4 30s); promoted step 2 by al@x'
        >>> CanaryView(3, steps, 1, 4, promotions=(("full", "bo@y"),), aborted_by="cy@z").summary()
        'reached step 2/4 (pauses: step 2 until promoted); promoted all steps by bo@y; aborted by cy@z'
        """
        reached = self.steps[: self.step + 1]
        pauses = [
            f"step {index + 1} "
            + ("until promoted" if s.duration_seconds is None else f"{s.duration_seconds}s")
            for index, s in enumerate(reached)
            if isinstance(s, Pause)
        ]
        head = f"all {len(self.steps)} steps" if self.current is None else f"reached step {self.where}"
        parts = [head + (f" (pauses: {', '.join(pauses)})" if pauses else "")]
        parts += [
            f"promoted {'all steps' if step == PROMOTE_FULL else f'step {int(step) + 1}'} by {who}"
            for step, who in self.promotions
            if step == PROMOTE_FULL or step.isdigit()
        ]
        if self.aborted_by is not None:
            parts.append(f"aborted by {self.aborted_by}")
        return "; ".join(parts)


def read_canary_view(rs: ObservedReplicaSet, replicas: int) -> CanaryView | None:
    """The canary of ``rs``'s current revision (``replicas``: the app's desired count), or None
    when ``rs`` holds no canary walk of its revision (not a canary, or its first revision)."""
    encoded = own_value(rs, CANARY_STEPS_ANNOTATION)
    steps = decode_steps(encoded) if encoded is not None else None
    if not steps:
        return None
    state = read_canary_state(rs)
    step = len(steps) if state.full else min(state.step, len(steps))
    return CanaryView(
        revision=rs.state.revision,
        steps=steps,
        step=step,
        replicas=replicas,
        canary_ready=rs.state.ready,
        paused_at=state.paused_at,
        aborted_by=state.aborted_by,
        promotions=read_promotions(rs),
        analysis=_analysis_lines(rs, steps, step),
    )


def _analysis_lines(rs: ObservedReplicaSet, steps: tuple[CanaryStep, ...], step: int) -> tuple[str, ...]:
    """The runs under way of ``rs``'s revision: the analysis step's it is at, the background
    one's (a run kept for another step or revision, or unreadable, shows nothing)."""
    revision = rs.state.revision
    lines: tuple[str, ...] = ()
    if step < len(steps) and isinstance(steps[step], AnalysisStep):
        run = decode_run(rs.annotation(CANARY_ANALYSIS_ANNOTATION), revision, step)
        lines += run_lines(run, "analysis") if run is not None else ()
    background = decode_run(rs.annotation(CANARY_BACKGROUND_ANNOTATION), revision, BACKGROUND_RUN_KEY)
    if background is not None and step < len(steps):
        lines += run_lines(background, "background analysis")
    return lines
