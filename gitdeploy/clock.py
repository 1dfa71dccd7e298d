"""Injectable time, shared by the controller and the embedded cluster.

Nothing in gitdeploy reads the system clock directly: it asks a :class:`Clock`. Tests hand the
same :class:`FakeClock` to the embedded cluster and the controller, so a 600 s progress deadline
is exercised in milliseconds.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class MonotonicClock:
    """Seconds on :func:`time.monotonic`: never jumps with the wall clock (deadlines, fencing)."""

    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a clock never goes back")
        with self._lock:
            self._now += seconds
            return self._now
