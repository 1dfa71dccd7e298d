"""Read-only views of what gitdeploy runs, for ``status``, ``history`` and ``rollout status``.

Everything comes from the cluster (ReplicaSets and app records, two list calls per namespace), so
these commands work from any machine, with or without a running loop. Only a revision's full commit
message comes from git (the config repo, or the mirror ``run``/``sync`` keep in the state dir).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Hashable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.watchcache import WatchCache
from gitdeploy.core.canaryview import read_canary_view
from gitdeploy.core.history.records import AppRecord, Outcome, RevisionEntry, load_record
from gitdeploy.core.history.recovery import revision_entry_of
from gitdeploy.core.imagetriggers import suspension_note
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import (
    COMMIT_ANNOTATION,
    PHASE_ANNOTATION,
    ObservedReplicaSet,
    StoredRecord,
    newest_replica_set,
    record_name,
)
from gitdeploy.core.rollout.drift import Drift, find_drift
from gitdeploy.core.rollout.templatedrift import TemplateDrift, find_template_drift
from gitdeploy.core.sharding import MEMBER_LABEL, OwnerLease, owner_leases
from gitdeploy.core.sync.commitwait import CommitProgress, commit_progress
from gitdeploy.core.sync.syncstate import Health, Sync, live_verdict
from gitdeploy.core.templatediff import FieldChange, diff_templates
from gitdeploy.errors import DamagedRecordError, GitdeployError, NotFoundError


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
    triggers_suspended: bool = False
    """The app has image triggers and a rollback suspended them (``message`` says why and what
    resumes them)."""
    suspended_reason: str = ""
    author: str = ""
    """The author of the current revision's commit, as the record logged it (empty if unknown)."""
    subject: str = ""
    """The subject of the current revision's commit."""
    canary: str = ""
    """Where a canary revision's walk is now (``step 2/4, paused (waiting for promote)``), from
    its ReplicaSet's annotations and pods; empty when the current revision is no canary."""
    canary_steady: str = ""
    """``canary`` without a timed pause's countdown: what ``rollout status`` prints."""
    owner: str = ""
    """With ``run --sharding``: the replica that claimed the app (``(released)`` after it when it
    released the app to another); empty when no replica claimed it."""
    shard_epoch: int = 0
    """With ``run --sharding``: how many times the app was claimed (see :mod:`gitdeploy.core.sharding`)."""
    template_hash: str = ""
    """The current revision's pod-template hash (its ReplicaSet is ``<app>-<hash>``)."""
    images: tuple[tuple[str, str], ...] = ()
    """``(container, image)`` of the current revision as deployed (digests when resolved)."""


def _entry_of(record: AppRecord, revision: int) -> RevisionEntry | None:
    """``revision``'s entry in the record's log (None if it is not there)."""
    return next((e for e in reversed(record.revisions) if e.revision == revision), None)


def _phase(current: ObservedReplicaSet | None, record: AppRecord) -> str:
    if current is None:
        return ""
    return record.outcome_of(current.state.revision, current.annotation(PHASE_ANNOTATION)).value


def suspended_triggers(key: AppKey, record: AppRecord) -> str:
    """What the app's state says of its suspended image triggers, from its record as it is now
    (never a stored message); empty when not suspended or when the app has no image triggers."""
    followed = record.status.image_triggers if record.status is not None else ()
    suspended, reason = record.triggers_suspended, record.suspended_reason
    return suspension_note(str(key), followed, suspended=suspended, reason=reason)


def read_records(
    cluster: Cluster, namespace: str | None, app: str | None
) -> tuple[dict[AppKey, AppRecord], dict[AppKey, DamagedRecordError]]:
    """The app records, and the damaged ones apart (one damaged record never hides the others)."""
    return load_records(cluster.list_app_records(namespace), app)


def _load_stored(stored: StoredRecord) -> AppRecord:
    return load_record(stored.namespace, stored.app, stored.payload)


def load_records(
    stored_records: Iterable[StoredRecord],
    app: str | None = None,
    load: Callable[[StoredRecord], AppRecord] = _load_stored,
) -> tuple[dict[AppKey, AppRecord], dict[AppKey, DamagedRecordError]]:
    """:func:`read_records` of records as stored (listed, or as the watches saw them), each read
    with ``load``."""
    records: dict[AppKey, AppRecord] = {}
    damaged: dict[AppKey, DamagedRecordError] = {}
    for stored in stored_records:
        if app is not None and stored.app != app:
            continue
        key = AppKey(stored.namespace, stored.app)
        try:
            records[key] = load(stored)
        except DamagedRecordError as problem:
            damaged[key] = problem
    return records, damaged


def _damaged_message(key: AppKey, problem: DamagedRecordError, replica_sets: list[ObservedReplicaSet]) -> str:
    """What to do about a damaged record; never to delete it while an earlier gitdeploy's
    ReplicaSets are still owned by it (deleting it would delete them, with their pods)."""
    if not any(rs.owned_the_old_way for rs in replica_sets):
        return f"{problem.message}: {problem.hint}"
    name = record_name(key.name)
    return (
        f"{problem.message}: repair it with `kubectl edit configmap {name} -n {key.namespace}`; "
        "do not delete it yet: ReplicaSets an earlier gitdeploy made are still owned by it until "
        "`gitdeploy run` or `sync` releases them"
    )


def list_app_views(
    cluster: Cluster, namespace: str | None = None, app: str | None = None, now: float | None = None
) -> list[AppView]:
    """Every app gitdeploy manages (in ``namespace``; only ``app`` when given), sorted, as at
    ``now`` (default: the clock now). An app whose record cannot be read shows as
    ``RecordDamaged`` with what to do."""
    replica_sets, records = cluster.list_replica_sets(namespace, app), cluster.list_app_records(namespace)
    return app_views(replica_sets, records, app, now=now)


def app_views(
    replica_sets: Iterable[ObservedReplicaSet],
    stored_records: Iterable[StoredRecord],
    app: str | None = None,
    load: Callable[[StoredRecord], AppRecord] = _load_stored,
    now: float | None = None,
) -> list[AppView]:
    """:func:`list_app_views` of ReplicaSets and app records as listed (or as the watches saw
    them, each record read with ``load``)."""
    at = time.time() if now is None else now
    grouped: dict[AppKey, list[ObservedReplicaSet]] = defaultdict(list)
    for rs in replica_sets:
        if app is None or rs.app == app:
            grouped[AppKey(rs.namespace, rs.app)].append(rs)
    records, damaged = load_records(stored_records, app, load)
    views = []
    for key in sorted(set(grouped) | set(records) | set(damaged)):
        replica_sets = grouped.get(key, [])
        record = records.get(key, AppRecord())
        current = newest_replica_set(replica_sets)
        phase = _phase(current, record)
        status = record.status
        desired = 0
        if current is not None:
            desired = current.state.desired_replicas_annotation or current.state.replicas
        sync = status.sync if status is not None else Sync.UNKNOWN
        health = status.health if status is not None else Health.UNKNOWN
        message = status.message if status is not None else ""
        ready = sum(rs.state.ready for rs in replica_sets)
        if current is not None and phase == Outcome.COMPLETE.value:
            sync, health, message = _live(current, replica_sets, desired, ready, (sync, health, message))
        live, steady = _canary_lines(key, current, desired, phase, at)
        if live and phase == Outcome.RUNNING.value:
            message = live
        suspended = suspended_triggers(key, record)
        message = "; ".join(m for m in (message, suspended) if m)
        problem = damaged.get(key)
        if problem is not None:
            sync, message = Sync.RECORD_DAMAGED.value, _damaged_message(key, problem, replica_sets)
        revision = current.state.revision if current is not None else record.latest_revision
        entry = _entry_of(record, revision)
        views.append(
            AppView(
                key=key,
                replicas=desired,
                ready=ready,
                up_to_date=current.state.current if current is not None else 0,
                available=sum(rs.state.available for rs in replica_sets),
                revision=revision,
                commit=(current.annotation(COMMIT_ANNOTATION) if current is not None else "")[:7],
                phase=phase,
                sync=sync,
                health=health,
                message=message,
                location=status.location if status is not None else "",
                triggers_suspended=bool(suspended),
                suspended_reason=record.suspended_reason if suspended else "",
                author=entry.commit.author if entry is not None else "",
                subject=entry.commit.subject if entry is not None else "",
                canary=live,
                canary_steady=steady,
                owner=_owner(record),
                shard_epoch=record.shard.epoch if record.shard is not None else 0,
                template_hash=current.state.template_hash if current is not None else "",
                images=entry.images if entry is not None else (),
            )
        )
    return views


RELEASED = " (released)"
"""After an owner in :attr:`AppView.owner`: it released the app, and the new owner has not
claimed it yet."""


def _owner(record: AppRecord) -> str:
    shard = record.shard
    if shard is None:
        return ""
    return shard.owner + RELEASED if shard.released else shard.owner


def with_owner_leases(
    cluster: Cluster, views: list[AppView], lease_namespace: str, now: float
) -> list[AppView]:
    """``views`` with each owner whose member Lease (in ``lease_namespace``) expired or is gone
    marked so (``a (lease expired)``): right after a failover the survivors act on a killed
    replica's apps before their claims name them, and the records still name the killed one.
    One list call; when it fails (RBAC, say) or finds no member Lease at all (another namespace,
    or every replica stopped), the owners stay as their records name them."""
    claimed = {v.owner for v in views if v.owner and not v.owner.endswith(RELEASED)}
    if not claimed:
        return views
    try:
        listed = cluster.list_leases(lease_namespace, f"{MEMBER_LABEL}=true")
    except GitdeployError:
        return views
    standing = owner_leases(claimed, [lease.spec for lease in listed.values()], now)
    marks = {owner: f"{owner} ({s.value})" for owner, s in standing.items() if s is not OwnerLease.LIVE}
    return [dataclasses.replace(v, owner=marks[v.owner]) if v.owner in marks else v for v in views]


def _canary_lines(
    key: AppKey, current: ObservedReplicaSet | None, desired: int, phase: str, now: float
) -> tuple[str, str]:
    """``(live, steady)``: the current revision's canary at ``now``, and without a timed pause's
    countdown; a canary under way names its revision and, at a ``pause: {}``, what goes on.
    Empty for an app whose current revision is no canary, or is Complete."""
    canary = read_canary_view(current, desired) if current is not None else None
    if canary is None or phase == Outcome.COMPLETE.value:
        return "", ""
    if phase != Outcome.RUNNING.value:
        return canary.describe(now), canary.describe(None)
    hint = f": `gitdeploy rollout promote {key}` goes on" if canary.waits_for_promote else ""
    revision = f"revision {canary.revision}: "
    return revision + canary.describe(now) + hint, revision + canary.describe(None) + hint


@dataclass(frozen=True)
class AppStateCounts:
    """How many apps ``status`` shows in each sync and health state, and with suspended triggers."""

    sync: Mapping[str, int]
    health: Mapping[str, int]
    triggers_suspended: int


AppState = tuple[str, str, bool]
"""An app's sync state, health and whether its triggers are suspended, as :class:`AppView` has them."""


def _state(view: AppView) -> AppState:
    return view.sync, view.health, view.triggers_suspended


_Kept = TypeVar("_Kept")


class AppTally(Generic[_Kept]):
    """What ``keep`` keeps of the view of each app of a watch cache as last worked out (its state
    for the scrapes, :meth:`of_states`; the whole view for the dashboard, :meth:`of_views`), with
    the resourceVersions of its ReplicaSets and record then: :func:`count_app_states` and
    :func:`watched_app_views` work an app's view out again only when one of them changed. A scrape
    of a settled fleet, or the dashboard's apps page, then costs a grouping of the cached objects,
    not a record parsed and a verdict per app (about 20 µs an app for a record of one revision,
    1 ms for 100: at 30,000 apps, 0.6 s to 30 s of a core each time); and the watch cache need not
    keep the records parsed (see :class:`~gitdeploy.controller.watchcache.WatchCache`). Exact: a
    view depends on those objects alone, but for a canary's line, which counts a timed pause down
    (worked out each time). Thread-safe."""

    def __init__(self, keep: Callable[[AppView], _Kept]) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._known: dict[str, dict[str, tuple[tuple[str, ...], _Kept, bool]]] = {}
        """By namespace and app: the resourceVersions its view was worked out from, what was kept
        of it, and whether it is a canary's (worked out again each time)."""
        self._stamped: dict[str, tuple[Hashable, list[_Kept]]] = {}
        """By namespace: what the last :meth:`tally` given a ``stamp`` kept, with that stamp."""

    @staticmethod
    def of_states() -> AppTally[AppState]:
        return AppTally(_state)

    @staticmethod
    def of_views() -> AppTally[AppView]:
        return AppTally(_as_is)

    def unchanged(self, namespace: str, stamp: Hashable) -> list[_Kept] | None:
        """What the last :meth:`tally` of ``namespace`` kept, if it was given this ``stamp``
        (None: tally it): a scrape of a namespace where nothing changed costs no look at its
        objects."""
        with self._lock:
            last = self._stamped.get(namespace)
        return last[1] if last is not None and last[0] == stamp else None

    def tally(
        self,
        namespace: str,
        held: tuple[list[ObservedReplicaSet], list[StoredRecord]],
        load: Callable[[StoredRecord], AppRecord] = _load_stored,
        stamp: Hashable = None,
    ) -> list[_Kept]:
        """What it keeps of every app of ``namespace`` as the watch cache ``held`` it, by app name.
        ``stamp``: what ``held`` was read at (:meth:`unchanged`), when no canary of it needs its
        view worked out again each time."""
        replica_sets: dict[str, list[ObservedReplicaSet]] = defaultdict(list)
        for rs in held[0]:
            replica_sets[rs.app].append(rs)
        records = {stored.app: stored for stored in held[1]}
        with self._lock:
            known = self._known.get(namespace, {})
        found: dict[str, tuple[tuple[str, ...], _Kept, bool]] = {}
        for key in sorted(replica_sets.keys() | records.keys()):
            stored = records.get(key)
            versions = (
                *sorted(rs.resource_version for rs in replica_sets.get(key, ())),
                stored.resource_version if stored is not None else "none",
            )
            last = known.get(key)
            if last is not None and last[0] == versions and "" not in versions and not last[2]:
                found[key] = last  # "": a version unknown
                continue
            [view] = app_views(replica_sets.get(key, []), [stored] if stored is not None else [], load=load)
            found[key] = (versions, self._keep(view), bool(view.canary))
        kept = [kept for _, kept, _ in found.values()]
        with self._lock:
            self._known[namespace] = found
            if stamp is not None and not any(canary for _, _, canary in found.values()):
                self._stamped[namespace] = (stamp, kept)
            else:
                self._stamped.pop(namespace, None)
        return kept


def _as_is(view: AppView) -> AppView:
    return view


def count_app_states(
    cluster: Cluster,
    namespaces: Iterable[str | None],
    watched: WatchCache | None = None,
    tally: AppTally[AppState] | None = None,
    only: Iterable[AppKey] | None = None,
) -> AppStateCounts:
    """The apps of ``namespaces`` (with ``only``: those of them among ``only``) counted by state as
    :func:`list_app_views` shows them now (the stored verdict checked against the cluster), never
    by the last pass's word. A namespace the loop's watches hold in ``watched`` is counted from
    there, with no API request (with ``tally``: working out again only the apps whose objects
    changed since it last counted, and not even looking at a namespace where nothing changed
    since, for the same apps); the others are listed (two list calls each)."""
    mine: dict[str, set[str]] | None = None
    if only is not None:
        mine = defaultdict(set)
        for key in only:
            mine[key.namespace].add(key.name)
    states: list[AppState] = []
    for namespace in namespaces:
        held = _watched_states(namespace, watched, tally, mine)
        if held is not None:
            states += held
            continue
        views = list_app_views(cluster, namespace)
        states += (
            _state(view) for view in views if mine is None or view.key.name in mine[view.key.namespace]
        )
    return AppStateCounts(
        Counter(sync for sync, _, _ in states),
        Counter(health for _, health, _ in states),
        sum(suspended for _, _, suspended in states),
    )


def _watched_states(
    namespace: str | None,
    watched: WatchCache | None,
    tally: AppTally[AppState] | None,
    mine: Mapping[str, set[str]] | None,
) -> list[AppState] | None:
    """The states of the apps of ``namespace`` (with ``mine``: of those among them) as ``watched``
    holds them, worked out through ``tally`` when given; None while the watches do not hold it."""
    if watched is None or namespace is None:
        return None
    names = frozenset(mine.get(namespace, ())) if mine is not None else None
    stamp = (watched.changed(namespace), names)  # before the contents: a change after it moves it
    kept = tally.unchanged(namespace, stamp) if tally is not None else None
    if kept is not None:
        return kept
    held = watched.contents(namespace, partial=names is not None)  # a sharded replica's: its own
    if held is None:
        return None
    if names is not None:
        held = _held_of(held, names)
    return (
        tally.tally(namespace, held, stamp=stamp)
        if tally is not None
        else [_state(v) for v in app_views(*held)]
    )


def _held_of(
    held: tuple[list[ObservedReplicaSet], list[StoredRecord]], names: Container[str]
) -> tuple[list[ObservedReplicaSet], list[StoredRecord]]:
    """The ReplicaSets and records of a watch cache's namespace that belong to the apps ``names``."""
    replica_sets, records = held
    return [rs for rs in replica_sets if rs.app in names], [
        stored for stored in records if stored.app in names
    ]


def watched_app_views(
    cluster: Cluster,
    namespaces: Iterable[str | None],
    watched: WatchCache | None = None,
    tally: AppTally[AppView] | None = None,
) -> list[AppView]:
    """:func:`list_app_views` of each of ``namespaces`` (None: every namespace): from ``watched``
    for a namespace the watches hold (no API request; with ``tally``, working out again only the
    apps whose objects changed since it last looked), listed for the others."""
    views: list[AppView] = []
    for namespace in namespaces:
        held = watched.contents(namespace) if watched is not None and namespace is not None else None
        if held is None or namespace is None:
            views += list_app_views(cluster, namespace)
        else:
            views += tally.tally(namespace, held) if tally is not None else app_views(*held)
    return views


def _live(
    current: ObservedReplicaSet,
    replica_sets: list[ObservedReplicaSet],
    desired: int,
    ready: int,
    stored: tuple[str, str, str],
) -> tuple[str, str, str]:
    """The stored verdict of an app whose revision is Complete, checked against its ReplicaSets now
    (:func:`~gitdeploy.core.sync.syncstate.live_verdict`)."""
    others = [rs.state for rs in replica_sets if rs is not current]
    drift: list[Drift | TemplateDrift] = [*find_drift(current.state, others, desired)]
    edited = find_template_drift(current)
    if edited is not None:
        drift.append(edited)
    return live_verdict(*stored, drift=drift, ready=ready, desired=desired)


def revision_history(cluster: Cluster, key: AppKey) -> tuple[list[RevisionEntry], AppRecord]:
    """The app's revisions, oldest first: the record's log plus a rollout still in flight; and the
    record (its control state: pin, suspended triggers)."""
    stored = cluster.read_app_record(key.namespace, key.name)
    record = load_record(key.namespace, key.name, stored.payload) if stored is not None else AppRecord()
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
            entries[revision] = revision_entry_of(
                rs, record.outcome_of(revision, rs.annotation(PHASE_ANNOTATION))
            )
        elif revision and not entries[revision].canary:  # a canary under way: its walk so far
            walked = revision_entry_of(rs, entries[revision].outcome).canary
            entries[revision] = dataclasses.replace(entries[revision], canary=walked)
    return [entries[r] for r in sorted(entries)], record


def progress_at_commit(cluster: Cluster, key: AppKey, sha: str) -> tuple[AppView, CommitProgress]:
    """How far ``key`` is at commit ``sha`` (:func:`~gitdeploy.core.sync.commitwait.commit_progress`),
    with its view as ``status`` shows it."""
    entries, record = revision_history(cluster, key)
    [view] = list_app_views(cluster, key.namespace, key.name) or [_empty_view(key)]
    return view, commit_progress(sha, entries, record.status, (view.sync, view.health))


def _empty_view(key: AppKey) -> AppView:
    return AppView(key, 0, 0, 0, 0, 0, "", "", Sync.UNKNOWN, Health.UNKNOWN, "", "")


_GITDEPLOY_LABELS = ("labels.gitdeploy.io/", "labels.app.kubernetes.io/managed-by")


@dataclass(frozen=True)
class TemplateDiff:
    """How revision ``revision``'s template differs from the one of ``against`` (the revision before).

    ``changes`` is None when a template cannot be read: ``missing`` names the ReplicaSets that the
    history limit removed.
    """

    revision: int
    against: int | None
    changes: tuple[FieldChange, ...] | None
    missing: tuple[str, ...] = ()


def template_diff(
    cluster: Cluster, key: AppKey, entries: list[RevisionEntry], revision: int, against: int | None = None
) -> TemplateDiff:
    """The template diff of ``revision`` against the revision before it in ``entries`` (oldest
    first), or against revision ``against`` when given (both must be in ``entries``).

    Templates come from the ReplicaSets (one list call); gitdeploy's own labels are left out.
    """
    if against is None:
        earlier = [e for e in entries if e.revision < revision]
    else:
        earlier = [e for e in entries if e.revision == against]
    if not earlier:
        return TemplateDiff(revision, None, ())
    before, after = earlier[-1], next(e for e in entries if e.revision == revision)
    templates = {
        rs.state.template_hash: rs.template
        for rs in cluster.list_replica_sets(key.namespace, key.name)
        if rs.template is not None
    }
    old, new = templates.get(before.template_hash), templates.get(after.template_hash)
    if old is None or new is None:
        gone = tuple(e.replica_set for e, t in ((before, old), (after, new)) if t is None)
        return TemplateDiff(revision, before.revision, None, gone)
    changes = tuple(c for c in diff_templates(old, new) if not c.field.startswith(_GITDEPLOY_LABELS))
    return TemplateDiff(revision, before.revision, changes)


def commit_message(
    state_dir: Path, sha: str, repo: str | None = None, branch: str | None = None
) -> str | None:
    """The full message of commit ``sha``: from ``repo`` (fetched at ``branch``) when given, else from
    the repo mirrors ``run``/``sync`` left in ``state_dir``. None when none of them has the commit.
    """
    # Imported here: git is read only for a revision's message, never by `status`'s start-up.
    from gitdeploy.source.gitcmd import GitFailure, GitRunner
    from gitdeploy.source.history import read_commit
    from gitdeploy.source.repo import CommitNotFoundError, ConfigRepo

    if repo is not None:
        with ConfigRepo(repo, ref=branch, state_dir=state_dir) as source:
            source.poll()
            try:
                return source.commit(sha).message
            except CommitNotFoundError:
                return None
    for mirror in sorted((state_dir / "source").glob("*.git")):
        runner = GitRunner(str(mirror), redact=str)
        try:
            return read_commit(runner, sha).message
        except GitFailure:
            continue
        finally:
            runner.close()
    return None
