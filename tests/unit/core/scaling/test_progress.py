"""Table-driven cases for gitdeploy.core.scaling.progress (Kubernetes docs and upstream util/sync tests)."""

from __future__ import annotations

import doctest
from collections.abc import Sequence

import pytest

from gitdeploy.core.scaling import progress
from gitdeploy.core.scaling.progress import (
    ConditionReason,
    ConditionStatus,
    ConditionType,
    DeploymentCondition,
    DeploymentStatus,
    calculate_rollout_status,
    calculate_status,
    find_replica_failure,
    has_progress_deadline_passed,
    is_deployment_complete,
    is_deployment_progressing,
    is_deployment_timed_out,
    make_condition,
    record_new_replica_set,
    record_pause,
    remove_condition,
    seconds_until_progress_check,
    set_condition,
    unblocks_rollout,
)
from gitdeploy.core.scaling.replicasets import ReplicaSetFailure, ReplicaSetState
from gitdeploy.core.scaling.rollingmath import RolloutBounds

P, A, F = ConditionType.PROGRESSING, ConditionType.AVAILABLE, ConditionType.REPLICA_FAILURE
T, FALSE, U = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN
R = ConditionReason


def rs(
    name: str,
    replicas: int,
    *,
    available: int | None = None,
    current: int | None = None,
    failure: ReplicaSetFailure | None = None,
    created_at: float = 0.0,
) -> ReplicaSetState:
    ready = replicas if available is None else available
    return ReplicaSetState(
        name=name,
        template_hash=name,
        revision=1,
        created_at=created_at,
        replicas=replicas,
        current=replicas if current is None else current,
        ready=ready,
        available=ready,
        failure=failure,
    )


def progressing(reason: str, updated_at: float, status: ConditionStatus = T) -> DeploymentCondition:
    return DeploymentCondition(P, status, reason, "", updated_at, updated_at)


def status(
    replicas: int = 0,
    updated: int = 0,
    ready: int = 0,
    available: int = 0,
    conditions: Sequence[DeploymentCondition] = (),
    generation: int = 1,
) -> DeploymentStatus:
    return DeploymentStatus(
        observed_generation=generation,
        replicas=replicas,
        updated_replicas=updated,
        ready_replicas=ready,
        available_replicas=available,
        conditions=tuple(conditions),
    )


def test_docstring_examples_hold() -> None:
    assert doctest.testmod(progress).failed == 0


@pytest.mark.parametrize(
    ("strategy", "replicas", "old", "new", "expected_counts", "expected_available"),
    [
        pytest.param(
            "RollingUpdate",
            3,
            rs("old", 3),
            rs("new", 1, available=0),
            (4, 1, 3, 3, 1),
            (T, R.MINIMUM_REPLICAS_AVAILABLE),
            id="docs-stuck-3-desired-1-updated-4-total-3-available-1-unavailable",
        ),
        pytest.param(
            "RollingUpdate",
            3,
            rs("old", 0),
            rs("new", 3),
            (3, 3, 3, 3, 0),
            (T, R.MINIMUM_REPLICAS_AVAILABLE),
            id="docs-complete-3-of-3",
        ),
        pytest.param(
            "RollingUpdate",
            10,
            rs("old", 8),
            rs("new", 5, available=0),
            (13, 5, 8, 8, 5),
            (T, R.MINIMUM_REPLICAS_AVAILABLE),
            id="docs-10-replicas-stuck-at-8-plus-5",
        ),
        pytest.param(
            "RollingUpdate",
            10,
            rs("old", 8, available=7),
            rs("new", 2, available=0),
            (10, 2, 7, 7, 3),
            (FALSE, R.MINIMUM_REPLICAS_UNAVAILABLE),
            id="below-min-available",
        ),
        pytest.param(
            "Recreate",
            3,
            rs("old", 0),
            rs("new", 3, available=2),
            (3, 3, 2, 2, 1),
            (FALSE, R.MINIMUM_REPLICAS_UNAVAILABLE),
            id="recreate-needs-all-replicas",
        ),
        pytest.param(
            "RollingUpdate",
            2,
            rs("old", 0, available=2, current=2),
            rs("new", 2),
            (4, 2, 4, 4, 0),
            (T, R.MINIMUM_REPLICAS_AVAILABLE),
            id="scaling-down-unavailable-never-negative",
        ),
    ],
)
def test_calculate_status(
    strategy: str,
    replicas: int,
    old: ReplicaSetState,
    new: ReplicaSetState,
    expected_counts: tuple[int, int, int, int, int],
    expected_available: tuple[ConditionStatus, str],
) -> None:
    result = calculate_status(
        bounds=RolloutBounds(strategy, replicas, None, None),
        generation=4,
        new_rs=new,
        replica_sets=[old, new],
        previous=DeploymentStatus(),
        now=10.0,
    )
    counts = (
        result.replicas,
        result.updated_replicas,
        result.ready_replicas,
        result.available_replicas,
        result.unavailable_replicas,
    )
    assert counts == expected_counts
    assert result.observed_generation == 4
    condition = result.condition(A)
    assert condition is not None
    assert (condition.status, condition.reason) == expected_available


@pytest.mark.parametrize(
    ("replicas", "generation", "subject", "expected"),
    [
        pytest.param(3, 1, status(3, 3, 3, 3), True, id="complete"),
        pytest.param(3, 1, status(4, 3, 4, 4), False, id="old-pods-left"),
        pytest.param(3, 1, status(3, 2, 3, 3), False, id="not-all-updated"),
        pytest.param(3, 1, status(3, 3, 3, 2), False, id="not-all-available"),
        pytest.param(3, 2, status(3, 3, 3, 3, generation=1), False, id="generation-not-observed"),
        pytest.param(3, 1, status(3, 3, 3, 3, generation=2), True, id="observed-newer"),
        pytest.param(0, 1, status(), True, id="zero-replicas"),
    ],
)
def test_is_deployment_complete(
    replicas: int, generation: int, subject: DeploymentStatus, expected: bool
) -> None:
    assert is_deployment_complete(replicas, generation, subject) is expected


@pytest.mark.parametrize(
    ("previous", "current", "expected"),
    [
        pytest.param(status(3, 0, 3, 3), status(4, 1, 3, 3), True, id="more-updated"),
        pytest.param(status(4, 1, 4, 4), status(3, 1, 3, 3), True, id="fewer-old-pods"),
        pytest.param(status(4, 1, 3, 3), status(4, 1, 4, 3), True, id="more-ready"),
        pytest.param(status(4, 1, 4, 3), status(4, 1, 4, 4), True, id="more-available"),
        pytest.param(status(4, 1, 3, 3), status(4, 1, 3, 3), False, id="stuck"),
        pytest.param(status(4, 1, 4, 4), status(4, 1, 3, 3), False, id="lost-availability"),
    ],
)
def test_is_deployment_progressing(
    previous: DeploymentStatus, current: DeploymentStatus, expected: bool
) -> None:
    assert is_deployment_progressing(previous, current) is expected


@pytest.mark.parametrize(
    ("last_update", "deadline", "now", "expected"),
    [
        pytest.param(0.0, 600, 599.0, False, id="before"),
        pytest.param(0.0, 600, 600.0, False, id="exactly-at-deadline"),
        pytest.param(0.0, 600, 600.001, True, id="just-after"),
        pytest.param(1000.0, 10, 1011.0, True, id="short-deadline"),
        pytest.param(0.0, 0, 0.5, True, id="zero-deadline"),
    ],
)
def test_has_progress_deadline_passed(last_update: float, deadline: int, now: float, expected: bool) -> None:
    assert has_progress_deadline_passed(last_update, deadline, now) is expected


@pytest.mark.parametrize(
    ("condition", "deadline", "now", "expected"),
    [
        pytest.param(None, 600, 10_000.0, False, id="no-progressing-condition"),
        pytest.param(progressing(R.REPLICA_SET_UPDATED, 0.0), None, 10_000.0, False, id="no-deadline"),
        pytest.param(progressing(R.NEW_REPLICA_SET_AVAILABLE, 0.0), 600, 10_000.0, False, id="completed"),
        pytest.param(
            progressing(R.PROGRESS_DEADLINE_EXCEEDED, 0.0, FALSE), 600, 1.0, True, id="already-timed-out"
        ),
        pytest.param(progressing(R.REPLICA_SET_UPDATED, 0.0), 600, 601.0, True, id="updated-too-long-ago"),
        pytest.param(progressing(R.NEW_REPLICA_SET_CREATED, 0.0), 600, 300.0, False, id="within-deadline"),
        pytest.param(
            progressing(R.DEPLOYMENT_RESUMED, 0.0, U), 600, 601.0, True, id="resumed-clock-restarts"
        ),
    ],
)
def test_is_deployment_timed_out(
    condition: DeploymentCondition | None, deadline: int | None, now: float, expected: bool
) -> None:
    subject = status(conditions=[condition] if condition else [])
    assert is_deployment_timed_out(subject, deadline, now) is expected


def test_set_condition_keeps_times_when_status_and_reason_are_unchanged() -> None:
    before = (progressing(R.REPLICA_SET_UPDATED, 5.0),)
    assert set_condition(before, make_condition(P, T, R.REPLICA_SET_UPDATED, "again", 9.0)) == before


def test_set_condition_keeps_transition_time_when_only_the_reason_changes() -> None:
    available = make_condition(A, T, R.MINIMUM_REPLICAS_AVAILABLE, "", 1.0)
    before = (progressing(R.REPLICA_SET_UPDATED, 5.0), available)
    after = set_condition(before, make_condition(P, T, R.NEW_REPLICA_SET_AVAILABLE, "done", 9.0))
    assert after == (available, DeploymentCondition(P, T, R.NEW_REPLICA_SET_AVAILABLE, "done", 9.0, 5.0))


def test_set_condition_moves_transition_time_when_status_changes() -> None:
    before = (progressing(R.REPLICA_SET_UPDATED, 5.0),)
    after = set_condition(before, make_condition(P, FALSE, R.PROGRESS_DEADLINE_EXCEEDED, "", 9.0))
    assert after == (DeploymentCondition(P, FALSE, R.PROGRESS_DEADLINE_EXCEEDED, "", 9.0, 9.0),)
    assert remove_condition(after, P) == ()


def rollout(
    previous: DeploymentStatus,
    new: ReplicaSetState,
    old: ReplicaSetState,
    now: float,
    *,
    deadline: int | None = 600,
    replicas: int = 3,
) -> DeploymentStatus:
    return calculate_rollout_status(
        app="nginx-deployment",
        bounds=RolloutBounds("RollingUpdate", replicas, "25%", "25%"),
        generation=1,
        progress_deadline_seconds=deadline,
        new_rs=new,
        replica_sets=[old, new],
        previous=previous,
        now=now,
    )


def progressing_of(subject: DeploymentStatus) -> tuple[ConditionStatus, str, float, float] | None:
    condition = subject.condition(P)
    if condition is None:
        return None
    return (condition.status, condition.reason, condition.last_update_time, condition.last_transition_time)


def test_rollout_condition_lifecycle_progress_timeout_recovery_completion() -> None:
    old = rs("web-old", 3, created_at=1.0)
    start = rollout(DeploymentStatus(), rs("web-new", 0, created_at=2.0), old, 0.0)
    start = record_new_replica_set(start, "web-new", created=True, progress_deadline_seconds=600, now=0.0)
    assert progressing_of(start) == (T, R.NEW_REPLICA_SET_CREATED, 0.0, 0.0)

    # The new ReplicaSet's pod appears but never becomes ready (image pull loop).
    step = rollout(start, rs("web-new", 1, available=0, created_at=2.0), old, 10.0)
    assert progressing_of(step) == (T, R.REPLICA_SET_UPDATED, 10.0, 0.0)
    assert step.condition(P) == DeploymentCondition(
        P, T, R.REPLICA_SET_UPDATED, 'ReplicaSet "web-new" is progressing.', 10.0, 0.0
    )

    waiting = rollout(step, rs("web-new", 1, available=0, created_at=2.0), old, 610.0)
    assert progressing_of(waiting) == (T, R.REPLICA_SET_UPDATED, 10.0, 0.0)  # deadline not passed yet
    timed_out = rollout(waiting, rs("web-new", 1, available=0, created_at=2.0), old, 611.0)
    assert progressing_of(timed_out) == (FALSE, R.PROGRESS_DEADLINE_EXCEEDED, 611.0, 611.0)
    assert (
        seconds_until_progress_check(
            timed_out, replicas=3, generation=1, progress_deadline_seconds=600, now=611.0
        )
        is None
    )

    # The image becomes pullable: progress again, a new transition since the status was False.
    recovered = rollout(timed_out, rs("web-new", 1, created_at=2.0), old, 700.0)
    assert progressing_of(recovered) == (T, R.REPLICA_SET_UPDATED, 700.0, 700.0)

    done = rollout(recovered, rs("web-new", 3, created_at=2.0), rs("web-old", 0, created_at=1.0), 800.0)
    assert progressing_of(done) == (T, R.NEW_REPLICA_SET_AVAILABLE, 800.0, 700.0)
    condition = done.condition(P)
    assert condition is not None and condition.message == 'ReplicaSet "web-new" has successfully progressed.'

    # Completed stays completed, even when availability drops later.
    later = rollout(
        done, rs("web-new", 3, available=1, created_at=2.0), rs("web-old", 0, created_at=1.0), 5000.0
    )
    assert progressing_of(later) == (T, R.NEW_REPLICA_SET_AVAILABLE, 800.0, 700.0)
    available = later.condition(A)
    assert available is not None and available.reason == R.MINIMUM_REPLICAS_UNAVAILABLE


def test_rollout_without_deadline_has_no_progressing_condition() -> None:
    previous = status(conditions=[progressing(R.REPLICA_SET_UPDATED, 0.0)])
    result = rollout(previous, rs("new", 1), rs("old", 3), 10.0, deadline=None)
    assert result.condition(P) is None
    assert result.condition(A) is not None


@pytest.mark.parametrize(
    ("new_failure", "old_failure", "expected_reason"),
    [
        pytest.param(None, None, None, id="no-failure"),
        pytest.param(
            ReplicaSetFailure("FailedCreate", "exceeded quota", 5.0), None, "FailedCreate", id="new"
        ),
        pytest.param(None, ReplicaSetFailure("FailedDelete", "forbidden", 4.0), "FailedDelete", id="old"),
        pytest.param(
            ReplicaSetFailure("FailedCreate", "exceeded quota", 5.0),
            ReplicaSetFailure("FailedDelete", "forbidden", 4.0),
            "FailedCreate",
            id="new-one-wins",
        ),
    ],
)
def test_find_replica_failure(
    new_failure: ReplicaSetFailure | None, old_failure: ReplicaSetFailure | None, expected_reason: str | None
) -> None:
    new = rs("new", 1, failure=new_failure)
    old = rs("old", 2, failure=old_failure)
    condition = find_replica_failure(new, [old, new])
    assert (condition.reason if condition else None) == expected_reason
    if condition is not None:
        assert (condition.type, condition.status) == (F, T)


def test_docs_quota_failure_is_copied_then_cleared() -> None:
    quota = ReplicaSetFailure("FailedCreate", 'pods "web-new-" is forbidden: exceeded quota', 39.0)
    failing = rollout(
        DeploymentStatus(), rs("web-new", 2, available=0, current=0, failure=quota), rs("old", 2), 42.0
    )
    assert failing.condition(F) == DeploymentCondition(F, T, "FailedCreate", quota.message, 39.0, 39.0)
    fixed = rollout(failing, rs("web-new", 2, available=0), rs("old", 2), 50.0)
    assert fixed.condition(F) is None


@pytest.mark.parametrize(
    ("created", "existing", "deadline", "expected"),
    [
        pytest.param(True, None, 600, R.NEW_REPLICA_SET_CREATED, id="created"),
        pytest.param(False, None, 600, R.FOUND_NEW_REPLICA_SET, id="found-without-condition"),
        pytest.param(
            False, progressing(R.REPLICA_SET_UPDATED, 0.0), 600, R.REPLICA_SET_UPDATED, id="found-keeps"
        ),
        pytest.param(
            True,
            progressing(R.NEW_REPLICA_SET_AVAILABLE, 0.0),
            600,
            R.NEW_REPLICA_SET_CREATED,
            id="next-rollout",
        ),
        pytest.param(True, None, None, None, id="no-deadline"),
    ],
)
def test_record_new_replica_set(
    created: bool, existing: DeploymentCondition | None, deadline: int | None, expected: str | None
) -> None:
    before = status(conditions=[existing] if existing else [])
    after = record_new_replica_set(
        before, "web-new", created=created, progress_deadline_seconds=deadline, now=7.0
    )
    condition = after.condition(P)
    assert (condition.reason if condition else None) == expected


@pytest.mark.parametrize(
    ("paused", "existing", "expected"),
    [
        pytest.param(True, progressing(R.REPLICA_SET_UPDATED, 0.0), R.DEPLOYMENT_PAUSED, id="pause"),
        pytest.param(True, progressing(R.DEPLOYMENT_PAUSED, 0.0, U), R.DEPLOYMENT_PAUSED, id="still-paused"),
        pytest.param(False, progressing(R.DEPLOYMENT_PAUSED, 0.0, U), R.DEPLOYMENT_RESUMED, id="resume"),
        pytest.param(False, progressing(R.REPLICA_SET_UPDATED, 0.0), R.REPLICA_SET_UPDATED, id="not-paused"),
        pytest.param(
            True,
            progressing(R.PROGRESS_DEADLINE_EXCEEDED, 0.0, FALSE),
            R.PROGRESS_DEADLINE_EXCEEDED,
            id="timeout-not-overwritten",
        ),
    ],
)
def test_record_pause(paused: bool, existing: DeploymentCondition, expected: str) -> None:
    after = record_pause(
        status(conditions=[existing]), paused=paused, progress_deadline_seconds=600, now=50.0
    )
    condition = after.condition(P)
    assert condition is not None and condition.reason == expected


@pytest.mark.parametrize(
    ("subject", "deadline", "now", "expected"),
    [
        pytest.param(
            status(conditions=[progressing(R.REPLICA_SET_UPDATED, 0.0)]), 600, 180.0, 420.0, id="upstream-7m"
        ),
        pytest.param(
            status(conditions=[progressing(R.REPLICA_SET_UPDATED, 0.0)]), 600, 900.0, 0.0, id="overdue"
        ),
        pytest.param(
            status(conditions=[progressing(R.REPLICA_SET_UPDATED, 0.0)]), None, 1.0, None, id="no-deadline"
        ),
        pytest.param(status(), 600, 1.0, None, id="no-condition"),
        pytest.param(
            status(3, 3, 3, 3, [progressing(R.REPLICA_SET_UPDATED, 0.0)]), 600, 1.0, None, id="complete"
        ),
        pytest.param(
            status(conditions=[progressing(R.PROGRESS_DEADLINE_EXCEEDED, 0.0, FALSE)]),
            600,
            1.0,
            None,
            id="timed-out",
        ),
    ],
)
def test_seconds_until_progress_check(
    subject: DeploymentStatus, deadline: int | None, now: float, expected: float | None
) -> None:
    assert (
        seconds_until_progress_check(
            subject, replicas=3, generation=1, progress_deadline_seconds=deadline, now=now
        )
        == expected
    )


# -- what wakes a waiting rollout ------------------------------------------------------------------


def _counts(replicas: int, current: int, available: int) -> ReplicaSetState:
    return ReplicaSetState("web-x", "x", 2, 1.0, replicas, current, available, available)


@pytest.mark.parametrize(
    ("before", "after", "wakes"),
    [
        ((4, 4, 2), (4, 4, 4), True),  # new pods became available
        ((4, 2, 0), (4, 4, 0), False),  # pods created for a scale-up: not available yet
        ((6, 6, 6), (2, 2, 2), False),  # a scale-down gitdeploy wrote
        ((0, 2, 2), (0, 0, 0), True),  # the last pods of a scaled-down ReplicaSet are gone
        ((0, 0, 0), (0, 0, 0), False),  # already empty: an annotation changed
        ((2, 2, 2), (0, 2, 2), False),  # scaled to 0, pods still stopping
        ((4, 4, 4), (4, 4, 3), False),  # a pod stopped being available
    ],
)
def test_unblocks_rollout(before: tuple[int, int, int], after: tuple[int, int, int], wakes: bool) -> None:
    assert unblocks_rollout(_counts(*before), _counts(*after)) is wakes
