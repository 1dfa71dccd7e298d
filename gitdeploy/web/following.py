"""``gitdeploy dashboard``'s own watches: each namespace's managed ReplicaSets and app records are
listed once, then followed (:mod:`gitdeploy.controller.watcher`'s machinery, into a
:class:`~gitdeploy.controller.watchcache.WatchCache` of its own), so that refreshing the apps list
costs no API request, as on ``run --listen``.

* With ``-n``: a ReplicaSet watch and a record watch per namespace named (what a namespaced Role
  allows).
* Without: one watch of the app records of every namespace, which finds the namespaces gitdeploy
  manages (and holds their records), and a ReplicaSet watch per namespace found, as it appears.
  If the cluster refuses it (403: a kubeconfig that may not watch every namespace), the apps are
  listed at each refresh, as before, and the log says why, once.

A namespace whose watch is refused is listed at each refresh. The threads are daemons: they end
with the process, or once the ``stop`` given to :func:`followed_apps` is set.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Final

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.inspect import AppView
from gitdeploy.controller.listwatch import follow_once, keep_following
from gitdeploy.controller.watchcache import DELETED, Kind, WatchCache
from gitdeploy.controller.watcher import follow_records_once
from gitdeploy.core.observed import StoredRecord
from gitdeploy.errors import ForbiddenError
from gitdeploy.web.appsource import WatchedApps

log = logging.getLogger("gitdeploy.dashboard")

WATCH_SECONDS: Final = 60
"""How long one watch request lasts before it is renewed (from where it was)."""
FIRST_READ_WAIT: Final = 120.0
"""How long the first read of the apps waits for the watches to list them; past it, it lists."""


class FollowedApps(WatchedApps):
    """The apps as the dashboard's own watches hold them; the first read waits for their lists
    (rather than listing everything a second time beside them)."""

    def __init__(self, cluster: Cluster, namespaces: Callable[[], Sequence[str | None]]) -> None:
        super().__init__(cluster, namespaces)
        self.settled: Callable[[], bool] = lambda: True
        """Every namespace wanted is held, or will not be (its watch was refused)."""
        self._first = True

    def read(self) -> list[AppView]:
        if self._first:
            self._first = False
            deadline = time.monotonic() + FIRST_READ_WAIT
            while not self.settled() and time.monotonic() < deadline:
                time.sleep(0.05)
        return super().read()


class _Found:
    """The namespaces the watches follow: named by ``-n``, or found by the watch of every
    namespace's records (then ``(None,)`` until its first list, and for good once it is refused)."""

    def __init__(self, follow: Callable[[str], None], stop: threading.Event) -> None:
        self._lock = threading.Lock()
        self._follow = follow
        self.stop = stop
        self._namespaces: set[str] = set()
        self._listed = False
        self.refused: set[tuple[str | None, Kind]] = set()

    def add(self, namespaces: set[str]) -> None:
        """The watches found ``namespaces`` (or ``-n`` named them): each new one is followed."""
        with self._lock:
            new = namespaces - self._namespaces
            self._namespaces |= namespaces
            self._listed = True
        for namespace in sorted(new):
            self._follow(namespace)

    def known(self) -> set[str]:
        with self._lock:
            return set(self._namespaces)

    def wanted(self) -> Sequence[str | None]:
        with self._lock:
            if not self._listed or (None, Kind.RECORDS) in self.refused:
                return (None,)
            return sorted(self._namespaces)

    def refuse(self, namespace: str | None, kind: Kind, problem: ForbiddenError) -> None:
        with self._lock:
            first = (namespace, kind) not in self.refused
            self.refused.add((namespace, kind))
        if first:
            where = f"in {namespace}" if namespace is not None else "in every namespace"
            log.warning(
                "the dashboard may not watch %s %s (%s): it lists them at each refresh instead",
                kind.value, where, problem.message,
            )  # fmt: skip


def followed_apps(
    cluster: Cluster, namespaces: Sequence[str] = (), stop: threading.Event | None = None
) -> FollowedApps:
    """The apps source of ``gitdeploy dashboard [-n NS]...``, its watches started (each ends at its
    next turn once ``stop`` is set)."""
    cache = WatchCache()

    def follow(namespace: str) -> None:
        kinds = (Kind.REPLICA_SETS, Kind.RECORDS) if namespaces else (Kind.REPLICA_SETS,)
        for kind in kinds:
            threading.Thread(
                target=_FOLLOW[kind],
                args=(cluster, cache, found, namespace),
                name=f"dashboard-{kind.value}-{namespace}",
                daemon=True,
            ).start()

    found = _Found(follow, stop or threading.Event())
    apps = FollowedApps(cluster, found.wanted)
    apps.follow(cache)

    def settled() -> bool:
        wanted = found.wanted()
        if wanted == (None,):
            return (None, Kind.RECORDS) in found.refused
        return all(
            cache.holds(ns, kind) or (ns, kind) in found.refused
            for ns in wanted
            for kind in Kind
            if ns is not None
        )

    apps.settled = settled
    if namespaces:
        found.add(set(namespaces))
    else:
        threading.Thread(
            target=_follow_every_records, args=(cluster, cache, found), name="dashboard-records", daemon=True
        ).start()
    return apps


def _follow_unless_refused(
    found: _Found,
    namespace: str | None,
    kind: Kind,
    what: str,
    once: Callable[[str, Callable[[str], None]], str],
) -> None:
    """:func:`keep_following` with ``once`` (one list-then-watch) until the cluster refuses it
    (403): then the refusal is told once, and the watch ends; or until ``found.stop``."""
    halt = threading.Event()

    def guarded(version: str, reached: Callable[[str], None]) -> str:
        if found.stop.is_set():
            halt.set()
            return version
        try:
            return once(version, reached)
        except ForbiddenError as refused:
            found.refuse(namespace, kind, refused)
            halt.set()
            return ""

    keep_following(halt, what, guarded)


def _follow_replica_sets(cluster: Cluster, cache: WatchCache, found: _Found, namespace: str) -> None:
    what = f"the dashboard's ReplicaSet watch of {namespace}"
    _follow_unless_refused(
        found,
        namespace,
        Kind.REPLICA_SETS,
        what,
        lambda version, reached: follow_once(
            what,
            lambda: cluster.list_replica_sets_at(namespace),
            lambda since: cluster.watch_replica_sets(namespace, WATCH_SECONDS, resource_version=since),
            version,
            lambda rs: cache.replica_set_changed("MODIFIED", rs),
            deleted=lambda rs: cache.replica_set_changed(DELETED, rs),
            reached=reached,
            listed=lambda items: cache.replace_replica_sets(namespace, items),
        ),
    )
    cache.forget(namespace, Kind.REPLICA_SETS)


def _follow_records(cluster: Cluster, cache: WatchCache, found: _Found, namespace: str) -> None:
    _follow_unless_refused(
        found,
        namespace,
        Kind.RECORDS,
        f"the dashboard's record watch of {namespace}",
        lambda version, reached: follow_records_once(
            cluster,
            namespace,
            version,
            lambda stored: cache.record_changed("MODIFIED", stored),
            timeout_seconds=WATCH_SECONDS,
            deleted=lambda stored: cache.record_changed(DELETED, stored),
            reached=reached,
            listed=lambda items: cache.replace_records(namespace, items),
        ),
    )
    cache.forget(namespace, Kind.RECORDS)


def _follow_every_records(cluster: Cluster, cache: WatchCache, found: _Found) -> None:
    """The app records of every namespace, into ``cache`` namespace by namespace; each namespace
    that has one is found (and its ReplicaSets followed)."""

    def listed(items: list[StoredRecord]) -> None:
        by_namespace: dict[str, list[StoredRecord]] = defaultdict(list)
        for stored in items:
            by_namespace[stored.namespace].append(stored)
        for namespace in found.known() | set(by_namespace):
            cache.replace_records(namespace, by_namespace.get(namespace, []))
        found.add(set(by_namespace))

    def seen(kind: str, stored: StoredRecord) -> None:
        if not cache.holds(stored.namespace, Kind.RECORDS):  # a namespace new to gitdeploy
            cache.replace_records(stored.namespace, [])
            found.add({stored.namespace})
        cache.record_changed(kind, stored)

    what = "the dashboard's record watch of every namespace"
    _follow_unless_refused(
        found,
        None,
        Kind.RECORDS,
        what,
        lambda version, reached: follow_once(
            what,
            lambda: cluster.list_app_records_at(None),
            lambda since: cluster.watch_app_records(None, since, WATCH_SECONDS),
            version,
            lambda stored: seen("MODIFIED", stored),
            deleted=lambda stored: seen(DELETED, stored),
            reached=reached,
            listed=listed,
        ),
    )


_FOLLOW: Final = {Kind.REPLICA_SETS: _follow_replica_sets, Kind.RECORDS: _follow_records}
