"""One step reaches what the Kubernetes controller reaches by re-syncing after its own writes.

The deployment controller plans one pass per sync, and its own scale of a ReplicaSet triggers the
next sync within milliseconds; it only waits where pods must become available. A step of
gitdeploy plans those passes back to back (:func:`plan_rolling_passes`) and writes each
ReplicaSet once (:func:`merge_passes`). The tables give, per step, the passes upstream makes
between two waits for pods; the reference below replays upstream pass by pass and must stop at
the same states.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitdeploy.core.scaling.proportional import plan_proportional_scaling
from gitdeploy.core.scaling.replicasets import ReplicaSetState, ScaleAction, sum_available, sum_replicas
from gitdeploy.core.scaling.rollingmath import (
    Bound,
    RolloutBounds,
    max_surge,
    max_unavailable,
    merge_passes,
    plan_rolling_passes,
    plan_rolling_step,
)
from tests.fixtures.hypothesis_rollouts import percent_or_count

OLD, NEW = "web-old", "web-new"


def steady(
    name: str,
    replicas: int,
    revision: int = 1,
    *,
    available: int | None = None,
    annotated: tuple[int, int] | None = None,
) -> ReplicaSetState:
    """A ReplicaSet whose pods all run, ``available`` of them ready (default all), with
    the (desired, max) replica annotations when ``annotated``."""
    available = replicas if available is None else available
    desired, most = annotated or (None, None)
    return ReplicaSetState(
        name, name, revision, float(revision), replicas, replicas, available, available, desired, most
    )


def pods_become_available(rs: ReplicaSetState) -> ReplicaSetState:
    return dataclasses.replace(rs, current=rs.replicas, ready=rs.replicas, available=rs.replicas)


def resized(rs: ReplicaSetState, to: int) -> ReplicaSetState:
    """What the ReplicaSet controller makes of a scale: new pods are not available yet."""
    return dataclasses.replace(rs, replicas=to, available=min(rs.available, to), ready=min(rs.ready, to))


def story(actions: tuple[ScaleAction, ...]) -> list[str]:
    return [f"{'new' if a.name == NEW else 'old'}→{a.to_replicas}" for a in actions]


def gitdeploy_steps(
    replicas: int, surge: Bound, unavailable: Bound
) -> list[tuple[list[list[str]], list[str], tuple[int, int]]]:
    """Step after step from a steady old ReplicaSet, pods available between steps: per step the
    passes, the writes, and (old, new) sizes after it."""
    old, new = steady(OLD, replicas), steady(NEW, 0, revision=2)
    steps = []
    while passes := plan_rolling_passes(
        RolloutBounds("RollingUpdate", replicas, surge, unavailable), new, [old]
    ):
        writes = merge_passes(passes)
        sizes = {a.name: a.to_replicas for a in writes}
        old = pods_become_available(resized(old, sizes.get(OLD, old.replicas)))
        new = pods_become_available(resized(new, sizes.get(NEW, new.replicas)))
        steps.append(([story(p) for p in passes], story(writes), (old.replicas, new.replicas)))
    return steps


def upstream_stops(replicas: int, surge: Bound, unavailable: Bound) -> list[tuple[int, int]]:
    """Upstream pass by pass: after each write a new sync with the pods as they are; when a sync
    does nothing, wait for the pods. Returns (old, new) sizes at each wait and at the end."""
    old, new = steady(OLD, replicas), steady(NEW, 0, revision=2)
    waits: list[tuple[int, int]] = []
    for _ in range(1000):
        actions = plan_rolling_step(RolloutBounds("RollingUpdate", replicas, surge, unavailable), new, [old])
        for action in actions:
            if action.name == NEW:
                new = resized(new, action.to_replicas)
            else:
                old = resized(old, action.to_replicas)
        if actions:
            continue
        if not waits or waits[-1] != (old.replicas, new.replicas):
            waits.append((old.replicas, new.replicas))
        if (old.available, new.available) == (old.replicas, new.replicas):
            return waits
        old, new = pods_become_available(old), pods_become_available(new)
    raise AssertionError("no end")


CASES = [
    pytest.param(
        100,
        "25%",
        "25%",
        [
            ([["new→25"], ["old→75"], ["new→50"]], ["old→75", "new→50"], (75, 50)),
            ([["old→25"], ["new→100"]], ["old→25", "new→100"], (25, 100)),
            ([["old→0"]], ["old→0"], (0, 100)),
        ],
        id="100 replicas 25%/25%: two waves of 50",
    ),
    pytest.param(
        8,
        "25%",
        "25%",
        [
            ([["new→2"], ["old→6"], ["new→4"]], ["old→6", "new→4"], (6, 4)),
            ([["old→2"], ["new→8"]], ["old→2", "new→8"], (2, 8)),
            ([["old→0"]], ["old→0"], (0, 8)),
        ],
        id="8 replicas 25%/25%: two waves of 4",
    ),
    pytest.param(
        10,
        0,
        1,
        [
            ([[f"old→{10 - n}"], [f"new→{n}"]], [f"old→{10 - n}", f"new→{n}"], (10 - n, n))
            for n in range(1, 11)
        ],
        id="10 replicas 0/1: ten waves of one",
    ),
    pytest.param(
        3,
        1,
        0,
        [
            ([["new→1"]], ["new→1"], (3, 1)),
            ([["old→2"], ["new→2"]], ["old→2", "new→2"], (2, 2)),
            ([["old→1"], ["new→3"]], ["old→1", "new→3"], (1, 3)),
            ([["old→0"]], ["old→0"], (0, 3)),
        ],
        id="3 replicas 1/0: the documentation's example, three waves of one",
    ),
]


@pytest.mark.parametrize(("replicas", "surge", "unavailable", "expected"), CASES)
def test_each_step_makes_upstreams_passes_and_writes_each_replica_set_once(
    replicas: int,
    surge: Bound,
    unavailable: Bound,
    expected: list[tuple[list[list[str]], list[str], tuple[int, int]]],
) -> None:
    steps = gitdeploy_steps(replicas, surge, unavailable)
    assert steps == expected
    assert [sizes for _, _, sizes in steps] == upstream_stops(replicas, surge, unavailable)


# After a replicas change, upstream's first sync scales proportionally (``first``); the rolling
# passes follow it in the same step. maxSurge 3 and maxUnavailable 2 as in the documentation.
ANNOTATED = (10, 13)
PROPORTIONAL = [
    pytest.param(
        15,
        steady(OLD, 8, annotated=ANNOTATED),
        steady(NEW, 5, revision=2, available=0, annotated=ANNOTATED),
        [["old→11", "new→7"]],
        [ScaleAction(OLD, 8, 11), ScaleAction(NEW, 5, 7)],
        id="the documentation's stuck rollout scaled 10→15: proportional only",
    ),
    pytest.param(
        15,
        steady(OLD, 8, annotated=ANNOTATED),
        steady(NEW, 5, revision=2, annotated=ANNOTATED),
        # the old ReplicaSet's 3 extra pods are not available: the next pass removes them (as
        # upstream's cleanup of unhealthy replicas does), which lets the new one grow
        [["old→11", "new→7"], ["old→8"], ["new→10"]],
        [ScaleAction(OLD, 8, 8), ScaleAction(NEW, 5, 10)],
        id="healthy rollout scaled 10→15: no churn of old pods",
    ),
    pytest.param(
        5,
        steady(OLD, 8, annotated=ANNOTATED),
        steady(NEW, 5, revision=2, annotated=ANNOTATED),
        [["old→5", "new→3"], ["old→0"], ["new→5"]],
        [ScaleAction(OLD, 8, 0), ScaleAction(NEW, 5, 5)],
        id="healthy rollout scaled 10→5: the new ReplicaSet keeps its available pods",
    ),
]


@pytest.mark.parametrize(("replicas", "old", "new", "passes", "writes"), PROPORTIONAL)
def test_proportional_scaling_then_the_rolling_passes(
    replicas: int,
    old: ReplicaSetState,
    new: ReplicaSetState,
    passes: list[list[str]],
    writes: list[ScaleAction],
) -> None:
    first = plan_proportional_scaling(RolloutBounds("RollingUpdate", replicas, 3, 2), new, [old])
    planned = plan_rolling_passes(RolloutBounds("RollingUpdate", replicas, 3, 2), new, [old], first=first)
    assert [story(p) for p in planned] == passes
    assert list(merge_passes(planned)) == writes


def test_scale_downs_are_written_before_scale_ups() -> None:
    passes = [[ScaleAction(NEW, 0, 2)], [ScaleAction(OLD, 8, 6)], [ScaleAction(NEW, 2, 4)]]
    assert merge_passes(passes) == (ScaleAction(OLD, 8, 6), ScaleAction(NEW, 0, 4))


def test_nothing_to_do_is_no_pass() -> None:
    waiting = steady(NEW, 4, revision=2, available=0)  # the first wave, not ready yet
    assert (
        plan_rolling_passes(RolloutBounds("RollingUpdate", 8, "25%", "25%"), waiting, [steady(OLD, 6)]) == ()
    )


@settings(max_examples=300, deadline=None)
@given(
    replicas=st.integers(min_value=0, max_value=40),
    surge=percent_or_count,
    unavailable=percent_or_count,
    new_available=st.integers(min_value=0, max_value=40),
    old_size=st.integers(min_value=0, max_value=40),
)
def test_between_any_two_writes_the_bounds_hold(
    replicas: int, surge: Bound, unavailable: Bound, new_available: int, old_size: int
) -> None:
    """From any mid-rollout state within the bounds, every prefix of a step's writes keeps at most
    replicas + maxSurge pods and, if the step started with enough, replicas - maxUnavailable
    available; and the step ends where upstream's passes end."""
    limit = replicas + max_surge(RolloutBounds("RollingUpdate", replicas, surge, unavailable))
    floor = replicas - max_unavailable(RolloutBounds("RollingUpdate", replicas, surge, unavailable))
    new_size = max(min(limit - old_size, replicas), 0)
    old = steady(OLD, old_size)
    new = steady(NEW, new_size, revision=2, available=min(new_available, new_size))
    passes = plan_rolling_passes(RolloutBounds("RollingUpdate", replicas, surge, unavailable), new, [old])
    states = {OLD: old, NEW: new}
    healthy = sum_available(states.values()) >= floor
    for write in merge_passes(passes):
        states[write.name] = resized(states[write.name], write.to_replicas)
        assert sum_replicas(states.values()) <= max(limit, old_size + new_size)
        if healthy:
            assert sum_available(states.values()) >= floor
    assert (
        plan_rolling_step(
            RolloutBounds("RollingUpdate", replicas, surge, unavailable), states[NEW], [states[OLD]]
        )
        == ()
    )
