"""Recreate: every old pod stops (and is gone) before the mid hook and the first new pod; the
scales are :func:`~gitdeploy.core.scaling.rollingmath.plan_recreate_step` (upstream ``rolloutRecreate``).
A DeploymentConfig of several replicas starts one first and the rest once it is available
(OpenShift's Recreate)."""

from __future__ import annotations

from gitdeploy.core.history.records import FailureReason
from gitdeploy.core.models import AppKind, HookPhase
from gitdeploy.core.rollout.completion import after_scaling
from gitdeploy.core.rollout.context import STATUS_BEHIND, RolloutContext, intervals
from gitdeploy.core.rollout.hookgate import hook_gate
from gitdeploy.core.rollout.outcome import fail
from gitdeploy.core.rollout.outputs import AppPhase, Step
from gitdeploy.core.rollout.status import status, timed_out
from gitdeploy.core.scaling.rollingmath import plan_recreate_step


def recreate(ctx: RolloutContext) -> Step:
    """One step of a Recreate rollout in progress: pre hook, old pods down, mid hook, new pods
    up, then completion (after the post hook), the deadline, or waiting for pods."""
    assert ctx.new is not None
    params = ctx.app.strategy.recreate
    before = status(ctx)
    gate = hook_gate(ctx, HookPhase.PRE, params.pre if params else None, before)
    if gate is not None:
        return gate
    _, waiting = intervals(ctx.app)
    if not ctx.observed_current():
        return ctx.step(AppPhase.PROGRESSING, STATUS_BEHIND, waiting, before)
    draining = old_pods_exist(ctx)
    size = first_size(ctx)
    planned = plan_recreate_step(size, ctx.new, ctx.old, old_pods_running=draining)
    if any(action.name != ctx.new.name for action in planned):
        ctx.scale(planned)
        return ctx.step(AppPhase.PROGRESSING, "scaling down the old revision", waiting, status(ctx))
    if draining:
        if timed_out(before):
            deadline = FailureReason.PROGRESS_DEADLINE_EXCEEDED
            return fail(ctx, deadline, "the old pods did not stop in time", before)
        return ctx.step(AppPhase.PROGRESSING, "waiting for old pods to stop", waiting, before)
    gate = hook_gate(ctx, HookPhase.MID, params.mid if params else None, before)
    if gate is not None:
        return gate
    if planned:
        ctx.scale(planned)
        message = "starting the first replica" if size < ctx.replicas else ctx.progress_message()
        return ctx.step(AppPhase.PROGRESSING, message, waiting, status(ctx))
    if size < ctx.replicas:
        if timed_out(before):
            deadline = FailureReason.PROGRESS_DEADLINE_EXCEEDED
            return fail(ctx, deadline, "the first replica did not become ready in time", before)
        return ctx.step(AppPhase.PROGRESSING, "waiting for the first replica", waiting, before)
    return after_scaling(ctx, params.post if params else None, before, waiting)


def first_size(ctx: RolloutContext) -> int:
    """The size the new ReplicaSet grows to now: a DeploymentConfig of several replicas starts
    one (and waits for it to be available) before the rest; otherwise all ``replicas``."""
    assert ctx.new is not None
    new = ctx.new
    first_one = new.replicas == 0 or (new.replicas == 1 and new.available < 1)
    if ctx.app.kind is AppKind.DEPLOYMENT_CONFIG and ctx.replicas > 1 and first_one:
        return 1
    return ctx.replicas


def old_pods_exist(ctx: RolloutContext) -> bool:
    """A pod of an old ReplicaSet still exists: counted by its status, or, terminating ones
    included, in the pod census (which a ReplicaSet's status leaves out)."""
    census = ctx.snapshot.pod_census
    return any(rs.current > 0 or (census is not None and census.of(rs.name) > 0) for rs in ctx.old)
