"""``gitdeploy rollout promote`` and ``gitdeploy rollout abort``: a request written to the
canary ReplicaSet's annotations (:mod:`gitdeploy.core.rollout.canarywalk`), which the loop's
next pass carries out. Git is never changed: an aborted revision stays Failed until a new
commit (or ``gitdeploy deploy --retry``)."""

from __future__ import annotations

from dataclasses import dataclass

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.rollback import read_app
from gitdeploy.core.canarystate import (
    CANARY_ABORT_ANNOTATION,
    CANARY_STEP_ANNOTATION,
    PROMOTE_FULL,
    CanaryState,
    promotion_annotations,
    read_canary_state,
)
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.errors import PermanentError


@dataclass(frozen=True)
class CanaryRequest:
    """What a promote or abort asked of which revision, for the command to print."""

    revision: int
    replica_set: str
    state: CanaryState
    """The canary's state when the request was written."""


def _canary_in_progress(cluster: Cluster, key: AppKey, verb: str) -> ObservedReplicaSet:
    state = read_app(cluster, key)
    current = state.current
    prefix = f"{current.state.revision}:" if current is not None else ""
    if (
        current is None
        or not state.in_progress
        or not current.annotation(CANARY_STEP_ANNOTATION).startswith(prefix)
    ):
        entry = state.current_entry
        now = (
            f"revision {entry.revision} is {entry.outcome.value}"
            if entry is not None
            else "nothing is deployed"
        )
        raise PermanentError(
            f"{key} has no canary in progress to {verb} ({now})",
            hint="a commit that changes a Rollout's template starts a canary; "
            "`gitdeploy status` shows what runs",
        )
    if read_canary_state(current).aborted_by is not None:
        raise PermanentError(
            f"{key}: revision {current.state.revision}'s canary is being aborted",
            hint="push a new commit to start a new canary, or `gitdeploy deploy --retry` once it failed",
        )
    return current


def promote(cluster: Cluster, key: AppKey, *, full: bool, by: str) -> CanaryRequest:
    """Declare the current step done (a pause ends, a setWeight stops waiting), or with
    ``full`` every remaining step: the canary then grows to full size. ``by`` is kept with it,
    in the same request, for ``history``."""
    current = _canary_in_progress(cluster, key, "promote")
    state = read_canary_state(current)
    step = PROMOTE_FULL if full else str(state.step)
    cluster.annotate_replica_set(key.namespace, current.name, promotion_annotations(current, step, by))
    return CanaryRequest(current.state.revision, current.name, state)


def abort(cluster: Cluster, key: AppKey, *, by: str) -> CanaryRequest:
    """Send the canary back: the stable to full size, the canary to 0, then the revision Fails."""
    current = _canary_in_progress(cluster, key, "abort")
    revision = current.state.revision
    cluster.annotate_replica_set(key.namespace, current.name, {CANARY_ABORT_ANNOTATION: f"{revision}:{by}"})
    return CanaryRequest(revision, current.name, read_canary_state(current))
