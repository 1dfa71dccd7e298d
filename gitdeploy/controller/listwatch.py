"""One list-then-watch of any kind of object gitdeploy follows (its ConfigMaps, its ReplicaSets,
its Leases), resumed where it broke off: the loop's watches (:mod:`gitdeploy.controller.watcher`),
the stream watch, the head announcement and the member Leases of ``run --sharding``, the dashboard.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from gitdeploy.cluster.rawapi import Bookmark
from gitdeploy.errors import ExpiredError, GitdeployError

log = logging.getLogger("gitdeploy.watch")


def keep_following(
    stop: threading.Event, what: str, follow_once: Callable[[str, Callable[[str], None]], str]
) -> None:
    """Call ``follow_once(version, reached)`` (one list-then-watch, see :func:`follow_once`) until
    ``stop``, each from the version the last one reached: a watch that breaks off (a cut
    connection, an API server restart) is resumed, not listed again; a 410 lists again, once."""

    def health(problem: GitdeployError | None) -> None:
        if problem is not None:  # the API hiccupped: watch again from where it was, in a second
            log.debug("%s restarts: %s", what, problem)

    keep_watching(stop, follow_once, health, pauses=(1.0, 1.0))


class Versioned(Protocol):
    """An object as the API server stored it: a watch that saw it goes on from its version."""

    @property
    def resource_version(self) -> str: ...


Seen = TypeVar("Seen", bound=Versioned)


def follow_once(
    what: str,
    list_at: Callable[[], tuple[list[Seen], str]],
    watch: Callable[[str], Iterable[tuple[str, Seen | Bookmark]]],
    version: str,
    seen: Callable[[Seen], None],
    *,
    deleted: Callable[[Seen], None] | None = None,
    reached: Callable[[str], None] | None = None,
    listed: Callable[[list[Seen]], None] | None = None,
) -> str:
    """One watch from ``version`` (none: ``list_at()`` first, which lists the objects with the
    list's resourceVersion) until the server ends it, ``seen`` told of each object added or
    changed (and ``deleted`` of each one deleted); returns the version to go on from ('' after
    ``410 Gone``: list again). ``reached`` is told of that version as it moves, so that a watch
    that breaks off is resumed from where it was; ``listed`` is told of each list as a whole,
    before ``seen`` of each item. A bookmark moves the version on (``reached`` too) and is seen by
    no one. :func:`~gitdeploy.controller.watcher.follow_records_once` is the one of app records."""
    if not version:
        version = _list_first(list_at, seen, listed)
        if reached is not None:
            reached(version)
    try:
        for kind, stored in watch(version):
            version = stored.resource_version or version
            if reached is not None:
                reached(version)
            if isinstance(stored, Bookmark):
                continue
            if kind != "DELETED":
                seen(stored)
            elif deleted is not None:
                deleted(stored)
    except ExpiredError as gone:
        log.info("%s: %s; listing again", what, gone)
        return ""
    return version


def _list_first(
    list_at: Callable[[], tuple[list[Seen], str]],
    seen: Callable[[Seen], None],
    listed: Callable[[list[Seen]], None] | None,
) -> str:
    """The list that starts a watch: ``listed`` of it all, ``seen`` of each item; its version.
    A function of its own so that the list is not held while the watch runs, and one list at a
    time (:data:`_ONE_LIST_AT_A_TIME`)."""
    with _ONE_LIST_AT_A_TIME:
        items, version = list_at()
        if listed is not None:
            listed(items)
        for stored in items:
            seen(stored)
    return version


_ONE_LIST_AT_A_TIME = threading.Lock()
"""Held by a watch while it lists: the watches of every namespace start together (two per
namespace), and a list's items are held whole until handed over, so lists side by side would
hold them all at once (at 10,000 apps, the most memory ``run`` ever used)."""


class WatchHealth:
    """Whether a watch works now, for the code that falls back without it; logged once per change:
    when it starts (or works again), and each new failure, with what is done meanwhile. ``what()``
    names the objects watched; ``explain`` gives a failure the hint that fits them."""

    def __init__(
        self,
        what: Callable[[], str],
        working: str,
        meanwhile: str,
        logger: logging.Logger,
        explain: Callable[[GitdeployError], GitdeployError] = lambda problem: problem,
    ) -> None:
        self.what = what
        self.working = working
        self.meanwhile = meanwhile
        self.log = logger
        self.explain = explain
        self._lock = threading.Lock()
        self._watching = False
        self._told = ""

    @property
    def watching(self) -> bool:
        with self._lock:
            return self._watching

    def __call__(self, problem: GitdeployError | None) -> None:
        """The watch reached a version (``problem`` None), or failed."""
        told = problem.message if problem is not None else ""
        with self._lock:
            started = problem is None and not self._watching
            new = told and told != self._told
            self._watching, self._told = problem is None, told
        if started:
            self.log.info("watching %s: %s", self.what(), self.working)
        if new and problem is not None:
            self.log.warning(
                "watch of %s: %s; %s meanwhile", self.what(), self.explain(problem), self.meanwhile
            )


def keep_watching(
    stop: threading.Event,
    follow_once: Callable[[str, Callable[[str], None]], str],
    health: Callable[[GitdeployError | None], None],
    pauses: tuple[float, float] = (1.0, 30.0),
) -> None:
    """:func:`keep_following` for a watch whose health matters (:class:`WatchHealth`): ``health``
    is told of each version reached and of each failure, after which the next try waits a pause,
    the first of ``pauses`` doubling up to the second."""
    version, pause = "", pauses[0]

    def reached(at: str) -> None:
        nonlocal version
        version = at
        health(None)

    while not stop.is_set():
        try:
            version = follow_once(version, reached)
            pause = pauses[0]
        except GitdeployError as problem:
            health(problem)
            stop.wait(pause)
            pause = min(pause * 2, pauses[1])
