"""The progress deadline (:mod:`gitdeploy.core.rollout.completion`): a rollout with no progress for
longer than its deadline fails, counted from the last durable mark; a failed revision writes nothing
more but may still complete.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, RevisionEntry
from gitdeploy.core.observed import PHASE_ANNOTATION
from gitdeploy.core.podstates import ContainerState, PodState
from gitdeploy.core.rollout import AppPhase, Event, PatchReplicaSet, plan_pass
from gitdeploy.core.scaling.progress import ConditionReason, ConditionType
from tests.fixtures.rolloutpass import T0, V1, V2, entry, make_target, rs, snap, stuck, thash


@pytest.mark.parametrize(("elapsed", "failed"), [(30.0, False), (60.0, False), (61.0, True), (500.0, True)])
def test_no_progress_for_longer_than_the_deadline_fails_the_revision(elapsed: float, failed: bool) -> None:
    app, old, new = stuck()
    record = AppRecord(revisions=(entry(V1, 1),))
    now = T0 + elapsed
    step = plan_pass(make_target(app), snap(old, new, record=record), now)
    if not failed:
        assert (step.phase, step.record, step.actions) == (AppPhase.PROGRESSING, None, ())
        assert step.requeue_after == 1.0
        return
    message = "no progress for 60 s (0/3 new pods available)"
    assert (step.phase, step.message, step.requeue_after) == (
        AppPhase.FAILED,
        f"revision 2 failed: {message}",
        None,
    )
    assert step.actions == (PatchReplicaSet(new.name, None, ((PHASE_ANNOTATION, "Failed"),)),)
    assert step.events == (Event("ProgressDeadlineExceeded", f"Revision 2 failed: {message}", warning=True),)
    assert step.record is not None and step.record.pin is None
    failed_entry = step.record.entry(2)
    assert failed_entry == RevisionEntry(
        revision=2,
        template_hash=thash(V2),
        replica_set=new.name,
        commit=CommitRef(f"{2:040d}", "Ada", "commit 2"),
        change_cause="commit 2",
        images=(("web", V2),),
        started_at=T0,
        finished_at=now,
        outcome=Outcome.FAILED,
        message=message,
        reason="ProgressDeadlineExceeded",
    )
    progressing = step.status.condition(ConditionType.PROGRESSING)
    assert progressing is not None and progressing.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED


def test_the_deadline_counts_from_the_last_durable_progress_mark() -> None:
    app, old, _ = stuck()
    new = rs(V2, 2, 1, 1, 0, phase="Running", started_at=T0, progressed_at=T0 + 50)
    step = plan_pass(make_target(app), snap(old, new), T0 + 100)
    assert step.phase == AppPhase.PROGRESSING
    step = plan_pass(make_target(app), snap(old, new), T0 + 111)
    assert step.phase == AppPhase.FAILED


def test_a_revision_failed_by_its_deadline_writes_nothing_more() -> None:
    app, old, new = stuck()
    new = rs(V2, 2, 1, 1, 0, phase="Failed", started_at=T0, progressed_at=T0)
    record = AppRecord(
        revisions=(entry(V1, 1), entry(V2, 2, Outcome.FAILED, reason="ProgressDeadlineExceeded", message="m"))
    )
    for elapsed in (61.0, 200.0, 5000.0):
        step = plan_pass(make_target(app), snap(old, new, record=record), T0 + elapsed)
        assert (step.phase, step.record, step.actions, step.events) == (AppPhase.FAILED, None, (), ())


def test_a_revision_failed_by_its_deadline_may_still_complete() -> None:
    app, old, _ = stuck()
    new = rs(V2, 2, 3, phase="Failed", progressed_at=T0)
    old = rs(V1, 1, 0, progressed_at=T0)
    record = AppRecord(
        revisions=(
            entry(V1, 1),
            entry(V2, 2, Outcome.FAILED, reason="ProgressDeadlineExceeded", message="slow"),
        )
    )
    step = plan_pass(make_target(app), snap(old, new, record=record), T0 + 300)
    assert step.phase == AppPhase.COMPLETE
    assert step.record is not None
    done = step.record.entry(2)
    assert done is not None
    assert (done.outcome, done.message) == (Outcome.COMPLETE, "completed after it failed: slow")


def test_a_deadline_failure_asks_for_the_new_pods_then_says_what_held_them() -> None:
    # Given a stuck rollout whose pods were not read
    app, old, new = stuck()
    record = AppRecord(revisions=(entry(V1, 1),))
    asked = plan_pass(make_target(app), snap(old, new, record=record), T0 + 61)
    # Then the step asks for the new ReplicaSet's pods
    assert asked.explain_with_pods == thash(V2)
    # When the pass is planned again with them
    pulling = ContainerState("web", V2, waiting="ImagePullBackOff")
    pods = (PodState("web-a", containers=(pulling,)), PodState("web-b", ready=True))
    with_pods = dataclasses.replace(snap(old, new, record=record), new_pods=pods)
    step = plan_pass(make_target(app), with_pods, T0 + 61)
    # Then the failure says why, in the record, the event and the step, and asks for nothing more
    why = f"no progress for 60 s (0/3 new pods available): 1 pod ImagePullBackOff (container web, image {V2})"
    assert step.explain_with_pods == "" and step.message == f"revision 2 failed: {why}"
    assert step.record is not None and step.record.entry(2) is not None
    assert step.record.entry(2).message == why  # type: ignore[union-attr]
    assert step.events[0].message == f"Revision 2 failed: {why}"


def test_a_deadline_failure_without_pods_that_say_anything_keeps_its_message() -> None:
    app, old, new = stuck()
    with_pods = dataclasses.replace(snap(old, new), new_pods=())
    step = plan_pass(make_target(app), with_pods, T0 + 61)
    assert step.message == "revision 2 failed: no progress for 60 s (0/3 new pods available)"
