"""The apps as ``status`` shows them, read in the background at most once per refresh interval
however many pages and live streams ask, so that a page never waits for a listing: before the
first one is done a page says so (listing 10,000 apps takes seconds; rendering a page of them,
milliseconds), and the live stream swaps the table in when it lands."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from gitdeploy.controller.inspect import AppView
from gitdeploy.errors import GitdeployError
from gitdeploy.web.appsource import AppsSource, Stamp

log = logging.getLogger(__name__)


class AppSnapshot:
    """The latest list of app views, read again from ``source`` in a background thread once it is
    older than ``max_age`` seconds (stale while revalidating), and only if the source may have
    changed (:meth:`AppsSource.stamp`): read from the watches' cache, an unchanged cache is not
    even read again. Nobody waits: before the first read is done, :meth:`views` is None.

    Thread-safe: pages and live streams share it; at most one read runs at a time. A read that
    fails keeps the views from before (the first one's problem is raised to the caller).
    """

    def __init__(self, source: AppsSource, max_age: float) -> None:
        self._source = source
        self._max_age = max_age
        self._lock = threading.Lock()
        self._views: list[AppView] = []
        self._read_at: float | None = None
        self._stamp: Stamp | None = None
        self._timed = False
        """The views show a canary's countdown: they change with the clock, so they are read again
        at every interval whatever the stamp says."""
        self._problem: GitdeployError | None = None
        self._refreshing = False

    def prime(self) -> None:
        """Start the first read now, so the first visitor finds it done (or under way)."""
        with self._lock:
            self._refresh_if_due()

    def views(self) -> Sequence[AppView] | None:
        """The apps, or None while the first read is under way; the first read's problem is
        raised while no read has succeeded yet."""
        with self._lock:
            self._refresh_if_due()
            if self._read_at is None:
                if self._problem is not None:
                    raise self._problem
                return None
            return self._views

    def listing(self) -> bool:
        """The first read is under way (and no read has failed yet)."""
        with self._lock:
            return self._read_at is None and self._problem is None

    def _refresh_if_due(self) -> None:
        if self._refreshing:
            return
        if self._read_at is not None:
            if time.monotonic() - self._read_at < self._max_age:
                return
            if not self._timed and self._stamp is not None and self._source.stamp() == self._stamp:
                self._read_at = time.monotonic()  # unchanged: as good as read now
                return
        self._refreshing = True
        threading.Thread(target=self._refresh, name="dashboard-apps", daemon=True).start()

    def _refresh(self) -> None:
        views: list[AppView] | None = None
        problem: GitdeployError | None = None
        stamp = self._source.stamp()  # before the read: a change during it makes the next one due
        try:
            views = self._source.read()
        except GitdeployError as failed:
            problem = failed
            log.warning("cannot list the apps for the dashboard: %s", failed.message)
        finally:
            with self._lock:
                if views is not None:
                    self._views, self._read_at, self._stamp = views, time.monotonic(), stamp
                    self._timed = any(view.canary != view.canary_steady for view in views)
                self._problem = problem
                self._refreshing = False
