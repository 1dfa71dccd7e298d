"""The ``job`` provider of an analysis: each measurement runs a pod, built from the metric's
batch/v1 Job spec, and is Successful when the pod succeeds, Failed when it fails.

gitdeploy runs the Job's pod itself rather than a batch/v1 Job (its embedded cluster has no Job
controller, and deploy/'s Role then needs nothing beyond the pods it already creates for hooks):

* the pod is ``spec.template`` of the Job (its labels and annotations, and the Job's own
  ``metadata``, on the pod), its ``restartPolicy`` as written (``Never`` or ``OnFailure``, as a Job
  requires), the Job's ``activeDeadlineSeconds`` on the pod (a pod past it is Failed, as a Job past
  it), and the securityContext defaults of hook pods (Pod Security "restricted");
* ``backoffLimit`` (6 by default, as a Job's) as a Job with ``restartPolicy: Never`` honours it: a
  pod that fails is followed by another (``...-retry2``, ``...-retry3``: the attempt is also the
  pod's ``gitdeploy.io/attempt``) after the Job controller's back-off (10 s, doubled each time, at
  most 6 min), until ``backoffLimit`` pods after the first failed: the measurement is then Failed.
  With ``restartPolicy: OnFailure`` the kubelet restarts the container inside the same pod, and the
  measurement ends with the pod (Succeeded, or Failed at its deadline); those restarts are not
  counted against ``backoffLimit`` as a Job would count them;
* the pod is named after the canary's ReplicaSet, a digest of the run (revision, step, run start,
  metric), the measurement's number and the attempt (:func:`analysis_pod_name`), labelled
  ``gitdeploy.io/pod-role: analysis`` (never taken for a hook or for one of the ReplicaSet's pods) and
  owned by the canary's ReplicaSet (garbage-collected with it).

A measurement is *in flight* while its pod runs: nothing about it is written to the run (kept in
the ReplicaSet's annotation); the pod itself is its state. A pass finds the pod by its name, which
depends only on what the run annotation keeps, so a restarted gitdeploy picks up the same pod and
never starts a second one for the same measurement; once the pod ended, the pass counts its
measurement. Pods of measurements no longer wanted (the run ended, the step was promoted, the
canary aborted or replaced) are deleted while they run; finished ones stay for their logs, the last
:data:`KEPT_PODS` of each metric's run (:func:`stale_analysis_pods`).

>>> spec = ('{"backoffLimit":1,"template":{"spec":{"containers":[{"name":"t","image":"busybox"}],'
...         '"restartPolicy":"Never"}}}')
>>> pod = build_analysis_pod(JobProvider(spec), namespace="shop", app="web", replica_set="web-abc",
...     owner_uid="u", revision=2, step=1, run_started=100.0, metric="smoke", index=1)
>>> pod.name, pod.role, pod.spec()["restartPolicy"]
('web-abc-analysis-8740e8-1', 'analysis', 'Never')
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import MEASUREMENT_HISTORY_LIMIT, Measurement
from gitdeploy.core.analysistemplates import JobProvider, Metric
from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.models import App
from gitdeploy.core.observed import ObservedPod, PodPhase, PodSpec
from gitdeploy.core.rollout.canaryanalysis import stored_run
from gitdeploy.core.rollout.canarywalk import canary_due_measurements
from gitdeploy.core.rollout.hooks import restricted_container_security, restricted_pod_security
from gitdeploy.core.rollout.inputs import Snapshot, Target

ANALYSIS_ROLE = "analysis"
"""The ``gitdeploy.io/pod-role`` of a job metric's pod."""
ANALYSIS_ANNOTATION = "gitdeploy.io/analysis"
"""On the pod: ``<revision>:<step>:<metric>:<number>`` (step -1: the background analysis)."""
KEPT_PODS = MEASUREMENT_HISTORY_LIMIT
"""The finished pods kept per metric and run (for their logs), as its measurements are."""
_OUR_LABELS = (TEMPLATE_HASH_LABEL,)
DEFAULT_BACKOFF_LIMIT = 6
"""A Job's ``backoffLimit`` when it sets none."""
BACKOFF_SECONDS = 10.0
MAX_BACKOFF_SECONDS = 360.0
_NAME = re.compile(r"^(.*)-([0-9]+)(?:-retry([0-9]+))?$")


@dataclass(frozen=True, slots=True)
class JobSlot:
    """A measurement of a job metric that a pass wants taken: the pod that takes it."""

    revision: int
    step: int
    metric: Metric
    pod: PodSpec
    """Its first attempt (:func:`attempt_of` makes the others)."""
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT


def runs_analysis_pods(app: App) -> bool:
    """Whether a pass over ``app`` may have analysis pods to look at: a canary whose analysis
    templates have a job metric (the loop then lists the app's pods, as for hooks)."""
    params = app.strategy.canary
    templates = params.templates if params is not None else ()
    return any(isinstance(m.provider, JobProvider) for t in templates for m in t.metrics)


def analysis_pod_name(
    replica_set: str, revision: int, step: int, run_started: float, metric: str, index: int
) -> str:
    """``<replica set>-analysis-<digest of the run and metric>-<measurement number>`` (its first
    attempt; the next ones add ``-retry<attempt>``).

    >>> analysis_pod_name("web-abc", 2, 1, 100.0, "smoke", 3)
    'web-abc-analysis-8740e8-3'
    """
    digest = hashlib.sha256(f"{revision}:{step}:{run_started:.0f}:{metric}".encode()).hexdigest()[:6]
    return f"{replica_set}-{ANALYSIS_ROLE}-{digest}-{index}"


def attempt_of(first: PodSpec, attempt: int) -> PodSpec:
    """The pod of ``attempt`` (1: ``first`` itself).

    >>> from gitdeploy.core.observed import PodSpec
    >>> first = PodSpec("ns", "web-a-analysis-8740e8-3", "web", "analysis", 2, 1, 0.0, "web-a", "u", "{}")
    >>> attempt_of(first, 2).name
    'web-a-analysis-8740e8-3-retry2'
    """
    if attempt == 1:
        return first
    return dataclasses.replace(first, name=f"{first.name}-retry{attempt}", attempt=attempt)


def _parts(name: str) -> tuple[str, int, int] | None:
    """``(run and metric, measurement number, attempt)`` of an analysis pod's name."""
    match = _NAME.match(name)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3) or 1)


def _metadata(provider: JobProvider, template: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations of the pod: the Job's, then its template's (gitdeploy's own
    template-hash label dropped: the pod must never be one of the ReplicaSet's)."""
    job = json.loads(provider.metadata_json)
    pod = template.get("metadata") or {}
    labels = {**(job.get("labels") or {}), **(pod.get("labels") or {})}
    annotations = {**(job.get("annotations") or {}), **(pod.get("annotations") or {})}
    return {k: str(v) for k, v in labels.items() if k not in _OUR_LABELS}, {
        k: str(v) for k, v in annotations.items()
    }


def _pod_spec(job: dict[str, Any]) -> dict[str, Any]:
    spec = dict((job.get("template") or {}).get("spec") or {})
    spec["securityContext"] = restricted_pod_security(spec.get("securityContext"))
    for kind in ("initContainers", "containers"):
        if kind in spec:
            spec[kind] = [
                {**c, "securityContext": restricted_container_security(c.get("securityContext"))}
                for c in spec[kind]
            ]
    deadline = job.get("activeDeadlineSeconds")
    if deadline is not None and "activeDeadlineSeconds" not in spec:
        spec["activeDeadlineSeconds"] = deadline
    return spec


def build_analysis_pod(
    provider: JobProvider,
    *,
    namespace: str,
    app: str,
    replica_set: str,
    owner_uid: str,
    revision: int,
    step: int,
    run_started: float,
    metric: str,
    index: int,
) -> PodSpec:
    """The pod of measurement number ``index`` of ``metric`` in the run of ``revision``'s step."""
    job = json.loads(provider.spec_json)
    labels, annotations = _metadata(provider, job.get("template") or {})
    annotations[ANALYSIS_ANNOTATION] = f"{revision}:{step}:{metric}:{index}"
    return PodSpec(
        namespace=namespace,
        name=analysis_pod_name(replica_set, revision, step, run_started, metric, index),
        app=app,
        role=ANALYSIS_ROLE,
        revision=revision,
        attempt=1,
        first_attempt_at=run_started,
        owner_name=replica_set,
        owner_uid=owner_uid,
        spec_json=json.dumps(_pod_spec(job), sort_keys=True, separators=(",", ":")),
        labels_json=json.dumps(labels, sort_keys=True),
        annotations_json=json.dumps(annotations, sort_keys=True),
    )


def canary_job_slots(target: Target, snapshot: Snapshot, now: float) -> tuple[JobSlot, ...]:
    """The job measurements a pass over ``target`` at ``now`` wants taken (the job metrics among
    :func:`~gitdeploy.core.rollout.canarywalk.canary_due_measurements`), each with its pod."""
    wanted = canary_due_measurements(target, snapshot, now)
    due = [d for d in wanted if isinstance(d[2].provider, JobProvider)]
    rs = next((r for r in snapshot.replica_sets if r.state.template_hash == target.template_hash), None)
    if not due or rs is None:
        return ()
    slots = []
    for revision, step, metric in due:
        run = stored_run(rs, step)
        assert run is not None and isinstance(metric.provider, JobProvider)  # due: its run started
        result = run.result(metric.name)
        pod = build_analysis_pod(
            metric.provider,
            namespace=rs.namespace,
            app=rs.app,
            replica_set=rs.name,
            owner_uid=rs.uid,
            revision=revision,
            step=step,
            run_started=run.started_at,
            metric=metric.name,
            index=result.count + result.error + 1,
        )
        limit = json.loads(metric.provider.spec_json).get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
        slots.append(JobSlot(revision, step, metric, pod, int(limit)))
    return tuple(slots)


def job_measurement(pod: ObservedPod, now: float) -> Measurement:
    """The measurement a job metric's pod gives: Running while it runs (in flight), Successful
    once it Succeeded, Failed once it Failed (the value says how it ended).

    >>> job_measurement(ObservedPod("shop", "p", ANALYSIS_ROLE, "Running", 2, created_at=5.0), 9.0).phase
    <AnalysisPhase.RUNNING: 'Running'>
    >>> failed = job_measurement(ObservedPod("shop", "p", ANALYSIS_ROLE, "Failed", 2, created_at=5.0,
    ...     finished_at=8.0, exit_code=3, reason="Error"), 9.0)
    >>> failed.phase, failed.started_at, failed.finished_at, failed.value
    (<AnalysisPhase.FAILED: 'Failed'>, 5.0, 8.0, 'pod p Failed (exit code 3, Error)')
    """
    if pod.phase == PodPhase.SUCCEEDED:
        return Measurement(AnalysisPhase.SUCCESSFUL, pod.created_at, pod.finished_at or now, "pod Succeeded")
    if pod.phase == PodPhase.FAILED:
        how = ", ".join(part for part in (_exit(pod.exit_code), pod.reason) if part)
        value = f"pod {pod.name} Failed" + (f" ({how})" if how else "")
        return Measurement(AnalysisPhase.FAILED, pod.created_at, pod.finished_at or now, value)
    return Measurement(AnalysisPhase.RUNNING, pod.created_at, pod.created_at, f"pod {pod.name} {pod.phase}")


def backoff_seconds(failed: int) -> float:
    """The Job controller's wait before the pod after ``failed`` failed ones.

    >>> [backoff_seconds(n) for n in (1, 2, 3, 7)]
    [10.0, 20.0, 40.0, 360.0]
    """
    return float(min(BACKOFF_SECONDS * 2 ** (failed - 1), MAX_BACKOFF_SECONDS))


def job_progress(
    slot: JobSlot, pods: Sequence[ObservedPod], now: float
) -> tuple[Measurement, PodSpec | None]:
    """Where the measurement of ``slot`` stands, from its pods, and the pod to create now if
    any: the first; the next attempt once the last failed, its back-off is over and
    ``backoffLimit`` allows it. In flight (Running) until a pod succeeded or the last allowed
    one failed.

    >>> from gitdeploy.core.observed import PodSpec
    >>> slot = JobSlot(2, 1, Metric("smoke", JobProvider("{}")),
    ...     PodSpec("ns", "w-analysis-d-1", "web", ANALYSIS_ROLE, 2, 1, 0.0, "w", "u", "{}"), backoff_limit=1)
    >>> def failed(name, attempt): return ObservedPod("ns", name, ANALYSIS_ROLE, "Failed", 2, attempt,
    ...     created_at=5.0, finished_at=8.0, exit_code=1)
    >>> job_progress(slot, [], 9.0)[1].name
    'w-analysis-d-1'
    >>> once = [failed("w-analysis-d-1", 1)]
    >>> [(m.phase.value, p and p.name) for t in (9.0, 18.0) for m, p in (job_progress(slot, once, t),)]
    [('Running', None), ('Running', 'w-analysis-d-1-retry2')]
    >>> job_progress(slot, [failed("w-analysis-d-1", 1), failed("w-analysis-d-1-retry2", 2)], 30.0)[0].value
    'pod w-analysis-d-1-retry2 Failed (exit code 1), 2 pods failed (backoffLimit 1)'
    """
    mine = sorted(
        (attempt, p)
        for p in pods
        if (parts := _parts(p.name)) is not None and p.role == ANALYSIS_ROLE
        for _, _, attempt in (parts,)
        if attempt_of(slot.pod, attempt).name == p.name
    )
    if not mine:
        return Measurement(AnalysisPhase.RUNNING, now, now, "starting"), slot.pod
    attempt, last = mine[-1]
    measured = job_measurement(last, now)
    first = mine[0][1].created_at
    if measured.phase is AnalysisPhase.SUCCESSFUL:
        return dataclasses.replace(measured, started_at=first), None
    if measured.phase is not AnalysisPhase.FAILED:
        return measured, None
    if attempt > slot.backoff_limit:
        why = f", {attempt} pods failed (backoffLimit {slot.backoff_limit})" if attempt > 1 else ""
        return dataclasses.replace(measured, started_at=first, value=measured.value + why), None
    waiting = Measurement(AnalysisPhase.RUNNING, first, first, f"{measured.value}, retried")
    retry_at = (last.finished_at or last.created_at) + backoff_seconds(attempt)
    return waiting, attempt_of(slot.pod, attempt + 1) if now >= retry_at else None


def _exit(code: int | None) -> str:
    return "" if code is None else f"exit code {code}"


def stale_analysis_pods(pods: Sequence[ObservedPod], wanted: Iterable[str]) -> tuple[str, ...]:
    """The analysis pods to delete: those running that no measurement wants (``wanted``: the
    first pods of the measurements due; their retries are wanted too), and the finished ones beyond the last
    :data:`KEPT_PODS` of their metric's run. Pods already going are left to go.

    >>> def pod(name, phase): return ObservedPod("shop", name, ANALYSIS_ROLE, phase, 2)
    >>> hook = ObservedPod("shop", "web-a-hook-pre", "hook-pre", "Running", 2)
    >>> done = [pod(f"web-a-analysis-aaaaaa-{n}", "Succeeded") for n in range(1, 13)]
    >>> stale_analysis_pods([hook, pod("web-a-analysis-bbbbbb-1", "Running"), *done], ())
    ('web-a-analysis-bbbbbb-1', 'web-a-analysis-aaaaaa-1', 'web-a-analysis-aaaaaa-2')
    >>> stale_analysis_pods([pod("web-a-analysis-bbbbbb-1", "Pending")], ["web-a-analysis-bbbbbb-1"])
    ()
    """
    keep = {parts[:2] for name in wanted if (parts := _parts(name)) is not None}
    mine = [
        (p, parts) for p in pods if p.role == ANALYSIS_ROLE and not p.deleting and (parts := _parts(p.name))
    ]
    doomed = [p.name for p, parts in mine if not p.terminal and parts[:2] not in keep]
    runs: dict[str, list[tuple[int, int, str]]] = {}
    for p, (base, number, attempt) in mine:
        if p.terminal:
            runs.setdefault(base, []).append((number, attempt, p.name))
    for finished in runs.values():
        doomed += [name for _, _, name in sorted(finished)[:-KEPT_PODS]]
    return tuple(doomed)
