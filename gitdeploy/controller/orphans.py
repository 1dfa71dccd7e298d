"""Apps that are in the cluster but not (validly) in git: what each is, and whether prune deletes it.

The rules are :mod:`gitdeploy.core.pruning`'s: an app whose manifest still names it is never an
orphan; prune needs a commit whose every file validated; one commit's prunes above ``pruneLimit``
are held (a ``PruneHeld`` status and a Warning event on the app record) until a person confirms
them for that commit (:func:`confirm_held_prunes`, ``gitdeploy prune --confirm``); an app whose
manifest said ``gitdeploy.io/prune: "false"`` is kept.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.rollouts import refused_when_changed
from gitdeploy.controller.verdicts import StatusVerdict
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.history.records import AppRecord, SyncStatus, load_record
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import ObservedReplicaSet, StoredRecord, record_name
from gitdeploy.core.pruning import PRUNE_ANNOTATION, PruneLimit, held_message, prune_blocker
from gitdeploy.core.sync.syncstate import Health, Sync
from gitdeploy.errors import GitdeployError
from gitdeploy.manifests.loader import LoadResult

log = logging.getLogger("gitdeploy.loop")


class OrphanPhase(StrEnum):
    """The phase an app that left git shows (its ReplicaSets remain, or were just pruned)."""

    ORPHANED = "Orphaned"
    PRUNE_HELD = "PruneHeld"
    PRUNED = "Pruned"


HELD_EVENT = OrphanPhase.PRUNE_HELD.value


@dataclass(frozen=True)
class PruneGate:
    """What the current head decides for every orphan."""

    head: str
    prune: bool
    """Prune is on (``--prune``, or the repo's ``prune`` setting)."""
    blocker: str = ""
    """Why nothing may be pruned at this head ('' when nothing blocks)."""
    held: str = ""
    """Why this head's prunes wait for a person ('' when they are within ``pruneLimit``)."""


@dataclass(frozen=True)
class Verdict:
    """What one pass concluded about an app without a valid manifest."""

    sync: str
    health: str
    phase: str
    """An :class:`OrphanPhase`, or empty."""
    message: str


class RecordWriter(Protocol):
    def __call__(self, key: AppKey, record: AppRecord, version: str | None) -> StoredRecord: ...


def decide_gate(
    head: str, prune: bool, diagnostics: Iterable[Diagnostic], pending: int, apps: int, limit: PruneLimit
) -> PruneGate:
    """What a head whose settings are good decides for its orphans: ``pending`` of them would be
    pruned (the opted-out ones aside), while ``apps`` apps are in git."""
    blocker = prune_blocker("", diagnostics)
    if not prune or blocker:
        return PruneGate(head, prune, blocker)
    managed = apps + pending
    if pending <= limit.of(managed):
        return PruneGate(head, True)
    return PruneGate(head, True, held=held_message(pending, head, limit, managed))


def unreadable_files(desired: LoadResult) -> dict[str, list[str]]:
    """Manifest files with a problem that names no app (YAML that does not parse, a document
    without kind or name), with those problems: any app could be in them."""
    unreadable: dict[str, list[str]] = defaultdict(list)
    for diagnostic in desired.diagnostics:
        if not diagnostic.app:
            unreadable[diagnostic.file].append(diagnostic.render())
    return unreadable


def unreadable_home(record: AppRecord, unreadable: Mapping[str, list[str]]) -> str | None:
    """The problems of the file the record last placed the app in, when that file no longer parses
    (it may still hold the app: the app is invalid, not gone); else None."""
    status = record.status
    home = status.location.rsplit(":", 1)[0] if status is not None and status.location else ""
    found = unreadable.get(home) if home else None
    return "; ".join(found) if found else None


def record_of(stored: StoredRecord | None) -> AppRecord | None:
    """The stored record; a damaged one → :class:`DamagedRecordError` that says what to do."""
    return None if stored is None else load_record(stored.namespace, stored.app, stored.payload)


def last_health(record: AppRecord | None, replica_sets: list[ObservedReplicaSet]) -> str:
    """The health the loop last saw for an app it cannot step now (no valid manifest)."""
    if record is not None and record.status is not None and record.status.health:
        return record.status.health
    return Health.HEALTHY if any(rs.state.replicas for rs in replica_sets) else Health.MISSING


@dataclass(frozen=True)
class OrphanPlan:
    """What one pass does to an app without a valid manifest (data; :class:`PruneExecutor` does it):
    the record to write (its status), an event, and for a prune the ReplicaSets to scale to 0 and
    delete, then the record to delete. Each write and delete is refused by an object changed
    since the pass read it (see :class:`PruneExecutor`)."""

    key: AppKey
    verdict: Verdict
    record: AppRecord | None = None
    """The record to write (None: no write)."""
    version: str = ""
    """The record's resourceVersion as read: the precondition of its write, or of its delete."""
    uid: str = ""
    event: str = ""
    """The message of a ``PruneHeld`` Warning event on the record ('' for none)."""
    scale_down: tuple[str, ...] = ()
    delete: tuple[ObservedReplicaSet, ...] = ()
    """The ReplicaSets to delete, as read (their resourceVersion and uid are the preconditions)."""
    delete_record: bool = False
    log: str = ""
    """What to log once it is done ('' for nothing)."""


@dataclass(frozen=True)
class Seen:
    """What a pass read of an app without a valid manifest, and when."""

    key: AppKey
    replica_sets: list[ObservedReplicaSet]
    stored: StoredRecord | None
    now: float
    head: str

    def plan(
        self, verdict: Verdict, change: Callable[[AppRecord], AppRecord] | None, **rest: Any
    ) -> OrphanPlan:
        """An :class:`OrphanPlan` writing ``change`` of the stored record (when it changes it)."""
        stored, record = self.stored, record_of(self.stored)
        if change is None or stored is None or record is None or change(record) == record:
            return OrphanPlan(self.key, verdict, **rest)
        return OrphanPlan(self.key, verdict, change(record), stored.resource_version, stored.uid, **rest)

    def status(self, sync: str, health: str, message: str, location: str) -> Callable[[AppRecord], AppRecord]:
        verdict = StatusVerdict(sync, health, message, location)
        return lambda record: verdict.apply(record, self.now, self.head)


def plan_without_manifest(seen: Seen, sync: str, message: str) -> OrphanPlan:
    """An app that runs but that this pass cannot step: its manifest is invalid (and there is no
    last good one, after a restart), or the head's settings cannot be used. Nothing is touched
    but the record's status."""
    record = record_of(seen.stored)
    health = last_health(record, seen.replica_sets)
    location = record.status.location if record is not None and record.status is not None else ""
    return seen.plan(Verdict(sync, health, "", message), seen.status(sync, health, message, location))


def plan_orphan(seen: Seen, note: str, gate: PruneGate, protected: bool) -> OrphanPlan:
    """An app that left git: kept (and why), held, or pruned."""
    record = record_of(seen.stored)
    protected = protected or (record is not None and record.prune_protected)
    health = last_health(record, seen.replica_sets)
    if not gate.prune:
        return _kept(seen, health, f"{note}; prune is off")
    if protected:
        return _kept(seen, health, f'{note}; kept: its manifest said {PRUNE_ANNOTATION}: "false"')
    if gate.blocker:
        return _kept(seen, health, f"{note}; {gate.blocker}")
    if gate.held and (record is None or record.prune_confirmed != gate.head):
        return _held(seen, record, health, gate)
    own = [rs for rs in seen.replica_sets if rs.app == seen.key.name]
    return OrphanPlan(
        seen.key,
        Verdict(Sync.ORPHANED, Health.MISSING, OrphanPhase.PRUNED, f"pruned ({note})"),
        version=seen.stored.resource_version if seen.stored is not None else "",
        scale_down=tuple(rs.name for rs in own if rs.state.replicas),
        delete=tuple(own),
        delete_record=True,
        log=f"pruned: {note}",
    )


def _kept(seen: Seen, health: str, message: str) -> OrphanPlan:
    verdict = Verdict(Sync.ORPHANED, health, OrphanPhase.ORPHANED, message)
    return seen.plan(verdict, seen.status(Sync.ORPHANED, health, message, ""))


def _held(seen: Seen, record: AppRecord | None, health: str, gate: PruneGate) -> OrphanPlan:
    """Write the held status against this head (a confirmation names it), and say so in an
    event once per head."""
    verdict = Verdict(Sync.PRUNE_HELD, health, OrphanPhase.PRUNE_HELD, gate.held)
    current = record.status if record is not None else None
    if current is not None and (current.sync, current.commit, current.message) == (
        Sync.PRUNE_HELD,
        gate.head,
        gate.held,
    ):
        return OrphanPlan(seen.key, verdict)
    status = SyncStatus(Sync.PRUNE_HELD, health, gate.held, gate.head, "", seen.now)
    event = gate.held if seen.stored is not None else ""
    return seen.plan(verdict, lambda r: dataclasses.replace(r, status=status), event=event, log=gate.held)


class PruneExecutor:
    """Carries out an :class:`OrphanPlan`: the one place where the loop writes to the cluster for an
    app without a valid manifest. The record goes through ``write_record`` (the loop's one writer
    of app records); ``fence`` raises before any other write once this process may no longer
    write for the app.

    A prune's scales and deletes name the resourceVersion the pass read: a ReplicaSet or record
    changed since (by a person's ``kubectl scale``, by another writer) ends the pass
    (:class:`StaleReadError`) with nothing more done, and the next pass decides again from what
    it reads. A ReplicaSet this pass scaled to 0 is then deleted by its uid (the object scaled,
    not one made anew under its name), not its version: its controller updates its status as
    the pods go, as the Kubernetes Deployment controller's clean-up of old ReplicaSets allows."""

    def __init__(
        self, cluster: Cluster, clock: Clock, write_record: RecordWriter, fence: Callable[[AppKey], None]
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.write_record = write_record
        self.fence = fence

    def execute(self, plan: OrphanPlan) -> Verdict:
        key = plan.key
        if plan.record is not None:
            self.write_record(key, plan.record, plan.version)
        if plan.verdict.sync == Sync.PRUNE_HELD and plan.log:
            log.warning("[%s] %s", key, plan.log)
        if plan.event:
            self._event(key, plan.uid, plan.event)
        ns, versions = key.namespace, {rs.name: rs.resource_version for rs in plan.delete}
        for name in plan.scale_down:
            self.fence(key)
            with refused_when_changed(key, f"ReplicaSet {name}"):  # scaled: deleted by its uid alone
                self.cluster.scale_replica_set(ns, name, 0, version=versions.pop(name, ""))
        for rs in plan.delete:
            self.fence(key)
            with refused_when_changed(key, f"ReplicaSet {rs.name}"):
                self.cluster.delete_replica_set(ns, rs.name, version=versions.get(rs.name, ""), uid=rs.uid)
        if plan.delete_record:
            self.fence(key)
            with refused_when_changed(key, "its record"):
                self.cluster.delete_app_record(ns, key.name, version=plan.version)
            log.info("[%s] %s", key, plan.log)
        return plan.verdict

    def _event(self, key: AppKey, uid: str, message: str) -> None:
        try:
            self.cluster.record_event(
                key.namespace,
                ("ConfigMap", record_name(key.name), uid),
                HELD_EVENT,
                message,
                warning=True,
                now=self.clock.now(),
            )
        except GitdeployError as problem:  # an event is never worth failing a pass for
            log.warning("[%s] could not record event %s: %s", key, HELD_EVENT, problem.message)


@dataclass(frozen=True)
class HeldPrune:
    """An app whose prune waits for a person, as its record says."""

    key: AppKey
    commit: str
    message: str
    confirmed: bool


def list_held_prunes(cluster: Cluster, namespace: str | None = None) -> list[HeldPrune]:
    """The apps whose status is ``PruneHeld`` (damaged records are skipped: they hold nothing)."""
    held = []
    for stored in cluster.list_app_records(namespace):
        try:
            record = AppRecord.from_json(stored.payload)
        except GitdeployError:
            continue
        status = record.status
        if status is not None and status.sync == Sync.PRUNE_HELD:
            key = AppKey(stored.namespace, stored.app)
            held.append(
                HeldPrune(key, status.commit, status.message, record.prune_confirmed == status.commit)
            )
    return sorted(held, key=lambda h: h.key)


def confirm_held_prunes(cluster: Cluster, held: list[HeldPrune]) -> None:
    """Confirm each held prune for the commit that holds it: the loop deletes the app at its next
    pass while its head is still that commit (a newer commit's prunes need a new confirmation)."""
    for item in held:
        stored = cluster.read_app_record(item.key.namespace, item.key.name)
        record = record_of(stored)
        if stored is None or record is None or record.status is None or record.status.commit != item.commit:
            continue  # pruned, or decided again at another commit meanwhile
        updated = dataclasses.replace(record, prune_confirmed=item.commit)
        cluster.write_app_record(
            item.key.namespace, item.key.name, updated.to_json(), stored.resource_version
        )
