"""Where the dashboard's apps list comes from: listed from the cluster (two list calls over every
app), or read from watches that hold every managed ReplicaSet and app record of a namespace (no
API request): ``run --listen`` reads its loop's :class:`~gitdeploy.controller.watchcache.WatchCache`,
``gitdeploy dashboard`` one its own watches fill (:mod:`gitdeploy.web.following`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.inspect import AppTally, AppView, list_app_views, watched_app_views
from gitdeploy.controller.watchcache import WatchCache

Stamp = tuple[int, tuple[str | None, ...]]
"""What an apps list was read from: the same stamp, the same list."""


class AppsSource(Protocol):
    """The apps the dashboard shows."""

    def read(self) -> list[AppView]:
        """Every app, as ``status`` shows it now (may list the cluster)."""
        ...

    def stamp(self) -> Stamp | None:
        """While it equals the stamp taken before a read, a read gives what that one gave (None:
        it may not; read again)."""
        ...


class ListedApps:
    """The apps of ``namespaces`` (empty: every namespace), listed at each read."""

    def __init__(self, cluster: Cluster, namespaces: Sequence[str] = ()) -> None:
        self.cluster = cluster
        self.namespaces = tuple(sorted(set(namespaces)))

    def read(self) -> list[AppView]:
        if not self.namespaces:
            return list_app_views(self.cluster)
        return [view for namespace in self.namespaces for view in list_app_views(self.cluster, namespace)]

    def stamp(self) -> Stamp | None:
        return None


class WatchedApps:
    """The apps of the namespaces that ``namespaces()`` names (None: every namespace), read from
    a watch cache for each namespace it holds, listed for the others (and until :meth:`follow`).
    A read works out again only the apps whose objects changed since the last (see
    :class:`~gitdeploy.controller.inspect.AppTally`)."""

    def __init__(self, cluster: Cluster, namespaces: Callable[[], Sequence[str | None]]) -> None:
        self.cluster = cluster
        self._lock = threading.Lock()
        self._namespaces = namespaces
        self._cache: WatchCache | None = None
        self._tally = AppTally.of_views()

    def follow(self, cache: WatchCache, namespaces: Callable[[], Sequence[str | None]] | None = None) -> None:
        """From now on, read what ``cache`` holds (of ``namespaces()``, if given)."""
        with self._lock:
            self._cache, self._tally = cache, AppTally.of_views()
            self._namespaces = namespaces or self._namespaces

    def _current(self) -> tuple[WatchCache | None, AppTally[AppView], tuple[str | None, ...]]:
        with self._lock:
            cache, tally, namespaces = self._cache, self._tally, self._namespaces
        return cache, tally, tuple(namespaces())

    def read(self) -> list[AppView]:
        cache, tally, namespaces = self._current()
        return watched_app_views(self.cluster, namespaces, cache, tally)

    def stamp(self) -> Stamp | None:
        cache, _, namespaces = self._current()
        if cache is None or not all(ns is not None and cache.holds(ns) for ns in namespaces):
            return None
        return cache.generation, namespaces
