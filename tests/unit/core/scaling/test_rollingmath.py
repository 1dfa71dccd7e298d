"""Table-driven cases for gitdeploy.core.scaling.rollingmath (Kubernetes docs and upstream test tables)."""

from __future__ import annotations

import doctest

import pytest

from gitdeploy.core.scaling import replicasets
from gitdeploy.core.scaling import rollingmath as rolling
from gitdeploy.core.scaling.replicasets import ReplicaSetState, ScaleAction
from gitdeploy.core.scaling.rollingmath import (
    Bound,
    RolloutBounds,
    calculate_scale_down_budget,
    max_surge,
    max_unavailable,
    min_available,
    new_replica_set_replicas,
    plan_new_replica_set_scale,
    plan_old_replica_sets_scale_down,
    plan_recreate_step,
    plan_rolling_scale_down,
    plan_rolling_step,
    plan_unhealthy_cleanup,
    resolve_fenceposts,
)


def rs(
    name: str,
    replicas: int,
    *,
    available: int | None = None,
    current: int | None = None,
    created_at: float = 0.0,
    revision: int = 1,
) -> ReplicaSetState:
    """A ReplicaSet whose pods all exist and are available unless told otherwise."""
    return ReplicaSetState(
        name=name,
        template_hash=name,
        revision=revision,
        created_at=created_at,
        replicas=replicas,
        current=replicas if current is None else current,
        ready=replicas if available is None else available,
        available=replicas if available is None else available,
    )


@pytest.mark.parametrize("module", [rolling, replicasets], ids=lambda m: m.__name__)
def test_docstring_examples_hold(module: object) -> None:
    result = doctest.testmod(module, raise_on_error=False)  # type: ignore[arg-type]
    assert result.failed == 0


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        pytest.param("25%", "25%", 3, (1, 0), id="docs-3-replicas-25pct"),
        pytest.param(None, None, 10, (3, 2), id="default-25pct-of-10"),
        pytest.param(None, None, 4, (1, 1), id="default-25pct-of-4"),
        pytest.param(3, 2, 10, (3, 2), id="absolute-numbers"),
        pytest.param("30%", "30%", 10, (3, 3), id="docs-30pct"),
        pytest.param("30%", "30%", 9, (3, 2), id="surge-rounds-up-unavailable-down"),
        pytest.param("0%", "1%", 2, (0, 1), id="upstream-2-desired-unavail-1pct-surge-0"),
        pytest.param("0%", "1%", 1, (0, 1), id="upstream-1-desired-unavail-1pct-surge-0"),
        pytest.param("1%", "25%", 2, (1, 0), id="upstream-2-desired-unavail-25pct-surge-1pct"),
        pytest.param("1%", "25%", 1, (1, 0), id="upstream-1-desired-unavail-25pct-surge-1pct"),
        pytest.param("1%", "0%", 2, (1, 0), id="upstream-2-desired-unavail-0-surge-1pct"),
        pytest.param(0, 0, 5, (0, 1), id="both-zero-gives-unavailable-1"),
        pytest.param("0%", "0%", 0, (0, 1), id="zero-desired"),
        pytest.param("200%", 0, 3, (6, 0), id="surge-may-exceed-100pct"),
    ],
)
def test_resolve_fenceposts(
    surge: Bound, unavailable: Bound, desired: int, expected: tuple[int, int]
) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired"),
    [
        pytest.param("25", None, 3, id="string-without-percent"),
        pytest.param("2.5%", None, 3, id="fractional-percent"),
        pytest.param(" 25%", None, 3, id="space"),
        pytest.param("-25%", None, 3, id="negative-percent"),
        pytest.param(-1, None, 3, id="negative-surge"),
        pytest.param(None, -1, 3, id="negative-unavailable"),
        pytest.param(True, None, 3, id="bool"),
        pytest.param(1.5, None, 3, id="float"),
        pytest.param(None, None, -1, id="negative-desired"),
    ],
)
def test_resolve_fenceposts_rejects_invalid_values(surge: object, unavailable: object, desired: int) -> None:
    with pytest.raises(ValueError):
        resolve_fenceposts(surge, unavailable, desired)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    (
        "strategy",
        "replicas",
        "surge",
        "unavailable",
        "expected_surge",
        "expected_unavailable",
        "expected_min",
    ),
    [
        pytest.param("RollingUpdate", 3, "25%", "25%", 1, 0, 3, id="docs-3-replicas"),
        pytest.param("RollingUpdate", 4, None, None, 1, 1, 3, id="docs-4-replicas-between-3-and-5"),
        pytest.param("Rolling", 10, 3, 2, 3, 2, 8, id="deploymentconfig-same-math"),
        pytest.param("RollingUpdate", 10, 0, 0, 0, 1, 9, id="both-zero"),
        pytest.param("RollingUpdate", 2, 0, 5, 0, 2, 0, id="unavailable-capped-at-replicas"),
        pytest.param("RollingUpdate", 0, 1, 1, 1, 0, 0, id="zero-replicas"),
        pytest.param("Recreate", 10, None, None, 0, 0, 0, id="recreate"),
    ],
)
def test_strategy_bounds(
    strategy: str,
    replicas: int,
    surge: Bound,
    unavailable: Bound,
    expected_surge: int,
    expected_unavailable: int,
    expected_min: int,
) -> None:
    assert max_surge(RolloutBounds(strategy, replicas, surge, unavailable)) == expected_surge
    assert max_unavailable(RolloutBounds(strategy, replicas, surge, unavailable)) == expected_unavailable
    assert min_available(RolloutBounds(strategy, replicas, surge, unavailable)) == expected_min


@pytest.mark.parametrize("strategy", ["Custom", "rollingupdate", ""])
def test_unknown_strategy_is_rejected(strategy: str) -> None:
    for function in (max_surge, max_unavailable, min_available):
        with pytest.raises(ValueError, match="unknown strategy"):
            function(RolloutBounds(strategy, 3, None, None))
    with pytest.raises(ValueError, match="unknown strategy"):
        new_replica_set_replicas(RolloutBounds(strategy, 3, None, None), 0, 3)


@pytest.mark.parametrize(
    ("strategy", "replicas", "surge", "new_replicas", "all_replicas", "expected"),
    [
        pytest.param("RollingUpdate", 3, "25%", 0, 3, 1, id="docs-step-1-new-to-1"),
        pytest.param("RollingUpdate", 3, "25%", 1, 4, 1, id="docs-at-max-total-wait"),
        pytest.param("RollingUpdate", 3, "25%", 1, 3, 2, id="docs-step-3-new-to-2"),
        pytest.param("RollingUpdate", 3, "25%", 2, 3, 3, id="docs-step-5-new-to-3"),
        pytest.param("RollingUpdate", 10, 0, 0, 10, 0, id="upstream-surge-0-no-scale-up"),
        pytest.param("RollingUpdate", 10, 2, 0, 10, 2, id="upstream-surge-2"),
        pytest.param("RollingUpdate", 10, 2, 0, 5, 7, id="upstream-old-5-fill-to-7"),
        pytest.param("RollingUpdate", 10, 2, 2, 12, 2, id="upstream-at-max-no-scale"),
        pytest.param("RollingUpdate", 10, 2, 11, 13, 10, id="upstream-too-big-scale-down"),
        pytest.param("RollingUpdate", 10, 2, 10, 10, 10, id="saturated"),
        pytest.param("RollingUpdate", 10, 3, 5, 13, 5, id="docs-proportional-stuck"),
        pytest.param("RollingUpdate", 3, "25%", 0, 0, 3, id="first-rollout-capped-at-replicas"),
        pytest.param("Recreate", 10, None, 0, 0, 10, id="recreate-full-size"),
        pytest.param("Recreate", 10, None, 0, 10, 10, id="recreate-ignores-total"),
    ],
)
def test_new_replica_set_replicas(
    strategy: str, replicas: int, surge: Bound, new_replicas: int, all_replicas: int, expected: int
) -> None:
    unavailable: Bound = "25%" if surge == "25%" else 0
    assert (
        new_replica_set_replicas(
            RolloutBounds(strategy, replicas, surge, unavailable), new_replicas, all_replicas
        )
        == expected
    )


def test_new_replica_set_replicas_rejects_inconsistent_totals() -> None:
    with pytest.raises(ValueError):
        new_replica_set_replicas(RolloutBounds("RollingUpdate", 3, None, None), 2, 1)
    with pytest.raises(ValueError):
        new_replica_set_replicas(RolloutBounds("RollingUpdate", 3, None, None), -1, 3)


@pytest.mark.parametrize(
    ("min_avail", "new", "old", "expected"),
    [
        pytest.param(8, rs("new", 5, available=0), [rs("old", 8)], 0, id="upstream-case-1-crashloop"),
        pytest.param(8, rs("new", 8, available=7), [rs("bad", 5, available=0)], 4, id="upstream-rollback"),
        pytest.param(8, rs("new", 0), [rs("a", 8), rs("b", 5)], 5, id="upstream-case-2-rollover"),
        pytest.param(3, rs("new", 1), [rs("old", 3)], 1, id="docs-after-new-to-1"),
        pytest.param(8, rs("new", 2, available=0), [rs("old", 8)], 0, id="new-unavailable-blocks"),
    ],
)
def test_calculate_scale_down_budget(
    min_avail: int, new: ReplicaSetState, old: list[ReplicaSetState], expected: int
) -> None:
    assert calculate_scale_down_budget(min_avail, new, [*old, new]) == expected


@pytest.mark.parametrize(
    ("old", "budget", "expected"),
    [
        pytest.param([rs("old", 10, available=8)], 1, [("old", 10, 9)], id="upstream-max-1"),
        pytest.param([rs("old", 10, available=8)], 3, [("old", 10, 8)], id="upstream-max-3-only-2-unhealthy"),
        pytest.param([rs("old", 10, available=8)], 0, [], id="upstream-max-0"),
        pytest.param([rs("old", 10)], 3, [], id="upstream-all-healthy"),
        pytest.param(
            [rs("b", 4, available=1, created_at=2), rs("a", 3, available=1, created_at=1)],
            3,
            [("a", 3, 1), ("b", 4, 3)],
            id="oldest-first-within-budget",
        ),
        pytest.param([rs("z", 0), rs("y", 2, available=0)], 5, [("y", 2, 0)], id="skips-empty"),
        pytest.param([rs("old", 2, available=3)], 5, [], id="more-available-than-spec"),
    ],
)
def test_plan_unhealthy_cleanup(
    old: list[ReplicaSetState], budget: int, expected: list[tuple[str, int, int]]
) -> None:
    assert plan_unhealthy_cleanup(old, budget) == tuple(ScaleAction(*e) for e in expected)


@pytest.mark.parametrize(
    ("min_avail", "old", "new", "expected"),
    [
        pytest.param(9, [rs("old", 10)], None, [("old", 10, 9)], id="upstream-unavail-0-resolves-1"),
        pytest.param(8, [rs("old", 10)], None, [("old", 10, 8)], id="upstream-unavail-2"),
        pytest.param(8, [rs("old", 10, available=8)], None, [], id="upstream-8-ready-no-scale"),
        pytest.param(8, [rs("old", 0, available=10)], None, [], id="upstream-old-empty"),
        pytest.param(8, [rs("old", 10, available=1)], None, [], id="upstream-1-ready"),
        pytest.param(3, [rs("old", 3)], rs("new", 1), [("old", 3, 2)], id="docs-old-to-2"),
        pytest.param(
            3,
            [rs("b", 3, created_at=2), rs("a", 3, created_at=1)],
            rs("new", 2),
            [("a", 3, 0), ("b", 3, 1)],
            id="oldest-first-across-replica-sets",
        ),
        pytest.param(
            6,
            [rs("b", 3, created_at=2), rs("a", 3, created_at=1)],
            rs("new", 2),
            [("a", 3, 1)],
            id="oldest-absorbs-whole-budget",
        ),
    ],
)
def test_plan_old_replica_sets_scale_down(
    min_avail: int,
    old: list[ReplicaSetState],
    new: ReplicaSetState | None,
    expected: list[tuple[str, int, int]],
) -> None:
    everything = [*old, new] if new is not None else old
    assert plan_old_replica_sets_scale_down(min_avail, old, everything) == tuple(
        ScaleAction(*e) for e in expected
    )


@pytest.mark.parametrize(
    ("replicas", "unavailable", "old", "new", "expected"),
    [
        pytest.param(10, 0, rs("old", 10), rs("new", 0), [("old", 10, 9)], id="upstream-unavail-0"),
        pytest.param(10, 2, rs("old", 10), rs("new", 0), [("old", 10, 8)], id="upstream-unavail-2"),
        pytest.param(
            10,
            2,
            rs("old", 10, available=8),
            rs("new", 0),
            [("old", 10, 8)],
            id="upstream-2-unhealthy-cleaned",
        ),
        pytest.param(
            10,
            2,
            rs("old", 10, available=9),
            rs("new", 0),
            [("old", 10, 8)],
            id="upstream-1-unhealthy-1-ready",
        ),
        pytest.param(
            10, 2, rs("old", 8), rs("new", 2, available=0), [], id="upstream-new-unavailable-blocks"
        ),
        pytest.param(10, 2, rs("old", 0), rs("new", 10), [], id="no-active-old"),
    ],
)
def test_plan_rolling_scale_down(
    replicas: int,
    unavailable: int,
    old: ReplicaSetState,
    new: ReplicaSetState,
    expected: list[tuple[str, int, int]],
) -> None:
    actions = plan_rolling_scale_down(RolloutBounds("RollingUpdate", replicas, 0, unavailable), new, [old])
    assert actions == tuple(ScaleAction(*e) for e in expected)


def test_plan_rolling_scale_down_ignores_available_pods_of_inactive_old_replica_sets() -> None:
    # An old ReplicaSet already scaled to 0 whose pods are still shutting down gives no budget.
    draining = rs("draining", 0, available=3, current=3, created_at=0)
    old = rs("old", 2, created_at=1)
    new = rs("new", 2, available=0, created_at=2)
    assert plan_rolling_scale_down(RolloutBounds("RollingUpdate", 4, 0, 1), new, [draining, old]) == ()


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        pytest.param(rs("new", 0), [rs("old", 3)], ("new", 0, 1), id="docs-scale-up"),
        pytest.param(rs("new", 1), [rs("old", 3)], None, id="docs-at-max-total"),
        pytest.param(rs("new", 3), [rs("old", 0)], None, id="done"),
        pytest.param(rs("new", 5), [rs("old", 0)], ("new", 5, 3), id="too-big"),
    ],
)
def test_plan_new_replica_set_scale(
    new: ReplicaSetState, old: list[ReplicaSetState], expected: tuple[str, int, int] | None
) -> None:
    action = plan_new_replica_set_scale(RolloutBounds("RollingUpdate", 3, "25%", "25%"), new, old)
    assert action == (ScaleAction(*expected) if expected else None)


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        pytest.param(rs("new", 0), [rs("old", 3)], [("new", 0, 1)], id="scale-up-first"),
        pytest.param(rs("new", 1), [rs("old", 3)], [("old", 3, 2)], id="then-scale-down"),
        pytest.param(rs("new", 1, available=0), [rs("old", 3)], [], id="wait-for-new-pod"),
        pytest.param(rs("new", 3), [rs("old", 0)], [], id="complete"),
    ],
)
def test_plan_rolling_step(
    new: ReplicaSetState, old: list[ReplicaSetState], expected: list[tuple[str, int, int]]
) -> None:
    assert plan_rolling_step(RolloutBounds("RollingUpdate", 3, "25%", "25%"), new, old) == tuple(
        ScaleAction(*e) for e in expected
    )


@pytest.mark.parametrize(
    ("new", "old", "old_pods_running", "expected"),
    [
        pytest.param(
            rs("new", 0),
            [rs("a", 2, created_at=1), rs("b", 1, created_at=2)],
            False,
            [("a", 2, 0), ("b", 1, 0)],
            id="scale-all-old-to-zero",
        ),
        pytest.param(rs("new", 0), [rs("a", 0, current=1)], False, [], id="wait-for-old-pods-to-go"),
        pytest.param(rs("new", 0), [rs("a", 0)], True, [], id="wait-for-pods-seen-in-pod-list"),
        pytest.param(rs("new", 0), [rs("a", 0)], False, [("new", 0, 3)], id="then-scale-new-to-full"),
        pytest.param(rs("new", 0), [], False, [("new", 0, 3)], id="first-rollout"),
        pytest.param(rs("new", 3), [rs("a", 0)], False, [], id="done"),
        pytest.param(rs("new", 5), [], False, [("new", 5, 3)], id="scaled-down-to-replicas"),
    ],
)
def test_plan_recreate_step(
    new: ReplicaSetState,
    old: list[ReplicaSetState],
    old_pods_running: bool,
    expected: list[tuple[str, int, int]],
) -> None:
    actions = plan_recreate_step(3, new, old, old_pods_running=old_pods_running)
    assert actions == tuple(ScaleAction(*e) for e in expected)


def test_rolling_plans_refuse_recreate() -> None:
    new, old = rs("new", 0), rs("old", 3)
    with pytest.raises(ValueError, match="plan_recreate_step"):
        plan_rolling_step(RolloutBounds("Recreate", 3, None, None), new, [old])
    with pytest.raises(ValueError, match="plan_recreate_step"):
        plan_rolling_scale_down(RolloutBounds("Recreate", 3, None, None), new, [old])
