"""The status a pass returns: the Deployment controller's status math on the context, with the
progress deadline measured from durable marks (annotations, hook pods), so that a restarted
gitdeploy keeps a rollout's deadline."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gitdeploy.core.observed import PROGRESSED_AT_ANNOTATION
from gitdeploy.core.rollout.context import RolloutContext
from gitdeploy.core.scaling.progress import (
    ConditionReason,
    ConditionStatus,
    ConditionType,
    DeploymentCondition,
    DeploymentStatus,
    calculate_rollout_status,
    calculate_status,
    remove_condition,
)
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from gitdeploy.core.timestamps import parse_timestamp


def status(ctx: RolloutContext) -> DeploymentStatus:
    """The status after this pass's actions, with the progress deadline applied."""
    return calculate_rollout_status(
        app=ctx.app.name,
        bounds=ctx.bounds,
        generation=0,
        progress_deadline_seconds=ctx.app.progress_deadline_seconds,
        new_rs=ctx.new,
        replica_sets=ctx.states,
        previous=baseline(ctx),
        now=ctx.now,
    )


def counts_status(
    ctx: RolloutContext,
    new: ReplicaSetState | None,
    replica_sets: Sequence[ReplicaSetState],
    previous: DeploymentStatus,
) -> DeploymentStatus:
    """The counts and the Available condition of ``replica_sets`` (``new`` the current one),
    other conditions carried over from ``previous`` (no progress estimate)."""
    return calculate_status(
        bounds=ctx.bounds,
        generation=0,
        new_rs=new,
        replica_sets=replica_sets,
        previous=previous,
        now=ctx.now,
    )


def last_progress(ctx: RolloutContext) -> float:
    """When the rollout last provably progressed: from durable marks (annotations, hook pods)."""
    times = [ctx.started_at()]
    for rs in ctx.snapshot.replica_sets:
        stamp = parse_timestamp(rs.annotation(PROGRESSED_AT_ANNOTATION))
        if stamp is not None:
            times.append(stamp)
    times += [p.finished_at for p in ctx.current_pods() if p.finished_at is not None]
    return max(times)


def baseline(ctx: RolloutContext) -> DeploymentStatus:
    """The previous status, with its progress time moved up to the durable marks.

    After a restart there is no previous status in memory; the current counts then serve
    (nothing looks like progress) with the last durable progress time.
    """
    previous = ctx.previous
    if previous is None:
        snapshot = [rs.state for rs in ctx.snapshot.replica_sets]
        previous = counts_status(ctx, ctx.new, snapshot, DeploymentStatus())
    marked = last_progress(ctx)
    current = previous.condition(ConditionType.PROGRESSING)
    if current is None or current.status != ConditionStatus.TRUE or current.last_update_time < marked:
        rs_name = ctx.new.name if ctx.new is not None else ctx.app.name
        updated = DeploymentCondition(
            ConditionType.PROGRESSING,
            ConditionStatus.TRUE,
            ConditionReason.REPLICA_SET_UPDATED,
            f'ReplicaSet "{rs_name}" is progressing.',
            marked,
            marked,
        )
        previous = dataclasses.replace(
            previous,
            conditions=(*remove_condition(previous.conditions, ConditionType.PROGRESSING), updated),
        )
    return previous


def timed_out(status: DeploymentStatus) -> bool:
    """The status says the progress deadline passed."""
    condition = status.condition(ConditionType.PROGRESSING)
    return condition is not None and condition.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED
