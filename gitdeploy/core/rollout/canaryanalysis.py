"""A canary's ``analysis`` step: the run of its AnalysisTemplates' metrics, kept in the canary
ReplicaSet's :data:`CANARY_ANALYSIS_ANNOTATION` (:mod:`~gitdeploy.core.analysis.stored`).

The walk reaching an analysis step starts its run (the arguments resolved then: a pod-template
hash is the stable's or the canary's of that moment); before each pass the controller asks
:func:`due_measurements` which metrics to measure, measures them (:mod:`gitdeploy.providers`)
and hands the measurements to the pass in the snapshot; :func:`step_run` counts them and
assesses the run. Successful: the walk goes on; Inconclusive: it waits for ``rollout promote``
(as upstream pauses); Failed or Error: the rollout aborts by itself, its reason naming the
metric and its measurements (:func:`failure_summary`).
"""

from __future__ import annotations

import math

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun, advance, due_metrics, next_due_at
from gitdeploy.core.analysis.stored import decode_run
from gitdeploy.core.analysis.templates import TemplateError, resolve_args, run_metrics
from gitdeploy.core.analysistemplates import Metric
from gitdeploy.core.canarysteps import AnalysisStep, CanaryParams
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout.inputs import Snapshot
from gitdeploy.core.timestamps import format_timestamp

CANARY_ANALYSIS_ANNOTATION = "gitdeploy.io/canary-analysis"
SOON_SECONDS = 0.1
"""The requeue of a pass whose run has a measurement due at once (the controller takes it)."""


def analysis_step(params: CanaryParams, index: int) -> AnalysisStep | None:
    step = params.steps[index] if 0 <= index < len(params.steps) else None
    return step if isinstance(step, AnalysisStep) else None


def _metrics(params: CanaryParams, step: AnalysisStep, run: AnalysisRun) -> tuple[Metric, ...]:
    return run_metrics(step.analysis, params.templates, dict(run.args))


def due_now(
    params: CanaryParams, rs: ObservedReplicaSet, index: int, now: float
) -> tuple[tuple[int, int, Metric], ...]:
    """``(revision, step, metric)`` of each metric of ``rs``'s run at step ``index`` due at
    ``now`` (nothing when that step is no analysis, or its run has not started or is over)."""
    step = analysis_step(params, index)
    revision = rs.state.revision
    run = decode_run(rs.annotation(CANARY_ANALYSIS_ANNOTATION), revision, index) if step else None
    if step is None or run is None or run.phase.completed:
        return ()
    try:
        metrics = _metrics(params, step, run)
    except TemplateError:  # step_run ends such a run as an Error
        return ()
    due = due_metrics(metrics, run, now)
    return tuple((revision, index, metric) for metric in metrics if metric.name in due)


def step_run(
    params: CanaryParams,
    rs: ObservedReplicaSet,
    index: int,
    hashes: tuple[str, str],
    snapshot: Snapshot,
    now: float,
) -> AnalysisRun:
    """The run of ``rs``'s analysis step ``index`` after this pass: started now if it was not
    (``hashes``: the stable's and the canary's pod-template hash), with the snapshot's fresh
    measurements counted. A template or argument missing ends it as an Error."""
    step = analysis_step(params, index)
    assert step is not None
    revision = rs.state.revision
    run = decode_run(rs.annotation(CANARY_ANALYSIS_ANNOTATION), revision, index)
    started = float(math.ceil(now)) if run is None else run.started_at
    try:
        if run is None:
            stable, latest = hashes
            args = resolve_args(step.analysis, params.templates, stable_hash=stable, latest_hash=latest)
            run = AnalysisRun(started, args=args)
        metrics = _metrics(params, step, run)
    except TemplateError as problem:
        return AnalysisRun(started, phase=AnalysisPhase.ERROR, message=str(problem))
    fresh = {
        m.metric: m.measurement for m in snapshot.measurements if (m.revision, m.step) == (revision, index)
    }
    return advance(metrics, run, fresh)


def requeue_after(params: CanaryParams, index: int, run: AnalysisRun, now: float) -> float | None:
    """Seconds until the run's next measurement (at least :data:`SOON_SECONDS`)."""
    step = analysis_step(params, index)
    if step is None or run.phase.completed:
        return None
    try:
        due = next_due_at(_metrics(params, step, run), run)
    except TemplateError:
        return None
    return None if due is None else max(due - now, SOON_SECONDS)


def progress(run: AnalysisRun) -> str:
    """What a running analysis has measured so far, for the status message.

    >>> from gitdeploy.core.analysis.runs import MetricResult
    >>> progress(AnalysisRun(0.0, (MetricResult("rate", count=2, successful=2), MetricResult("up"))))
    'analysis running (rate: 2 measured, 2 successful; up: not measured yet)'
    """
    parts = [
        f"{r.name}: {r.count} measured, {r.successful} successful"
        + (f", {r.error} errors" if r.error else "")
        if r.count or r.error
        else f"{r.name}: not measured yet"
        for r in run.metrics
    ]
    return f"analysis running ({'; '.join(parts)})"


def failure_summary(run: AnalysisRun) -> str:
    """Why the run failed, with the measurements of the metric that made it fail.

    >>> from gitdeploy.core.analysis.runs import Measurement, MetricResult
    >>> failed = MetricResult("rate", AnalysisPhase.FAILED,
    ...     (Measurement(AnalysisPhase.FAILED, 0.0, 1.0, "[0.42]"),), message="metric 'rate' assessed Failed")
    >>> failure_summary(AnalysisRun(0.0, (failed,), AnalysisPhase.FAILED, "metric 'rate' assessed Failed"))
    "metric 'rate' assessed Failed; measurements of rate: Failed [0.42] at 1970-01-01T00:00:01Z"
    """
    culprit = next((r for r in run.metrics if r.phase is run.phase), None)
    if culprit is None or not culprit.measurements:
        return run.message
    told = ", ".join(
        f"{m.phase.value} {m.value or m.message} at {format_timestamp(m.finished_at)}"
        for m in culprit.measurements
    )
    return f"{run.message}; measurements of {culprit.name}: {told}"
