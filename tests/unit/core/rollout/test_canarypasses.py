"""A canary's passes with a stable revision to compare with (pure): each pass scales towards the
current step's weight within maxSurge and maxUnavailable, walks on when the sizes are reached,
waits at a pause (timed, or for a promote), and an abort sends it back to the stable before the
revision Fails. A canary that a newer commit replaced goes first."""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_PAUSED_AT_ANNOTATION,
    CANARY_STEP_ANNOTATION,
    CANARY_STEPS_ANNOTATION,
)
from gitdeploy.core.canarysteps import Pause, SetWeight, encode_steps
from gitdeploy.core.history.records import AppRecord, FailureReason, Outcome
from gitdeploy.core.observed import PROGRESSED_AT_ANNOTATION, ObservedReplicaSet
from gitdeploy.core.rollout import AppPhase
from gitdeploy.core.rollout.context import DEFAULT_REQUEUE_SECONDS, STATUS_BEHIND, WATCHED_REQUEUE_SECONDS
from tests.fixtures.canarypass import canary_app, canary_pass, canary_rs, scales, stable, written
from tests.fixtures.rolloutpass import T0, V1, V2, V3, entry, named, rs, rs_name, ts

STEPS = (SetWeight(50), Pause(60), SetWeight(75), Pause())
APP = canary_app(STEPS, templates=())
CANARY, STABLE = rs_name(V2), rs_name(V1)
NOW = T0 + 10


def at(step: int, paused_at: float | None = None) -> tuple[tuple[str, str], ...]:
    """The annotations of revision 2's canary at step ``step`` (paused since ``paused_at``), as
    the pass that reached it wrote them."""
    paused = () if paused_at is None else ((CANARY_PAUSED_AT_ANNOTATION, f"2:{step}:{ts(paused_at)}"),)
    steps = (CANARY_STEPS_ANNOTATION, f"2:{encode_steps(STEPS)}")
    return ((CANARY_STEP_ANNOTATION, f"2:{step}"), steps, *paused)


SCALING = [
    # (id, stable (spec, available), canary (spec, available), scales)
    ("the first canary pod, within maxSurge 1", (4, 4), (0, 0), [(CANARY, 1)]),
    ("then a stable pod goes, keeping 4 available", (4, 4), (1, 1), [(STABLE, 3)]),
    ("nothing while the canary pod is not available", (4, 4), (1, 0), []),
    ("then the second canary pod", (3, 3), (1, 1), [(CANARY, 2)]),
]


@pytest.mark.parametrize(("stable_size", "canary_size", "expected"), named(SCALING))
def test_set_weight_scales_step_by_step_within_the_bounds(
    stable_size: tuple[int, int], canary_size: tuple[int, int], expected: list[tuple[str, int]]
) -> None:
    step = canary_pass(APP, stable(*stable_size), canary_rs(*canary_size), now=NOW)
    assert scales(step) == expected
    assert step.phase is AppPhase.PROGRESSING and step.requeue_after == DEFAULT_REQUEUE_SECONDS
    assert written(step, CANARY)[CANARY_STEP_ANNOTATION] == "2:0"


def test_the_message_at_a_set_weight_names_the_revision_once() -> None:
    step = canary_pass(APP, stable(4), canary_rs(1, 0), now=NOW)
    assert step.message == "revision 2: step 1/4 (setWeight 50%), 0 of 4 new pods available, 4 old pods left"


def test_reaching_the_weight_walks_on_to_the_timed_pause() -> None:
    step = canary_pass(APP, stable(2), canary_rs(2), now=NOW)

    assert scales(step) == []
    marks = written(step, CANARY)
    assert (marks[CANARY_STEP_ANNOTATION], marks[CANARY_PAUSED_AT_ANNOTATION]) == ("2:1", f"2:1:{ts(NOW)}")
    assert marks[PROGRESSED_AT_ANNOTATION] == ts(NOW)
    assert [(e.reason, e.message) for e in step.events] == [
        ("CanaryStep", "Revision 2: step 2/4 (pause 60s)")
    ]
    assert step.message == "revision 2: step 2/4 (pause 60s), paused for 60 s more"
    assert step.requeue_after == 60.0


def test_a_timed_pause_looks_again_when_it_ends_and_writes_nothing_meanwhile() -> None:
    step = canary_pass(APP, stable(2), canary_rs(2, annotations=at(1, T0)), now=T0 + 25)
    assert step.message == "revision 2: step 2/4 (pause 60s), paused for 35 s more"
    assert step.requeue_after == 35.0 and step.actions == ()


def test_an_indefinite_pause_waits_for_a_promote() -> None:
    step = canary_pass(APP, stable(1), canary_rs(3, annotations=at(3, T0)), now=T0 + 999)
    assert step.phase is AppPhase.PAUSED
    assert step.message == (
        "revision 2: step 4/4 (pause (until promoted)), "
        "paused (waiting for `gitdeploy rollout promote demo/web`)"
    )
    assert step.requeue_after == WATCHED_REQUEUE_SECONDS and step.actions == ()


def test_nothing_is_scaled_while_a_replica_set_status_is_behind_its_spec() -> None:
    behind = dataclasses.replace(canary_rs(1, 0), observed_generation_current=False)
    step = canary_pass(APP, stable(4), behind, now=NOW)
    assert (step.message, step.actions, step.requeue_after) == (STATUS_BEHIND, (), DEFAULT_REQUEUE_SECONDS)


def aborted(replicas: int, available: int | None = None) -> ObservedReplicaSet:
    return canary_rs(replicas, available, annotations=(*at(1, T0), (CANARY_ABORT_ANNOTATION, "2:ada@host")))


ABORTING = [
    # (id, stable (spec, available), canary (spec, available), scales)
    ("the stable grows back first", (2, 2), (2, 2), [(STABLE, 3)]),
    ("then a canary pod goes, keeping 4 available", (3, 3), (2, 2), [(CANARY, 1)]),
    ("unavailable canary pods go at once", (4, 4), (2, 0), [(CANARY, 0)]),
]


@pytest.mark.parametrize(("stable_size", "canary_size", "expected"), named(ABORTING))
def test_an_abort_goes_back_to_the_stable_within_the_bounds(
    stable_size: tuple[int, int], canary_size: tuple[int, int], expected: list[tuple[str, int]]
) -> None:
    step = canary_pass(APP, stable(*stable_size), aborted(*canary_size), now=NOW)
    assert scales(step) == expected
    assert step.message == "revision 2: aborting (by ada@host), back to the stable ReplicaSet"
    assert step.phase is AppPhase.PROGRESSING and step.record is None


def test_an_abort_fails_the_revision_once_only_the_stable_runs() -> None:
    step = canary_pass(APP, stable(4), aborted(0), now=NOW)
    assert step.phase is AppPhase.FAILED and scales(step) == []
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None and (failed.outcome, failed.reason) == (
        Outcome.FAILED,
        FailureReason.ROLLOUT_ABORTED,
    )
    assert failed.message == "aborted by ada@host: revision 1 runs at full size"


V3_APP = canary_app((SetWeight(50), Pause()), templates=(), image=V3)
REPLACED = [
    # (id, revision 2's canary (spec, available), scales)
    ("its unavailable pod goes at once", (1, 0), [(rs_name(V2), 0), (rs_name(V3), 1)]),
    ("its available pod stays while 4 must be", (1, 1), [(rs_name(V3), 1)]),
]


@pytest.mark.parametrize(("replaced", "expected"), named(REPLACED))
def test_a_canary_a_newer_commit_replaced_goes_first(
    replaced: tuple[int, int], expected: list[tuple[str, int]]
) -> None:
    """Revision 1 is the stable (Complete), revision 2 never completed: revision 3's canary
    walks from revision 1, and revision 2's pods go within maxUnavailable."""
    older = rs(V2, 2, replaced[0], replaced[0], replaced[1], phase="Running")
    new = rs(V3, 3, 0, phase="Running")
    record = AppRecord(revisions=(entry(V1, 1),))
    step = canary_pass(V3_APP, rs(V1, 1, 3), older, new, now=NOW, record=record)
    assert scales(step) == expected
    assert step.message.startswith("revision 3: step 1/2 (setWeight 50%)")


def test_past_the_last_step_with_only_the_canary_running_it_completes() -> None:
    past = canary_rs(4, annotations=at(4))
    step = canary_pass(APP, stable(0), past, now=NOW)
    assert step.phase is AppPhase.COMPLETE and scales(step) == []
    assert step.record is not None
    done = step.record.entry(2)
    assert done is not None and done.outcome is Outcome.COMPLETE
    assert [e.reason for e in step.events] == ["RolloutComplete"]


def test_an_older_replica_set_already_at_zero_is_left_alone() -> None:
    older = rs(V2, 2, 0, phase="Running")
    record = AppRecord(revisions=(entry(V1, 1),))
    step = canary_pass(V3_APP, rs(V1, 1, 4), older, rs(V3, 3, 0, phase="Running"), now=NOW, record=record)
    assert scales(step) == [(rs_name(V3), 1)]
