"""A canary's progress deadline, pass by pass (pure), as Argo Rollouts applies
``progressDeadlineSeconds``: a step whose pods do not become available for that long Fails the
revision (the walk goes on, its pods may still come), or with ``progressDeadlineAbort`` aborts it
back to the stable; a pause is not counted; the growth to full size has the deadline too."""

from __future__ import annotations

import pytest

from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_PAUSED_AT_ANNOTATION,
    CANARY_STEP_ANNOTATION,
)
from gitdeploy.core.canarysteps import Pause, SetWeight
from gitdeploy.core.history.records import AppRecord, FailureReason, Outcome
from gitdeploy.core.models import App
from gitdeploy.core.rollout import AppPhase, Step
from gitdeploy.core.rollout.status import timed_out
from tests.fixtures.canarypass import canary_app, canary_pass, canary_rs, scales, stable, written
from tests.fixtures.rolloutpass import T0, V1, V2, entry, rs, rs_name, ts

STEPS = (SetWeight(50), Pause(3600), SetWeight(75))


def web(*, abort: bool = False) -> App:
    """A 60 s progress deadline (``progressDeadlineAbort`` when ``abort``)."""
    return canary_app(STEPS, templates=(), deadline=60, deadline_abort=abort)


def stuck(now: float, *, abort: bool = False) -> Step:
    """Given the stable at 4 and one canary pod that never became available since T0."""
    return canary_pass(web(abort=abort), stable(4), canary_rs(1, 0, progressed_at=T0), now=now)


STUCK = "step 1/3: no progress for 60 s (0/1 canary pods available)"


@pytest.mark.parametrize("abort", [False, True])
def test_before_the_deadline_a_stuck_step_waits(abort: bool) -> None:
    step = stuck(T0 + 59, abort=abort)
    assert step.phase is AppPhase.PROGRESSING and step.record is None and scales(step) == []
    assert step.message.startswith("revision 2: step 1/3 (setWeight 50%)")


def test_past_the_deadline_the_revision_fails_and_nothing_is_scaled_back() -> None:
    step = stuck(T0 + 61)

    assert step.phase is AppPhase.FAILED and scales(step) == []
    assert step.message == f"revision 2 failed: {STUCK}"
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None
    assert (failed.outcome, failed.reason, failed.message) == (
        Outcome.FAILED,
        FailureReason.PROGRESS_DEADLINE_EXCEEDED,
        STUCK,
    )
    assert timed_out(step.status)


def test_with_progress_deadline_abort_the_canary_goes_back_to_the_stable() -> None:
    step = stuck(T0 + 61, abort=True)

    why = f"progressDeadlineAbort ({STUCK})"
    assert written(step, rs_name(V2))[CANARY_ABORT_ANNOTATION] == f"2:{why}"  # the next passes abort too
    assert scales(step) == [(rs_name(V2), 0)]  # its unavailable pod goes at once
    assert step.phase is AppPhase.PROGRESSING
    assert step.message == f"revision 2: aborting (by {why}), back to the stable ReplicaSet"


def test_a_failed_revision_is_walked_on_its_pods_may_still_come() -> None:
    """Failed by the deadline: the passes go on walking it, and it fails no second time."""
    failed = entry(V2, 2, Outcome.FAILED, reason=FailureReason.PROGRESS_DEADLINE_EXCEEDED, message=STUCK)
    record = AppRecord(revisions=(entry(V1, 1), failed))
    canary = rs(V2, 2, 1, 1, 0, phase="Failed", progressed_at=T0)

    step = canary_pass(web(), stable(4), canary, now=T0 + 600, record=record)

    assert step.phase is AppPhase.PROGRESSING and step.record is None
    assert step.message.startswith("revision 2: step 1/3 (setWeight 50%)") and step.requeue_after


def test_an_hour_in_a_pause_is_not_counted_against_the_deadline() -> None:
    paused = ((CANARY_STEP_ANNOTATION, "2:1"), (CANARY_PAUSED_AT_ANNOTATION, f"2:1:{ts(T0)}"))
    canary = canary_rs(2, progressed_at=T0, annotations=paused)

    step = canary_pass(web(abort=True), stable(2), canary, now=T0 + 1000)

    assert step.phase is AppPhase.PROGRESSING and not timed_out(step.status)
    assert step.message == "revision 2: step 2/3 (pause 3600s), paused for 2600 s more"
    assert CANARY_ABORT_ANNOTATION not in written(step, canary.name)


def test_growing_to_full_size_has_the_deadline_too() -> None:
    """Past the last step, a canary pod that never becomes available fails the revision."""
    past = ((CANARY_STEP_ANNOTATION, "2:3"),)
    step = canary_pass(web(), stable(0), canary_rs(4, 3, progressed_at=T0, annotations=past), now=T0 + 100)
    assert step.phase is AppPhase.FAILED
    assert (
        step.message
        == "revision 2 failed: growing to full size: no progress for 60 s (3/4 canary pods available)"
    )


def test_growing_to_full_size_past_the_deadline_aborts_with_progress_deadline_abort() -> None:
    past = ((CANARY_STEP_ANNOTATION, "2:3"),)
    canary = canary_rs(4, 3, progressed_at=T0, annotations=past)
    step = canary_pass(web(abort=True), stable(0), canary, now=T0 + 100)
    why = "progressDeadlineAbort (growing to full size: no progress for 60 s (3/4 canary pods available))"
    assert written(step, canary.name)[CANARY_ABORT_ANNOTATION] == f"2:{why}"
    assert scales(step) == [(stable().name, 1)]  # the stable grows back first
