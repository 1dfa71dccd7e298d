"""Rollout math: fenceposts, new ReplicaSet size, old ReplicaSet scale-down (Rolling and Recreate).

A port of the semantics of the Kubernetes deployment controller (``pkg/controller/deployment``:
``util/deployment_util.go``, ``rolling.go``, ``recreate.go``). Everything here is pure: it reads plain
values and :class:`~gitdeploy.core.scaling.replicasets.ReplicaSetState` records and returns numbers or plans
of :class:`~gitdeploy.core.scaling.replicasets.ScaleAction`; the controller executes them.

Bounds (``max_surge``, ``max_unavailable``) are an ``int`` (an absolute number of pods), a percentage
string such as ``"25%"`` (of the desired replicas; maxSurge rounds up, maxUnavailable rounds down), or
``None`` for the strategy default ``"25%"``. Strategies are ``"RollingUpdate"`` (Deployment),
``"Rolling"`` (DeploymentConfig, same math) and ``"Recreate"``. Anything else raises ``ValueError``.

The worked example of the Kubernetes documentation: 3 replicas, maxSurge and maxUnavailable 25%,
resolve to surge 1 and unavailable 0, so one pass at a time the rollout goes
new→1, old→2, new→2, old→1, new→3, old→0 (see :func:`plan_rolling_step`). The Kubernetes
controller re-syncs right after its own writes, so it only waits where pods must become available:
new→1 | old→2, new→2 | old→1, new→3 | old→0. A step of gitdeploy makes those passes back to back
(:func:`plan_rolling_passes`) and writes each ReplicaSet once (:func:`merge_passes`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from gitdeploy.core.scaling.replicasets import (
    ReplicaSetState,
    ScaleAction,
    apply_scale_actions,
    sort_by_creation,
    sum_available,
    sum_replicas,
)

Bound = int | str | None
"""An int-or-percent rollout bound, or ``None`` for the default ``"25%"``."""


class RolloutBounds(NamedTuple):
    """What every piece of the rollout math reads, as one value: the strategy (``RollingUpdate``,
    ``Rolling`` or ``Recreate``), the desired ``replicas`` and the two bounds. A tuple in the order
    the functions of this module take them, so ``plan_rolling_step(*bounds, new, old)``.

    >>> bounds = RolloutBounds("RollingUpdate", 3, "25%", "25%")
    >>> max_surge(bounds), min_available(bounds)
    (1, 3)
    """

    strategy: str
    replicas: int
    max_surge: Bound
    max_unavailable: Bound


DEFAULT_BOUND = "25%"
ROLLING_STRATEGIES = frozenset({"RollingUpdate", "Rolling"})
RECREATE_STRATEGY = "Recreate"

_PERCENT = re.compile(r"[0-9]+%")


def is_rolling(strategy: str) -> bool:
    """True for ``RollingUpdate``/``Rolling``, False for ``Recreate``; ``ValueError`` otherwise."""
    if strategy in ROLLING_STRATEGIES:
        return True
    if strategy == RECREATE_STRATEGY:
        return False
    raise ValueError(f"unknown strategy {strategy!r}: expected RollingUpdate, Rolling or Recreate")


def check_count(name: str, value: int) -> None:
    """``ValueError`` unless ``value`` is a count of pods (a non-negative int, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def _scale_bound(name: str, value: Bound, total: int, *, round_up: bool) -> int:
    """Upstream ``intstr.GetScaledValueFromIntOrPercent``, rejecting what API validation rejects."""
    if value is None:
        value = DEFAULT_BOUND
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer or a percentage such as '25%', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
        return value
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        scaled = int(value[:-1]) * total
        return -(-scaled // 100) if round_up else scaled // 100
    raise ValueError(f"{name} must be an integer or a percentage such as '25%', got {value!r}")


def resolve_fenceposts(max_surge: Bound, max_unavailable: Bound, desired: int) -> tuple[int, int]:
    """Resolve both bounds against ``desired`` replicas: ``(surge, unavailable)``.

    maxSurge percentages round up, maxUnavailable percentages round down. When both resolve to zero,
    unavailable becomes 1 so that the rollout can still move (surge might be blocked by quota).

    >>> resolve_fenceposts("25%", "25%", 3)    # the Kubernetes docs example
    (1, 0)
    >>> resolve_fenceposts(None, None, 10)      # default 25%: ceil(2.5), floor(2.5)
    (3, 2)
    >>> resolve_fenceposts(3, 2, 10)            # absolute numbers are taken as they are
    (3, 2)
    >>> resolve_fenceposts("0%", "1%", 2)       # both zero after rounding: unavailable 1
    (0, 1)
    >>> resolve_fenceposts("1%", "25%", 1)      # 1% of 1 rounds up to one surge pod
    (1, 0)
    """
    check_count("desired", desired)
    surge = _scale_bound("maxSurge", max_surge, desired, round_up=True)
    unavailable = _scale_bound("maxUnavailable", max_unavailable, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _resolve_max_surge(bounds: RolloutBounds) -> int:
    strategy, replicas, surge, unavailable = bounds
    check_count("replicas", replicas)
    if not is_rolling(strategy):
        return 0
    return resolve_fenceposts(surge, unavailable, replicas)[0]


def _resolve_max_unavailable(bounds: RolloutBounds) -> int:
    strategy, replicas, surge, unavailable = bounds
    check_count("replicas", replicas)
    if not is_rolling(strategy) or replicas == 0:
        return 0
    return min(resolve_fenceposts(surge, unavailable, replicas)[1], replicas)


def max_surge(bounds: RolloutBounds) -> int:
    """Pods allowed above ``replicas`` during a rollout; 0 for Recreate (upstream ``MaxSurge``).

    >>> max_surge(RolloutBounds("RollingUpdate", 10, 3, 2))
    3
    >>> max_surge(RolloutBounds("Recreate", 10, 3, 2))
    0
    """
    return _resolve_max_surge(bounds)


def max_unavailable(bounds: RolloutBounds) -> int:
    """Pods allowed to be unavailable during a rollout (upstream ``MaxUnavailable``).

    0 for Recreate and for 0 replicas; never more than ``replicas``.

    >>> max_unavailable(RolloutBounds("RollingUpdate", 3, None, None))
    0
    >>> max_unavailable(RolloutBounds("Rolling", 4, 0, 0))      # both zero: one pod may go
    1
    >>> max_unavailable(RolloutBounds("RollingUpdate", 2, 0, 5))  # capped at replicas
    2
    >>> max_unavailable(RolloutBounds("Recreate", 4, None, None))
    0
    """
    return _resolve_max_unavailable(bounds)


def min_available(bounds: RolloutBounds) -> int:
    """Pods that must stay available during a rolling update (upstream ``MinAvailable``).

    ``replicas - max_unavailable`` for rolling strategies; 0 for Recreate, which by definition stops
    every old pod before starting new ones. (Availability of a finished Recreate rollout is judged
    against all ``replicas``: see :mod:`gitdeploy.core.scaling.progress`.)

    >>> min_available(RolloutBounds("RollingUpdate", 3, "25%", "25%"))
    3
    >>> min_available(RolloutBounds("RollingUpdate", 10, 3, 2))
    8
    >>> min_available(RolloutBounds("Recreate", 10, None, None))
    0
    """
    if not is_rolling(bounds.strategy):
        check_count("replicas", bounds.replicas)
        return 0
    return bounds.replicas - _resolve_max_unavailable(bounds)


def new_replica_set_replicas(
    bounds: RolloutBounds,
    new_replicas: int,
    all_replicas: int,
) -> int:
    """The ``spec.replicas`` the new ReplicaSet should have now (upstream ``NewRSNewReplicas``).

    ``new_replicas`` is the new ReplicaSet's current ``spec.replicas`` (0 if it does not exist yet),
    ``all_replicas`` the sum of ``spec.replicas`` over every ReplicaSet of the app, new one included.
    Rolling: grow the new ReplicaSet as far as ``replicas + maxSurge`` total pods allow, never beyond
    ``replicas``; a new ReplicaSet already at or above ``replicas`` gets exactly ``replicas`` (this
    folds in upstream ``reconcileNewReplicaSet``). Recreate: ``replicas``.

    The docs example (3 replicas, 25%/25%, so at most 4 pods):

    >>> new_replica_set_replicas(RolloutBounds("RollingUpdate", 3, "25%", "25%"), 0, 3)   # old 3, new 0
    1
    >>> new_replica_set_replicas(RolloutBounds("RollingUpdate", 3, "25%", "25%"), 1, 4)   # at 4 pods: wait
    1
    >>> new_replica_set_replicas(RolloutBounds("RollingUpdate", 3, "25%", "25%"), 1, 3)   # old went to 2
    2

    Upstream test cases (10 replicas, maxSurge 2):

    >>> new_replica_set_replicas(RolloutBounds("RollingUpdate", 10, 2, 0), 0, 10)
    2
    >>> new_replica_set_replicas(RolloutBounds("RollingUpdate", 10, 2, 0), 0, 5)    # old 5: fill up to 10
    7
    >>> new_replica_set_replicas(RolloutBounds("RollingUpdate", 10, 2, 0), 11, 13)  # too big: back to 10
    10
    >>> new_replica_set_replicas(RolloutBounds("Recreate", 10, None, None), 0, 0)
    10
    """
    check_count("new_replicas", new_replicas)
    check_count("all_replicas", all_replicas)
    if all_replicas < new_replicas:
        raise ValueError(f"all_replicas ({all_replicas}) cannot be less than new_replicas ({new_replicas})")
    surge = _resolve_max_surge(bounds)
    replicas = bounds.replicas
    if not is_rolling(bounds.strategy) or new_replicas >= replicas:
        return replicas
    max_total = replicas + surge
    if all_replicas >= max_total:
        return new_replicas
    return new_replicas + min(max_total - all_replicas, replicas - new_replicas)


def calculate_scale_down_budget(
    min_available: int, new_rs: ReplicaSetState, all_replica_sets: Sequence[ReplicaSetState]
) -> int:
    """How many old pods may go this pass (upstream ``maxScaledDown`` in ``reconcileOldReplicaSets``).

    ``all pods (spec) - min_available - unavailable pods of the new ReplicaSet``, so that broken new
    pods never make us remove old ones. Zero or less means: do not scale old ReplicaSets down.

    Upstream's example (10 replicas, maxSurge 3, maxUnavailable 2, so min available 8): the new
    ReplicaSet runs 5 crash-looping pods next to 8 old ones; 13 - 8 - 5 = 0, nothing may go.

    >>> new = ReplicaSetState("web-new", "n", 2, 2.0, replicas=5, available=0)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=8, available=8)
    >>> calculate_scale_down_budget(8, new, [old, new])
    0

    After a rollback the good ReplicaSet is the new one (8 pods, 1 unavailable):
    13 - 8 - 1 = 4 crash-looping pods may be removed.

    >>> good = ReplicaSetState("web-good", "g", 3, 1.0, replicas=8, available=7)
    >>> bad = ReplicaSetState("web-bad", "b", 2, 2.0, replicas=5, available=0)
    >>> calculate_scale_down_budget(8, good, [bad, good])
    4
    """
    new_unavailable = new_rs.replicas - new_rs.available
    return sum_replicas(all_replica_sets) - min_available - new_unavailable


def plan_unhealthy_cleanup(
    old_replica_sets: Sequence[ReplicaSetState], budget: int
) -> tuple[ScaleAction, ...]:
    """Scale old ReplicaSets down by their unavailable pods first, oldest first, within ``budget``.

    Upstream ``cleanupUnhealthyReplicas``: removing pods that are not available cannot lower
    availability, and left alone they would block the rollout until it times out.

    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=10, available=8)
    >>> plan_unhealthy_cleanup([old], 1)
    (ScaleAction(name='web-old', from_replicas=10, to_replicas=9),)
    >>> plan_unhealthy_cleanup([old], 3)
    (ScaleAction(name='web-old', from_replicas=10, to_replicas=8),)
    >>> plan_unhealthy_cleanup([old], 0)
    ()
    """
    actions: list[ScaleAction] = []
    cleaned = 0
    for rs in sort_by_creation(old_replica_sets):
        if cleaned >= budget:
            break
        unhealthy = rs.replicas - rs.available
        if rs.replicas == 0 or unhealthy <= 0:
            continue
        count = min(budget - cleaned, unhealthy)
        actions.append(ScaleAction(rs.name, rs.replicas, rs.replicas - count))
        cleaned += count
    return tuple(actions)


def plan_old_replica_sets_scale_down(
    min_available: int,
    old_replica_sets: Sequence[ReplicaSetState],
    all_replica_sets: Sequence[ReplicaSetState],
) -> tuple[ScaleAction, ...]:
    """Scale old ReplicaSets down by the available pods above ``min_available``, oldest first.

    Upstream ``scaleDownOldReplicaSetsForRollingUpdate``; availability is counted over
    ``all_replica_sets`` (the active old ones and the new one).

    Upstream test cases (10 replicas, one old ReplicaSet):

    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=10, available=10)
    >>> plan_old_replica_sets_scale_down(9, [old], [old])   # maxUnavailable 0 resolves to 1
    (ScaleAction(name='web-old', from_replicas=10, to_replicas=9),)
    >>> plan_old_replica_sets_scale_down(8, [old], [old])   # maxUnavailable 2
    (ScaleAction(name='web-old', from_replicas=10, to_replicas=8),)
    >>> slow = ReplicaSetState("web-old", "o", 1, 1.0, replicas=10, available=8)
    >>> plan_old_replica_sets_scale_down(8, [slow], [slow])  # no spare availability
    ()
    """
    available = sum_available(all_replica_sets)
    if available <= min_available:
        return ()
    to_remove = available - min_available
    actions: list[ScaleAction] = []
    removed = 0
    for rs in sort_by_creation(old_replica_sets):
        if removed >= to_remove:
            break
        if rs.replicas == 0:
            continue
        count = min(rs.replicas, to_remove - removed)
        actions.append(ScaleAction(rs.name, rs.replicas, rs.replicas - count))
        removed += count
    return tuple(actions)


def plan_new_replica_set_scale(
    bounds: RolloutBounds,
    new_rs: ReplicaSetState,
    old_replica_sets: Sequence[ReplicaSetState],
) -> ScaleAction | None:
    """The scale action for the new ReplicaSet this pass, or ``None`` (upstream ``reconcileNewReplicaSet``).

    >>> new = ReplicaSetState("web-new", "n", 2, 2.0)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=3, available=3)
    >>> plan_new_replica_set_scale(RolloutBounds("RollingUpdate", 3, None, None), new, [old])
    ScaleAction(name='web-new', from_replicas=0, to_replicas=1)

    Counted pods that are still terminating take up room (``podReplacementPolicy:
    TerminationComplete``): the old ReplicaSet went to 2 but its third pod is not gone yet.

    >>> new = ReplicaSetState("web-new", "n", 2, 2.0, replicas=1, pods=1)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=2, available=2, pods=3)
    >>> plan_new_replica_set_scale(RolloutBounds("RollingUpdate", 3, None, None), new, [old]) is None
    True
    """
    all_replicas = sum(rs.occupied for rs in (new_rs, *old_replica_sets))
    target = new_replica_set_replicas(bounds, new_rs.replicas, all_replicas)
    if target == new_rs.replicas:
        return None
    return ScaleAction(new_rs.name, new_rs.replicas, target)


def plan_rolling_scale_down(
    bounds: RolloutBounds,
    new_rs: ReplicaSetState,
    old_replica_sets: Sequence[ReplicaSetState],
) -> tuple[ScaleAction, ...]:
    """Old ReplicaSet scale-down for this pass (upstream ``reconcileOldReplicaSets``).

    1. budget = :func:`calculate_scale_down_budget`; nothing happens unless it is positive;
    2. :func:`plan_unhealthy_cleanup` within the budget;
    3. :func:`plan_old_replica_sets_scale_down` on the result, keeping ``min_available``.

    Steps 2 and 3 are merged into at most one action per ReplicaSet (oldest first).

    Upstream test cases (10 replicas, maxSurge 0, maxUnavailable 2, one old ReplicaSet of 10):

    >>> new = ReplicaSetState("web-new", "n", 2, 2.0)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=10, available=9)
    >>> plan_rolling_scale_down(RolloutBounds("RollingUpdate", 10, 0, 2), new, [old])  # 1 unhealthy + 1 ready
    (ScaleAction(name='web-old', from_replicas=10, to_replicas=8),)
    """
    if not is_rolling(bounds.strategy):
        raise ValueError(f"{bounds.strategy} is not a rolling strategy: use plan_recreate_step")
    active_old = [rs for rs in sort_by_creation(old_replica_sets) if rs.is_active]
    if not active_old:
        return ()
    floor = min_available(bounds)
    budget = calculate_scale_down_budget(floor, new_rs, [*old_replica_sets, new_rs])
    if budget <= 0:
        return ()
    cleaned = apply_scale_actions(active_old, plan_unhealthy_cleanup(active_old, budget))
    scaled = apply_scale_actions(
        cleaned, plan_old_replica_sets_scale_down(floor, cleaned, [*cleaned, new_rs])
    )
    return tuple(
        ScaleAction(before.name, before.replicas, after.replicas)
        for before, after in zip(active_old, scaled, strict=True)
        if before.replicas != after.replicas
    )


def plan_rolling_step(
    bounds: RolloutBounds,
    new_rs: ReplicaSetState,
    old_replica_sets: Sequence[ReplicaSetState],
) -> tuple[ScaleAction, ...]:
    """One pass of a rolling update (upstream ``rolloutRolling``): scale up if we can, else down.

    Returns the new ReplicaSet's scale-up if there is one, otherwise the old ReplicaSets'
    scale-down, otherwise ``()`` (wait for pods, or the rollout is done). Pass a state with
    ``replicas=0`` for a new ReplicaSet that does not exist yet. ``Recreate`` raises ``ValueError``.

    The docs example, 3 replicas with 25%/25%, pods available as soon as they exist:

    >>> new = ReplicaSetState("web-new", "n", 2, 2.0)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=3, current=3, ready=3, available=3)
    >>> plan_rolling_step(RolloutBounds("RollingUpdate", 3, "25%", "25%"), new, [old])
    (ScaleAction(name='web-new', from_replicas=0, to_replicas=1),)
    >>> new = ReplicaSetState("web-new", "n", 2, 2.0, replicas=1, current=1, ready=1, available=1)
    >>> plan_rolling_step(RolloutBounds("RollingUpdate", 3, "25%", "25%"), new, [old])
    (ScaleAction(name='web-old', from_replicas=3, to_replicas=2),)
    """
    if not is_rolling(bounds.strategy):
        raise ValueError(f"{bounds.strategy} is not a rolling strategy: use plan_recreate_step")
    scale_up = plan_new_replica_set_scale(bounds, new_rs, old_replica_sets)
    if scale_up is not None:
        return (scale_up,)
    return plan_rolling_scale_down(bounds, new_rs, old_replica_sets)


def plan_rolling_passes(
    bounds: RolloutBounds,
    new_rs: ReplicaSetState,
    old_replica_sets: Sequence[ReplicaSetState],
    *,
    first: Sequence[ScaleAction] = (),
) -> tuple[tuple[ScaleAction, ...], ...]:
    """The passes the Kubernetes controller makes back to back, until one plans nothing.

    The deployment controller re-syncs as soon as its own scale of a ReplicaSet comes back from
    the API, so a scale-down of the old ReplicaSets is followed within milliseconds by the new
    ReplicaSet's scale-up that it allowed (and so on), and the rollout only waits where pods must
    become available. This applies ``first`` (a pass already decided, such as proportional
    scaling), then :func:`plan_rolling_step` to the planned sizes, pass after pass, and returns
    every pass that did something. Each pass is exactly upstream's, on the planned sizes and the
    observed pods. It ends because passes only grow the new ReplicaSet up to ``replicas`` and only
    shrink old ones.

    100 replicas, 25%/25% (surge 25, unavailable 25), just after the new ReplicaSet was created
    with 25 pods: the old one may lose 25 of its available pods, which lets the new one grow to
    50; then the new pods must become available.

    >>> new = ReplicaSetState("web-new", "n", 2, 2.0, replicas=25)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=100, current=100, available=100)
    >>> for actions in plan_rolling_passes(RolloutBounds("RollingUpdate", 100, "25%", "25%"), new, [old]):
    ...     print([(a.name, a.to_replicas) for a in actions])
    [('web-old', 75)]
    [('web-new', 50)]
    """
    states = (new_rs, *old_replica_sets)
    passes: list[tuple[ScaleAction, ...]] = []
    actions = tuple(first) or plan_rolling_step(bounds, new_rs, old_replica_sets)
    while actions:
        passes.append(actions)
        states = apply_scale_actions(states, actions)
        actions = plan_rolling_step(bounds, states[0], states[1:])
    return tuple(passes)


def merge_passes(passes: Sequence[Sequence[ScaleAction]]) -> tuple[ScaleAction, ...]:
    """One scale per ReplicaSet for several passes: from its size before the first to its size
    after the last. Scale-downs come first, then scale-ups (each in the order the passes first
    touch the ReplicaSets), so that between two writes there are never more pods than the passes
    allow, nor fewer available (new pods are not available yet).

    >>> passes = [[ScaleAction("new", 0, 1)], [ScaleAction("old", 3, 2)], [ScaleAction("new", 1, 2)]]
    >>> for action in merge_passes(passes):
    ...     print(action.name, action.from_replicas, "->", action.to_replicas)
    old 3 -> 2
    new 0 -> 2
    """
    merged: dict[str, ScaleAction] = {}
    for action in (action for actions in passes for action in actions):
        before = merged.get(action.name, action)
        merged[action.name] = ScaleAction(action.name, before.from_replicas, action.to_replicas)
    ordered = list(merged.values())
    return tuple(
        [a for a in ordered if a.to_replicas < a.from_replicas]
        + [a for a in ordered if a.to_replicas >= a.from_replicas]
    )


def plan_recreate_step(
    replicas: int,
    new_rs: ReplicaSetState,
    old_replica_sets: Sequence[ReplicaSetState],
    *,
    old_pods_running: bool = False,
) -> tuple[ScaleAction, ...]:
    """One pass of a Recreate rollout (upstream ``rolloutRecreate``).

    1. scale every active old ReplicaSet to 0;
    2. then wait while old pods still exist: an old ReplicaSet reports ``current > 0``, or the
       caller counted a pod of an old ReplicaSet, terminating ones included, which ReplicaSet
       status leaves out (``old_pods_running``);
    3. then scale the new ReplicaSet to ``replicas`` (create it now if it does not exist yet).

    >>> new = ReplicaSetState("web-new", "n", 2, 2.0)
    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=3, current=3, available=3)
    >>> plan_recreate_step(3, new, [old])
    (ScaleAction(name='web-old', from_replicas=3, to_replicas=0),)
    >>> draining = ReplicaSetState("web-old", "o", 1, 1.0, replicas=0, current=2)
    >>> plan_recreate_step(3, new, [draining])
    ()
    >>> gone = ReplicaSetState("web-old", "o", 1, 1.0)
    >>> plan_recreate_step(3, new, [gone])
    (ScaleAction(name='web-new', from_replicas=0, to_replicas=3),)
    """
    check_count("replicas", replicas)
    ordered = sort_by_creation(old_replica_sets)
    scale_down = tuple(ScaleAction(rs.name, rs.replicas, 0) for rs in ordered if rs.is_active)
    if scale_down:
        return scale_down
    if old_pods_running or any(rs.current > 0 for rs in ordered):
        return ()
    if new_rs.replicas == replicas:
        return ()
    return (ScaleAction(new_rs.name, new_rs.replicas, replicas),)
