"""Canary (Argo Rollouts' ``strategy.canary`` without a traffic router): the replica arithmetic.

Without a traffic router the share of traffic a canary gets is its share of the pods, so a
``setWeight`` step is a pair of ReplicaSet sizes. :func:`basic_canary_replicas` is that pair, as
Argo Rollouts computes it (``CalculateReplicaCountsForBasicCanary`` in ``utils/replicaset/canary.go``):

1. the wanted sizes: canary ``ceil(replicas × weight / 100)``, stable
   ``ceil(replicas × (100 − weight) / 100)``, both rounded up so that neither side of a weight
   strictly between 0 and 100 is left without a pod; when both round up they hold one pod more
   than ``replicas``, and maxSurge grows by that one pod;
2. scale-up within ``replicas + maxSurge`` pods (counted by ReplicaSet spec, older ones
   included), the stable first, then the canary;
3. while an older ReplicaSet (neither stable nor canary: a canary replaced by a newer commit)
   still has pods, nothing is scaled down: those go first;
4. scale-down within maxUnavailable, one side only: the stable while the weight rises or holds,
   the canary while it falls (an abort). The budget counts the draining side by spec, so its
   broken pods cannot hold it up, and the other side by its available pods (a ReplicaSet with
   more available pods than its spec counts its spec: those pods are going); then the other
   side is brought back within ``replicas + maxSurge`` without taking availability below
   ``replicas - maxUnavailable``.

The engine steps through a canary by calling this pass after pass until both sizes stop moving
and the pods are available (:func:`at_step_sizes`), at the weight of the step it is at
(:func:`current_weight`); this module holds only that arithmetic so far.

Where this is not upstream's arithmetic of any one release, and why:

* step 1 is the rule the issue names, both shares rounded up, which older Argo Rollouts
  releases used (``extraReplicaAdded``); later ones search for the pair of sizes nearest the
  weight (``approximateWeightedCanaryStableReplicaCounts``), so for a few small or uneven cases
  upstream now gives other sizes (tests/unit/core/rollout/test_canary.py lists them from its table);
* step 4 is upstream's current scale-down (``adjustReplicaWithinLimits``), not the one that went
  with the rounding rule: that one shrank both sides in a pass and could take availability below
  ``replicas - maxUnavailable`` (2 replicas at 50% with 25%/25%, a canary of 2 unavailable pods:
  it scaled the stable from 2 available pods to 1), which a property test here rules out;
* in that scale-down the side kept gets back only available pods the surge trim took from it;
  upstream gives it back available pods above its spec too (pods on their way out), so at weight
  0 a canary just scaled from 1 to 0, its pod still available, went back to 1 and the stable
  from 2 to 1 (a property test here found it);
* integers, not floating point: Go's ``ceil(100 * (7 / 100.0))`` is 8 (``7.000000000000001``),
  here 7, and the surge pod is added only when a share truly does not divide evenly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from gitdeploy.core.canarysteps import CanaryStep, SetWeight
from gitdeploy.core.scaling.canaryshares import canary_shares
from gitdeploy.core.scaling.rollingmath import Bound, check_count, resolve_fenceposts


def _scale_down_basis(spec: int, available: int, *, ignore_availability: bool) -> int:
    """The pods of one ReplicaSet that the scale-down budget counts (upstream
    ``GetReplicasForScaleDown``): its spec when it is going down anyway or when its availability
    is ignored, else its available pods."""
    if spec < available or ignore_availability:
        return spec
    return available


def basic_canary_replicas(
    replicas: int,
    weight: int,
    max_surge: Bound,
    max_unavailable: Bound,
    stable_spec: int,
    stable_available: int,
    canary_spec: int,
    canary_available: int,
    older_spec: int = 0,
    older_available: int = 0,
) -> tuple[int, int]:
    """``(canary, stable)``: the ReplicaSet sizes of this pass of a canary at ``weight`` percent.

    ``replicas`` is the Rollout's ``spec.replicas``; bounds are an int, a percentage such as
    ``"25%"`` or ``None`` for 25% (resolved as a rolling update's, maxSurge rounding up and
    maxUnavailable down, 1 unavailable when both are 0); ``*_spec`` and ``*_available`` are each
    ReplicaSet's ``spec.replicas`` and ``status.availableReplicas``, ``older_*`` those of every
    other ReplicaSet of the app summed. A stable ReplicaSet distinct from the canary is assumed:
    the first revision of an app has no canary and starts at full size. ``older_available`` is
    checked but not read: upstream's arithmetic reads only the older ReplicaSets' spec here, and
    their own scale-down is the engine's. The sizes of the older ones are not returned.

    Worked examples (upstream's doc comment): 10 replicas at 10% with maxSurge and
    maxUnavailable 1 start with one canary pod and one stable pod gone.

    >>> basic_canary_replicas(10, 10, 1, 1, stable_spec=10, stable_available=10,
    ...                       canary_spec=0, canary_available=0)
    (1, 9)

    At 30% with maxSurge 3 and maxUnavailable 0 the canary surges; with maxSurge 0 and
    maxUnavailable 5 the stable shrinks first and the canary waits for room.

    >>> basic_canary_replicas(10, 30, 3, 0, 10, 10, 0, 0)
    (3, 10)
    >>> basic_canary_replicas(10, 30, 0, 5, 10, 10, 0, 0)
    (0, 7)

    Rounding: 5% of 10 pods is half a pod, so canary 1 and stable 10 are wanted, one pod over 10,
    and the surge grows by that pod (upstream's doc comment says stable 9 here, from before it
    added that pod); 1 replica at 5% or 95% runs one pod of each.

    >>> basic_canary_replicas(10, 5, 1, 1, 10, 10, 0, 0)
    (1, 10)
    >>> basic_canary_replicas(1, 5, 1, 0, 1, 1, 0, 0), basic_canary_replicas(1, 95, 1, 0, 1, 1, 0, 0)
    ((1, 1), (1, 1))

    Stable first: an older ReplicaSet of 3 pods (a replaced canary) still runs next to a stable
    of 1 at 30% of 10; the stable grows to its 7, the one pod of room left goes to the canary,
    and nothing shrinks until the older pods are gone.

    >>> basic_canary_replicas(10, 30, 1, 0, 1, 1, 0, 0, older_spec=3, older_available=3)
    (1, 7)

    Aborting (weight 0): the stable comes back before the canary goes, within maxUnavailable 0.

    >>> basic_canary_replicas(4, 0, 1, 0, 0, 0, canary_spec=4, canary_available=4)
    (4, 1)
    >>> basic_canary_replicas(4, 0, 1, 0, 1, 1, canary_spec=4, canary_available=4)
    (3, 1)
    """
    for name, value in (
        ("stable_spec", stable_spec),
        ("stable_available", stable_available),
        ("canary_spec", canary_spec),
        ("canary_available", canary_available),
        ("older_spec", older_spec),
        ("older_available", older_available),
    ):
        check_count(name, value)
    canary_want, stable_want, rounded = canary_shares(replicas, weight)
    surge, unavailable = resolve_fenceposts(max_surge, max_unavailable, replicas)
    most = replicas + surge + int(rounded)
    room = most - (older_spec + stable_spec + canary_spec)
    stable, room = _grow(stable_spec, stable_want, room)
    canary, _ = _grow(canary_spec, canary_want, room)
    if older_spec > 0:
        return canary, stable
    fewest = replicas - min(unavailable, replicas)
    canary_side = _Side(canary_spec, canary, canary_available, canary_want)
    stable_side = _Side(stable_spec, stable, stable_available, stable_want)
    if canary_want < canary_spec:  # the weight falls (an abort): the canary drains
        return _drain(canary_side, stable_side, most, fewest)
    stable, canary = _drain(stable_side, canary_side, most, fewest)
    return canary, stable


def _grow(spec: int, want: int, room: int) -> tuple[int, int]:
    """``(size, room left)``: a ReplicaSet grown towards ``want`` within ``room`` pods."""
    if spec >= want or room <= 0:
        return spec, room
    grown = min(room, want - spec)
    return spec + grown, room - grown


class _Side(NamedTuple):
    """One side of a canary (the canary or the stable ReplicaSet) in a pass."""

    spec: int
    size: int
    """After this pass's scale-up."""
    available: int
    want: int


def _drain(drained: _Side, kept: _Side, most: int, fewest: int) -> tuple[int, int]:
    """``(drained size, kept size)`` after the scale-down of one pass (upstream
    ``calculateScaleDownReplicaCount`` and ``adjustReplicaWithinLimits``).

    The budget counts the drained side by spec, so its broken pods cannot hold it up, and the
    kept side by its available pods; the drained side goes down by the budget, not below its
    wanted size. Then the kept side comes back within ``most`` pods, but never so far that
    availability falls below ``fewest`` (it gets back available pods the trim took, up to its size
    this pass), and the drained side gives up whatever is still over.
    """
    counted = _scale_down_basis(drained.spec, drained.available, ignore_availability=True)
    counted += _scale_down_basis(kept.spec, kept.available, ignore_availability=False)
    budget = counted - fewest
    if budget <= 0:
        return drained.size, kept.size
    size = max(drained.want, drained.spec - budget) if drained.spec > drained.want else drained.size
    kept_size = max(0, kept.size - max(0, size + kept.size - most))
    still_available = min(drained.available, size) + min(kept.available, kept_size)
    kept_size += min(max(0, min(kept.available, kept.size) - kept_size), max(0, fewest - still_available))
    return max(0, size - max(0, size + kept_size - most)), kept_size


def current_weight(steps: Sequence[CanaryStep], index: int, *, aborted: bool = False) -> int:
    """The weight a canary at step ``index`` runs at (upstream ``GetCurrentSetWeight``): that of
    the last ``setWeight`` at or before it (0 before the first), 100 once past the last step or
    when there are no steps (the new template is promoted), 0 when aborted.

    >>> from gitdeploy.core.canarysteps import Pause
    >>> steps = (SetWeight(20), Pause(), SetWeight(50))
    >>> [current_weight(steps, i) for i in range(4)], current_weight(steps, 2, aborted=True)
    ([20, 20, 50, 100], 0)
    """
    if aborted:
        return 0
    if index >= len(steps):
        return 100
    return next((s.weight for s in reversed(steps[: index + 1]) if isinstance(s, SetWeight)), 0)


def at_step_sizes(
    replicas: int,
    weight: int,
    canary_spec: int,
    canary_available: int,
    stable_spec: int,
    stable_available: int,
    older_available: int,
) -> bool:
    """Whether the ReplicaSets are where a step at ``weight`` takes them, so the canary may go
    on to its next step (upstream ``AtDesiredReplicaCountsForCanary``): canary and stable at
    their shares by spec and by available pods, and no older ReplicaSet with an available pod.

    >>> at_step_sizes(10, 30, 3, 3, 7, 7, 0), at_step_sizes(10, 30, 3, 2, 7, 7, 0)
    (True, False)
    """
    canary_want, stable_want, _ = canary_shares(replicas, weight)
    return (
        canary_spec == canary_available == canary_want
        and stable_spec == stable_available == stable_want
        and older_available == 0
    )
