"""Read-only views of what gitdeploy runs, for ``status``, ``history`` and ``rollout status``.

Everything comes from the cluster (ReplicaSets and app records, two list calls per namespace), so
these commands work from any machine, with or without a running loop.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import COMMIT_ANNOTATION, PHASE_ANNOTATION, ObservedReplicaSet
from gitdeploy.core.records import AppRecord, Outcome, RevisionEntry
from gitdeploy.core.rollout import revision_entry_of
from gitdeploy.errors import NotFoundError


@dataclass(frozen=True)
class AppView:
    key: AppKey
    replicas: int
    ready: int
    up_to_date: int
    available: int
    revision: int
    commit: str
    phase: str
    sync: str
    health: str
    message: str
    location: str


def _current(replica_sets: list[ObservedReplicaSet]) -> ObservedReplicaSet | None:
    return max(replica_sets, key=lambda rs: (rs.state.revision, rs.state.created_at), default=None)


def _phase(current: ObservedReplicaSet | None, record: AppRecord) -> str:
    if current is None:
        return ""
    entry = record.entry(current.state.revision)
    if entry is not None and entry.outcome is not Outcome.RUNNING:
        return entry.outcome.value
    return current.annotation(PHASE_ANNOTATION, Outcome.RUNNING.value)


def list_app_views(cluster: Cluster, namespace: str | None = None, app: str | None = None) -> list[AppView]:
    """Every app gitdeploy manages (in ``namespace``; only ``app`` when given), sorted."""
    grouped: dict[AppKey, list[ObservedReplicaSet]] = defaultdict(list)
    for rs in cluster.list_replica_sets(namespace, app):
        grouped[AppKey(rs.namespace, rs.app)].append(rs)
    records = {
        AppKey(r.namespace, r.app): AppRecord.from_json(r.payload)
        for r in cluster.list_app_records(namespace)
        if app is None or r.app == app
    }
    views = []
    for key in sorted(set(grouped) | set(records)):
        replica_sets = grouped.get(key, [])
        record = records.get(key, AppRecord())
        current = _current(replica_sets)
        phase = _phase(current, record)
        status = record.status
        desired = 0
        if current is not None:
            desired = current.state.desired_replicas_annotation or current.state.replicas
        views.append(
            AppView(
                key=key,
                replicas=desired,
                ready=sum(rs.state.ready for rs in replica_sets),
                up_to_date=current.state.current if current is not None else 0,
                available=sum(rs.state.available for rs in replica_sets),
                revision=current.state.revision if current is not None else record.latest_revision,
                commit=(current.annotation(COMMIT_ANNOTATION) if current is not None else "")[:7],
                phase=phase,
                sync=status.sync if status is not None else "Unknown",
                health=status.health if status is not None else "Unknown",
                message=status.message if status is not None else "",
                location=status.location if status is not None else "",
            )
        )
    return views


def revision_history(cluster: Cluster, key: AppKey) -> list[RevisionEntry]:
    """The app's revisions, oldest first: the record's log plus a rollout still in flight."""
    stored = cluster.read_app_record(key.namespace, key.name)
    record = AppRecord.from_json(stored.payload) if stored is not None else AppRecord()
    replica_sets = cluster.list_replica_sets(key.namespace, key.name)
    if stored is None and not replica_sets:
        raise NotFoundError(
            f"no app {key} in the cluster",
            hint="check the name and namespace (-n); `gitdeploy status` lists the apps",
        )
    entries = {e.revision: e for e in record.revisions}
    for rs in replica_sets:
        revision = rs.state.revision
        if revision and revision not in entries:
            phase = Outcome(rs.annotation(PHASE_ANNOTATION, Outcome.RUNNING.value))
            entries[revision] = revision_entry_of(rs, phase)
    return [entries[r] for r in sorted(entries)]
