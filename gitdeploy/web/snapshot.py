"""The apps as ``status`` shows them, listed at most once per refresh interval however many pages
and live streams ask (two list calls per look, whatever the number of apps)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from gitdeploy.controller.inspect import AppView


class AppSnapshot:
    """The latest list of app views, refreshed by ``read`` when older than ``max_age`` seconds.

    Thread-safe: pages and live streams share it; one of them lists while the others wait for it.
    """

    def __init__(self, read: Callable[[], list[AppView]], max_age: float) -> None:
        self._read = read
        self._max_age = max_age
        self._lock = threading.Lock()
        self._views: list[AppView] = []
        self._read_at: float | None = None

    def views(self) -> Sequence[AppView]:
        with self._lock:
            now = time.monotonic()
            if self._read_at is None or now - self._read_at >= self._max_age:
                self._views = self._read()
                self._read_at = now
            return self._views
