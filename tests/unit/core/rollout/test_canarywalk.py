"""The canary's walk through its steps (pure): where a pass leaves it, what it waits for, and
the passes of a first revision (no stable to compare with)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_PAUSED_AT_ANNOTATION,
    CANARY_PROMOTE_ANNOTATION,
    CANARY_STEP_ANNOTATION,
    CanaryState,
    read_canary_state,
)
from gitdeploy.core.canarysteps import AnalysisRef, AnalysisStep, CanaryParams, CanaryStep, Pause, SetWeight
from gitdeploy.core.history.records import FailureReason
from gitdeploy.core.models import App, Strategy, StrategyType
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout import AppPhase, PatchReplicaSet, plan_pass
from gitdeploy.core.rollout.canarywalk import Walk, walk_annotations, walk_steps
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from gitdeploy.core.timestamps import format_timestamp
from tests.fixtures.rolloutpass import T0, V1, make_app, make_target, rs, snap

STEPS: tuple[CanaryStep, ...] = (SetWeight(25), Pause(60), SetWeight(50), Pause(), SetWeight(75))
T = 1_700_000_000.0


def always(weight: int) -> bool:
    return True


def never(weight: int) -> bool:
    return False


def only(*weights: int) -> Callable[[int], bool]:
    return lambda weight: weight in weights


WALKS = [
    # (id, state, reached, now, walk)
    ("first pass, sizes not reached: stays at step 0", CanaryState(), never, T, Walk(0, None, None, False)),
    (
        "setWeight reached: on to the timed pause, which begins now",
        CanaryState(),
        only(25),
        T,
        Walk(1, T, 60.0, False),
    ),
    ("timed pause: 20 s later 40 s are left", CanaryState(1, T), always, T + 20, Walk(1, T, 40.0, False)),
    (
        "timed pause over: setWeight 50 not reached yet",
        CanaryState(1, T),
        only(25),
        T + 60,
        Walk(2, None, None, False),
    ),
    (
        "timed pause over and 50% already reached: on to the indefinite pause",
        CanaryState(1, T),
        always,
        T + 61,
        Walk(3, T + 61, None, True),
    ),
    ("indefinite pause keeps its start", CanaryState(3, T), always, T + 999, Walk(3, T, None, True)),
    (
        "promoted: on to setWeight 75",
        CanaryState(3, T, promoted=3),
        only(50),
        T + 5,
        Walk(4, None, None, False),
    ),
    (
        "a promote of an earlier step is spent",
        CanaryState(3, T, promoted=1),
        always,
        T + 5,
        Walk(3, T, None, True),
    ),
    ("last setWeight reached: past the end", CanaryState(4), always, T, Walk(5, None, None, False)),
    ("promote --full skips every step", CanaryState(0, full=True), never, T, Walk(5, None, None, False)),
    (
        "a pause waits for the sizes of its weight (a pod died)",
        CanaryState(1),
        never,
        T,
        Walk(1, None, None, False),
    ),
    (
        "a promote skips a setWeight not reached",
        CanaryState(0, promoted=0),
        only(25),
        T,
        Walk(1, T, 60.0, False),
    ),
]


@pytest.mark.parametrize(
    ("state", "reached", "now", "walk"), [w[1:] for w in WALKS], ids=[w[0] for w in WALKS]
)
def test_walk_steps(state: CanaryState, reached: Callable[[int], bool], now: float, walk: Walk) -> None:
    assert walk_steps(STEPS, state, reached, now) == walk


ANALYSED = (SetWeight(50), AnalysisStep(AnalysisRef(("rate",))), SetWeight(75))


@pytest.mark.parametrize(
    ("phase", "promoted", "walk"),
    [
        (AnalysisPhase.RUNNING, None, Walk(1, None, None, False)),
        (AnalysisPhase.SUCCESSFUL, None, Walk(3, None, None, False)),
        (AnalysisPhase.INCONCLUSIVE, None, Walk(1, None, None, True)),  # as upstream: paused
        (AnalysisPhase.FAILED, None, Walk(1, None, None, False)),  # the caller aborts
        (AnalysisPhase.FAILED, 1, Walk(3, None, None, False)),  # promoted: skipped, not analysed
    ],
)
def test_an_analysis_step_goes_on_when_its_run_succeeds(
    phase: AnalysisPhase, promoted: int | None, walk: Walk
) -> None:
    asked: list[int] = []

    def analysed(index: int) -> AnalysisPhase:
        asked.append(index)
        return phase

    assert (
        walk_steps(ANALYSED, CanaryState(step=1, promoted=promoted), lambda w: True, 10.0, analysed) == walk
    )
    assert asked == ([] if promoted is not None else [1])


def test_an_analysis_step_without_its_run_told_waits_at_it() -> None:
    """``analysed`` left out (no run to look at): the step is not done, nor waits for promote."""
    assert walk_steps(ANALYSED, CanaryState(step=1), lambda w: True, 10.0) == Walk(1, None, None, False)


def test_a_pause_begins_at_the_next_whole_second_so_it_never_ends_early() -> None:
    """Its start is kept in an annotation in whole seconds: rounded up, not down."""
    walk = walk_steps(STEPS, CanaryState(), only(25), T + 0.4)
    assert walk.paused_at == T + 1
    assert walk.wait == pytest.approx(60.6)


def test_no_steps_is_past_the_end_at_once() -> None:
    assert walk_steps((), CanaryState(), never, T) == Walk(0, None, None, False)


def observed(revision: int, annotations: dict[str, str]) -> ObservedReplicaSet:
    state = ReplicaSetState("web-abc", "abc", revision, T, replicas=1)
    return ObservedReplicaSet("shop", "web", state, tuple(annotations.items()))


def test_the_state_is_read_back_from_the_annotations_the_walk_writes() -> None:
    walk = Walk(3, T, None, True)
    rs = observed(7, dict(walk_annotations(7, walk)))
    assert read_canary_state(rs) == CanaryState(step=3, paused_at=T)


def test_annotations_of_another_revision_are_not_this_ones() -> None:
    """A ReplicaSet reused by a later revision (a rollback) starts its walk again."""
    annotations = {
        CANARY_STEP_ANNOTATION: "6:3",
        CANARY_PAUSED_AT_ANNOTATION: f"6:3:{format_timestamp(T)}",
        CANARY_PROMOTE_ANNOTATION: "6:full",
        CANARY_ABORT_ANNOTATION: "6:ada@host",
    }
    assert read_canary_state(observed(7, annotations)) == CanaryState()


def test_promote_and_abort_requests() -> None:
    annotations = {CANARY_STEP_ANNOTATION: "7:2", CANARY_PROMOTE_ANNOTATION: "7:2"}
    assert read_canary_state(observed(7, annotations)) == CanaryState(step=2, promoted=2)
    full = observed(7, {CANARY_PROMOTE_ANNOTATION: "7:full", CANARY_ABORT_ANNOTATION: "7:ada@host:2"})
    assert read_canary_state(full) == CanaryState(full=True, aborted_by="ada@host:2")


def test_a_pause_start_of_another_step_is_not_this_steps() -> None:
    annotations = {CANARY_STEP_ANNOTATION: "7:3", CANARY_PAUSED_AT_ANNOTATION: f"7:1:{format_timestamp(T)}"}
    assert dataclasses.astuple(read_canary_state(observed(7, annotations)))[:2] == (3, None)


def canary_app(replicas: int = 3) -> App:
    params = CanaryParams(steps=(SetWeight(50), Pause()), max_surge=1, max_unavailable=0)
    return make_app(V1, replicas=replicas, strategy=Strategy(StrategyType.CANARY, canary=params))


def test_aborting_an_apps_first_revision_fails_it_at_once_and_keeps_its_pods() -> None:
    """No stable revision to go back to: nothing is scaled, and the walk does not loop."""
    first = rs(
        V1,
        1,
        3,
        phase="Running",
        annotations=((CANARY_STEP_ANNOTATION, "1:2"), (CANARY_ABORT_ANNOTATION, "1:ada")),
    )
    step = plan_pass(make_target(canary_app()), snap(first), T0 + 5)
    assert step.phase is AppPhase.FAILED
    assert [a.replicas for a in step.actions if isinstance(a, PatchReplicaSet)] == [None]  # the phase only
    assert step.record is not None
    entry = step.record.entry(1)
    assert entry is not None and entry.reason == FailureReason.ROLLOUT_ABORTED
    assert entry.message == "aborted by ada: no earlier revision to go back to, its pods keep running"


def test_an_apps_first_revision_goes_to_full_size_without_steps() -> None:
    first = rs(V1, 1, 0, phase="Running", desired=3)
    step = plan_pass(make_target(canary_app()), snap(first), T0 + 5)
    assert [(a.name, a.replicas) for a in step.actions if isinstance(a, PatchReplicaSet)] == [(first.name, 3)]
    annotations = dict(next(a for a in step.actions if isinstance(a, PatchReplicaSet)).annotations)
    assert annotations[CANARY_STEP_ANNOTATION] == "1:2"  # past its 2 steps
