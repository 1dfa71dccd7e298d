"""The embedded cluster's own time: a thread that fires the simulation's timers when they are due.

Pods start, become ready, stop and go when due by the cluster's clock (a fake clock's moves are
seen within :data:`POLL_SECONDS`), so that watches hear of them with no request arriving.

The ReplicaSet controller's look after a write (``rs-written``, due at once) is different: the
next write fires it in its own transaction (see ``DueTimers.settle`` in timers.py), which saves a
transaction per write while writes come one after another. This thread fires it only once no write
took it for a moment of real time: :data:`WRITE_SYNC_SECONDS`, or, while writes come one after
another more slowly than that (a loaded machine, a slower client), twice the recent interval
between them (from the look, when this thread took it), at most :data:`WRITE_SYNC_MAX_SECONDS`; so a
look after a write is taken by the next write rather than in a transaction of its own, and a moment
after the last write, as a real ReplicaSet controller acts a moment after the write it was told of.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gitdeploy.localcluster.registry import Registry

__all__ = ["POLL_SECONDS", "WRITE_SYNC_MAX_SECONDS", "WRITE_SYNC_SECONDS", "Kubelet"]

POLL_SECONDS = 0.2
"""How often a fake clock is looked at for due transitions (and other processes' writes)."""
WRITE_SYNC_SECONDS = 0.005
"""How long a look of the ReplicaSet controller after a write waits for the next write, at least."""
WRITE_SYNC_MAX_SECONDS = 0.05
"""How long it waits at most (while writes come one after another, slowly)."""
_WRITES_APART_SECONDS = 0.25
"""Writes further apart than this do not come one after another: their interval is not counted."""


class Kubelet:
    """One thread per cluster, instead of every watch looking for due timers."""

    def __init__(self, registry: Registry, log: Callable[[str], None]) -> None:
        self._registry = registry
        self._log = log
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._writes = 0  # how many writes left the ReplicaSet controller a look (told by the registry)
        self._looked_after = 0  # the count of those when this thread last fired them
        self._written_at = 0.0  # when the last of them was told (time.monotonic)
        self._looked_at = 0.0  # when this thread last took the look after one
        self._interval = 0.0  # the recent interval between writes that come one after another
        registry.write_synced = self._written

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="localcluster-kubelet", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _written(self) -> None:
        """A write committed and left a look of the ReplicaSet controller pending (called by the
        registry, holding the store's write lock: one at a time)."""
        now = time.monotonic()
        # since the write before, or since this thread took that write's look if it did: a
        # client that waits for the look before writing again adds its own pause only, not the
        # wait, which would otherwise grow with each write
        apart = now - max(self._written_at, self._looked_at)
        if apart < _WRITES_APART_SECONDS:  # a moving average of the recent intervals
            self._interval += (apart - self._interval) / 4
        self._written_at = now
        self._writes += 1
        self._wake.set()

    def _write_sync_seconds(self) -> float:
        """How long a look after a write waits for the next write now (see the module's doc)."""
        return min(max(WRITE_SYNC_SECONDS, 2 * self._interval), WRITE_SYNC_MAX_SECONDS)

    def _run(self) -> None:
        seen: int | None = None  # the writes counted a moment ago, while some are pending
        while not self._stopping.is_set():
            self._wake.clear()  # before looking: a write told after this is seen by the look
            writes = self._writes
            if writes != self._looked_after and writes != seen:
                # writes come: each fires what is due first (DueTimers.settle), the look after
                # the one before among it; nothing to ask the database until they pause
                seen = writes
                self._stopping.wait(self._write_sync_seconds())
                continue
            try:
                # no write for a moment took the last one's look (if any): this thread takes
                # it, with whatever else is due (other processes' looks too)
                self._registry.materialise()
                if writes != self._looked_after:
                    self._looked_at = time.monotonic()
                self._looked_after, seen = writes, None
                due_in = self._registry.next_transition_in()
                wait = POLL_SECONDS if due_in is None else min(POLL_SECONDS, max(due_in, 0.0) + 0.001)
            except Exception as problem:  # keep serving; requests materialise too
                if self._stopping.is_set():
                    return
                self._log(f"materialising transitions failed: {problem!r}")
                wait = POLL_SECONDS
            self._wake.wait(wait)
