"""The analysis measurements of a pass: what the canary's analysis step wants measured now
(:func:`~gitdeploy.core.rollout.canarywalk.canary_due_measurements`), measured through the
providers before the pass plans, and handed to it in the snapshot."""

from __future__ import annotations

import dataclasses
import logging

from gitdeploy.clock import Clock
from gitdeploy.core.analysis.runs import StepMeasurement
from gitdeploy.core.rollout import Snapshot, Target
from gitdeploy.core.rollout.canarywalk import canary_due_measurements
from gitdeploy.providers.measure import measure

log = logging.getLogger("gitdeploy.rollout")


def measured(target: Target, snapshot: Snapshot, now: float, clock: Clock) -> Snapshot:
    """``snapshot`` with the measurements due at ``now`` taken, one after the other, each
    bounded by its provider's timeout (none due: ``snapshot`` as it is)."""
    due = canary_due_measurements(target, snapshot, now)
    if not due:
        return snapshot
    taken = tuple(
        StepMeasurement(revision, step, metric.name, measure(metric, clock.now))
        for revision, step, metric in due
    )
    for fresh in taken:
        m = fresh.measurement
        log.info(
            "[%s] analysis metric %s: %s %s %s", target.app.key, fresh.metric, m.phase, m.value, m.message
        )
    return dataclasses.replace(snapshot, measurements=taken)
