"""A canary's analysis step, pass by pass (pure): the pass that reaches it starts its run, the
measurements the controller hands in are counted, and the run's end decides the walk: Successful
walks on, Failed or Error aborts back to the stable naming the metric and its measurements,
Inconclusive waits for ``rollout promote``. What the next pass must measure is read back from
the annotations the pass wrote (:func:`canary_due_measurements`)."""

from __future__ import annotations

import pytest

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun, MetricResult, StepMeasurement
from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_PROMOTE_ANNOTATION,
    CANARY_STEP_ANNOTATION,
)
from gitdeploy.core.canarysteps import AnalysisStep, CanaryStep, Pause, SetWeight
from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.observed import PROGRESSED_AT_ANNOTATION, ObservedReplicaSet
from gitdeploy.core.rollout import AppPhase, Step
from gitdeploy.core.rollout.canaryanalysis import SOON_SECONDS, requeue_after
from gitdeploy.core.rollout.canarywalk import canary_due_measurements
from gitdeploy.core.rollout.context import WATCHED_REQUEUE_SECONDS
from tests.fixtures.canarypass import (
    ANALYSIS,
    METRIC,
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
from tests.fixtures.rolloutpass import T0, make_target, reasons, snap, ts

APP = canary_app((SetWeight(50), AnalysisStep(ANALYSIS)))
"""setWeight 50, then the analysis (index 1): ``success-rate`` measured twice, 30 s apart."""
AT_ANALYSIS = ((CANARY_STEP_ANNOTATION, "2:1"),)
STARTED = T0 + 101  # the first pass is at T0 + 100.5: a run starts at a whole second
GOOD, BAD = AnalysisPhase.SUCCESSFUL, AnalysisPhase.FAILED


def started() -> tuple[Step, ObservedReplicaSet]:
    """Given the canary at 50% (2 of 4 pods), when a pass reaches its analysis step."""
    canary = canary_rs(annotations=AT_ANALYSIS)
    step = canary_pass(APP, stable(), canary, now=T0 + 100.5)
    return step, after(step, canary)


def measured_once() -> ObservedReplicaSet:
    """The canary after a pass that counted one good measurement (taken at STARTED + 1)."""
    _, canary = started()
    step = canary_pass(
        APP, stable(), canary, now=STARTED + 1, measured=(measurement(GOOD, STARTED + 1, "[0.99]"),)
    )
    return after(step, canary)


def test_reaching_the_analysis_step_starts_its_run_and_asks_for_a_measurement() -> None:
    step, canary = started()

    # Then the run starts at the next whole second, its argument resolved, nothing measured yet
    run = run_written(step, canary.name, 1)
    assert run is not None
    assert (run.started_at, run.phase, run.args) == (STARTED, AnalysisPhase.RUNNING, (("service", "web"),))
    assert [(r.name, r.count) for r in run.metrics] == [(METRIC, 0)]
    assert step.phase is AppPhase.PROGRESSING
    assert step.message == (
        "revision 2: step 2/2 (analysis success-rate), analysis running (success-rate: not measured yet)"
    )
    # and the pass looks again when the first measurement is due; no pod is scaled meanwhile
    assert step.requeue_after == pytest.approx(0.5)
    assert scales(step) == [] and step.events == ()
    # and the controller is asked for it, the template's query given the step's argument
    (due,) = canary_due_measurements(make_target(APP), snap(stable(), canary), STARTED)
    assert due[:2] == (2, 1) and due[2].provider.query == "rate{service='web'}"  # type: ignore[union-attr]


def test_a_measurement_is_counted_and_the_next_is_due_an_interval_later() -> None:
    _, canary = started()
    good = measurement(GOOD, STARTED + 1, "[0.99]")

    step = canary_pass(APP, stable(), canary, now=STARTED + 1, measured=(good,))

    run = run_written(step, canary.name, 1)
    assert run is not None and run.phase is AnalysisPhase.RUNNING
    assert [(m.phase, m.value) for m in run.metrics[0].measurements] == [(GOOD, "[0.99]")]
    assert step.message.endswith("analysis running (success-rate: 1 measured, 1 successful)")
    assert step.requeue_after == pytest.approx(30.0)
    nxt = after(step, canary)
    assert canary_due_measurements(make_target(APP), snap(stable(), nxt), STARTED + 30) == ()
    assert len(canary_due_measurements(make_target(APP), snap(stable(), nxt), STARTED + 31)) == 1


@pytest.mark.parametrize(
    "measured",
    [
        pytest.param((measurement(GOOD, STARTED + 1, "[0.99]", step=0),), id="of another step"),
        pytest.param((measurement(GOOD, STARTED + 1, "[0.99]", metric="latency"),), id="of another metric"),
    ],
)
def test_a_measurement_of_another_run_is_not_counted(measured: tuple[StepMeasurement, ...]) -> None:
    _, canary = started()
    step = canary_pass(APP, stable(), canary, now=STARTED + 1, measured=measured)
    assert step.message.endswith("analysis running (success-rate: not measured yet)")
    assert written(step, canary.name) == {}  # the kept run is unchanged: nothing to write


def test_a_successful_run_walks_on_to_full_size() -> None:
    canary = measured_once()

    # When the second good measurement comes in
    good = measurement(GOOD, STARTED + 31, "[0.98]")
    step = canary_pass(APP, stable(), canary, now=STARTED + 31, measured=(good,))

    # Then the run is kept Successful, the walk is past its steps and the canary grows
    run = run_written(step, canary.name, 1)
    assert run is not None and run.phase is GOOD
    marks = written(step, canary.name)
    assert marks[CANARY_STEP_ANNOTATION] == "2:2"
    assert marks[PROGRESSED_AT_ANNOTATION] == ts(STARTED + 31)  # reaching a step is progress
    assert scales(step) == [(canary.name, 3)]  # maxSurge 1: one more pod at a time
    assert [(e.reason, e.message) for e in step.events[:2]] == [
        ("AnalysisSuccessful", "Revision 2: analysis success-rate succeeded"),
        ("CanaryStep", "Revision 2: past its 2 steps, to full size"),
    ]
    assert step.phase is AppPhase.PROGRESSING


def test_a_failed_measurement_aborts_naming_the_metric_and_its_measurements() -> None:
    canary = measured_once()

    # When the second measurement fails
    step = canary_pass(
        APP, stable(), canary, now=STARTED + 31, measured=(measurement(BAD, STARTED + 31, "[0.42]"),)
    )

    # Then the walk writes the abort, naming the analysis, the metric and what it measured
    why = (
        "analysis success-rate (metric 'success-rate' assessed Failed due to failed (1) > failureLimit (0); "
        f"measurements of success-rate: Successful [0.99] at {ts(STARTED + 1)}, "
        f"Failed [0.42] at {ts(STARTED + 31)})"
    )
    assert written(step, canary.name)[CANARY_ABORT_ANNOTATION] == f"2:{why}"
    # and the stable grows back first (maxSurge 1), the canary kept until then
    assert scales(step) == [(stable().name, 3)]
    assert step.phase is AppPhase.PROGRESSING
    assert step.message == f"revision 2: aborting (by {why}), back to the stable ReplicaSet"
    failed = next(e for e in step.events if e.reason == "AnalysisFailed")
    assert failed.warning and failed.message.startswith("Revision 2: analysis success-rate: Failed: metric")
    assert "Failed [0.42]" in failed.message

    # When a later pass finds the stable back at full size and the canary gone
    gone = canary_rs(0, annotations=after(step, canary).annotations)
    final = canary_pass(APP, stable(4), gone, now=STARTED + 60)

    # Then revision 2 Failed, aborted by the analysis, and no second AnalysisFailed is told
    assert final.phase is AppPhase.FAILED and "AnalysisFailed" not in reasons(final)
    assert final.record is not None
    entry = final.record.entry(2)
    assert entry is not None and (entry.outcome, entry.reason) == (
        Outcome.FAILED,
        FailureReason.ROLLOUT_ABORTED,
    )
    assert entry.message == f"aborted by {why}: revision 1 runs at full size"


def test_an_inconclusive_run_pauses_until_promoted() -> None:
    canary = measured_once()
    unsure = measurement(AnalysisPhase.INCONCLUSIVE, STARTED + 31, "[0.9]")

    step = canary_pass(APP, stable(), canary, now=STARTED + 31, measured=(unsure,))

    # Then the rollout is paused, as upstream pauses on an inconclusive analysis, and says why
    assert step.phase is AppPhase.PAUSED
    assert step.message == (
        "revision 2: step 2/2 (analysis success-rate), analysis inconclusive (metric 'success-rate' assessed "
        "Inconclusive due to inconclusive (1) > inconclusiveLimit (0)), "
        "paused (waiting for `gitdeploy rollout promote demo/web`)"
    )
    assert step.requeue_after == WATCHED_REQUEUE_SECONDS and scales(step) == []
    told = next(e for e in step.events if e.reason == "AnalysisInconclusive")
    assert told.warning and "Inconclusive [0.9]" in told.message
    held = after(step, canary)
    assert canary_due_measurements(make_target(APP), snap(stable(), held), STARTED + 100) == ()

    # When someone promotes the step
    promoted = canary_rs(annotations=(*held.annotations, (CANARY_PROMOTE_ANNOTATION, "2:1")))
    walked = canary_pass(APP, stable(), promoted, now=STARTED + 40)

    # Then the walk goes past it to full size
    assert written(walked, promoted.name)[CANARY_STEP_ANNOTATION] == "2:2"
    assert scales(walked) == [(promoted.name, 3)]


def test_an_analysis_whose_template_is_missing_aborts_as_an_error() -> None:
    app = canary_app((SetWeight(50), AnalysisStep(ANALYSIS)), templates=())
    canary = canary_rs(annotations=AT_ANALYSIS)

    step = canary_pass(app, stable(), canary, now=T0 + 100)

    why = "analysis success-rate (analysis template success-rate is not in the repo)"
    assert written(step, canary.name)[CANARY_ABORT_ANNOTATION] == f"2:{why}"
    error = next(e for e in step.events if e.reason == "AnalysisError")
    assert (
        error.message
        == "Revision 2: analysis success-rate: Error: analysis template success-rate is not in the repo"
    )
    # and nothing is asked of the controller for a run it cannot resolve
    assert canary_due_measurements(make_target(app), snap(stable(), after(step, canary)), T0 + 200) == ()


def test_a_running_run_whose_template_left_the_repo_is_due_nothing_and_asks_no_requeue() -> None:
    """The template went after the run started: the next pass ends the run as an Error."""
    _, canary = started()
    gone = canary_app((SetWeight(50), AnalysisStep(ANALYSIS)), templates=())
    assert canary_due_measurements(make_target(gone), snap(stable(), canary), STARTED) == ()
    params = gone.strategy.canary
    assert params is not None
    assert requeue_after(params, 1, AnalysisRun(STARTED, (MetricResult(METRIC),)), STARTED) is None
    step = canary_pass(gone, stable(), canary, now=STARTED + 1)
    run = run_written(step, canary.name, 1)
    assert run is not None and run.phase is AnalysisPhase.ERROR and run.started_at == STARTED


def test_a_measurement_due_already_is_asked_for_soon() -> None:
    params = APP.strategy.canary
    assert params is not None
    late = AnalysisRun(STARTED, (MetricResult(METRIC),), args=(("service", "web"),))
    assert requeue_after(params, 1, late, STARTED + 50) == SOON_SECONDS
    assert requeue_after(params, 0, late, STARTED) is None  # step 0 is no analysis


# -- what the controller is asked to measure -------------------------------------------------------


def due_at(app_steps: tuple[CanaryStep, ...], annotations: tuple[tuple[str, str], ...]) -> int:
    app = canary_app(app_steps)
    _, canary = started()
    marks = dict(canary.annotations) | dict(annotations)
    observed = canary_rs(annotations=tuple(marks.items()))
    return len(canary_due_measurements(make_target(app), snap(stable(), observed), STARTED))


@pytest.mark.parametrize(
    ("steps", "annotations", "due"),
    [
        pytest.param((SetWeight(50), AnalysisStep(ANALYSIS)), (), 1, id="at the analysis: its metric"),
        pytest.param((SetWeight(50), Pause()), (), 0, id="no analysis in the steps: nothing"),
        pytest.param(
            (SetWeight(50), AnalysisStep(ANALYSIS)),
            ((CANARY_ABORT_ANNOTATION, "2:ada"),),
            0,
            id="aborted: nothing",
        ),
        pytest.param(
            (SetWeight(50), AnalysisStep(ANALYSIS)),
            ((CANARY_STEP_ANNOTATION, "2:2"),),
            0,
            id="past the last step: nothing",
        ),
        pytest.param(
            (SetWeight(50), AnalysisStep(ANALYSIS)),
            ((CANARY_PROMOTE_ANNOTATION, "2:full"),),
            0,
            id="promoted past every step: nothing",
        ),
        pytest.param(
            (SetWeight(50), AnalysisStep(ANALYSIS)),
            ((CANARY_PROMOTE_ANNOTATION, "2:1"),),
            0,
            id="the analysis step promoted: nothing",
        ),
        pytest.param(
            (SetWeight(50), AnalysisStep(ANALYSIS)),
            ((CANARY_STEP_ANNOTATION, "2:0"),),
            0,
            id="at a setWeight: nothing",
        ),
    ],
)
def test_canary_due_measurements(
    steps: tuple[CanaryStep, ...], annotations: tuple[tuple[str, str], ...], due: int
) -> None:
    assert due_at(steps, annotations) == due


def test_nothing_is_due_before_the_canary_replica_set_exists() -> None:
    assert canary_due_measurements(make_target(APP), snap(stable(4)), STARTED) == ()
