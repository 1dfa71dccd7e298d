"""Rollout status: replica counts, completeness, and the Available/Progressing/ReplicaFailure conditions.

A port of the semantics of upstream ``calculateStatus`` and ``syncRolloutStatus`` (``sync.go``),
``DeploymentComplete``/``DeploymentProgressing``/``DeploymentTimedOut`` and the condition helpers
(``util/deployment_util.go``), and ``requeueStuckDeployment`` (``progress.go``). Time is always an
argument (seconds since the epoch); nothing here reads a clock.

Condition lifecycle of a rollout with a progress deadline (the Kubernetes documentation):

* a new ReplicaSet is created → ``Progressing=True NewReplicaSetCreated`` (or ``FoundNewReplicaSet``
  when it already existed), see :func:`record_new_replica_set`;
* pods are scaled or become ready/available → ``Progressing=True ReplicaSetUpdated``, its
  lastUpdateTime moves to now;
* all replicas updated and available, no old pods → ``Progressing=True NewReplicaSetAvailable``; it
  stays until the next rollout, whatever happens to availability;
* no progress for longer than ``progress_deadline_seconds`` since lastUpdateTime →
  ``Progressing=False ProgressDeadlineExceeded``.

``Available`` is ``True MinimumReplicasAvailable`` when at least ``replicas - maxUnavailable`` pods are
available (all ``replicas`` for Recreate), else ``False MinimumReplicasUnavailable``. A ReplicaSet's
``ReplicaFailure`` condition (for example ``FailedCreate`` when a quota is exceeded) is copied to the
app, the new ReplicaSet's first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from gitdeploy.core.scaling.replicasets import ReplicaSetState, sum_available, sum_replicas
from gitdeploy.core.scaling.rollingmath import RolloutBounds
from gitdeploy.core.scaling.rollingmath import max_unavailable as resolve_max_unavailable


class ConditionType(StrEnum):
    AVAILABLE = "Available"
    PROGRESSING = "Progressing"
    REPLICA_FAILURE = "ReplicaFailure"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class ConditionReason(StrEnum):
    """The reasons gitdeploy itself sets (ReplicaFailure reasons come from the ReplicaSet)."""

    NEW_REPLICA_SET_CREATED = "NewReplicaSetCreated"
    FOUND_NEW_REPLICA_SET = "FoundNewReplicaSet"
    REPLICA_SET_UPDATED = "ReplicaSetUpdated"
    NEW_REPLICA_SET_AVAILABLE = "NewReplicaSetAvailable"
    PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
    DEPLOYMENT_PAUSED = "DeploymentPaused"
    DEPLOYMENT_RESUMED = "DeploymentResumed"
    MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
    MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"


@dataclass(frozen=True)
class DeploymentCondition:
    """One status condition of an app; ``reason`` is a :class:`ConditionReason` or a ReplicaSet's reason."""

    type: ConditionType
    status: ConditionStatus
    reason: str
    message: str
    last_update_time: float
    last_transition_time: float


@dataclass(frozen=True)
class DeploymentStatus:
    """The status of an app's rollout, as ``kubectl describe`` shows it for a Deployment.

    ``replicas`` counts existing pods (ReplicaSet ``status.replicas``), ``updated_replicas`` those of
    the new ReplicaSet; ``unavailable_replicas`` is ``sum of spec.replicas - available``, never
    negative. The zero value is the status of an app never synced.
    """

    observed_generation: int = 0
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    conditions: tuple[DeploymentCondition, ...] = ()

    def condition(self, condition_type: ConditionType) -> DeploymentCondition | None:
        """The condition of that type, if present."""
        return next((c for c in self.conditions if c.type == condition_type), None)


def make_condition(
    condition_type: ConditionType, status: ConditionStatus, reason: str, message: str, now: float
) -> DeploymentCondition:
    """A condition updated and transitioned at ``now`` (upstream ``NewDeploymentCondition``)."""
    return DeploymentCondition(condition_type, status, reason, message, now, now)


def set_condition(
    conditions: tuple[DeploymentCondition, ...], condition: DeploymentCondition
) -> tuple[DeploymentCondition, ...]:
    """Add or replace the condition of ``condition.type`` (upstream ``SetDeploymentCondition``).

    Unchanged when a condition with the same status and reason is already there (its times stay);
    when only the reason changes, the old lastTransitionTime is kept. The condition goes last.
    """
    current = next((c for c in conditions if c.type == condition.type), None)
    if current is not None and (current.status, current.reason) == (condition.status, condition.reason):
        return conditions
    if current is not None and current.status == condition.status:
        condition = dataclasses.replace(condition, last_transition_time=current.last_transition_time)
    return (*remove_condition(conditions, condition.type), condition)


def remove_condition(
    conditions: tuple[DeploymentCondition, ...], condition_type: ConditionType
) -> tuple[DeploymentCondition, ...]:
    """Drop the condition of that type (upstream ``RemoveDeploymentCondition``)."""
    return tuple(c for c in conditions if c.type != condition_type)


def calculate_status(
    *,
    bounds: RolloutBounds,
    generation: int,
    new_rs: ReplicaSetState | None,
    replica_sets: Sequence[ReplicaSetState],
    previous: DeploymentStatus,
    now: float,
) -> DeploymentStatus:
    """Counts from ``replica_sets`` (all of the app's, new one included) plus the Available condition.

    Upstream ``calculateStatus``; other conditions are carried over from ``previous``. This is the
    whole status update of a paused app or a scaling event; a rollout pass uses
    :func:`calculate_rollout_status`.

    The documentation's stuck rollout: "3 desired | 1 updated | 4 total | 3 available | 1 unavailable".

    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=3, current=3, ready=3, available=3)
    >>> new = ReplicaSetState("web-new", "n", 2, 2.0, replicas=1, current=1)
    >>> s = calculate_status(bounds=RolloutBounds("RollingUpdate", 3, None, None),
    ...                      generation=2, new_rs=new, replica_sets=[old, new],
    ...                      previous=DeploymentStatus(), now=0.0)
    >>> (s.updated_replicas, s.replicas, s.available_replicas, s.unavailable_replicas)
    (1, 4, 3, 1)
    >>> print(s.condition(ConditionType.AVAILABLE).reason)
    MinimumReplicasAvailable
    """
    available = sum_available(replica_sets)
    replicas = bounds.replicas
    floor = replicas - resolve_max_unavailable(bounds)
    if available >= floor:
        availability = make_condition(
            ConditionType.AVAILABLE,
            ConditionStatus.TRUE,
            ConditionReason.MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            now,
        )
    else:
        availability = make_condition(
            ConditionType.AVAILABLE,
            ConditionStatus.FALSE,
            ConditionReason.MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    return DeploymentStatus(
        observed_generation=generation,
        replicas=sum(rs.current for rs in replica_sets),
        updated_replicas=new_rs.current if new_rs is not None else 0,
        ready_replicas=sum(rs.ready for rs in replica_sets),
        available_replicas=available,
        unavailable_replicas=max(sum_replicas(replica_sets) - available, 0),
        conditions=set_condition(previous.conditions, availability),
    )


def is_deployment_complete(replicas: int, generation: int, status: DeploymentStatus) -> bool:
    """All replicas updated, existing and available, and the status is for the current generation.

    Upstream ``DeploymentComplete``.

    >>> done = DeploymentStatus(observed_generation=2, replicas=3, updated_replicas=3, available_replicas=3)
    >>> is_deployment_complete(3, 2, done), is_deployment_complete(3, 3, done)
    (True, False)
    """
    return (
        status.updated_replicas == replicas
        and status.replicas == replicas
        and status.available_replicas == replicas
        and status.observed_generation >= generation
    )


def is_deployment_progressing(previous: DeploymentStatus, current: DeploymentStatus) -> bool:
    """More updated, ready or available pods, or fewer old pods, than before (``DeploymentProgressing``)."""
    previous_old = previous.replicas - previous.updated_replicas
    current_old = current.replicas - current.updated_replicas
    return (
        current.updated_replicas > previous.updated_replicas
        or current_old < previous_old
        or current.ready_replicas > previous.ready_replicas
        or current.available_replicas > previous.available_replicas
    )


def has_progress_deadline_passed(last_update_time: float, deadline_seconds: float, now: float) -> bool:
    """True once ``now`` is strictly after ``last_update_time + deadline_seconds``.

    >>> has_progress_deadline_passed(100.0, 600, 700.0), has_progress_deadline_passed(100.0, 600, 700.5)
    (False, True)
    """
    return last_update_time + deadline_seconds < now


def is_deployment_timed_out(
    status: DeploymentStatus, progress_deadline_seconds: int | None, now: float
) -> bool:
    """Whether the rollout has made no progress within its deadline (upstream ``DeploymentTimedOut``).

    False without a deadline, without a Progressing condition, or after a completed rollout
    (``NewReplicaSetAvailable``); True once ``ProgressDeadlineExceeded`` was recorded; otherwise
    :func:`has_progress_deadline_passed` on the Progressing condition's lastUpdateTime.
    """
    progressing = status.condition(ConditionType.PROGRESSING)
    if progress_deadline_seconds is None or progressing is None:
        return False
    if progressing.reason == ConditionReason.NEW_REPLICA_SET_AVAILABLE:
        return False
    if progressing.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED:
        return True
    return has_progress_deadline_passed(progressing.last_update_time, progress_deadline_seconds, now)


def find_replica_failure(
    new_rs: ReplicaSetState | None, replica_sets: Sequence[ReplicaSetState]
) -> DeploymentCondition | None:
    """The app's ReplicaFailure condition: the new ReplicaSet's failure, else the first other one's."""
    candidates = [new_rs, *replica_sets] if new_rs is not None else list(replica_sets)
    failure = next((rs.failure for rs in candidates if rs.failure is not None), None)
    if failure is None:
        return None
    return DeploymentCondition(
        ConditionType.REPLICA_FAILURE,
        ConditionStatus.TRUE,
        failure.reason,
        failure.message,
        failure.since,
        failure.since,
    )


def _subject(app: str, new_rs: ReplicaSetState | None) -> str:
    return f'ReplicaSet "{new_rs.name}"' if new_rs is not None else f'Deployment "{app}"'


def calculate_rollout_status(
    *,
    app: str,
    bounds: RolloutBounds,
    generation: int,
    progress_deadline_seconds: int | None,
    new_rs: ReplicaSetState | None,
    replica_sets: Sequence[ReplicaSetState],
    previous: DeploymentStatus,
    now: float,
) -> DeploymentStatus:
    """The status after a rollout pass, with progress estimated (upstream ``syncRolloutStatus``).

    :func:`calculate_status`, then, unless the previous rollout already completed and nothing old
    is left: complete → ``NewReplicaSetAvailable``; progressing → ``ReplicaSetUpdated`` with a fresh
    lastUpdateTime; past the deadline → ``ProgressDeadlineExceeded``. Without a deadline
    (``None``) there is no Progressing condition at all. Finally ReplicaFailure is copied from the
    ReplicaSets, or removed. ``app`` names the app in messages when there is no new ReplicaSet.
    """
    status = calculate_status(
        bounds=bounds,
        generation=generation,
        new_rs=new_rs,
        replica_sets=replica_sets,
        previous=previous,
        now=now,
    )
    conditions = status.conditions
    if progress_deadline_seconds is None:
        conditions = remove_condition(conditions, ConditionType.PROGRESSING)
    current = previous.condition(ConditionType.PROGRESSING)
    already_complete = (
        status.replicas == status.updated_replicas
        and current is not None
        and current.reason == ConditionReason.NEW_REPLICA_SET_AVAILABLE
    )
    subject = _subject(app, new_rs)
    if progress_deadline_seconds is not None and not already_complete:
        if is_deployment_complete(bounds.replicas, generation, status):
            conditions = set_condition(
                conditions,
                make_condition(
                    ConditionType.PROGRESSING,
                    ConditionStatus.TRUE,
                    ConditionReason.NEW_REPLICA_SET_AVAILABLE,
                    f"{subject} has successfully progressed.",
                    now,
                ),
            )
        elif is_deployment_progressing(previous, status):
            # Unlike set_condition, progress always refreshes lastUpdateTime, even with the same reason.
            transition = now
            if current is not None and current.status == ConditionStatus.TRUE:
                transition = current.last_transition_time
            updated = DeploymentCondition(
                ConditionType.PROGRESSING,
                ConditionStatus.TRUE,
                ConditionReason.REPLICA_SET_UPDATED,
                f"{subject} is progressing.",
                now,
                transition,
            )
            conditions = (*remove_condition(conditions, ConditionType.PROGRESSING), updated)
        elif is_deployment_timed_out(status, progress_deadline_seconds, now):
            conditions = set_condition(
                conditions,
                make_condition(
                    ConditionType.PROGRESSING,
                    ConditionStatus.FALSE,
                    ConditionReason.PROGRESS_DEADLINE_EXCEEDED,
                    f"{subject} has timed out progressing.",
                    now,
                ),
            )
    failure = find_replica_failure(new_rs, replica_sets)
    if failure is not None:
        conditions = set_condition(conditions, failure)
    else:
        conditions = remove_condition(conditions, ConditionType.REPLICA_FAILURE)
    return dataclasses.replace(status, conditions=conditions)


def record_new_replica_set(
    status: DeploymentStatus,
    rs_name: str,
    *,
    created: bool,
    progress_deadline_seconds: int | None,
    now: float,
) -> DeploymentStatus:
    """Note the rollout's new ReplicaSet in the Progressing condition (upstream ``getNewReplicaSet``).

    ``created``: gitdeploy just created it → ``NewReplicaSetCreated``. Otherwise it already existed,
    and ``FoundNewReplicaSet`` is set only if there is no Progressing condition yet. Nothing without
    a progress deadline.
    """
    if progress_deadline_seconds is None:
        return status
    if created:
        reason, message = ConditionReason.NEW_REPLICA_SET_CREATED, f'Created new replica set "{rs_name}"'
    elif status.condition(ConditionType.PROGRESSING) is None:
        reason, message = ConditionReason.FOUND_NEW_REPLICA_SET, f'Found new replica set "{rs_name}"'
    else:
        return status
    condition = make_condition(ConditionType.PROGRESSING, ConditionStatus.TRUE, reason, message, now)
    return dataclasses.replace(status, conditions=set_condition(status.conditions, condition))


def record_pause(
    status: DeploymentStatus, *, paused: bool, progress_deadline_seconds: int | None, now: float
) -> DeploymentStatus:
    """``Progressing=Unknown DeploymentPaused``/``DeploymentResumed`` (upstream ``checkPausedConditions``).

    A paused rollout is not checked against its deadline; resuming restarts the clock, because the
    resumed condition's lastUpdateTime is ``now``. A recorded ``ProgressDeadlineExceeded`` is kept.
    """
    current = status.condition(ConditionType.PROGRESSING)
    if progress_deadline_seconds is None:
        return status
    if current is not None and current.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED:
        return status
    paused_recorded = current is not None and current.reason == ConditionReason.DEPLOYMENT_PAUSED
    if paused and not paused_recorded:
        reason, message = ConditionReason.DEPLOYMENT_PAUSED, "Deployment is paused"
    elif not paused and paused_recorded:
        reason, message = ConditionReason.DEPLOYMENT_RESUMED, "Deployment is resumed"
    else:
        return status
    condition = make_condition(ConditionType.PROGRESSING, ConditionStatus.UNKNOWN, reason, message, now)
    return dataclasses.replace(status, conditions=set_condition(status.conditions, condition))


def seconds_until_progress_check(
    status: DeploymentStatus,
    *,
    replicas: int,
    generation: int,
    progress_deadline_seconds: int | None,
    now: float,
) -> float | None:
    """When to look again to notice a missed deadline, or ``None`` (upstream ``requeueStuckDeployment``).

    ``None`` without a deadline or Progressing condition, once complete, or once timed out.
    Otherwise ``lastUpdateTime + deadline - now``, at least 0. Upstream's example: progress
    recorded 3 minutes ago with a 10 minute deadline → check again in 7 minutes.

    >>> progressing = make_condition(ConditionType.PROGRESSING, ConditionStatus.TRUE,
    ...                              ConditionReason.REPLICA_SET_UPDATED, "", now=0.0)
    >>> seconds_until_progress_check(DeploymentStatus(conditions=(progressing,)), replicas=3,
    ...                              generation=0, progress_deadline_seconds=600, now=180.0)
    420.0
    """
    current = status.condition(ConditionType.PROGRESSING)
    if progress_deadline_seconds is None or current is None:
        return None
    if is_deployment_complete(replicas, generation, status):
        return None
    if current.reason == ConditionReason.PROGRESS_DEADLINE_EXCEEDED:
        return None
    return max(current.last_update_time + progress_deadline_seconds - now, 0.0)


def unblocks_rollout(before: ReplicaSetState, after: ReplicaSetState) -> bool:
    """Whether a ReplicaSet's new status may let a waiting rollout take its next step: more of its
    pods are available (room to scale old ones down and the new one up), or the last pods of a
    ReplicaSet scaled to 0 are gone (a rollout completes, Recreate goes on). ``before`` is the
    status seen last.

    A rolling update waits only for these; the loop watches ReplicaSets to step such an app at
    once instead of at its requeue time. Scaling that gitdeploy itself just wrote (pods created,
    available ones removed) unblocks nothing.

    >>> waiting = ReplicaSetState("web-new", "n", 2, 2.0, replicas=4, current=4, ready=2, available=2)
    >>> more = dataclasses.replace(waiting, ready=4, available=4)
    >>> unblocks_rollout(waiting, more), unblocks_rollout(more, waiting)
    (True, False)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=0, current=2)
    >>> unblocks_rollout(old, dataclasses.replace(old, current=0))
    True
    """
    drained = after.replicas == 0 and after.current == 0 and before.current > 0
    return after.available > before.available or drained
