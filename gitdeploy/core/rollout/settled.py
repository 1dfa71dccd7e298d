"""Apps with no rollout in progress: a settled one (its revision Complete) keeps its size,
has drift repaired and the history limit applied; a held one (paused, failed, or waiting for a
manual deploy) is only scaled."""

from __future__ import annotations

from gitdeploy.core.history.records import Outcome
from gitdeploy.core.observed import PHASE_ANNOTATION
from gitdeploy.core.rollout.context import DEFAULT_REQUEUE_SECONDS, RolloutContext
from gitdeploy.core.rollout.drift import DRIFT_CORRECTED, describe_correction, find_drift
from gitdeploy.core.rollout.outcome import cleanup
from gitdeploy.core.rollout.outputs import AppPhase, Event, PatchReplicaSet, Step
from gitdeploy.core.rollout.status import counts_status, status
from gitdeploy.core.scaling.progress import DeploymentStatus, record_pause
from gitdeploy.core.scaling.proportional import (
    compute_replica_annotations,
    is_scaling_event,
    needs_annotation_update,
    plan_proportional_scaling,
)
from gitdeploy.core.scaling.replicasets import ScaleAction
from gitdeploy.core.scaling.rollingmath import is_rolling


def settled(ctx: RolloutContext) -> Step:
    """The current revision is Complete: keep its size, repair drift, apply the history limit."""
    assert ctx.new is not None
    drift = find_drift(ctx.new, ctx.old, ctx.replicas)
    drifted = bool(drift)
    if is_scaling_event(ctx.replicas, ctx.states):
        ctx.scale(plan_proportional_scaling(ctx.bounds, ctx.new, ctx.old))
        drift = ()  # the app's size changed in git: not told apart from a hand change
    elif drifted and is_rolling(ctx.bounds.strategy):  # a canary ends as a rolling update
        ctx.scale(ctx.resync())
    elif drifted:
        ctx.scale([ScaleAction(rs.name, rs.replicas, 0) for rs in ctx.old if rs.is_active])
        if ctx.new.replicas != ctx.replicas:
            ctx.scale([ScaleAction(ctx.new.name, ctx.new.replicas, ctx.replicas)])
    elif needs_annotation_update(ctx.new, compute_replica_annotations(ctx.bounds)):
        ctx.annotate(ctx.new.name, *ctx.replica_annotations()[:2])
    if drift:
        scaled_to = {action.name: action.to_replicas for action in ctx.scaled}
        ctx.events.append(Event(DRIFT_CORRECTED, describe_correction(drift, scaled_to), warning=True))
    if ctx.by_name[ctx.new.name].annotation(PHASE_ANNOTATION) != Outcome.COMPLETE.value:
        ctx.annotate(ctx.new.name, (PHASE_ANNOTATION, Outcome.COMPLETE.value))
    cleanup(ctx)
    now = status(ctx)
    steady = not any(isinstance(a, PatchReplicaSet) and a.replicas is not None for a in ctx.actions)
    requeue = None if steady and ctx.is_complete() else DEFAULT_REQUEUE_SECONDS
    return ctx.step(AppPhase.COMPLETE, f"revision {ctx.new.revision} complete", requeue, now)


def held(ctx: RolloutContext, phase: AppPhase, message: str) -> Step:
    """No rollout may progress (paused, or waiting for a manual deploy): only scaling applies."""
    new = ctx.new if not ctx.needs_new_revision() else None
    old = [rs for rs in ctx.states if new is None or rs.name != new.name]
    if is_scaling_event(ctx.replicas, ctx.states):
        ctx.scale(plan_proportional_scaling(ctx.bounds, new, old))
    counted = counts_status(ctx, new, ctx.states, ctx.previous or DeploymentStatus())
    paused = record_pause(
        counted,
        paused=phase == AppPhase.PAUSED,
        progress_deadline_seconds=ctx.deadline_seconds(),
        now=ctx.now,
    )
    return ctx.step(phase, message, None, paused)
