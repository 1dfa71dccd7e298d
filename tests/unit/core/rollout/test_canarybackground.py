"""A canary's background analysis (``strategy.canary.analysis``), pass by pass (pure): it runs
from its ``startingStep`` until the last step, beside the walk; a failure aborts the rollout
whatever step it is at, an inconclusive result holds the walk until ``rollout promote`` (which
starts a new run), and the next measurement it wants sets when the pass looks again."""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_BACKGROUND_ANNOTATION,
    CANARY_PAUSED_AT_ANNOTATION,
    CANARY_PROMOTE_ANNOTATION,
    CANARY_STEP_ANNOTATION,
)
from gitdeploy.core.canarysteps import BackgroundAnalysis, Pause, SetWeight
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout import AppPhase
from gitdeploy.core.rollout.canaryanalysis import BACKGROUND, SOON_SECONDS
from gitdeploy.core.rollout.canarywalk import canary_due_measurements
from tests.fixtures.canarypass import (
    ANALYSIS,
    TEMPLATE,
    after,
    canary_app,
    canary_pass,
    canary_rs,
    measurement,
    run_written,
    scales,
    stable,
    written,
)
from tests.fixtures.rolloutpass import T0, make_target, snap, ts

UNTIL_THE_END = dataclasses.replace(TEMPLATE, metrics=(dataclasses.replace(TEMPLATE.metrics[0], count=None),))
"""success-rate measured every 30 s for as long as the analysis runs."""
APP = canary_app(
    (SetWeight(50), Pause(300), SetWeight(75)),
    background=BackgroundAnalysis(ANALYSIS, starting_step=1),
    templates=(UNTIL_THE_END,),
)
PAUSED_AT = T0 + 100
GOOD, BAD = AnalysisPhase.SUCCESSFUL, AnalysisPhase.FAILED


def in_pause(*marks: tuple[str, str]) -> ObservedReplicaSet:
    """The canary at 50%, 2 of 4 pods, at its 5 minute pause (index 1) since PAUSED_AT."""
    base = ((CANARY_STEP_ANNOTATION, "2:1"), (CANARY_PAUSED_AT_ANNOTATION, f"2:1:{ts(PAUSED_AT)}"))
    return canary_rs(annotations=(*base, *marks))


def running() -> ObservedReplicaSet:
    """The canary in its pause with the background run started at PAUSED_AT + 1, measured once good."""
    first = canary_pass(APP, stable(), in_pause(), now=PAUSED_AT + 1)
    canary = after(first, in_pause())
    good = measurement(GOOD, PAUSED_AT + 2, "[0.99]", step=BACKGROUND)
    return after(canary_pass(APP, stable(), canary, now=PAUSED_AT + 2, measured=(good,)), canary)


def test_before_its_starting_step_the_background_analysis_does_not_run() -> None:
    canary = canary_rs(annotations=((CANARY_STEP_ANNOTATION, "2:0"),))
    step = canary_pass(APP, stable(4), canary_rs(0, annotations=canary.annotations), now=T0)
    assert CANARY_BACKGROUND_ANNOTATION not in written(step, canary.name)
    assert canary_due_measurements(make_target(APP), snap(stable(), canary), T0) == ()


def test_the_pass_reaching_the_starting_step_looks_again_soon_to_start_the_run() -> None:
    """Not when the 5 minute pause is over: the analysis runs during the pause."""
    canary = canary_rs(annotations=((CANARY_STEP_ANNOTATION, "2:0"),))

    # When a pass finds setWeight 50 reached and walks on to the pause
    step = canary_pass(APP, stable(), canary, now=PAUSED_AT)
    assert written(step, canary.name)[CANARY_STEP_ANNOTATION] == "2:1"

    # Then it looks again soon, and that pass starts the background run
    assert step.requeue_after == SOON_SECONDS
    nxt = canary_pass(APP, stable(), after(step, canary), now=PAUSED_AT + SOON_SECONDS)
    run = run_written(nxt, canary.name, BACKGROUND)
    assert run is not None and run.phase is AnalysisPhase.RUNNING and run.started_at == PAUSED_AT + 1


def test_in_a_pause_the_pass_looks_again_at_the_next_measurement_not_the_end_of_the_pause() -> None:
    step = canary_pass(APP, stable(), in_pause(), now=PAUSED_AT + 1)
    run = run_written(step, in_pause().name, BACKGROUND)
    assert run is not None and run.started_at == PAUSED_AT + 1 and run.args == (("service", "web"),)
    assert step.phase is AppPhase.PROGRESSING
    assert step.message == "revision 2: step 2/3 (pause 300s), paused for 299 s more"
    assert step.requeue_after == SOON_SECONDS  # the first measurement is due at once
    canary = running()
    (due,) = canary_due_measurements(make_target(APP), snap(stable(), canary), PAUSED_AT + 32)
    assert due[:2] == (2, BACKGROUND)
    later = canary_pass(APP, stable(), canary, now=PAUSED_AT + 12)
    assert later.requeue_after == pytest.approx(20.0)  # 30 s after the first measurement ended
    assert later.message == "revision 2: step 2/3 (pause 300s), paused for 288 s more"


def test_a_failing_background_measurement_aborts_in_the_middle_of_a_pause() -> None:
    canary = running()
    bad = measurement(BAD, PAUSED_AT + 32, "[0.42]", step=BACKGROUND)

    step = canary_pass(APP, stable(), canary, now=PAUSED_AT + 32, measured=(bad,))

    why = (
        "background analysis success-rate (metric 'success-rate' assessed Failed due to failed (1) > "
        f"failureLimit (0); measurements of success-rate: Successful [0.99] at {ts(PAUSED_AT + 2)}, "
        f"Failed [0.42] at {ts(PAUSED_AT + 32)})"
    )
    assert written(step, canary.name)[CANARY_ABORT_ANNOTATION] == f"2:{why}"
    assert step.message == f"revision 2: aborting (by {why}), back to the stable ReplicaSet"
    assert scales(step) == [(stable().name, 3)]
    failed = next(e for e in step.events if e.reason == "AnalysisFailed")
    assert failed.warning and failed.message.startswith(
        "Revision 2: background analysis success-rate: Failed"
    )


def test_an_inconclusive_background_holds_the_walk_until_a_promote_starts_a_new_run() -> None:
    canary = running()
    unsure = measurement(AnalysisPhase.INCONCLUSIVE, PAUSED_AT + 32, "[0.9]", step=BACKGROUND)

    # When the background analysis is inconclusive
    step = canary_pass(APP, stable(), canary, now=PAUSED_AT + 32, measured=(unsure,))

    # Then the rollout is paused for a promote, saying why
    assert step.phase is AppPhase.PAUSED
    assert "analysis inconclusive (metric 'success-rate' assessed Inconclusive" in step.message
    assert step.message.endswith("paused (waiting for `gitdeploy rollout promote demo/web`)")
    held = after(step, canary)
    # and it stays at its pause when the 5 minutes are over
    late = canary_pass(APP, stable(), held, now=PAUSED_AT + 400)
    assert late.phase is AppPhase.PAUSED and written(late, held.name) == {}

    # When someone promotes the pause
    promoted = canary_rs(annotations=(*held.annotations, (CANARY_PROMOTE_ANNOTATION, "2:1")))
    walked = canary_pass(APP, stable(), promoted, now=PAUSED_AT + 401)

    # Then the walk goes on to setWeight 75 and the background analysis starts again afresh
    assert written(walked, promoted.name)[CANARY_STEP_ANNOTATION] == "2:2"
    assert scales(walked) == [(promoted.name, 3)]
    run = run_written(walked, promoted.name, BACKGROUND)
    assert run is not None and run.started_at == PAUSED_AT + 401 and run.metrics[0].count == 0
    assert walked.requeue_after == SOON_SECONDS  # its first measurement is due at once


def test_past_the_last_step_the_background_analysis_is_over() -> None:
    canary = canary_rs(annotations=(*running().annotations, (CANARY_STEP_ANNOTATION, "2:3")))
    assert canary_due_measurements(make_target(APP), snap(stable(), canary), PAUSED_AT + 100) == ()
