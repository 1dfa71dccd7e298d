"""The apps as ``status`` shows them, listed in the background at most once per refresh interval
however many pages and live streams ask, so that a page never waits for a listing once the first
one is done (listing 10,000 apps takes seconds; rendering a page of them, milliseconds)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from gitdeploy.controller.inspect import AppView
from gitdeploy.errors import GitdeployError

log = logging.getLogger(__name__)


class AppSnapshot:
    """The latest list of app views, read again by ``read`` in a background thread once it is
    older than ``max_age`` seconds (stale while revalidating). Only the very first call waits.

    Thread-safe: pages and live streams share it; at most one listing runs at a time. A listing
    that fails keeps the views from before (the first one's problem is raised to the caller).
    """

    def __init__(self, read: Callable[[], list[AppView]], max_age: float) -> None:
        self._read = read
        self._max_age = max_age
        self._lock = threading.Lock()
        self._views: list[AppView] = []
        self._read_at: float | None = None
        self._problem: GitdeployError | None = None
        self._refreshing = False
        self._ready = threading.Event()

    def prime(self) -> None:
        """Start the first listing now, so the first visitor finds it done (or under way)."""
        with self._lock:
            self._refresh_if_due()

    def views(self) -> Sequence[AppView]:
        with self._lock:
            self._refresh_if_due()
        self._ready.wait()
        with self._lock:
            if self._read_at is None and self._problem is not None:
                raise self._problem
            return self._views

    def _refresh_if_due(self) -> None:
        due = self._read_at is None or time.monotonic() - self._read_at >= self._max_age
        if due and not self._refreshing:
            self._refreshing = True
            threading.Thread(target=self._refresh, name="dashboard-apps", daemon=True).start()

    def _refresh(self) -> None:
        views: list[AppView] | None = None
        problem: GitdeployError | None = None
        try:
            views = self._read()
        except GitdeployError as failed:
            problem = failed
            log.warning("cannot list the apps for the dashboard: %s", failed.message)
        finally:
            with self._lock:
                if views is not None:
                    self._views, self._read_at = views, time.monotonic()
                self._problem = problem
                self._refreshing = False
            self._ready.set()
