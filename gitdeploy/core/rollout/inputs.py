"""What a pass reads: what the app should run (:class:`Target`) and what the cluster holds
(:class:`Snapshot`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from gitdeploy.core.analysis.runs import StepMeasurement
from gitdeploy.core.history.records import AppRecord, Cause, CommitRef, Pin
from gitdeploy.core.models import App, PodReplacementPolicy, PodTemplate, StrategyType
from gitdeploy.core.observed import ObservedPod, ObservedReplicaSet, PodCensus
from gitdeploy.core.podstates import PodState
from gitdeploy.core.scaling.replicasets import ReplicaSetState, split_replica_sets


@dataclass(frozen=True)
class Target:
    """What an app should run now: git's template, or a pinned revision's after a rollback.

    ``auto_start`` is False when the template may not roll out by itself (a DeploymentConfig with no
    ConfigChange trigger): a rollout then starts only on request; scaling still applies.
    """

    app: App
    template: PodTemplate
    template_hash: str
    commit: CommitRef
    cause: Cause = Cause.CONFIG_CHANGE
    change_cause: str = ""
    auto_start: bool = True
    manifest_digest: str = ""
    pin: Pin | None = None
    """Set when the target comes from the record's pin rather than git."""


@dataclass(frozen=True)
class Snapshot:
    """What the cluster holds for one app. ``record_uid`` is empty when there is no record (a new
    app, or a record someone deleted); ``record_emptied``: the record exists but was emptied by hand."""

    replica_sets: tuple[ObservedReplicaSet, ...] = ()
    pods: tuple[ObservedPod, ...] = ()
    record: AppRecord = dataclasses.field(default_factory=AppRecord)
    record_uid: str = ""
    record_emptied: bool = False
    pod_census: PodCensus | None = None
    """The app's pods per ReplicaSet, terminating ones included; None when they were not
    listed (only strategies for which :func:`wants_pod_census` is true need them)."""
    measurements: tuple[StepMeasurement, ...] = ()
    """The analysis measurements the controller took for this pass (a canary's analysis step:
    see :func:`~gitdeploy.core.rollout.canarywalk.canary_due_measurements`)."""
    new_pods: tuple[PodState, ...] | None = None
    """The pods of the new ReplicaSet, read only when a pass asked for them
    (:attr:`~gitdeploy.core.rollout.outputs.Step.explain_with_pods`): a revision failing by its
    progress deadline says what held its pods. None when not read."""


def wants_pod_census(app: App, replica_sets: Iterable[ReplicaSetState] | None = None) -> bool:
    """Whether a pass over ``app`` needs its pods counted (:class:`PodCensus`): Recreate awaits
    the removal of every old pod, not only what ReplicaSet status reports, before the mid hook
    and before any new pod (seed 000: "Successful removal is awaited before any Pod of the new
    revision is created"); a rolling update with ``TerminationComplete`` counts terminating pods
    against its surge. Neither matters while the app is at rest on git's template (its
    ``replica_sets``, when given, say so: :func:`at_rest`): no pass then creates a pod."""
    if app.strategy.type is not StrategyType.RECREATE and not counts_terminating_pods(app):
        return False
    return replica_sets is None or not at_rest(app, replica_sets)


def at_rest(app: App, replica_sets: Iterable[ReplicaSetState]) -> bool:
    """Whether ``app`` runs git's template and nothing more is to be done to its pods: one
    ReplicaSet has or wants pods, of git's template hash, asked for git's replicas (any, when git
    leaves them to an autoscaler), and every pod it has is available. Any other ReplicaSet with a
    pod, asked or still there by its status, and the app is not at rest (a rollout or a scale is
    under way, or git's template is not the one that runs: a pin, a new commit)."""
    live = [rs for rs in replica_sets if rs.replicas or rs.current]
    if len(live) != 1:
        return False
    (rs,) = live
    wanted = app.replicas if app.replicas is not None else rs.replicas
    return rs.template_hash == app.template_hash and rs.replicas == wanted == rs.current == rs.available


def counts_terminating_pods(app: App) -> bool:
    """Whether terminating pods count against a rolling update's ``maxSurge``
    (``podReplacementPolicy: TerminationComplete``)."""
    return (
        app.strategy.type.is_rolling
        and app.pod_replacement_policy is PodReplacementPolicy.TERMINATION_COMPLETE
    )


def starts_rollout(template_hash: str, snap: Snapshot) -> bool:
    """Whether a pass towards ``template_hash`` would start a new revision (a cheap pre-check).

    >>> starts_rollout("5d8f", Snapshot())  # nothing runs yet
    True
    """
    states = [rs.state for rs in snap.replica_sets]
    new, _ = split_replica_sets(states, template_hash)
    latest = max([snap.record.latest_revision, *(rs.revision for rs in states)])
    return new is None or new.revision < latest or new.revision == 0
