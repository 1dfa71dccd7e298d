"""An analysis run: its metrics' measurements and phases, advanced as Argo Rollouts' analysis
controller does. Pure: the caller measures (:mod:`gitdeploy.providers`) and passes the time.

* A metric is measured first at the run's start plus ``initialDelay``, then every ``interval``
  after its last measurement ended (``10 s`` after an Error when it has no interval); without an
  interval it is measured once (``count`` 1), without ``count`` until the run ends.
* Successful, Failed and Inconclusive measurements count; an Error does not, and counts as a
  consecutive error until a measurement of another phase.
* A metric is Failed once ``failed > failureLimit``, Inconclusive once ``inconclusive >
  inconclusiveLimit``, Error once ``consecutive errors > consecutiveErrorLimit`` (4 by default),
  Successful once it was measured ``count`` times; else Running (Pending before its first).
* One Failed, Error or Inconclusive metric stops the run: the others measure no more and count
  as Successful. The run's phase is the worst of its metrics' once all are complete.

Upstream's ``time.Now().After(due)`` is taken as ``now >= due`` (requeueing at ``due`` then
measures), a difference of nanoseconds.

>>> from gitdeploy.core.analysistemplates import WebProvider
>>> metric = Metric("ok", WebProvider("http://x"), interval_seconds=10, count=2)
>>> run = AnalysisRun(started_at=0.0)
>>> due_metrics((metric,), run, 0.0), next_due_at((metric,), run)
(('ok',), 0.0)
>>> run = advance((metric,), run, {"ok": Measurement(AnalysisPhase.SUCCESSFUL, 0.0, 1.0)})
>>> run.phase, due_metrics((metric,), run, 5.0), next_due_at((metric,), run)
(<AnalysisPhase.RUNNING: 'Running'>, (), 11.0)
>>> advance((metric,), run, {"ok": Measurement(AnalysisPhase.SUCCESSFUL, 11.0, 11.0)}).phase
<AnalysisPhase.SUCCESSFUL: 'Successful'>
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitdeploy.core.analysis.phases import AnalysisPhase, worse
from gitdeploy.core.analysistemplates import Metric

ERROR_RETRY_SECONDS = 10.0
"""When a metric whose last measurement was an Error and that has no interval measures again."""
MEASUREMENT_HISTORY_LIMIT = 10
"""The measurements kept per metric (upstream's default): the counts keep the rest."""

__all__ = [
    "AnalysisRun",
    "Measurement",
    "MetricResult",
    "StepMeasurement",
    "advance",
    "due_metrics",
    "next_due_at",
]


@dataclass(frozen=True, slots=True)
class Measurement:
    """One measurement of a metric: its phase, when it ran, what it returned (as text) and why
    it is what it is (an error's message)."""

    phase: AnalysisPhase
    started_at: float
    finished_at: float
    value: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class StepMeasurement:
    """A measurement the controller took for the run of ``revision``'s canary step ``step``."""

    revision: int
    step: int
    metric: str
    measurement: Measurement


@dataclass(frozen=True, slots=True)
class MetricResult:
    """A metric's measurements (the last :data:`MEASUREMENT_HISTORY_LIMIT`) and counts."""

    name: str
    phase: AnalysisPhase = AnalysisPhase.PENDING
    measurements: tuple[Measurement, ...] = ()
    count: int = 0
    successful: int = 0
    failed: int = 0
    inconclusive: int = 0
    error: int = 0
    consecutive_error: int = 0
    message: str = ""
    """Why the metric is in its phase once it is complete."""
    wanted: int | None = None
    """The measurements that complete it (:func:`effective_count`; None: until the run ends),
    kept so that ``status`` can say ``2/5`` from the cluster alone."""

    def record(self, measurement: Measurement) -> MetricResult:
        """This result with ``measurement`` counted (upstream ``runMeasurements``)."""
        counted = measurement.phase is not AnalysisPhase.ERROR
        tallies = {
            AnalysisPhase.SUCCESSFUL: "successful",
            AnalysisPhase.FAILED: "failed",
            AnalysisPhase.INCONCLUSIVE: "inconclusive",
            AnalysisPhase.ERROR: "error",
        }
        tally = tallies[measurement.phase]
        return dataclasses.replace(
            self,
            measurements=(*self.measurements, measurement)[-MEASUREMENT_HISTORY_LIMIT:],
            count=self.count + counted,
            consecutive_error=0 if counted else self.consecutive_error + 1,
            **{tally: getattr(self, tally) + 1},
        )


@dataclass(frozen=True, slots=True)
class AnalysisRun:
    """A run of an analysis (the metrics of its templates, with their arguments resolved when
    it started)."""

    started_at: float
    metrics: tuple[MetricResult, ...] = ()
    phase: AnalysisPhase = AnalysisPhase.RUNNING
    message: str = ""
    args: tuple[tuple[str, str], ...] = ()

    def result(self, name: str) -> MetricResult:
        return next((r for r in self.metrics if r.name == name), MetricResult(name))

    @property
    def stopping(self) -> bool:
        return any(r.phase.stops_run for r in self.metrics)


def effective_count(metric: Metric) -> int | None:
    """How many measurements complete a metric: ``count``, 1 without interval (a ``count`` of
    0 is no count), None (until the run ends) with an interval and no count."""
    if not metric.count:
        return 1 if metric.interval_seconds is None else None
    return metric.count


def _due_at(metric: Metric, run: AnalysisRun) -> float | None:
    """When ``metric`` measures next (None: never again in this run)."""
    result = run.result(metric.name)
    if result.phase.completed or run.stopping:
        return None
    if not result.measurements:
        return run.started_at + metric.initial_delay_seconds
    wanted = effective_count(metric)
    if wanted is not None and result.count >= wanted:
        return None
    last = result.measurements[-1]
    interval = metric.interval_seconds
    return last.finished_at + (ERROR_RETRY_SECONDS if interval is None else interval)


def due_metrics(metrics: Sequence[Metric], run: AnalysisRun, now: float) -> tuple[str, ...]:
    """The names of the metrics to measure at ``now`` (upstream ``generateMetricTasks``)."""
    return tuple(m.name for m in metrics if (at := _due_at(m, run)) is not None and now >= at)


def next_due_at(metrics: Sequence[Metric], run: AnalysisRun) -> float | None:
    """When the next measurement of the run is due (None: none is)."""
    return min((at for m in metrics if (at := _due_at(m, run)) is not None), default=None)


def assess_metric(metric: Metric, result: MetricResult, stopping: bool) -> tuple[AnalysisPhase, str]:
    """A metric's phase and why (upstream ``assessMetricStatus``)."""
    if result.phase.completed:
        return result.phase, result.message
    if not result.measurements:
        return (AnalysisPhase.SUCCESSFUL, "run stopped") if stopping else (AnalysisPhase.PENDING, "")
    name = f"metric {metric.name!r}"
    if result.failed > metric.failure_limit >= 0:
        why = f"failed ({result.failed}) > failureLimit ({metric.failure_limit})"
        return AnalysisPhase.FAILED, f"{name} assessed Failed due to {why}"
    if result.inconclusive > metric.inconclusive_limit >= 0:
        why = f"inconclusive ({result.inconclusive}) > inconclusiveLimit ({metric.inconclusive_limit})"
        return AnalysisPhase.INCONCLUSIVE, f"{name} assessed Inconclusive due to {why}"
    if result.consecutive_error > metric.consecutive_error_limit >= 0:
        limit = metric.consecutive_error_limit
        why = f"consecutiveErrors ({result.consecutive_error}) > consecutiveErrorLimit ({limit})"
        last = result.measurements[-1].message
        return AnalysisPhase.ERROR, f"{name} assessed Error due to {why}: {last}"
    wanted = effective_count(metric)
    if wanted is not None and result.count >= wanted:
        return AnalysisPhase.SUCCESSFUL, f"{name} measured {result.count} times"
    if stopping:
        return AnalysisPhase.SUCCESSFUL, "run stopped"
    return AnalysisPhase.RUNNING, ""


def advance(metrics: Sequence[Metric], run: AnalysisRun, fresh: Mapping[str, Measurement]) -> AnalysisRun:
    """``run`` with the ``fresh`` measurements (by metric name) counted and every phase assessed
    (upstream ``assessRunStatus``): Running while a metric is not complete, else the worst."""
    if run.phase.completed:
        return run
    results = [run.result(m.name) for m in metrics]
    results = [r.record(fresh[r.name]) if r.name in fresh else r for r in results]
    stopping = any(assess_metric(m, r, False)[0].stops_run for m, r in zip(metrics, results, strict=True))
    assessed = [
        dataclasses.replace(result, phase=phase, message=message, wanted=effective_count(metric))
        for metric, result in zip(metrics, results, strict=True)
        for phase, message in (assess_metric(metric, result, stopping),)
    ]
    phases = [r.phase for r in assessed]
    if not all(phase.completed for phase in phases) or not phases:
        return dataclasses.replace(run, metrics=tuple(assessed), phase=AnalysisPhase.RUNNING)
    worst = AnalysisPhase.SUCCESSFUL
    message = ""
    for result in assessed:
        if worse(worst, result.phase) is not worst:
            worst, message = result.phase, result.message
    return dataclasses.replace(run, metrics=tuple(assessed), phase=worst, message=message)
