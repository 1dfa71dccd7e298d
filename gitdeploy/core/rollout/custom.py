"""Custom: a deployer pod of the app's image does the rollout; gitdeploy starts it once per
revision, then waits for it to exit and for the new ReplicaSet to be available."""

from __future__ import annotations

from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.observed import PodPhase
from gitdeploy.core.rollout.context import RolloutContext, intervals
from gitdeploy.core.rollout.hooks import DEPLOYER_ACTIVE_DEADLINE_SECONDS, DEPLOYER_ROLE, build_deployer_pod
from gitdeploy.core.rollout.outcome import fail, finish
from gitdeploy.core.rollout.outputs import AppPhase, CreatePod, DeletePod, Event, Step
from gitdeploy.core.rollout.settled import held
from gitdeploy.core.rollout.status import status, timed_out
from gitdeploy.core.scaling.progress import DeploymentStatus


def custom(ctx: RolloutContext) -> Step:
    """One step of a Custom rollout in progress: start the deployer, wait for it, then for the
    new ReplicaSet to be available (or fail by the deployer's exit or the deadline)."""
    assert ctx.new is not None and ctx.app.strategy.custom is not None
    now = status(ctx)
    _, waiting = intervals(ctx.app)
    pod = ctx.pod(DEPLOYER_ROLE)
    if pod is None or pod.revision != ctx.new.revision:
        return start_deployer(ctx, waiting, now)
    if pod.phase == PodPhase.FAILED:
        code = f" with exit code {pod.exit_code}" if pod.exit_code is not None else ""
        return fail(ctx, FailureReason.DEPLOYER_FAILED, f"the custom deployer failed{code}", now)
    if pod.phase != PodPhase.SUCCEEDED:
        if timed_out(now):
            deadline = FailureReason.PROGRESS_DEADLINE_EXCEEDED
            return fail(ctx, deadline, "the custom deployer did not finish in time", now)
        return ctx.step(AppPhase.PROGRESSING, "custom deployer running", waiting, now)
    if ctx.new.replicas == ctx.replicas and ctx.new.available >= ctx.replicas and ctx.observed_current():
        return finish(ctx, now)
    if timed_out(now):
        return fail(
            ctx,
            FailureReason.PROGRESS_DEADLINE_EXCEEDED,
            f"the custom deployer exited 0 but {ctx.new.name} has {ctx.new.available}/{ctx.replicas} "
            "available",
            now,
        )
    return ctx.step(AppPhase.PROGRESSING, "waiting for the deployer's ReplicaSet", waiting, now)


def start_deployer(ctx: RolloutContext, waiting: float, now: DeploymentStatus) -> Step:
    """Start this revision's deployer pod (replacing an earlier revision's), unless the revision
    already failed: a deployer that was stopped is never started again."""
    assert ctx.new is not None and ctx.app.strategy.custom is not None
    pod = ctx.pod(DEPLOYER_ROLE)
    if ctx.current_outcome() is Outcome.FAILED:
        entry = ctx.snapshot.record.entry(ctx.new.revision)
        why = entry.message if entry is not None else "the custom deployer was stopped"
        return held(ctx, AppPhase.FAILED, f"revision {ctx.new.revision} failed: {why}")
    observed = ctx.new_observed()
    if pod is not None:
        ctx.actions.append(DeletePod(pod.name))
    deployer = build_deployer_pod(
        namespace=ctx.app.namespace,
        app=ctx.app.name,
        replica_set=ctx.new.name,
        owner_uid=observed.uid if observed is not None else "",
        revision=ctx.new.revision,
        params=ctx.app.strategy.custom,
        template=ctx.target.template,
        resources_json=ctx.app.strategy.resources_json,
        active_deadline_seconds=ctx.app.strategy.active_deadline_seconds or DEPLOYER_ACTIVE_DEADLINE_SECONDS,
    )
    ctx.actions.append(CreatePod(deployer))
    ctx.events.append(Event("DeployerStarted", f"Running the custom deployer of revision {ctx.new.revision}"))
    return ctx.step(AppPhase.PROGRESSING, "custom deployer started", waiting, now)
