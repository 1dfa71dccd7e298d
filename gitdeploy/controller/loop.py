"""The reconcile loop: keep the cluster at what the config repo says, one step per app per pass.

Shaped as controller-runtime shapes a controller; :class:`Controller` wires the parts:

* :mod:`~gitdeploy.controller.tracking` — the tracked head and its desired state; a new commit
  makes due only the apps whose manifest changed (:meth:`Controller.poll`).
* :mod:`~gitdeploy.controller.workqueue` — the due queue: no duplicates, a per-app exponential
  backoff for transient errors, apps that failed permanently held until their input changes.
* :mod:`~gitdeploy.controller.workers` — a pass (:meth:`Controller.reconcile_due`) lists each
  namespace involved once (or few due apps' own objects) and reconciles on a bounded pool.
* :mod:`~gitdeploy.controller.reconcile` — ``reconcile(app) -> Result``: one step, its report,
  when to look again, the error and its kind. An app in rollout is due again after its step's
  requeue delay (with jitter); a settled app only when its manifest changes, or at the resync.
* :mod:`~gitdeploy.controller.verdicts` — the verdict, and the one amendment of the app record
  that stores it; :mod:`~gitdeploy.controller.orphans` — apps that left git: a plan, then its execution.
* :mod:`~gitdeploy.controller.scheduler` — the one driver of passes (``run``, ``sync``, the
  benchmarks and the tests).

Apps that left git are ``Orphaned`` (the commit that removed them named); with prune their
ReplicaSets are scaled to 0 and deleted, with their record, under the rules of
:mod:`gitdeploy.controller.orphans` (evidence, ``pruneLimit``, the opt-out annotation). An app whose
manifest still names it, valid or not, is never an orphan.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Protocol

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.imagetriggers import ImageSettings, ImageTriggers
from gitdeploy.controller.orphans import PruneGate
from gitdeploy.controller.reconcile import (
    AppReport,
    Listed,
    Reconciler,
    Result,
    failed_report,
    jitter,
    source_unavailable_report,
)
from gitdeploy.controller.rollouts import RolloutRunner
from gitdeploy.controller.tracking import SourceTracker
from gitdeploy.controller.watchcache import WatchCache
from gitdeploy.controller.workers import NO_HOOKS, PER_APP_LISTS_BELOW, PassHooks, Workers, lists_per_app
from gitdeploy.controller.workqueue import MAX_BACKOFF_SECONDS, DueQueue
from gitdeploy.core.imagetriggers import stream_tag_key
from gitdeploy.core.models import App, AppKey
from gitdeploy.core.observed import ObservedReplicaSet, StoredRecord
from gitdeploy.core.pruning import PruneLimit
from gitdeploy.core.rollout.labeldrift import app_by_name
from gitdeploy.core.sync.syncstate import Health, Sync
from gitdeploy.errors import GitdeployError
from gitdeploy.manifests.loader import LoadResult
from gitdeploy.source.repo import ConfigRepo

__all__ = [
    "MAX_BACKOFF_SECONDS",
    "PER_APP_LISTS_BELOW",
    "RESYNC_SECONDS",
    "AppReport",
    "Controller",
    "Listed",
    "lists_per_app",
]

log = logging.getLogger("gitdeploy.loop")

WARNED = frozenset({Sync.INVALID_MANIFEST, Sync.INVALID_SETTINGS, Sync.RECORD_DAMAGED})
"""Sync states logged as warnings (so is a Degraded app): git or the record needs a person."""


def _log_state(report: AppReport, head: str | None) -> None:
    """One line for an app's new state; a warning when it needs a person (:data:`WARNED`)."""
    warned = report.sync in WARNED or report.health == Health.DEGRADED
    log.log(
        logging.WARNING if warned else logging.INFO,
        "[%s] %s/%s: %s",
        report.key,
        report.sync,
        report.health,
        report.message,
        extra={"commit": head, "revision": report.revision},
    )


class ShardScope(Protocol):
    """Which apps a sharded replica looks at, in its resync and when their records change
    (:class:`~gitdeploy.controller.shards.ShardGate`)."""

    def mine(self, key: AppKey) -> bool:
        """Whether this replica owns ``key`` by the hash among the live members."""

    def held(self) -> list[AppKey]:
        """The apps this replica claimed and has not released."""

    def looks_at(self, key: AppKey) -> bool:
        """Whether this replica owns ``key`` by the hash or claimed it: a change of its record
        concerns this replica (another replica's app is its owner's to look at)."""

    def finds_orphans(self) -> bool:
        """Whether this replica looks for orphans (the leader)."""


def run_cuttable(
    controller: Controller, keys: list[AppKey], hooks: PassHooks, cut: Callable[[], bool]
) -> list[AppReport]:
    """A pass over a slice of routine ``keys`` that stops early once ``cut()`` says so
    (:meth:`Workers.run`): the apps whose passes had not begun are due again at once, as routine
    apps, after those the push asks for (:meth:`DueQueue.give_back`)."""
    finished: set[AppKey] = set()

    def finish(result: Result) -> AppReport | None:
        finished.add(result.key)
        return controller.take_in(result)

    reports = controller.pool.run(keys, finish, hooks, cut)
    controller.queue.give_back([key for key in keys if key not in finished], controller.clock.now())
    return reports


def resync_mine(
    scope: ShardScope, source: SourceTracker, queue: DueQueue, lock: threading.RLock, now: float
) -> bool:
    """A sharded replica's resync: the apps it owns or holds are due (not the others', which
    their owners look at), and True when it also looks for orphans among the records (the leader
    alone: pruning is its work, and an orphan another replica still holds is among what that one
    holds). So a fleet's resync reconciles each app once, as one replica's does."""
    with lock:
        for key in [*scope.held(), *(k for k in [*source.all_keys(), *source.problems] if scope.mine(k))]:
            queue.add_if_absent(key, now)
    return scope.finds_orphans()


def recorded_apps(
    cluster: Cluster, cache: WatchCache, namespace: str | None, of_apps: Container[str] | None = None
) -> list[AppKey]:
    """The apps that have a record in ``namespace`` (None: every namespace), for the resync (of
    ``of_apps`` at least, when given): from the watch cache once the record watch has listed
    the whole namespace (no request, nothing parsed: a list of 30,000 records every resync was
    megabytes of JSON), else from a list that keeps the records of ``of_apps`` only, page by page
    (a sharded replica's watches follow its own shards, and the leader looks for orphans)."""
    held = cache.records(namespace) if namespace is not None else None
    if namespace is not None and held is not None:
        return [AppKey(namespace, app) for app in held]
    try:
        listed = cluster.list_app_records(namespace, of_apps=of_apps)
        return [AppKey(record.namespace, record.app) for record in listed]
    except GitdeployError as problem:  # loud: orphans there go unnoticed until it is fixed
        log.error(
            "[resync] cannot list the app records in %s, orphans there are not found: %s",
            namespace or "all namespaces (pass --namespace to name them)",
            problem,
        )
        return []


def resync_records(
    cluster: Cluster, cache: WatchCache, source: SourceTracker, *, sharded: bool
) -> list[AppKey]:
    """The apps with a record in the managed namespaces (:func:`recorded_apps`); ``sharded``: those
    of them not in git at least (a sharded leader looks for orphans: see :class:`NotInGit`)."""
    found: list[AppKey] = []
    for namespace in source.managed_namespaces():
        candidates = NotInGit(source, namespace) if sharded and namespace is not None else None
        found += recorded_apps(cluster, cache, namespace, candidates)
    return found


class NotInGit(Container[str]):
    """The names of the apps of ``namespace`` that git does not hold (nor holds unreadable): the
    candidate orphans a sharded leader keeps of a list of records."""

    def __init__(self, source: SourceTracker, namespace: str) -> None:
        keys = [*source.apps, *source.problems]
        self.in_git = frozenset(key.name for key in keys if key.namespace == namespace)

    def __contains__(self, name: object) -> bool:
        return name not in self.in_git


def followers(apps: Mapping[AppKey, App], changed: set[str]) -> list[AppKey]:
    """The apps with image change triggers on one of the ``changed`` stream tags."""
    return [
        k for k, app in apps.items() if any(stream_tag_key(t) in changed for t in app.triggers.image_change)
    ]


RESYNC_SECONDS = 300.0
"""How often every app is looked at again when nothing told gitdeploy it changed (`run --resync-interval`)."""


class Controller:
    """One config repo, one cluster. Thread-safe for one :meth:`run` plus readers of ``reports``."""

    def __init__(
        self,
        repo: ConfigRepo,
        cluster: Cluster,
        clock: Clock,
        *,
        prune: bool | None = None,
        prune_limit: PruneLimit | None = None,
        workers: int = 4,
        resync_seconds: float = RESYNC_SECONDS,
        namespaces: frozenset[str] = frozenset(),
        images: ImageSettings | None = None,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self._lock = threading.RLock()
        self.queue = DueQueue(self._lock)
        self.source = SourceTracker(repo, clock, self.queue, self._lock, namespaces, self._source_failed)
        self.images = ImageTriggers(cluster, clock, images or ImageSettings())
        """Image stream tags and the ImageChange triggers that follow them."""
        self.runner = RolloutRunner(cluster, clock)
        self.reports: dict[AppKey, AppReport] = {}
        self.reconciler = Reconciler(self.source, self.runner, self.images, clock, self.reports.get)
        self.pool = Workers(cluster, self.reconciler, lambda: self.source.apps, workers)
        self.watch_cache = WatchCache()
        """What the ReplicaSet and record watches saw (:mod:`gitdeploy.controller.watchcache`)."""
        self.prune_flag = prune
        self.prune_limit_flag = prune_limit
        self.resync_seconds = resync_seconds
        self.shard_scope: ShardScope | None = None  # run --sharding: see resync_mine
        self.watched_shards: Callable[[], frozenset[str] | None] = lambda: None  # see OwnShards

    # -- the parts, as readers outside the loop know them -----------------------------------------

    @property
    def repo(self) -> ConfigRepo:
        return self.source.repo

    @property
    def namespaces(self) -> frozenset[str]:
        return self.source.namespaces

    @property
    def head(self) -> str | None:
        return self.source.head

    @property
    def desired(self) -> LoadResult | None:
        return self.source.desired

    @property
    def apps(self) -> dict[AppKey, App]:
        return self.source.apps

    @property
    def problems(self) -> dict[AppKey, str]:
        return self.source.problems

    @property
    def orphans(self) -> dict[AppKey, str]:
        return self.source.orphans

    @property
    def refusal(self) -> str | None:
        return self.source.refusal

    @property
    def source_error(self) -> str | None:
        return self.source.source_error

    @property
    def source_hint(self) -> str | None:
        return self.source.source_hint

    @property
    def due(self) -> dict[AppKey, float]:
        return self.queue.due

    @property
    def failures(self) -> dict[AppKey, int]:
        return self.queue.failures

    @property
    def watched(self) -> set[str]:
        return self.reconciler.watched

    @property
    def workers(self) -> int:
        return self.pool.size

    @property
    def poll_observers(self) -> list[Callable[[float, bool], None]]:
        return self.source.poll_observers

    @property
    def reconcile_observers(self) -> list[Callable[[float, str], None]]:
        return self.reconciler.observers

    @property
    def prune(self) -> bool:
        if self.prune_flag is not None:
            return self.prune_flag
        desired = self.source.desired
        return bool(desired is not None and desired.settings.prune)

    @property
    def prune_limit(self) -> PruneLimit:
        if self.prune_limit_flag is not None:
            return self.prune_limit_flag
        desired = self.source.desired
        return desired.settings.prune_limit if desired is not None else PruneLimit()

    def prune_gate(self) -> PruneGate:
        """What the head decides for this pass's orphans: may they be pruned, and are they held."""
        return self.source.prune_gate(self.prune, self.prune_limit)

    def poll(self, pushed: str | None = None) -> bool:
        """Ask git for news (see :meth:`SourceTracker.poll`). True when the head moved."""
        return self.source.poll(pushed)

    def poll_delay(self, interval: float) -> float:
        return self.source.poll_delay(interval)

    def managed_namespaces(self) -> Sequence[str | None]:
        return self.source.managed_namespaces()

    # -- news: what makes an app due ----------------------------------------------------------------

    def notice(self, key: AppKey, resource_version: str) -> bool:
        """An app record changed outside this loop (a rollback, a deploy request): pass over the app
        now. The loop's own writes are ignored. True when the app was marked due."""
        if self.runner.record_versions.get(key) == resource_version:
            return False
        if self.shard_scope and not self.shard_scope.looks_at(key) and key not in self.source.orphans:
            return False  # sharded: another replica's app (its claim or its step)
        with self._lock:
            if key not in self.source.apps and key not in self.source.orphans:
                return False  # an orphan's record changes when a person confirms its prune
            self.queue.add(key, self.clock.now(), new_input=True)  # a person's request is new input
        return True

    def notice_progress(self, key: AppKey) -> bool:
        """A ReplicaSet of the app made progress (see :mod:`gitdeploy.controller.watcher`): if the
        app waits in a rollout, pass over it now instead of at its requeue time; if a pass over it
        is under way, again right after it. True when that is what happens."""
        with self._lock:
            report = self.reports.get(key)
            if report is None or report.settled or key in self.queue.failures:
                return False
            self.queue.hurry(key, self.clock.now())
        return True

    def notice_drift(self, kind: str, rs: ObservedReplicaSet) -> bool:
        """A ReplicaSet of an app in git changed in a way this loop did not make it (``kubectl
        scale``, a delete: see :meth:`RolloutRunner.changed_by_hand`): pass over the app now, which
        undoes it (:mod:`gitdeploy.core.rollout.drift`). True when the app was marked due."""
        key = AppKey(rs.namespace, app_by_name(rs.name))  # its labels may no longer say it
        if not self.runner.changed_by_hand(kind, rs):
            return False
        with self._lock:
            if key not in self.source.apps:
                return False
            self.queue.add(key, self.clock.now(), new_input=True)
        log.info("[%s] ReplicaSet %s changed by hand (%s); passing over the app now", key, rs.name, kind)
        return True

    def notice_stream(self, state: StoredRecord) -> bool:
        """An image stream state changed in the cluster (``gitdeploy tag``; see
        :mod:`gitdeploy.controller.streamwatch`): the next pass takes it in and passes over the
        apps that follow a tag that moved (:meth:`ImageTriggers.notice`). True when news."""
        return self.images.notice(state)

    def mark_due(self, keys: Iterable[AppKey] | None = None) -> None:
        """``keys`` are due now, held ones too: new input. None: every app, as for a new leader,
        routine ones (after what something asked for: see :func:`~.workqueue.first_slice`)."""
        every = keys is None
        keys = self.source.all_keys() if keys is None else keys
        self.queue.add_all(keys, self.clock.now(), new_input=True, routine=every)

    def next_due_in(self, *, apps_only: bool = False) -> float | None:
        """Seconds until an app or the image check is due (None: neither is); ``apps_only``: an
        app (the image check is always scheduled while image triggers are on)."""
        image_check = None if apps_only else self.images.next_check
        times = [t for t in (self.queue.next_at(), image_check) if t is not None]
        if not times:
            return None
        return max(min(times) - self.clock.now(), 0.0)

    # -- a pass -------------------------------------------------------------------------------------

    def reconcile_due(
        self,
        only: Iterable[AppKey] | None = None,
        hooks: PassHooks = NO_HOOKS,
        size: int | None = None,
        cut: Callable[[], bool] | None = None,
    ) -> list[AppReport]:
        """One pass over the apps that are due now, a slice of about ``size`` of them (see
        :meth:`DueQueue.take`), or over ``only``; returns their reports. A slice of routine apps
        stops early once ``cut()`` says a push came (:func:`run_cuttable`)."""
        now = self.clock.now()
        self._resync_if_time(now)
        self._mark_followers_due(self.images.take_news())
        if self.source.images_stale or (self.images.next_check is not None and now >= self.images.next_check):
            self.source.images_stale = False
            self._refresh_images()
        keys = self.queue.take(now, only, size)
        if not keys:
            return []
        # One decision for the whole pass: how many of the head's orphans prune would delete.
        gate = self.prune_gate() if any(key in self.source.orphans for key in keys) else None
        self.reconciler.gate = (lambda: gate) if gate is not None else self.prune_gate
        if cut is None or not self.queue.may_cut:
            return self.pool.run(keys, self.take_in, hooks)
        return run_cuttable(self, keys, hooks, cut)

    def take_in(self, result: Result) -> AppReport | None:
        """Take one app's result in: its report, and when the queue offers it again."""
        key, report = result.key, result.report
        if result.error is not None and report is None:
            return self._failed(key, result.error)
        if report is not None:
            self._remember(report, result.requeue_after)
        elif result.error is None:  # nothing known of it, or (sharded) not this replica's app yet
            self.queue.done(key, self.clock.now(), result.requeue_after)
        return report

    def _remember(self, report: AppReport, requeue_after: float | None) -> None:
        previous = self.reports.get(report.key)
        if previous is None or (previous.sync, previous.health, previous.phase) != (
            report.sync,
            report.health,
            report.phase,
        ):
            _log_state(report, self.source.head)
        with self._lock:
            self.reports[report.key] = report
            delay = jitter(requeue_after) if requeue_after is not None else None
            self.queue.done(report.key, self.clock.now(), delay)

    def _failed(self, key: AppKey, problem: GitdeployError) -> AppReport:
        """The pass over ``key`` failed: its report says so (unsettled); it is due again after a
        backoff, or (a permanent error) once its input changes."""
        delay = self.queue.failed(key, self.clock.now(), problem)
        if delay is None:
            retry = "not retried until the app's manifest, the commit or its image changes"
            log.warning("[%s] pass failed (%s): %s", key, retry, problem.message)
        else:
            retry = f"retrying in {delay:.0f} s"
            log.warning("[%s] pass failed (retry in %.0f s): %s", key, delay, problem.message)
        report = failed_report(key, self.reports.get(key), f"error: {problem} ({retry})")
        with self._lock:
            self.reports[key] = report
        return report

    def _source_failed(self) -> None:
        """The repo cannot be read: every app of git says so (a rollout under way goes on)."""
        note = self.source.source_note()
        with self._lock:
            for key in self.source.apps:
                self.reports[key] = source_unavailable_report(key, self.reports.get(key), note)

    def _resync_if_time(self, now: float) -> None:
        """Periodically look at every app again, and find records of apps that are not in git
        (sharded: see :func:`resync_mine`)."""
        if not self.queue.resync_due(now, self.resync_seconds):
            return
        scope = self.shard_scope
        if scope is not None and not resync_mine(scope, self.source, self.queue, self._lock, now):
            return
        source = self.source
        recorded = resync_records(self.cluster, self.watch_cache, source, sharded=scope is not None)
        with self._lock:
            for key in recorded:
                if not source.mine(key):
                    continue
                orphan = key not in source.apps and key not in source.problems and source.refusal is None
                if orphan:
                    source.orphans.setdefault(key, "not in git (any more)")
                if scope is None or orphan:
                    self.queue.add_if_absent(key, now)
            for key in source.apps if scope is None else ():  # sharded: resync_mine did
                self.queue.add_if_absent(key, now)

    def _refresh_images(self) -> None:
        """Resolve the image stream tags; apps with triggers on a tag that changed become due."""
        desired = self.source.desired
        streams = [s for s in desired.image_streams if self.source.mine(s.key)] if desired else []
        if not streams and self.images.next_check is None:
            return
        self._mark_followers_due(self.images.refresh(streams))

    def _mark_followers_due(self, changed: set[str]) -> None:
        """Apps with triggers on one of the ``changed`` stream tags are due now (new input)."""
        if changed:
            with self._lock:
                self.mark_due(followers(self.source.apps, changed))
