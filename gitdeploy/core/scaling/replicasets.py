"""What the rollout math knows about one ReplicaSet, and the scale actions it plans.

The controller builds a :class:`ReplicaSetState` per ReplicaSet of an app from the cluster snapshot
(spec, status, the ``gitdeploy.io/*`` annotations, the ``gitdeploy.io/template-hash`` label). The pure
functions in the rest of :mod:`gitdeploy.core.scaling` (:mod:`.rollingmath`, :mod:`.proportional`,
:mod:`.progress`, :mod:`.retention`) read these records and return :class:`ScaleAction` plans; they
never change anything themselves.

A new ReplicaSet that does not exist yet is described by a state with ``replicas=0``: a scale action
for it means "create it with ``to_replicas`` replicas".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DESIRED_REPLICAS_ANNOTATION = "gitdeploy.io/desired-replicas"
"""The app's ``replicas`` when the ReplicaSet was last scaled (upstream ``desired-replicas``)."""

MAX_REPLICAS_ANNOTATION = "gitdeploy.io/max-replicas"
"""The app's ``replicas + maxSurge`` when the ReplicaSet was last scaled (upstream ``max-replicas``)."""


@dataclass(frozen=True)
class ReplicaSetFailure:
    """A ``ReplicaFailure`` condition reported by a ReplicaSet (for example ``FailedCreate``).

    ``since`` is the condition's lastTransitionTime in seconds since the epoch.
    """

    reason: str
    message: str
    since: float


@dataclass(frozen=True, slots=True)
class ReplicaSetState:
    """One ReplicaSet of an app, as observed.

    * ``replicas``: ``spec.replicas``, what the ReplicaSet is asked to run.
    * ``current``: ``status.replicas``, pods that exist for it right now.
    * ``ready`` / ``available``: ``status.readyReplicas`` / ``status.availableReplicas``.
    * ``created_at``: creation time in seconds since the epoch; with ``name`` it orders ReplicaSets
      oldest first, as upstream does.
    * ``desired_replicas_annotation`` / ``max_replicas_annotation``: the parsed
      ``gitdeploy.io/desired-replicas`` and ``gitdeploy.io/max-replicas`` values, ``None`` when the
      annotation is missing or not an integer.
    * ``failure``: the ReplicaSet's ``ReplicaFailure`` condition, if it has one.
    * ``pods``: its pods that exist, *Terminating* ones included, when they were counted (a
      rolling update with ``podReplacementPolicy: TerminationComplete``), else ``None``.
    """

    name: str
    template_hash: str
    revision: int
    created_at: float
    replicas: int = 0
    current: int = 0
    ready: int = 0
    available: int = 0
    desired_replicas_annotation: int | None = None
    max_replicas_annotation: int | None = None
    failure: ReplicaSetFailure | None = None
    pods: int | None = None

    @property
    def occupied(self) -> int:
        """The pods it takes up against ``replicas + maxSurge``: ``spec.replicas``, or, when its
        pods were counted, as many as still exist if that is more (pods being deleted).

        >>> ReplicaSetState("web-old", "o", 1, 1.0, replicas=2).occupied
        2
        >>> ReplicaSetState("web-old", "o", 1, 1.0, replicas=2, pods=3).occupied
        3
        """
        return self.replicas if self.pods is None else max(self.replicas, self.pods)

    def __post_init__(self) -> None:
        for field in ("revision", "replicas", "current", "ready", "available"):
            if getattr(self, field) < 0:
                raise ValueError(f"ReplicaSet {self.name}: {field} must not be negative")

    @property
    def is_active(self) -> bool:
        """True when the ReplicaSet is asked to run pods (upstream ``FilterActiveReplicaSets``)."""
        return self.replicas > 0


@dataclass(frozen=True)
class ScaleAction:
    """Set ``spec.replicas`` of ReplicaSet ``name`` from ``from_replicas`` to ``to_replicas``.

    An action with ``from_replicas == to_replicas`` only refreshes the replica annotations (see
    :func:`gitdeploy.core.scaling.proportional.compute_replica_annotations`); it is not a scaling event.
    """

    name: str
    from_replicas: int
    to_replicas: int

    def __post_init__(self) -> None:
        if self.to_replicas < 0:
            raise ValueError(f"cannot scale ReplicaSet {self.name} to {self.to_replicas}")

    @property
    def direction(self) -> str:
        """``"up"``, ``"down"`` or ``""`` (annotations only), as in the upstream event message."""
        if self.to_replicas > self.from_replicas:
            return "up"
        if self.to_replicas < self.from_replicas:
            return "down"
        return ""


def sort_by_creation(replica_sets: Iterable[ReplicaSetState]) -> list[ReplicaSetState]:
    """Oldest first; ties broken by name (upstream ``ReplicaSetsByCreationTimestamp``)."""
    return sorted(replica_sets, key=lambda rs: (rs.created_at, rs.name))


def split_replica_sets(
    replica_sets: Sequence[ReplicaSetState], template_hash: str
) -> tuple[ReplicaSetState | None, tuple[ReplicaSetState, ...]]:
    """Split an app's ReplicaSets into the new one (running ``template_hash``) and the old ones.

    Should two ReplicaSets carry the same hash, the oldest is the new one, as upstream
    ``FindNewReplicaSet`` chooses; the other counts as old.

    >>> a = ReplicaSetState("web-a", "a", 1, created_at=1.0, replicas=3)
    >>> b = ReplicaSetState("web-b", "b", 2, created_at=2.0, replicas=1)
    >>> new, old = split_replica_sets([a, b], "b")
    >>> (new.name if new else None, [rs.name for rs in old])
    ('web-b', ['web-a'])
    """
    ordered = sort_by_creation(replica_sets)
    new = next((rs for rs in ordered if rs.template_hash == template_hash), None)
    return new, tuple(rs for rs in ordered if rs is not new)


def sum_replicas(replica_sets: Iterable[ReplicaSetState]) -> int:
    """Sum of ``spec.replicas`` (upstream ``GetReplicaCountForReplicaSets``)."""
    return sum(rs.replicas for rs in replica_sets)


def sum_available(replica_sets: Iterable[ReplicaSetState]) -> int:
    """Sum of available replicas (upstream ``GetAvailableReplicaCountForReplicaSets``)."""
    return sum(rs.available for rs in replica_sets)


def apply_scale_actions(
    replica_sets: Sequence[ReplicaSetState], actions: Iterable[ScaleAction]
) -> tuple[ReplicaSetState, ...]:
    """Return ``replica_sets`` with the planned ``spec.replicas`` of ``actions`` applied (status unchanged).

    Useful to chain planning steps and in simulations; it changes nothing in the cluster.
    """
    targets = {action.name: action.to_replicas for action in actions}
    return tuple(
        dataclasses.replace(rs, replicas=targets[rs.name]) if rs.name in targets else rs
        for rs in replica_sets
    )
