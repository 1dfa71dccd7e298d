"""A canary's ``analysis`` step: the run of its AnalysisTemplates' metrics, kept in the canary
ReplicaSet's :data:`CANARY_ANALYSIS_ANNOTATION` (:mod:`~gitdeploy.core.analysis.stored`).

The background analysis (``strategy.canary.analysis``) runs the same way beside the steps, from
``startingStep`` to the end of the steps, kept in :data:`CANARY_BACKGROUND_ANNOTATION`.

The walk reaching an analysis step starts its run (the arguments resolved then: a pod-template
hash is the stable's or the canary's of that moment); before each pass the controller asks
:func:`~gitdeploy.core.rollout.canarywalk.canary_due_measurements` which metrics to measure,
measures them (:mod:`gitdeploy.providers`) and hands the measurements to the pass in the
snapshot; :func:`step_run` counts them and assesses the run. Successful: the walk goes on;
Inconclusive: it waits for ``rollout promote`` (as upstream pauses); Failed or Error: the
rollout aborts by itself, its reason naming the metric and its measurements
(:func:`failure_summary`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import AnalysisRun, StepMeasurement, advance, due_metrics, next_due_at
from gitdeploy.core.analysis.stored import decode_run
from gitdeploy.core.analysis.templates import TemplateError, resolve_args, run_metrics
from gitdeploy.core.analysistemplates import Metric
from gitdeploy.core.canarystate import (
    BACKGROUND_RUN_KEY,
    CANARY_ANALYSIS_ANNOTATION,
    CANARY_BACKGROUND_ANNOTATION,
)
from gitdeploy.core.canarysteps import AnalysisRef, AnalysisStep, CanaryParams
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout.inputs import Snapshot
from gitdeploy.core.timestamps import format_timestamp

BACKGROUND = BACKGROUND_RUN_KEY
"""The key of the background analysis's run (a step's run has the step's index)."""
SOON_SECONDS = 0.1
"""The requeue of a pass whose run has a measurement due at once (the controller takes it)."""
JOB_POLL_SECONDS = 1.0
"""How soon a pass looks again at a measurement in flight (a job metric's pod that runs, as a
running hook pod is looked at)."""


def analysis_ref(params: CanaryParams, key: int) -> AnalysisRef | None:
    """The analysis a run ``key`` runs: the step's at that index, the background one for
    :data:`BACKGROUND` (None: there is none)."""
    if key == BACKGROUND:
        return params.analysis.analysis if params.analysis is not None else None
    step = params.steps[key] if 0 <= key < len(params.steps) else None
    return step.analysis if isinstance(step, AnalysisStep) else None


def annotation_of(key: int) -> str:
    return CANARY_BACKGROUND_ANNOTATION if key == BACKGROUND else CANARY_ANALYSIS_ANNOTATION


def stored_run(rs: ObservedReplicaSet, key: int) -> AnalysisRun | None:
    return decode_run(rs.annotation(annotation_of(key)), rs.state.revision, key)


def _metrics(params: CanaryParams, ref: AnalysisRef, run: AnalysisRun) -> tuple[Metric, ...]:
    return run_metrics(ref, params.templates, dict(run.args))


def due_now(
    params: CanaryParams, rs: ObservedReplicaSet, key: int, now: float
) -> tuple[tuple[int, int, Metric], ...]:
    """``(revision, key, metric)`` of each metric of ``rs``'s run ``key`` due at ``now``
    (nothing when there is no such analysis, or its run has not started or is over)."""
    ref = analysis_ref(params, key)
    run = stored_run(rs, key) if ref is not None else None
    if ref is None or run is None or run.phase.completed:
        return ()
    try:
        metrics = _metrics(params, ref, run)
    except TemplateError:  # step_run ends such a run as an Error
        return ()
    due = due_metrics(metrics, run, now)
    return tuple((rs.state.revision, key, metric) for metric in metrics if metric.name in due)


def step_run(
    params: CanaryParams,
    rs: ObservedReplicaSet,
    key: int,
    hashes: tuple[str, str],
    snapshot: Snapshot,
    now: float,
    *,
    again: bool = False,
) -> AnalysisRun:
    """The run ``key`` (a step's index, or :data:`BACKGROUND`) of ``rs``'s revision after this
    pass: started now if it was not (``hashes``: the stable's and the canary's pod-template
    hash), with the snapshot's fresh measurements counted; ``again``: a new run, whatever is
    kept. A template or argument missing ends it as an Error."""
    ref = analysis_ref(params, key)
    assert ref is not None
    revision = rs.state.revision
    run = None if again else stored_run(rs, key)
    started = float(math.ceil(now)) if run is None else run.started_at
    try:
        if run is None:
            stable, latest = hashes
            args = resolve_args(ref, params.templates, stable_hash=stable, latest_hash=latest)
            run = AnalysisRun(started, args=args)
        metrics = _metrics(params, ref, run)
    except TemplateError as problem:
        return AnalysisRun(started, phase=AnalysisPhase.ERROR, message=str(problem))
    fresh = {
        m.metric: m.measurement
        for m in snapshot.measurements
        if (m.revision, m.step) == (revision, key) and m.measurement.phase is not AnalysisPhase.RUNNING
    }
    return advance(metrics, run, fresh)


def in_flight(measurements: Sequence[StepMeasurement], revision: int, key: int) -> frozenset[str]:
    """The metrics of the run ``key`` of ``revision`` whose measurement is in flight (a job
    metric's pod still runs: the controller hands it over as a Running measurement)."""
    return frozenset(
        m.metric
        for m in measurements
        if (m.revision, m.step) == (revision, key) and m.measurement.phase is AnalysisPhase.RUNNING
    )


def requeue_after(
    params: CanaryParams, key: int, run: AnalysisRun, now: float, running: frozenset[str] = frozenset()
) -> float | None:
    """Seconds until the run's next measurement (at least :data:`SOON_SECONDS`); ``running``:
    the metrics whose measurement is in flight, looked at again in :data:`JOB_POLL_SECONDS`."""
    ref = analysis_ref(params, key)
    if ref is None or run.phase.completed:
        return None
    try:
        due = next_due_at([m for m in _metrics(params, ref, run) if m.name not in running], run)
    except TemplateError:
        return None
    polled = now + JOB_POLL_SECONDS if running else None
    due = min((at for at in (due, polled) if at is not None), default=None)
    return None if due is None else max(due - now, SOON_SECONDS)


def in_background(params: CanaryParams, step: int) -> bool:
    """Whether the background analysis runs while the walk is at ``step``: from its
    ``startingStep`` to the end of the steps.

    >>> from gitdeploy.core.canarysteps import BackgroundAnalysis, Pause, SetWeight
    >>> params = CanaryParams((SetWeight(50), Pause()), analysis=BackgroundAnalysis(AnalysisRef(("a",)), 1))
    >>> [in_background(params, step) for step in range(3)]
    [False, True, False]
    """
    background = params.analysis
    return background is not None and background.starting_step <= step < len(params.steps)


def background_run(
    params: CanaryParams,
    rs: ObservedReplicaSet,
    at: tuple[int, int | None],
    hashes: tuple[str, str],
    snapshot: Snapshot,
    now: float,
) -> AnalysisRun | None:
    """The background analysis's run after this pass, while the walk (``at``: its step and the
    step someone promoted) is at or past ``startingStep`` and before the end of the steps (None:
    there is none). A promote while it is Inconclusive starts a new one, as upstream resumes."""
    step, promoted = at
    if not in_background(params, step):
        return None
    kept = stored_run(rs, BACKGROUND)
    again = kept is not None and kept.phase is AnalysisPhase.INCONCLUSIVE and promoted == step
    return step_run(params, rs, BACKGROUND, hashes, snapshot, now, again=again)


def describe_run(params: CanaryParams, key: int) -> str:
    """``analysis success-rate`` (a step's) or ``background analysis success-rate``."""
    ref = analysis_ref(params, key)
    assert ref is not None
    return f"{'background ' if key == BACKGROUND else ''}analysis {', '.join(ref.templates)}"


def progress(run: AnalysisRun, running: frozenset[str] = frozenset()) -> str:
    """What a running analysis has measured so far, for the status message (``running``: the
    metrics whose measurement is in flight).

    >>> from gitdeploy.core.analysis.runs import MetricResult
    >>> progress(AnalysisRun(0.0, (MetricResult("rate", count=2, successful=2), MetricResult("up"))))
    'analysis running (rate: 2 measured, 2 successful; up: not measured yet)'
    >>> progress(AnalysisRun(0.0, (MetricResult("smoke"),)), frozenset({"smoke"}))
    'analysis running (smoke: not measured yet, measuring)'
    """
    parts = [
        (
            f"{r.name}: {r.count} measured, {r.successful} successful"
            + (f", {r.error} errors" if r.error else "")
            if r.count or r.error
            else f"{r.name}: not measured yet"
        )
        + (", measuring" if r.name in running else "")
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
