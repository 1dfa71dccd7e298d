"""The hook gate: a strategy's pre, mid or post hook runs (and is retried, or fails the
rollout by its failure policy) before the strategy goes past it."""

from __future__ import annotations

from gitdeploy.core.history.records import Cause, FailureReason
from gitdeploy.core.models import Hook, HookPhase, PodTemplate
from gitdeploy.core.observed import POD_DEADLINE_EXCEEDED, ObservedPod, PodSpec
from gitdeploy.core.rollout.context import RolloutContext, intervals
from gitdeploy.core.rollout.hooks import HookStatus, HookVerdict, build_hook_pod, evaluate_hook, hook_role
from gitdeploy.core.rollout.outcome import fail
from gitdeploy.core.rollout.outputs import AppPhase, CreatePod, DeletePod, Event, Step
from gitdeploy.core.scaling.progress import DeploymentStatus


def hook_gate(
    ctx: RolloutContext, phase: HookPhase, hook: Hook | None, status: DeploymentStatus
) -> Step | None:
    """None when the hook is absent or done; otherwise the Step to return this pass.

    An automatic rollback runs no hooks: like OpenShift scaling the last good deployment back up,
    it restores what ran, and the hooks (the failed revision's strategy) are what just failed; a
    failed mid hook would otherwise fail the rollback too, with every old pod already stopped."""
    if hook is None or ctx.new is None or ctx.target.cause is Cause.AUTO_ROLLBACK:
        return None
    verdict, requeue = run_hook(ctx, phase, hook, ctx.target.template)
    if verdict.verdict.done:
        return None
    if verdict.verdict is HookVerdict.FAILED:
        what = describe_hook_failure(ctx.pod(hook_role(phase)), ctx.deadline_seconds())
        policy = hook.failure_policy.value
        return fail(ctx, FailureReason.HOOK_FAILED, f"the {phase} hook {what} ({policy} policy)", status)
    return ctx.step(
        AppPhase.PROGRESSING, f"revision {ctx.new.revision}: {phase} hook running", requeue, status
    )


def describe_hook_failure(pod: ObservedPod | None, deadline_seconds: int) -> str:
    """How a hook's pod failed: its exit code, or what it waited for when its deadline passed.

    >>> import dataclasses
    >>> exited = ObservedPod("shop", "web-5d8f-pre", "hook-pre", "Failed", 2, exit_code=3, reason="Error")
    >>> describe_hook_failure(exited, 600)
    'failed with exit code 3'
    >>> pulling = dataclasses.replace(exited, phase="Pending", exit_code=None, reason="ImagePullBackOff")
    >>> describe_hook_failure(pulling, 600)
    'did not finish within its deadline (600 s; its pod: ImagePullBackOff)'
    """
    hung = pod is not None and (not pod.terminal or pod.reason == POD_DEADLINE_EXCEEDED)
    if hung:
        assert pod is not None
        waited = f"; its pod: {pod.reason}" if pod.reason and pod.reason != POD_DEADLINE_EXCEEDED else ""
        return f"did not finish within its deadline ({deadline_seconds} s{waited})"
    if pod is not None and pod.exit_code is not None:
        return f"failed with exit code {pod.exit_code}"
    return "failed"


def run_hook(
    ctx: RolloutContext, phase: HookPhase, hook: Hook, template: PodTemplate
) -> tuple[HookStatus, float | None]:
    """Advance the hook of ``phase``; returns its status and, unless done, when to look again."""
    assert ctx.new is not None
    role = hook_role(phase)
    pod = ctx.pod(role)
    first_start = ctx.now
    if pod is not None and pod.revision == ctx.new.revision:
        first_start = pod.first_attempt_at if pod.first_attempt_at is not None else pod.created_at
    status = evaluate_hook(
        pod,
        hook.failure_policy,
        phase,
        revision=ctx.new.revision,
        deadline=first_start + ctx.deadline_seconds(),
        now=ctx.now,
    )
    _, waiting = intervals(ctx.app)
    if status.verdict in (HookVerdict.START, HookVerdict.RETRY):
        attempt = 1 if status.verdict is HookVerdict.START or pod is None else pod.attempt + 1
        if pod is not None:
            ctx.actions.append(DeletePod(pod.name))
        ctx.actions.append(CreatePod(hook_pod(ctx, phase, hook, template, attempt, first_start)))
        ctx.events.append(
            Event("HookStarted", f"Running {phase} hook of revision {ctx.new.revision} (attempt {attempt})")
        )
        return status, waiting
    if status.verdict is HookVerdict.WAIT_RETRY:
        assert status.retry_at is not None
        return status, max(status.retry_at - ctx.now, 0.0)
    if status.verdict is HookVerdict.RUNNING:
        return status, waiting
    return status, None


def hook_pod(
    ctx: RolloutContext,
    phase: HookPhase,
    hook: Hook,
    template: PodTemplate,
    attempt: int,
    first_attempt_at: float,
) -> PodSpec:
    assert ctx.new is not None
    observed = ctx.new_observed()
    return build_hook_pod(
        namespace=ctx.app.namespace,
        app=ctx.app.name,
        replica_set=ctx.new.name,
        owner_uid=observed.uid if observed is not None else "",
        revision=ctx.new.revision,
        attempt=attempt,
        first_attempt_at=first_attempt_at,
        phase=phase,
        hook=hook,
        template=template,
        resources_json=ctx.app.strategy.resources_json,
        active_deadline_seconds=ctx.deadline_seconds(),  # each attempt may use the whole deadline
    )
