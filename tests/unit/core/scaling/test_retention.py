"""Table-driven cases for gitdeploy.core.scaling.retention (Kubernetes docs and upstream
cleanupDeployment tests)."""

from __future__ import annotations

import doctest

import pytest

from gitdeploy.core.scaling import retention
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from gitdeploy.core.scaling.retention import select_replica_sets_to_delete

CURRENT = "current"


def rs(name: str, replicas: int, pods: int, *, revision: int = 0, created_at: float = 0.0) -> ReplicaSetState:
    return ReplicaSetState(name, name, revision, created_at, replicas=replicas, current=pods)


def test_docstring_examples_hold() -> None:
    assert doctest.testmod(retention).failed == 0


@pytest.mark.parametrize(
    ("replica_sets", "limit", "expected"),
    [
        pytest.param(
            [rs("foo-1", 0, 0), rs("foo-2", 0, 0), rs("foo-3", 0, 0)],
            1,
            ["foo-1", "foo-2"],
            id="upstream-three-empty-limit-1",
        ),
        pytest.param(
            [rs("foo-1", 0, 0), rs("foo-2", 0, 1), rs("foo-3", 1, 0), rs("foo-4", 1, 1)],
            0,
            ["foo-1"],
            id="upstream-only-spec-and-status-zero",
        ),
        pytest.param([rs("foo-1", 0, 0), rs("foo-2", 0, 0)], 0, ["foo-1", "foo-2"], id="upstream-limit-0"),
        pytest.param([rs("foo-1", 1, 1), rs("foo-2", 1, 1)], 0, [], id="upstream-all-active"),
        pytest.param(
            [rs("foo-1", 0, 0), rs("foo-2", 0, 0), rs("foo-3", 0, 0)], None, [], id="upstream-unlimited"
        ),
        pytest.param([rs("foo-1", 0, 0), rs("foo-2", 0, 0)], 10, [], id="default-10-under-limit"),
        pytest.param(
            [rs("b", 0, 0, revision=3), rs("a", 0, 0, revision=5), rs("c", 0, 0, revision=4)],
            1,
            ["b", "c"],
            id="lowest-revision-first",
        ),
        pytest.param(
            [rs("late", 0, 0, revision=2, created_at=9.0), rs("early", 0, 0, revision=2, created_at=1.0)],
            1,
            ["early"],
            id="same-revision-oldest-first",
        ),
        pytest.param(
            [rs("r1", 1, 1, revision=1), rs("r2", 0, 0, revision=2), rs("r3", 0, 0, revision=3)],
            1,
            ["r2"],
            id="busy-one-in-window-is-skipped-not-replaced",
        ),
        pytest.param(
            [rs(CURRENT, 0, 0, revision=9), rs("old", 0, 0, revision=1)],
            0,
            ["old"],
            id="current-never-deleted-even-when-scaled-to-zero",
        ),
    ],
)
def test_select_replica_sets_to_delete(
    replica_sets: list[ReplicaSetState], limit: int | None, expected: list[str]
) -> None:
    selected = select_replica_sets_to_delete(replica_sets, CURRENT, limit)
    assert [r.name for r in selected] == expected


def test_negative_limit_is_rejected() -> None:
    with pytest.raises(ValueError):
        select_replica_sets_to_delete([rs("foo-1", 0, 0)], CURRENT, -1)
