"""RollingUpdate (Deployment) and Rolling (DeploymentConfig): the new ReplicaSet grows and the
old ones shrink within maxSurge/maxUnavailable, wave after wave (the math is
:mod:`gitdeploy.core.scaling.rollingmath`; proportional scaling
:mod:`gitdeploy.core.scaling.proportional`)."""

from __future__ import annotations

import dataclasses

from gitdeploy.core.models import AppKind, HookPhase
from gitdeploy.core.rollout.completion import after_scaling
from gitdeploy.core.rollout.context import (
    STATUS_BEHIND,
    WATCHED_REQUEUE_SECONDS,
    RolloutContext,
    intervals,
)
from gitdeploy.core.rollout.hookgate import hook_gate
from gitdeploy.core.rollout.outcome import finish
from gitdeploy.core.rollout.outputs import AppPhase, Step
from gitdeploy.core.rollout.status import status
from gitdeploy.core.scaling.proportional import is_scaling_event, plan_proportional_scaling
from gitdeploy.core.scaling.replicasets import ScaleAction, split_replica_sets
from gitdeploy.core.scaling.rollingmath import plan_new_replica_set_scale


def rolling_intervals(ctx: RolloutContext) -> tuple[float, float]:
    """``(after a scale, while waiting)`` of a rolling update (see :func:`intervals`), which
    waits for ReplicaSet status only: while a watch tells the loop of it, they are fallbacks."""
    if ctx.watched and ctx.app.kind is not AppKind.DEPLOYMENT_CONFIG:
        return WATCHED_REQUEUE_SECONDS, WATCHED_REQUEUE_SECONDS
    return intervals(ctx.app)


def start_rolling(ctx: RolloutContext, created: bool) -> float:
    """At a revision's start: the first wave at once (not one scale per pass), unless hooks run
    first. Returns when to look again."""
    if ctx.app.strategy.hooks:
        return 0.0  # the pre hook goes on at once
    assert ctx.new is not None
    if created and ctx.app.kind is AppKind.DEPLOYMENT_CONFIG:
        # A DeploymentConfig's step is one pass, besides the creation that sizes its ReplicaSet.
        grown = plan_new_replica_set_scale(ctx.bounds, ctx.new, ctx.old)
        ctx.scale([grown] if grown is not None else [])
    ctx.scale(ctx.resync())
    return rolling_intervals(ctx)[0]


def rolling(ctx: RolloutContext) -> Step:
    """One step of a rolling update in progress: the pre hook, the scales the bounds allow now,
    then completion (after the post hook), the deadline, or waiting for pods."""
    assert ctx.new is not None
    params = ctx.app.strategy.rolling
    gate = hook_gate(ctx, HookPhase.PRE, params.pre if params else None, status(ctx))
    if gate is not None:
        return gate
    after_scale, waiting = rolling_intervals(ctx)
    if not ctx.observed_current():
        return ctx.step(AppPhase.PROGRESSING, STATUS_BEHIND, waiting, status(ctx))
    proportional: tuple[ScaleAction, ...] = ()
    if is_scaling_event(ctx.replicas, ctx.states):
        proportional = plan_proportional_scaling(ctx.bounds, ctx.new, ctx.old)
    ctx.scale(ctx.resync(proportional))
    post = params.post if params else None
    if ctx.actions and post is None and drains_to_completion(ctx):
        return finish(ctx, status(ctx))
    now = status(ctx)
    if ctx.actions:
        return ctx.step(AppPhase.PROGRESSING, ctx.progress_message(), after_scale, now)
    return after_scaling(ctx, post, now, waiting)


def drains_to_completion(ctx: RolloutContext) -> bool:
    """Whether this step's scales complete the rollout: they take the last old ReplicaSets to 0
    while every new pod is available. If so, the step counts the pods of those ReplicaSets as
    gone, as Kubernetes does once their ReplicaSet controller deleted them, right after the
    write (terminating pods are not counted): the Deployment controller's next sync finds the
    rollout complete; the step that makes it so says so, and the rollout takes one pass fewer."""
    drained = {action.name for action in ctx.scaled if action.to_replicas == 0}
    states = [
        dataclasses.replace(rs, current=0, ready=0, available=0) if rs.name in drained else rs
        for rs in ctx.states
    ]
    new, old = split_replica_sets(states, ctx.target.template_hash)
    if not drained or not ctx.is_complete(new, old):
        return False
    ctx.resplit(states)
    return True
