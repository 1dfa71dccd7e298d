"""Table-driven cases for gitdeploy.core.scaling.proportional (Kubernetes docs and upstream TestScale)."""

from __future__ import annotations

import dataclasses
import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitdeploy.core.scaling import proportional
from gitdeploy.core.scaling.proportional import (
    ReplicaAnnotations,
    calculate_proportion,
    compute_replica_annotations,
    find_active_or_latest,
    is_saturated,
    is_scaling_event,
    needs_annotation_update,
    plan_proportional_scaling,
)
from gitdeploy.core.scaling.replicasets import ReplicaSetState, ScaleAction
from gitdeploy.core.scaling.rollingmath import Bound, RolloutBounds

NEWER, OLD, OLDER = 3.0, 2.0, 1.0


def rs(
    name: str,
    replicas: int,
    created_at: float,
    *,
    desired: int | None = None,
    max_replicas: int | None = None,
    available: int | None = None,
) -> ReplicaSetState:
    return ReplicaSetState(
        name=name,
        template_hash=name,
        revision=int(created_at),
        created_at=created_at,
        replicas=replicas,
        current=replicas,
        ready=replicas if available is None else available,
        available=replicas if available is None else available,
        desired_replicas_annotation=desired,
        max_replicas_annotation=max_replicas,
    )


def test_docstring_examples_hold() -> None:
    assert doctest.testmod(proportional).failed == 0


def test_scaling_a_stuck_rollout_from_10_to_15_grows_old_to_11_and_new_to_7() -> None:
    # 10 replicas, maxSurge 3, maxUnavailable 2; the new image cannot be pulled.
    old = rs("nginx-deployment-618515232", 8, OLD, desired=10, max_replicas=13)
    new = rs("nginx-deployment-1989198191", 5, NEWER, desired=10, max_replicas=13, available=0)
    assert is_scaling_event(15, [old, new])
    actions = plan_proportional_scaling(RolloutBounds("RollingUpdate", 15, 3, 2), new, [old])
    assert actions == (
        ScaleAction("nginx-deployment-618515232", 8, 11),
        ScaleAction("nginx-deployment-1989198191", 5, 7),
    )
    annotations = compute_replica_annotations(RolloutBounds("RollingUpdate", 15, 3, 2))
    assert annotations == ReplicaAnnotations(desired_replicas=15, max_replicas=18)
    assert annotations.as_pairs() == (
        ("gitdeploy.io/desired-replicas", "15"),
        ("gitdeploy.io/max-replicas", "18"),
    )


def annotated(
    replica_sets: list[ReplicaSetState], old_replicas: int, old_surge: int
) -> list[ReplicaSetState]:
    """Stamp the annotations the previous app size left (as upstream TestScale does)."""
    return [
        dataclasses.replace(
            r, desired_replicas_annotation=old_replicas, max_replicas_annotation=old_replicas + old_surge
        )
        for r in replica_sets
    ]


# Upstream TestScale: (name, replicas, surge, previous replicas, previous surge, new, olds, expected)
SCALE_CASES = [
    ("normal-10-to-12", 12, 0, 10, 0, ("v1", 10, NEWER), [], {"v1": 12}),
    ("normal-10-to-5", 5, 0, 10, 0, ("v1", 10, NEWER), [], {"v1": 5}),
    ("proportional-5-to-10", 10, 0, 5, 0, ("v2", 2, NEWER), [("v1", 3, OLD)], {"v2": 4, "v1": 6}),
    ("proportional-5-to-3", 3, 0, 5, 0, ("v2", 2, NEWER), [("v1", 3, OLD)], {"v2": 1, "v1": 2}),
    ("proportional-9-to-4", 4, 0, 9, 0, ("v2", 8, NEWER), [("v1", 1, OLD)], {"v2": 4, "v1": 0}),
    (
        "proportional-7-to-10",
        10,
        0,
        7,
        0,
        ("v3", 2, NEWER),
        [("v2", 3, OLD), ("v1", 2, OLDER)],
        {"v3": 3, "v2": 4, "v1": 3},
    ),
    (
        "proportional-13-to-8",
        8,
        0,
        13,
        0,
        ("v3", 2, NEWER),
        [("v2", 8, OLD), ("v1", 3, OLDER)],
        {"v3": 1, "v2": 5, "v1": 2},
    ),
    (
        "leftover-3-to-4-goes-to-newest",
        4,
        0,
        3,
        0,
        ("v3", 1, NEWER),
        [("v2", 1, OLD), ("v1", 1, OLDER)],
        {"v3": 2, "v2": 1, "v1": 1},
    ),
    (
        "leftover-3-to-2-taken-from-oldest",
        2,
        0,
        3,
        0,
        ("v3", 1, NEWER),
        [("v2", 1, OLD), ("v1", 1, OLDER)],
        {"v3": 1, "v2": 1, "v1": 0},
    ),
    ("no-new-rs-4-to-5", 5, 0, 4, 0, None, [("v2", 2, OLD), ("v1", 2, OLDER)], {"v2": 3, "v1": 2}),
    (
        "scale-down-to-zero",
        0,
        0,
        6,
        0,
        ("v3", 3, NEWER),
        [("v2", 2, OLD), ("v1", 1, OLDER)],
        {"v3": 0, "v2": 0, "v1": 0},
    ),
    (
        "scale-up-from-zero",
        6,
        0,
        6,
        0,
        ("v3", 0, NEWER),
        [("v2", 0, OLD), ("v1", 0, OLDER)],
        {"v3": 6, "v2": 0, "v1": 0},
    ),
    ("with-surge-pods-10-to-20", 20, 2, 10, 2, ("v2", 6, NEWER), [("v1", 6, OLD)], {"v2": 11, "v1": 11}),
    ("change-surge-and-size", 50, 6, 10, 3, ("v2", 5, NEWER), [("v1", 8, OLD)], {"v2": 22, "v1": 34}),
    (
        "change-size-and-template",
        14,
        0,
        10,
        0,
        None,
        [("v2", 7, NEWER), ("v1", 3, OLD)],
        {"v2": 10, "v1": 4},
    ),
]


@pytest.mark.parametrize(
    ("replicas", "surge", "previous", "previous_surge", "new", "olds", "expected"),
    [pytest.param(*case[1:], id=str(case[0])) for case in SCALE_CASES],
)
def test_proportional_scaling_gives_each_replica_set_its_share(
    replicas: int,
    surge: int,
    previous: int,
    previous_surge: int,
    new: tuple[str, int, float] | None,
    olds: list[tuple[str, int, float]],
    expected: dict[str, int],
) -> None:
    new_rs = annotated([rs(*new)], previous, previous_surge)[0] if new else None
    old_rss = annotated([rs(*o) for o in olds], previous, previous_surge)
    unavailable: Bound = 0
    actions = plan_proportional_scaling(
        RolloutBounds("RollingUpdate", replicas, surge, unavailable), new_rs, old_rss
    )
    sizes = {r.name: r.replicas for r in [*old_rss, *([new_rs] if new_rs else [])]}
    sizes.update({a.name: a.to_replicas for a in actions})
    assert sizes == expected


def test_saturated_but_broken_new_replica_set_does_not_touch_old_pods() -> None:
    new = rs("v2", 2, NEWER, desired=2, max_replicas=3, available=0)
    old = rs("v1", 1, OLD, desired=2, max_replicas=3)
    actions = plan_proportional_scaling(RolloutBounds("RollingUpdate", 2, 1, 1), new, [old])
    assert [(a.name, a.from_replicas, a.to_replicas) for a in actions] == [("v1", 1, 1), ("v2", 2, 2)]
    assert all(a.direction == "" for a in actions)  # annotation refresh only


def test_saturated_new_replica_set_scales_active_old_ones_to_zero() -> None:
    new = rs("v2", 4, NEWER, desired=4, max_replicas=5)
    old = rs("v1", 1, OLD, desired=4, max_replicas=5)
    assert plan_proportional_scaling(RolloutBounds("RollingUpdate", 4, 1, 0), new, [old]) == (
        ScaleAction("v1", 1, 0),
    )


def test_recreate_with_several_active_replica_sets_plans_nothing() -> None:
    new = rs("v2", 2, NEWER, desired=3)
    old = rs("v1", 1, OLD, desired=3)
    assert plan_proportional_scaling(RolloutBounds("Recreate", 5, None, None), new, [old]) == ()


def test_missing_max_replicas_annotation_falls_back_to_current_pods() -> None:
    new = rs("v2", 2, NEWER)
    old = rs("v1", 2, OLD)
    # 4 pods now, allowed 8 + 0 surge: both double.
    actions = plan_proportional_scaling(RolloutBounds("RollingUpdate", 8, 0, 1), new, [old])
    assert {a.name: a.to_replicas for a in actions} == {"v1": 4, "v2": 4}


@pytest.mark.parametrize(
    ("replicas", "allowed", "to_add", "added", "size", "annotation", "expected"),
    [
        pytest.param(15, 18, 5, 0, 8, 13, 3, id="docs-old-8-of-13-to-18"),
        pytest.param(15, 18, 5, 3, 5, 13, 2, id="docs-new-capped-by-what-is-left"),
        pytest.param(5, 5, 1, 0, 2, 4, 1, id="half-rounds-away-from-zero"),
        pytest.param(4, 4, -2, 0, 3, 6, -1, id="scale-down"),
        pytest.param(0, 0, -6, 0, 3, 6, -3, id="scale-to-zero-removes-all"),
        pytest.param(10, 10, 3, 3, 2, 7, 0, id="nothing-left"),
        pytest.param(5, 5, -2, 0, 9, 10, -2, id="scale-down-capped-by-what-is-left"),
    ],
)
def test_calculate_proportion(
    replicas: int, allowed: int, to_add: int, added: int, size: int, annotation: int, expected: int
) -> None:
    subject = rs("x", size, OLD, max_replicas=annotation)
    assert (
        calculate_proportion(subject, replicas, allowed, to_add, added, fallback_size=annotation) == expected
    )


def test_calculate_proportion_of_empty_replica_set_is_zero() -> None:
    assert calculate_proportion(rs("x", 0, OLD, max_replicas=3), 6, 6, 3, 0, 3) == 0


@pytest.mark.parametrize(
    ("replicas", "replica_sets", "expected"),
    [
        pytest.param(15, [rs("a", 8, OLD, desired=10)], True, id="docs-10-to-15"),
        pytest.param(10, [rs("a", 8, OLD, desired=10)], False, id="same-size"),
        pytest.param(10, [rs("a", 0, OLD, desired=3)], False, id="inactive-ignored"),
        pytest.param(10, [rs("a", 3, OLD)], False, id="no-annotation-ignored"),
    ],
)
def test_is_scaling_event(replicas: int, replica_sets: list[ReplicaSetState], expected: bool) -> None:
    assert is_scaling_event(replicas, replica_sets) is expected


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        pytest.param(rs("a", 3, NEWER, desired=3), True, id="saturated"),
        pytest.param(rs("a", 3, NEWER, desired=3, available=2), False, id="not-all-available"),
        pytest.param(rs("a", 3, NEWER, desired=4), False, id="annotation-differs"),
        pytest.param(rs("a", 3, NEWER), False, id="no-annotation"),
        pytest.param(rs("a", 2, NEWER, desired=3), False, id="too-small"),
    ],
)
def test_is_saturated(subject: ReplicaSetState, expected: bool) -> None:
    assert is_saturated(3, subject) is expected


@pytest.mark.parametrize(
    ("new", "olds", "expected"),
    [
        pytest.param(rs("n", 0, NEWER), [rs("o", 3, OLD)], "o", id="only-active-old"),
        pytest.param(rs("n", 3, NEWER), [rs("o", 0, OLD)], "n", id="only-active-new"),
        pytest.param(rs("n", 1, NEWER), [rs("o", 3, OLD)], None, id="two-active"),
        pytest.param(rs("n", 0, NEWER), [rs("o", 0, OLD)], "n", id="none-active-new"),
        pytest.param(None, [rs("o", 0, OLDER), rs("p", 0, OLD)], "p", id="none-active-newest-old"),
        pytest.param(None, [], None, id="nothing"),
    ],
)
def test_find_active_or_latest(
    new: ReplicaSetState | None, olds: list[ReplicaSetState], expected: str | None
) -> None:
    found = find_active_or_latest(new, olds)
    assert (found.name if found else None) == expected


@pytest.mark.parametrize(
    ("strategy", "replicas", "surge", "expected"),
    [
        pytest.param("RollingUpdate", 15, 3, (15, 18), id="docs-after-scaling"),
        pytest.param("RollingUpdate", 10, 3, (10, 13), id="docs-before-scaling"),
        pytest.param("Rolling", 4, None, (4, 5), id="default-25pct"),
        pytest.param("Recreate", 4, None, (4, 4), id="recreate-has-no-surge"),
    ],
)
def test_compute_replica_annotations(
    strategy: str, replicas: int, surge: Bound, expected: tuple[int, int]
) -> None:
    assert compute_replica_annotations(RolloutBounds(strategy, replicas, surge, 2)) == ReplicaAnnotations(
        *expected
    )


@pytest.mark.parametrize(
    ("desired", "max_replicas", "expected"),
    [
        pytest.param(15, 18, False, id="up-to-date"),
        pytest.param(10, 13, True, id="stale"),
        pytest.param(None, None, True, id="missing"),
        pytest.param(15, None, True, id="half-missing"),
    ],
)
def test_needs_annotation_update(desired: int | None, max_replicas: int | None, expected: bool) -> None:
    subject = rs("a", 3, OLD, desired=desired, max_replicas=max_replicas)
    assert needs_annotation_update(subject, ReplicaAnnotations(15, 18)) is expected


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=30), min_size=2, max_size=5),
    headroom=st.integers(min_value=0, max_value=20),
    replicas=st.integers(min_value=0, max_value=60),
    surge=st.integers(min_value=0, max_value=5),
)
def test_proportional_scaling_places_exactly_the_difference(
    sizes: list[int], headroom: int, replicas: int, surge: int
) -> None:
    # Consistent annotations: the last max-replicas is at least the pods there are now.
    previous_max = max(sum(sizes) + headroom, 1)
    replica_sets = [
        rs(f"v{i}", size, float(i), desired=max(previous_max - surge, 0), max_replicas=previous_max)
        for i, size in enumerate(sizes)
    ]
    *old, new = replica_sets
    new = dataclasses.replace(new, available=0)  # never saturated
    actions = plan_proportional_scaling(RolloutBounds("RollingUpdate", replicas, surge, 1), new, old)
    active = [r for r in [*old, new] if r.is_active]
    if len(active) < 2:
        return  # the single-active-ReplicaSet rule applies, covered by the table
    allowed = replicas + surge if replicas else 0
    total = sum(r.replicas for r in active)
    planned = {a.name: a for a in actions}
    assert set(planned) == {r.name for r in active}  # every active one, none of the empty ones
    after = sum(a.to_replicas for a in actions)
    assert all(a.to_replicas >= 0 for a in actions)
    if allowed >= total:
        assert after == allowed  # leftovers of rounding land on the largest ReplicaSet
    else:
        assert after >= allowed  # only clipping at zero can leave more
        assert all(a.to_replicas <= a.from_replicas for a in actions)
