"""A canary's progress deadline, as Argo Rollouts applies ``progressDeadlineSeconds``: a step
that makes no progress for that long (a ``setWeight`` whose pods do not become available, the
growth to full size after the last step) passes the deadline; a pause, timed or waiting for
promote, is not counted (upstream: "progress will not be estimated during the time a rollout is
paused"), and the clock starts again when a step is reached.

Past the deadline the revision is marked Failed (``ProgressDeadlineExceeded``) and the walk goes
on, as Argo Rollouts keeps processing a degraded Rollout; with ``progressDeadlineAbort: true`` it
is aborted instead: the stable back to full size, the canary down, as ``rollout abort`` does.
"""

from __future__ import annotations

import dataclasses

from gitdeploy.core.history.records import Outcome
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.rollout.status import timed_out
from gitdeploy.core.scaling.progress import ConditionType, DeploymentStatus, remove_condition

DEADLINE_ABORT_BY = "progressDeadlineAbort"
"""Who an abort by the progress deadline names (the ``abort`` annotation's ``<who>``)."""


def paused_status(status: DeploymentStatus) -> DeploymentStatus:
    """``status`` at a pause, or in the pass that reached a step: no Progressing condition, so
    no deadline passes while paused; the next pass starts it again from the step's mark."""
    kept = remove_condition(status.conditions, ConditionType.PROGRESSING)
    return dataclasses.replace(status, conditions=kept)


def deadline_passed(
    ctx: RolloutContext, status: DeploymentStatus, *, paused: bool, moved: bool
) -> str | None:
    """Why the canary's progress deadline passed at this pass, None when it did not: never at a
    pause, in a pass that reached a step or scaled (both progress), or once the revision failed."""
    if paused or moved or ctx.scaled or not timed_out(status):
        return None
    if ctx.current_outcome() is Outcome.FAILED:
        return None
    new = ctx.new
    assert new is not None
    return (
        f"no progress for {ctx.deadline_seconds()} s ({new.available}/{new.replicas} canary pods available)"
    )
