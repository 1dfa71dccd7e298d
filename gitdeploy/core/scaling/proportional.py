"""Proportional scaling: resizing an app while more than one ReplicaSet runs pods.

A port of the semantics of upstream ``scale()`` (``sync.go``) with ``GetProportion`` and
``getReplicaSetFraction`` (``util/deployment_util.go``). When the app's ``replicas`` change in the
middle of a rollout (or while it is paused, or stuck), the difference is spread over the active
ReplicaSets in proportion to their size, instead of all landing on the new one.

Each ReplicaSet remembers the app size it was last scaled for in two annotations, which every scale
action stamps (see :func:`compute_replica_annotations`):

* ``gitdeploy.io/desired-replicas`` = the app's ``replicas``; a ReplicaSet whose value differs from
  the app's current ``replicas`` means "this is a scaling event" (:func:`is_scaling_event`);
* ``gitdeploy.io/max-replicas`` = ``replicas + maxSurge``; the base of each ReplicaSet's proportion.

The Kubernetes documentation example: 10 replicas, maxSurge 3, maxUnavailable 2; the new ReplicaSet
is stuck at 5 pods next to 8 old ones (both annotated desired 10, max 13). The app is scaled to 15, so
up to 18 pods are allowed and 5 more must be placed: the old ReplicaSet gets round(8 * 18 / 13) = 11
(+3), the new one round(5 * 18 / 13) = 7 (+2). Both are then annotated desired 15, max 18.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitdeploy.core.scaling.replicasets import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    ReplicaSetState,
    ScaleAction,
    sort_by_creation,
    sum_replicas,
)
from gitdeploy.core.scaling.rollingmath import RolloutBounds, is_rolling
from gitdeploy.core.scaling.rollingmath import max_surge as resolve_max_surge


@dataclass(frozen=True)
class ReplicaAnnotations:
    """The replica annotations a ReplicaSet gets whenever gitdeploy scales or creates it."""

    desired_replicas: int
    max_replicas: int

    def as_pairs(self) -> tuple[tuple[str, str], ...]:
        """``((annotation key, value), ...)`` as the cluster adapter writes them."""
        return (
            (DESIRED_REPLICAS_ANNOTATION, str(self.desired_replicas)),
            (MAX_REPLICAS_ANNOTATION, str(self.max_replicas)),
        )


def compute_replica_annotations(bounds: RolloutBounds) -> ReplicaAnnotations:
    """Annotations for every ReplicaSet scaled this pass (upstream ``SetReplicasAnnotations``).

    >>> compute_replica_annotations(RolloutBounds("RollingUpdate", 15, 3, 2))
    ReplicaAnnotations(desired_replicas=15, max_replicas=18)
    >>> compute_replica_annotations(RolloutBounds("Recreate", 4, None, None))
    ReplicaAnnotations(desired_replicas=4, max_replicas=4)
    """
    surge = resolve_max_surge(bounds)
    return ReplicaAnnotations(desired_replicas=bounds.replicas, max_replicas=bounds.replicas + surge)


def needs_annotation_update(rs: ReplicaSetState, annotations: ReplicaAnnotations) -> bool:
    """True when ``rs`` does not carry ``annotations`` yet (upstream ``ReplicasAnnotationsNeedUpdate``)."""
    return (rs.desired_replicas_annotation, rs.max_replicas_annotation) != (
        annotations.desired_replicas,
        annotations.max_replicas,
    )


def is_scaling_event(replicas: int, replica_sets: Sequence[ReplicaSetState]) -> bool:
    """True when an active ReplicaSet was last scaled for another app size (upstream ``isScalingEvent``).

    ReplicaSets without the desired-replicas annotation are ignored.

    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=8, desired_replicas_annotation=10)
    >>> is_scaling_event(15, [old]), is_scaling_event(10, [old])
    (True, False)
    """
    return any(rs.is_active and rs.desired_replicas_annotation not in (None, replicas) for rs in replica_sets)


def is_saturated(replicas: int, rs: ReplicaSetState) -> bool:
    """True when ``rs`` runs the whole app: spec, annotation and available pods all equal ``replicas``.

    Upstream ``IsSaturated``.
    """
    return rs.replicas == replicas and rs.desired_replicas_annotation == replicas and rs.available == replicas


def find_active_or_latest(
    new_rs: ReplicaSetState | None, old_replica_sets: Sequence[ReplicaSetState]
) -> ReplicaSetState | None:
    """The only active ReplicaSet; if none is active, the new one or else the newest old one.

    ``None`` when two or more ReplicaSets are active (then proportional scaling applies) or there are
    no ReplicaSets at all. Upstream ``FindActiveOrLatest``.
    """
    newest_first = sort_by_creation(old_replica_sets)[::-1]
    active = [rs for rs in [*newest_first, new_rs] if rs is not None and rs.is_active]
    if len(active) == 1:
        return active[0]
    if active:
        return None
    if new_rs is not None:
        return new_rs
    return newest_first[0] if newest_first else None


def _round_half_away_from_zero(numerator: int, denominator: int) -> int:
    """``round(numerator / denominator)`` for non-negative integers, halves rounded up, exactly."""
    return (2 * numerator + denominator) // (2 * denominator)


def calculate_proportion(
    rs: ReplicaSetState,
    replicas: int,
    allowed_size: int,
    replicas_to_add: int,
    replicas_added: int,
    fallback_size: int,
) -> int:
    """How many replicas to add to (or, negative, remove from) ``rs`` (upstream ``GetProportion``).

    ``allowed_size`` is the app's new ``replicas + maxSurge``; ``rs`` grows or shrinks to
    ``round(rs.replicas * allowed_size / max-replicas annotation)``, halves away from zero, but never
    beyond what is left of ``replicas_to_add`` after ``replicas_added``. Without a usable
    max-replicas annotation the proportion is taken against ``fallback_size``. Scaling the app to 0
    removes all of ``rs``.

    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=8, max_replicas_annotation=13)
    >>> calculate_proportion(old, 15, 18, 5, 0, 13)   # round(8 * 18 / 13) = 11
    3
    >>> new = ReplicaSetState("web-new", "n", 2, 2.0, replicas=5, max_replicas_annotation=13)
    >>> calculate_proportion(new, 15, 18, 5, 3, 13)   # round(5 * 18 / 13) = 7, 2 left to add
    2
    """
    if rs.replicas == 0 or replicas_to_add == 0 or replicas_to_add == replicas_added:
        return 0
    if replicas == 0:
        fraction = -rs.replicas
    else:
        base = rs.max_replicas_annotation or fallback_size
        fraction = _round_half_away_from_zero(rs.replicas * allowed_size, base) - rs.replicas
    left = replicas_to_add - replicas_added
    return min(fraction, left) if replicas_to_add > 0 else max(fraction, left)


def _order_for_scaling(
    replica_sets: Sequence[ReplicaSetState], replicas_to_add: int
) -> list[ReplicaSetState]:
    """Largest first; on equal size newer first when adding, older first when removing."""
    by_age = sort_by_creation(replica_sets)
    if replicas_to_add > 0:
        by_age.reverse()
    elif replicas_to_add == 0:
        return by_age
    return sorted(by_age, key=lambda rs: -rs.replicas)


def plan_proportional_scaling(
    bounds: RolloutBounds,
    new_rs: ReplicaSetState | None,
    old_replica_sets: Sequence[ReplicaSetState],
) -> tuple[ScaleAction, ...]:
    """Resize the app's ReplicaSets to ``replicas`` (upstream ``scale()``), as a plan.

    1. One active ReplicaSet (or none, then the newest): it gets ``replicas``.
    2. A saturated new ReplicaSet: active old ones go to 0.
    3. Rolling strategies: the difference between ``replicas + maxSurge`` (0 when scaling to 0) and
       the current total is spread over the active ReplicaSets with :func:`calculate_proportion`,
       largest first (newer first on ties when adding, older first when removing); rounding
       leftovers go to the first, i.e. largest, one. ReplicaSets with 0 replicas are not scaled up.
       The plan names every active ReplicaSet, also those whose size does not change, because
       upstream refreshes their replica annotations too.
    4. Recreate with several active ReplicaSets: nothing (the rollout step handles it).

    Every ReplicaSet in the plan gets :func:`compute_replica_annotations`.

    >>> old = ReplicaSetState("web-old", "o", 1, 1.0, replicas=8, available=8,
    ...                       desired_replicas_annotation=10, max_replicas_annotation=13)
    >>> new = ReplicaSetState("web-new", "n", 2, 2.0, replicas=5, available=0,
    ...                       desired_replicas_annotation=10, max_replicas_annotation=13)
    >>> for action in plan_proportional_scaling(RolloutBounds("RollingUpdate", 15, 3, 2), new, [old]):
    ...     print(action.name, action.from_replicas, "->", action.to_replicas)
    web-old 8 -> 11
    web-new 5 -> 7
    """
    replicas = bounds.replicas
    only = find_active_or_latest(new_rs, old_replica_sets)
    if only is not None:
        return () if only.replicas == replicas else (ScaleAction(only.name, only.replicas, replicas),)
    if new_rs is not None and is_saturated(replicas, new_rs):
        return tuple(
            ScaleAction(rs.name, rs.replicas, 0) for rs in sort_by_creation(old_replica_sets) if rs.is_active
        )
    if not is_rolling(bounds.strategy):
        return ()
    everything = [*old_replica_sets, *([new_rs] if new_rs is not None else [])]
    active = [rs for rs in everything if rs.is_active]
    allowed_size = replicas + resolve_max_surge(bounds) if replicas else 0
    to_add = allowed_size - sum_replicas(active)
    fallback_size = sum(rs.current for rs in everything) or sum_replicas(active)
    ordered = _order_for_scaling(active, to_add)
    sizes: list[int] = []
    added = 0
    for rs in ordered:
        proportion = calculate_proportion(rs, replicas, allowed_size, to_add, added, fallback_size)
        sizes.append(rs.replicas + proportion)
        added += proportion
    if ordered and to_add != 0:
        sizes[0] = max(sizes[0] + to_add - added, 0)
    return tuple(ScaleAction(rs.name, rs.replicas, size) for rs, size in zip(ordered, sizes, strict=True))
