"""The entry point, :func:`plan_pass`: one pass for one app, from the record's repair to the
strategy's step."""

from __future__ import annotations

import dataclasses

from gitdeploy.core.history.records import FailureReason, Outcome
from gitdeploy.core.history.recovery import rebuild_record
from gitdeploy.core.observed import record_name
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.rollout.hooks import lingering_pods
from gitdeploy.core.rollout.inputs import Snapshot, Target, starts_rollout
from gitdeploy.core.rollout.outputs import AppPhase, DeletePod, Event, Step
from gitdeploy.core.rollout.settled import held, settled
from gitdeploy.core.rollout.start import start
from gitdeploy.core.rollout.status import status
from gitdeploy.core.rollout.strategies import STRATEGIES
from gitdeploy.core.scaling.progress import DeploymentStatus
from gitdeploy.core.scaling.replicasets import split_replica_sets


def plan_pass(
    target: Target,
    snap: Snapshot,
    now: float,
    previous: DeploymentStatus | None = None,
    *,
    watched: bool = False,
) -> Step:
    """One pass for one app: what to do now to move it towards ``target``.

    ``previous`` is the status the last pass returned (kept in memory by the caller; ``None``
    after a restart, when progress times are read from the cluster instead). ``watched``: the
    caller watches the app's ReplicaSets and passes over it as soon as its pods change, so a
    rolling update waiting for pods is looked at again after
    :data:`~gitdeploy.core.rollout.context.WATCHED_REQUEUE_SECONDS` (the progress deadline still
    on time), not :data:`~gitdeploy.core.rollout.context.DEFAULT_REQUEUE_SECONDS`. A rollback
    pin the target no longer honours (git moved on) is cleared in the record this step writes,
    and a served ``deploy --latest`` request too.
    """
    step = _stop_lingering_pods(target, snap, _plan(RolloutContext.of(target, snap, now, previous, watched)))
    if step.create_record or snap.record_emptied:
        return step
    record = step.record or snap.record
    if record.pin == snap.record.pin != target.pin:
        # The step left the pin alone: clear it when git moved on, or bind it to the manifest.
        record = dataclasses.replace(record, pin=target.pin)
    starting = step.phase is AppPhase.PROGRESSING and starts_rollout(target.template_hash, snap)
    if record.deploy_requested and starting:
        record = dataclasses.replace(record, deploy_requested=False)  # `deploy --latest` is served
    if record.recovery and starting:
        record = dataclasses.replace(record, recovery="")  # a rebuilt record is news until the next rollout
    if record != (step.record or snap.record):
        step = dataclasses.replace(step, record=record)
    return step


def _plan(ctx: RolloutContext) -> Step:
    app, snap = ctx.app, ctx.snapshot
    if not snap.record_uid or snap.record_emptied:
        return _restore_record(ctx)
    if app.paused:
        return held(ctx, AppPhase.PAUSED, "paused: no rollout progresses until `paused` is removed")
    if ctx.needs_new_revision():
        if not ctx.target.auto_start:
            return held(
                ctx,
                AppPhase.WAITING,
                "the template changed but the app has no ConfigChange trigger: "
                f"run `gitdeploy deploy {app.key}` to roll it out",
            )
        return start(ctx)
    outcome = ctx.current_outcome()
    if outcome is Outcome.COMPLETE:
        return settled(ctx)
    entry = snap.record.entry(ctx.new.revision) if ctx.new is not None else None
    by_deadline = entry is not None and entry.reason == FailureReason.PROGRESS_DEADLINE_EXCEEDED
    if outcome is Outcome.FAILED and not by_deadline:
        return held(ctx, AppPhase.FAILED, f"revision {ctx.latest} failed: {entry.message if entry else ''}")
    return STRATEGIES[app.strategy.type].step(ctx)


def _restore_record(ctx: RolloutContext) -> Step:
    """Write the record before anything else: a new app's empty one, or, when the record was
    deleted or emptied while ReplicaSets remain, the one their annotations describe (said so in
    a warning event). The record owns nothing, so its loss never touched a pod."""
    snap = ctx.snapshot
    current = status(ctx) if ctx.new is not None else DeploymentStatus()
    lost = "emptied" if snap.record_emptied else "deleted"
    rebuilt = rebuild_record(snap.replica_sets, lost=lost, now=ctx.now)
    record, events = snap.record, tuple[Event, ...]()
    if rebuilt is not None:
        record, events = rebuilt.record, (Event("RecordRebuilt", rebuilt.message, warning=True),)
    elif snap.record_emptied:
        note = f"the app record {record_name(ctx.app.name)} was emptied; no ReplicaSet to rebuild it from"
        record = dataclasses.replace(record, recovery=note)
        events = (Event("RecordEmptied", note, warning=True),)
    return Step(
        phase=AppPhase.PROGRESSING,
        message="rebuilding the app record" if rebuilt is not None else "creating the app record",
        revision=ctx.latest,
        status=current,
        events=events,
        record=record,
        create_record=not snap.record_uid,
        requeue_after=0.0,
    )


def _stop_lingering_pods(target: Target, snap: Snapshot, step: Step) -> Step:
    """``step`` with deletes of the hook and deployer pods still running whose rollout is over: it
    completed or failed (a hook past its deadline fails it), or a newer revision cancelled it. A
    held app (paused, waiting for a deploy) keeps them. Their log tail goes to the record the step
    writes, if any (see :func:`~gitdeploy.core.rollout.hooks.lingering_pods`)."""
    if step.phase in (AppPhase.PAUSED, AppPhase.WAITING):
        return step
    in_progress = None
    if step.phase == AppPhase.PROGRESSING:
        new, _ = split_replica_sets([rs.state for rs in snap.replica_sets], target.template_hash)
        in_progress = new.name if new is not None else None
    deleted = {action.name for action in step.actions if isinstance(action, DeletePod)}
    doomed = [name for name in lingering_pods(snap.pods, in_progress, step.revision) if name not in deleted]
    if not doomed:
        return step
    logged = (*step.log_pods, *doomed) if step.record is not None else step.log_pods
    return dataclasses.replace(
        step, actions=(*step.actions, *(DeletePod(name) for name in doomed)), log_pods=logged
    )
