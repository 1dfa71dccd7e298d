"""Drive the rolling math pass by pass with a tiny pure simulator and check the invariants.

The simulator's pods either become available as soon as they exist or never do; it starts from a
steady old ReplicaSet of ``replicas`` pods and a new ReplicaSet of 0 and applies every planned action.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitdeploy.core.scaling.replicasets import ReplicaSetState, ScaleAction, sum_available, sum_replicas
from gitdeploy.core.scaling.rollingmath import (
    Bound,
    RolloutBounds,
    max_surge,
    max_unavailable,
    plan_rolling_step,
)
from tests.fixtures.hypothesis_rollouts import percent_or_count

OLD = "nginx-deployment-2035384211"
NEW = "nginx-deployment-1564180365"


def scale(rs: ReplicaSetState, to: int, *, pods_become_available: bool) -> ReplicaSetState:
    """The ReplicaSet controller and kubelet in one line: pods appear (and maybe become available)."""
    available = to if pods_become_available else min(rs.available, to)
    return dataclasses.replace(rs, replicas=to, current=to, ready=available, available=available)


def simulate(
    replicas: int, surge: Bound, unavailable: Bound, *, new_pods_available: bool, max_passes: int = 500
) -> list[tuple[list[ScaleAction], ReplicaSetState, ReplicaSetState]]:
    """Run passes until nothing is left to do; return (actions, old, new) after each pass that acted."""
    old = ReplicaSetState(OLD, "2035384211", 1, 1.0, replicas, replicas, replicas, replicas)
    new = ReplicaSetState(NEW, "1564180365", 2, 2.0)
    history: list[tuple[list[ScaleAction], ReplicaSetState, ReplicaSetState]] = []
    for _ in range(max_passes):
        actions = list(
            plan_rolling_step(RolloutBounds("RollingUpdate", replicas, surge, unavailable), new, [old])
        )
        if not actions:
            return history
        for action in actions:
            if action.name == NEW:
                new = scale(new, action.to_replicas, pods_become_available=new_pods_available)
            else:
                old = scale(old, action.to_replicas, pods_become_available=True)
        history.append((actions, old, new))
    raise AssertionError(f"no convergence after {max_passes} passes")


def assert_invariants(
    replicas: int, surge: Bound, unavailable: Bound, old: ReplicaSetState, new: ReplicaSetState
) -> None:
    limit = replicas + max_surge(RolloutBounds("RollingUpdate", replicas, surge, unavailable))
    floor = replicas - max_unavailable(RolloutBounds("RollingUpdate", replicas, surge, unavailable))
    assert sum_replicas([old, new]) <= limit
    assert sum_available([old, new]) >= floor


def test_a_rollout_of_three_replicas_scales_up_and_down_one_pod_at_a_time() -> None:
    history = simulate(3, "25%", "25%", new_pods_available=True)
    events = [
        f"Scaled {action.direction} replica set {action.name} to {action.to_replicas}"
        for actions, _, _ in history
        for action in actions
    ]
    assert events == [
        f"Scaled up replica set {NEW} to 1",
        f"Scaled down replica set {OLD} to 2",
        f"Scaled up replica set {NEW} to 2",
        f"Scaled down replica set {OLD} to 1",
        f"Scaled up replica set {NEW} to 3",
        f"Scaled down replica set {OLD} to 0",
    ]
    for _, old, new in history:
        assert_invariants(3, "25%", "25%", old, new)
        assert sum_replicas([old, new]) <= 4  # "at max 4 Pods in total"
        assert sum_available([old, new]) >= 3  # "at least 3 Pods are available"


def test_docs_stuck_rollout_of_ten_replicas_stops_at_eight_old_five_new() -> None:
    history = simulate(10, 3, 2, new_pods_available=False)
    _, old, new = history[-1]
    assert (old.replicas, new.replicas) == (8, 5)  # the seed's "kubectl get rs" before scaling to 15
    for _, old, new in history:
        assert_invariants(10, 3, 2, old, new)


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        pytest.param(
            2, "0%", "1%", ["old-1", "new+1", "old-1", "new+1"], id="upstream-2-unavail-1pct-surge-0"
        ),
        pytest.param(1, "0%", "1%", ["old-1", "new+1"], id="upstream-1-unavail-1pct-surge-0"),
        pytest.param(
            2, "1%", "25%", ["new+1", "old-1", "new+1", "old-1"], id="upstream-2-unavail-25pct-surge-1pct"
        ),
        pytest.param(1, "1%", "25%", ["new+1", "old-1"], id="upstream-1-unavail-25pct-surge-1pct"),
        pytest.param(
            2, "1%", "0%", ["new+1", "old-1", "new+1", "old-1"], id="upstream-2-unavail-0-surge-1pct"
        ),
        pytest.param(1, "1%", "0%", ["new+1", "old-1"], id="upstream-1-unavail-0-surge-1pct"),
    ],
)
def test_small_percentages_round_surge_up_and_unavailability_down_never_both_to_0(
    replicas: int, surge: Bound, unavailable: Bound, expected: list[str]
) -> None:
    steps = [
        f"{'new' if a.name == NEW else 'old'}{a.to_replicas - a.from_replicas:+d}"
        for actions, _, _ in simulate(replicas, surge, unavailable, new_pods_available=True)
        for a in actions
    ]
    assert steps == expected


@settings(max_examples=300, deadline=None)
@given(
    replicas=st.integers(min_value=0, max_value=40),
    surge=percent_or_count,
    unavailable=percent_or_count,
    new_pods_available=st.booleans(),
)
def test_rolling_invariants_hold_at_every_pass(
    replicas: int, surge: Bound, unavailable: Bound, new_pods_available: bool
) -> None:
    history = simulate(replicas, surge, unavailable, new_pods_available=new_pods_available)
    for _, old, new in history:
        assert_invariants(replicas, surge, unavailable, old, new)
    if new_pods_available and history:
        _, old, new = history[-1]
        assert (old.replicas, new.replicas) == (0, replicas)
