"""An analysis run advanced as Argo Rollouts' analysis controller does (the cases of its
analysis tests: limits, counts, delays, error retries, a failing metric stopping the run)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import (
    MEASUREMENT_HISTORY_LIMIT,
    AnalysisRun,
    Measurement,
    MetricResult,
    advance,
    assess_metric,
    due_metrics,
    next_due_at,
)
from gitdeploy.core.analysistemplates import Metric, PrometheusProvider

P = AnalysisPhase
PROVIDER = PrometheusProvider("http://prometheus:9090", "up")


def metric(name: str = "m", **fields: int | None) -> Metric:
    return Metric(name, PROVIDER, **fields)  # type: ignore[arg-type]


def measured(*phases: AnalysisPhase) -> MetricResult:
    result = MetricResult("m", P.RUNNING)
    for at, phase in enumerate(phases):
        result = result.record(Measurement(phase, float(at), float(at)))
    return result


ASSESSED: list[tuple[str, Metric, MetricResult, bool, AnalysisPhase]] = [
    ("no measurement yet", metric(), MetricResult("m"), False, P.PENDING),
    ("no measurement, run stopping", metric(), MetricResult("m"), True, P.SUCCESSFUL),
    ("failed > failureLimit 0", metric(), measured(P.FAILED), False, P.FAILED),
    (
        "failed == failureLimit",
        metric(interval_seconds=1, failure_limit=1),
        measured(P.FAILED),
        False,
        P.RUNNING,
    ),
    (
        "failed > failureLimit 1",
        metric(interval_seconds=1, failure_limit=1),
        measured(P.FAILED, P.FAILED),
        False,
        P.FAILED,
    ),
    ("inconclusive > limit", metric(), measured(P.INCONCLUSIVE), False, P.INCONCLUSIVE),
    (
        "inconclusive within limit, count reached",
        metric(inconclusive_limit=1),
        measured(P.INCONCLUSIVE),
        False,
        P.SUCCESSFUL,
    ),
    ("4 errors in a row", metric(), measured(*[P.ERROR] * 4), False, P.RUNNING),
    ("5 errors in a row", metric(), measured(*[P.ERROR] * 5), False, P.ERROR),
    (
        "errors broken by a success",
        metric(interval_seconds=1),
        measured(*[P.ERROR] * 4, P.SUCCESSFUL, P.ERROR),
        False,
        P.RUNNING,
    ),
    ("consecutiveErrorLimit 0", metric(consecutive_error_limit=0), measured(P.ERROR), False, P.ERROR),
    ("no interval: one measurement", metric(), measured(P.SUCCESSFUL), False, P.SUCCESSFUL),
    ("errors do not count", metric(), measured(P.ERROR), False, P.RUNNING),
    (
        "count not reached",
        metric(interval_seconds=5, count=3),
        measured(P.SUCCESSFUL, P.SUCCESSFUL),
        False,
        P.RUNNING,
    ),
    ("count reached", metric(interval_seconds=5, count=2), measured(P.SUCCESSFUL, P.FAILED), False, P.FAILED),
    (
        "count reached, failures in limit",
        metric(interval_seconds=5, count=2, failure_limit=1),
        measured(P.SUCCESSFUL, P.FAILED),
        False,
        P.SUCCESSFUL,
    ),
    ("count 0 is no count", metric(count=0), measured(P.SUCCESSFUL), False, P.SUCCESSFUL),
    (
        "interval, no count: until the run stops",
        metric(interval_seconds=5),
        measured(*[P.SUCCESSFUL] * 20),
        False,
        P.RUNNING,
    ),
    (
        "interval, no count, run stopping",
        metric(interval_seconds=5),
        measured(P.SUCCESSFUL),
        True,
        P.SUCCESSFUL,
    ),
]


@pytest.mark.parametrize(
    ("metric_", "result", "stopping", "phase"), [c[1:] for c in ASSESSED], ids=[c[0] for c in ASSESSED]
)
def test_a_metric_is_assessed_as_upstream(
    metric_: Metric, result: MetricResult, stopping: bool, phase: AnalysisPhase
) -> None:
    assert assess_metric(metric_, result, stopping)[0] is phase


def test_a_failed_metric_says_why() -> None:
    _, why = assess_metric(metric("rate", failure_limit=1), measured(P.FAILED, P.FAILED), False)
    assert why == "metric 'rate' assessed Failed due to failed (2) > failureLimit (1)"


def run_at(started: float, *results: MetricResult) -> AnalysisRun:
    return AnalysisRun(started_at=started, metrics=results)


DUE: list[tuple[str, Metric, AnalysisRun, float, bool, float | None]] = [
    ("first measurement at once", metric(), run_at(100.0), 100.0, True, 100.0),
    ("initialDelay not passed", metric(initial_delay_seconds=30), run_at(100.0), 129.0, False, 130.0),
    ("initialDelay passed", metric(initial_delay_seconds=30), run_at(100.0), 130.0, True, 130.0),
    (
        "interval after the last ended",
        metric(interval_seconds=10, count=3),
        run_at(0.0, measured(P.SUCCESSFUL)),
        9.0,
        False,
        10.0,
    ),
    (
        "interval passed",
        metric(interval_seconds=10, count=3),
        run_at(0.0, measured(P.SUCCESSFUL)),
        10.0,
        True,
        10.0,
    ),
    (
        "error without interval: retried after 10 s",
        metric(),
        run_at(0.0, measured(P.ERROR)),
        9.0,
        False,
        10.0,
    ),
    (
        "error with interval: retried at the interval",
        metric(interval_seconds=60),
        run_at(0.0, measured(P.ERROR)),
        60.0,
        True,
        60.0,
    ),
    (
        "count reached: never again",
        metric(interval_seconds=1, count=1),
        run_at(0.0, measured(P.SUCCESSFUL)),
        99.0,
        False,
        None,
    ),
    (
        "metric complete",
        metric(),
        run_at(0.0, dataclasses.replace(measured(P.SUCCESSFUL), phase=P.SUCCESSFUL)),
        99.0,
        False,
        None,
    ),
]


@pytest.mark.parametrize(
    ("metric_", "run", "now", "due", "next_at"), [c[1:] for c in DUE], ids=[c[0] for c in DUE]
)
def test_a_metric_is_measured_when_upstream_measures_it(
    metric_: Metric, run: AnalysisRun, now: float, due: bool, next_at: float | None
) -> None:
    assert due_metrics((metric_,), run, now) == (("m",) if due else ())
    assert next_due_at((metric_,), run) == next_at


def test_a_failing_metric_stops_the_run_and_the_others_end_successful() -> None:
    metrics = (
        metric("fast"),
        metric("slow", interval_seconds=60, count=10),
        metric("late", initial_delay_seconds=600),
    )
    run = advance(metrics, AnalysisRun(0.0), {"slow": Measurement(P.SUCCESSFUL, 0.0, 0.0)})
    assert run.phase is P.RUNNING
    run = advance(metrics, run, {"fast": Measurement(P.FAILED, 1.0, 1.0, "[0.2]")})
    assert [r.phase for r in run.metrics] == [P.FAILED, P.SUCCESSFUL, P.SUCCESSFUL]
    assert run.phase is P.FAILED and "'fast' assessed Failed" in run.message
    assert due_metrics(metrics, run, 10_000.0) == () and next_due_at(metrics, run) is None


@pytest.mark.parametrize(
    ("phases", "run_phase"),
    [
        ((P.SUCCESSFUL, P.SUCCESSFUL), P.SUCCESSFUL),
        ((P.INCONCLUSIVE, P.SUCCESSFUL), P.INCONCLUSIVE),
        ((P.FAILED, P.INCONCLUSIVE), P.FAILED),
    ],
)
def test_the_run_takes_the_worst_phase_of_its_metrics(
    phases: tuple[AnalysisPhase, AnalysisPhase], run_phase: AnalysisPhase
) -> None:
    metrics = (metric("a"), metric("b"))
    fresh = {name: Measurement(phase, 0.0, 0.0) for name, phase in zip(("a", "b"), phases, strict=True)}
    assert advance(metrics, AnalysisRun(0.0), fresh).phase is run_phase


def test_errors_past_the_limit_make_the_run_an_error() -> None:
    metrics = (metric(),)
    run = AnalysisRun(0.0)
    for at in range(5):
        assert run.phase is P.RUNNING
        run = advance(metrics, run, {"m": Measurement(P.ERROR, at * 10.0, at * 10.0, message="timeout")})
    assert run.phase is P.ERROR
    assert run.message.endswith("consecutiveErrors (5) > consecutiveErrorLimit (4): timeout")


@given(st.lists(st.sampled_from(list(P)[2:]), max_size=40), st.integers(0, 3), st.integers(0, 3))
def test_counts_add_up_measurements_are_bounded_and_an_end_is_final(
    phases: list[AnalysisPhase], failure_limit: int, inconclusive_limit: int
) -> None:
    metrics = (
        metric(interval_seconds=1, failure_limit=failure_limit, inconclusive_limit=inconclusive_limit),
    )
    run, ended = AnalysisRun(0.0), None
    for at, phase in enumerate(phases):
        run = advance(metrics, run, {"m": Measurement(phase, float(at), float(at))})
        result = run.metrics[0]
        assert result.count == result.successful + result.failed + result.inconclusive
        assert len(result.measurements) <= MEASUREMENT_HISTORY_LIMIT
        if ended is not None:
            assert run.phase is ended
        elif run.phase.completed:
            ended = run.phase
            assert (result.failed > failure_limit) is (ended is P.FAILED)
