"""The analysis measurements of a pass: what the canary's analysis step wants measured now
(:func:`~gitdeploy.core.rollout.canarywalk.canary_due_measurements`), measured through the
providers before the pass plans, and handed to it in the snapshot.

A job metric (:mod:`~gitdeploy.core.rollout.analysisjobs`) is measured by a pod: the first pass
that wants it creates the pod and hands the pass a Running (in flight) measurement; the passes
after read the pod from the snapshot (its name says which measurement it is), in flight until it
ended, then Successful or Failed. A pod the API refuses (Pod Security, an invalid spec) is an Error
measurement saying why, as upstream's job provider makes a Job it cannot create. Analysis pods
no measurement wants any more are deleted (finished ones beyond the last few kept for their logs).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import Measurement, StepMeasurement
from gitdeploy.core.analysistemplates import JobProvider
from gitdeploy.core.rollout import Snapshot, Target
from gitdeploy.core.rollout.analysisjobs import (
    JobSlot,
    canary_job_slots,
    job_measurement,
    job_progress,
    stale_analysis_pods,
)
from gitdeploy.core.rollout.canarywalk import canary_due_measurements
from gitdeploy.errors import AlreadyExistsError, PermanentError
from gitdeploy.providers.measure import measure

log = logging.getLogger("gitdeploy.rollout")


def measured(
    target: Target, snapshot: Snapshot, now: float, clock: Clock, cluster: Cluster, fence: Callable[[], None]
) -> Snapshot:
    """``snapshot`` with the measurements due at ``now`` taken, one after the other, each
    bounded by its provider's timeout (a job metric's: started, or read from its pod), and the
    analysis pods no measurement wants deleted (none due: ``snapshot`` as it is). ``fence`` is
    called before each write (it raises when this process may no longer write for the app)."""
    due = canary_due_measurements(target, snapshot, now)
    slots = {(s.step, s.metric.name): s for s in canary_job_slots(target, snapshot, now)} if due else {}
    for name in stale_analysis_pods(snapshot.pods, (s.pod.name for s in slots.values())):
        fence()
        cluster.delete_pod(target.app.namespace, name)
        log.info("[%s] analysis pod %s deleted: no measurement wants it", target.app.key, name)
    if not due:
        return snapshot
    taken = tuple(
        StepMeasurement(
            revision,
            step,
            metric.name,
            _by_pod(target, snapshot, slots[step, metric.name], cluster, now, fence)
            if isinstance(metric.provider, JobProvider)
            else measure(metric, clock.now),
        )
        for revision, step, metric in due
    )
    for fresh in taken:
        m = fresh.measurement
        if m.phase is not AnalysisPhase.RUNNING:
            log.info(
                "[%s] analysis metric %s: %s %s %s", target.app.key, fresh.metric, m.phase, m.value, m.message
            )
    return dataclasses.replace(snapshot, measurements=taken)


def _by_pod(
    target: Target, snapshot: Snapshot, slot: JobSlot, cluster: Cluster, now: float, fence: Callable[[], None]
) -> Measurement:
    """The measurement of a job metric from its pods, with the pod it needs created now (its
    first, or the next attempt after a failed one)."""
    measurement, wanted = job_progress(slot, snapshot.pods, now)
    if wanted is None:
        return measurement
    fence()
    try:
        created = cluster.create_pod(wanted)
    except AlreadyExistsError:  # made by a pass whose snapshot was read before (or still going)
        return Measurement(AnalysisPhase.RUNNING, now, now, f"pod {wanted.name} exists")
    except PermanentError as refused:
        why = f"pod {wanted.name} of metric {slot.metric.name!r} was refused: {refused.message}"
        return Measurement(AnalysisPhase.ERROR, now, now, message=why)
    log.info("[%s] analysis metric %s: pod %s started", target.app.key, slot.metric.name, wanted.name)
    return job_measurement(created, now)
