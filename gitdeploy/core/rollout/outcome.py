"""Outcomes: a revision completes or fails (then, with ``autoRollback``, the last Complete
revision is pinned), its entry goes to the record, and old ReplicaSets beyond the history limit
are deleted."""

from __future__ import annotations

import dataclasses

from gitdeploy.core.history.records import (
    AppRecord,
    Cause,
    FailureReason,
    HookResult,
    Outcome,
    Pin,
    RevisionEntry,
)
from gitdeploy.core.history.recovery import revision_entry_of
from gitdeploy.core.models import FailurePolicy, HookPhase
from gitdeploy.core.observed import PHASE_ANNOTATION, ObservedPod, ObservedReplicaSet, PodPhase
from gitdeploy.core.podstates import summarise_pod_states
from gitdeploy.core.rollout.context import DEFAULT_REQUEUE_SECONDS, RolloutContext
from gitdeploy.core.rollout.hooks import HookVerdict, runs_the_rollout
from gitdeploy.core.rollout.outputs import AppPhase, DeleteReplicaSet, Event, Step
from gitdeploy.core.scaling.progress import DeploymentStatus
from gitdeploy.core.scaling.retention import select_replica_sets_to_delete


def entry_for(ctx: RolloutContext, rs: ObservedReplicaSet, outcome: Outcome) -> RevisionEntry:
    """The revision log entry of ``rs``'s revision, from its annotations and hook pods."""
    template = rs.template or ctx.target.template
    hooks_of = ctx.app.strategy.hooks.items()
    policies: dict[str, FailurePolicy] = {phase: hook.failure_policy for phase, hook in hooks_of}

    def outcome_of(pod: ObservedPod) -> str:
        phase = pod.role.removeprefix("hook-")
        ignored = phase == HookPhase.POST or policies.get(phase) is FailurePolicy.IGNORE
        return HookVerdict.IGNORED if pod.phase == PodPhase.FAILED and ignored else pod.phase

    hooks = tuple(
        HookResult(
            phase=p.role.removeprefix("hook-"),
            pod=p.name,
            outcome=outcome_of(p),
            attempts=p.attempt,
            exit_code=p.exit_code,
        )
        for p in ctx.snapshot.pods
        if runs_the_rollout(p) and p.name.startswith(f"{rs.name}-") and p.revision == rs.state.revision
    )
    ended = (PodPhase.SUCCEEDED, PodPhase.FAILED, HookVerdict.IGNORED)
    ctx.log_pods += [h.pod for h in hooks if h.outcome in ended]
    pin = ctx.target.pin
    rolled_back = pin is not None and pin.template_hash == rs.state.template_hash
    return dataclasses.replace(
        revision_entry_of(rs, outcome, template),
        finished_at=ctx.now,
        hooks=hooks,
        rolled_back_from=pin.rolled_back_from if pin is not None and rolled_back else None,
        rolled_back_to=pin.revision if pin is not None and rolled_back else None,
        by=pin.by if pin is not None and rolled_back else "",
    )


def finish(ctx: RolloutContext, status: DeploymentStatus) -> Step:
    """The current revision is Complete: record it, annotate it, apply the history limit."""
    assert ctx.new is not None
    observed = ctx.by_name[ctx.new.name]
    previous = ctx.snapshot.record.entry(ctx.new.revision)
    entry = entry_for(ctx, observed, Outcome.COMPLETE)
    if previous is not None and previous.outcome is Outcome.FAILED:
        entry = dataclasses.replace(entry, message=f"completed after it failed: {previous.message}")
    ctx.record = (ctx.record or ctx.snapshot.record).with_entry(entry)
    ctx.annotate(ctx.new.name, (PHASE_ANNOTATION, Outcome.COMPLETE.value))
    ctx.outcome.append(Event("RolloutComplete", f"Revision {ctx.new.revision} is complete"))
    waits = cleanup(ctx)
    requeue = DEFAULT_REQUEUE_SECONDS if waits else None
    return ctx.step(AppPhase.COMPLETE, f"revision {ctx.new.revision} complete", requeue, status)


def fail(ctx: RolloutContext, reason: FailureReason, message: str, status: DeploymentStatus) -> Step:
    """Mark the current revision Failed; with auto-rollback, pin the last Complete revision."""
    assert ctx.new is not None
    if ctx.current_outcome() is Outcome.FAILED:  # already recorded: keep waiting, write nothing
        return ctx.step(AppPhase.FAILED, f"revision {ctx.new.revision} failed: {message}", None, status)
    if reason is FailureReason.PROGRESS_DEADLINE_EXCEEDED:
        if ctx.snapshot.new_pods is None:
            ctx.explain_with_pods = ctx.new.template_hash
        elif why := summarise_pod_states(ctx.snapshot.new_pods):
            message = f"{message}: {why}"
    observed = ctx.by_name[ctx.new.name]
    entry = dataclasses.replace(entry_for(ctx, observed, Outcome.FAILED), message=message, reason=reason)
    record = (ctx.record or ctx.snapshot.record).with_entry(entry)
    ctx.annotate(ctx.new.name, (PHASE_ANNOTATION, Outcome.FAILED.value))
    ctx.events.append(Event(reason, f"Revision {ctx.new.revision} failed: {message}", warning=True))
    requeue: float | None = None
    if ctx.app.auto_rollback:
        record, message, requeue = _roll_back(ctx, record, message)
    ctx.record = record
    return ctx.step(AppPhase.FAILED, f"revision {ctx.new.revision} failed: {message}", requeue, status)


def _roll_back(ctx: RolloutContext, record: AppRecord, message: str) -> tuple[AppRecord, str, float | None]:
    """``autoRollback``: pin the latest earlier Complete revision whose ReplicaSet still exists.
    Returns the record, the failure message with what happens next, and when to look again."""
    assert ctx.new is not None
    failing = ctx.new.template_hash
    earlier = [
        e
        for e in record.revisions
        if e.outcome is Outcome.COMPLETE and e.revision < ctx.new.revision and e.template_hash != failing
    ]
    good = max(earlier, key=lambda e: e.revision, default=None)
    if good is None:
        return record, message + "; no earlier Complete revision to roll back to", None
    reusable = any(rs.template_hash == good.template_hash for rs in ctx.old)
    if not reusable or good.template_hash == ctx.new.template_hash:
        gone = f"; revision {good.revision}'s ReplicaSet is gone: roll back with `gitdeploy rollback`"
        return record, message + gone, None
    pin = Pin(
        revision=good.revision,
        template_hash=good.template_hash,
        manifest_digest=ctx.target.manifest_digest,
        reason=f"revision {ctx.new.revision} failed: {message}",
        cause=Cause.AUTO_ROLLBACK,
        rolled_back_from=ctx.new.revision,
        by="gitdeploy (autoRollback)",
    )
    return dataclasses.replace(record, pin=pin), message + f"; rolling back to revision {good.revision}", 0.0


def cleanup(ctx: RolloutContext) -> bool:
    """Delete old ReplicaSets beyond the revision history limit (only once a rollout is done).

    One this step scaled waits for a status that shows it without pods (Kubernetes deletes no
    ReplicaSet before): True when one waits so."""
    doomed = select_replica_sets_to_delete(
        ctx.states, ctx.target.template_hash, ctx.app.revision_history_limit
    )
    scaled = {action.name for action in ctx.scaled}
    for rs in doomed:
        if rs.name not in scaled:
            ctx.actions.append(DeleteReplicaSet(rs.name))
    return any(rs.name in scaled for rs in doomed)
