"""Starting a revision: the next revision number goes to a new ReplicaSet (or to an old one of
the same template, a rollback), with the commit that caused it; a rollout still running for
another template is cancelled (rollover); the strategy then makes its first scales."""

from __future__ import annotations

import dataclasses

from gitdeploy.core.history.records import Cause, Outcome
from gitdeploy.core.observed import (
    AUTHOR_ANNOTATION,
    CAUSE_ANNOTATION,
    CHANGE_CAUSE_ANNOTATION,
    COMMIT_ANNOTATION,
    PHASE_ANNOTATION,
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    STARTED_AT_ANNOTATION,
    SUBJECT_ANNOTATION,
    ReplicaSetSpec,
)
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.rollout.outcome import entry_for
from gitdeploy.core.rollout.outputs import AppPhase, CreateReplicaSet, Event, Step
from gitdeploy.core.rollout.status import baseline
from gitdeploy.core.rollout.strategies import STRATEGIES
from gitdeploy.core.scaling.progress import record_new_replica_set
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from gitdeploy.core.timestamps import format_timestamp


def start(ctx: RolloutContext) -> Step:
    """Start revision ``latest + 1`` of the target's template, and its strategy's first scales."""
    revision = ctx.latest + 1
    cancel_superseded(ctx, revision)
    created = ctx.new is None
    name = assign_revision(ctx, revision)
    begin = STRATEGIES[ctx.app.strategy.type].start
    requeue = begin(ctx, created) if begin is not None else 0.0  # hooks and Recreate go on at once
    target = ctx.target
    cause = f" ({target.cause})" if target.cause is not Cause.CONFIG_CHANGE else ""
    ctx.events.insert(
        0,
        Event(
            "RolloutStarted",
            f"Rolling out revision {revision}{cause}: commit {target.commit.short} "
            f"{target.commit.subject!r} by {target.commit.author or 'unknown'}",
        ),
    )
    if target.pin is not None and target.cause is Cause.AUTO_ROLLBACK:
        ctx.events.append(
            Event(
                "DeploymentRollback",
                f"Rolled back {ctx.app.name} to revision {target.pin.revision}",
                warning=True,
            )
        )
    status = record_new_replica_set(
        baseline(ctx),
        name,
        created=created,
        progress_deadline_seconds=ctx.deadline_seconds(),
        now=ctx.now,
    )
    return ctx.step(AppPhase.PROGRESSING, f"revision {revision} started", requeue, status)


def assign_revision(ctx: RolloutContext, revision: int) -> str:
    """Give ``revision`` to the target's ReplicaSet: create it (empty: the strategy's first scale
    of it creates it with its pods), or annotate the existing one, keeping its earlier revision
    numbers in its history. Returns its name."""
    target = ctx.target
    annotations: list[tuple[str, str]] = [
        (REVISION_ANNOTATION, str(revision)),
        (COMMIT_ANNOTATION, target.commit.sha),
        (AUTHOR_ANNOTATION, target.commit.author),
        (SUBJECT_ANNOTATION, target.commit.subject),
        (CHANGE_CAUSE_ANNOTATION, target.change_cause or target.commit.subject),
        (CAUSE_ANNOTATION, target.cause),
        (PHASE_ANNOTATION, Outcome.RUNNING.value),
        (STARTED_AT_ANNOTATION, format_timestamp(ctx.now)),
    ]
    if ctx.new is None:
        spec = ReplicaSetSpec(
            namespace=ctx.app.namespace,
            app=ctx.app.name,
            template=target.template,
            template_hash=target.template_hash,
            selector_labels=ctx.app.selector.match_labels,
            replicas=0,
            annotations=(*annotations, *ctx.replica_annotations()),
            min_ready_seconds=ctx.app.min_ready_seconds,
        )
        ctx.actions.append(CreateReplicaSet(spec))
        ctx.resplit([*ctx.states, ReplicaSetState(spec.name, target.template_hash, revision, ctx.now)])
        return spec.name
    name = ctx.new.name
    history = [h for h in ctx.by_name[name].annotation(REVISION_HISTORY_ANNOTATION).split(",") if h]
    history.append(str(ctx.new.revision))
    annotations.append((REVISION_HISTORY_ANNOTATION, ",".join(history[-10:])))
    ctx.annotate(name, *annotations, *ctx.replica_annotations())
    ctx.resplit([dataclasses.replace(rs, revision=revision) if rs.name == name else rs for rs in ctx.states])
    return name


def cancel_superseded(ctx: RolloutContext, revision: int) -> None:
    """A rollout still running when a newer template arrives is Cancelled (rollover)."""
    record = ctx.snapshot.record
    for rs in ctx.snapshot.replica_sets:
        if rs.state.template_hash == ctx.target.template_hash:
            continue
        if rs.annotation(PHASE_ANNOTATION) != Outcome.RUNNING.value:
            continue
        entry = record.entry(rs.state.revision)
        if entry is not None and entry.outcome is not Outcome.RUNNING:
            continue
        cancelled = dataclasses.replace(
            entry_for(ctx, rs, Outcome.CANCELLED),
            message=f"superseded by revision {revision} before it completed",
        )
        record = record.with_entry(cancelled)
        ctx.events.append(
            Event("RolloutCancelled", f"Revision {rs.state.revision} superseded by revision {revision}")
        )
    if record is not ctx.snapshot.record:
        ctx.record = record
