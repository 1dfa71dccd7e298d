"""After the scales of a Rolling or Recreate rollout: complete (after the post hook), failed by
the progress deadline, or still waiting for pods."""

from __future__ import annotations

from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.models import Hook, HookPhase
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.rollout.hookgate import hook_gate
from gitdeploy.core.rollout.outcome import fail, finish
from gitdeploy.core.rollout.outputs import AppPhase, Step
from gitdeploy.core.rollout.status import timed_out
from gitdeploy.core.scaling.progress import DeploymentStatus, seconds_until_progress_check


def after_scaling(ctx: RolloutContext, post: Hook | None, status: DeploymentStatus, waiting: float) -> Step:
    """No scaling to do: complete (after the post hook), failed by deadline, or still waiting."""
    assert ctx.new is not None
    if ctx.is_complete():
        gate = hook_gate(ctx, HookPhase.POST, post, status)
        if gate is not None:
            return gate
        return finish(ctx, status)
    failed = ctx.current_outcome() is Outcome.FAILED
    if timed_out(status) and not failed:
        return fail(
            ctx,
            FailureReason.PROGRESS_DEADLINE_EXCEEDED,
            f"no progress for {ctx.deadline_seconds()} s "
            f"({ctx.new.available}/{ctx.replicas} new pods available)",
            status,
        )
    requeue = seconds_until_progress_check(
        status,
        replicas=ctx.replicas,
        generation=0,
        progress_deadline_seconds=ctx.deadline_seconds(),
        now=ctx.now,
    )
    phase = AppPhase.FAILED if failed else AppPhase.PROGRESSING
    return ctx.step(phase, ctx.progress_message(), min(waiting, requeue or waiting), status)
