"""A gate on the embedded cluster's writes, so that a test can stop a client at an exact write.

Fault tests kill ``gitdeploy run`` at every write of a rollout. Killing "soon after" some event
would hit a different write each time; the gate makes it exact. A test arms it through
``PUT /gitdeploy/v1/writegate`` with ``{"at": N, "phase": "before"|"after", "namespace": NS}``:
writes (create, update, patch, delete, deletecollection) in ``NS`` are counted from then on, and
the ``N``-th one trips it:

* ``before`` — the write is held before it is applied;
* ``after`` — it is applied, and its answer is held.

Once tripped, every later write (any namespace) is held too, before it is applied: the cluster is
frozen exactly as of the ``N``-th write, with no write of another thread slipping in while the test
kills the client. ``GET`` tells whether it tripped, which write it was and how many requests
it holds (``held``); ``DELETE`` disarms and
lets the held requests go: the writes held before they were applied are answered 503 and never
applied (their client is dead by then), the ``after`` one is answered as it was.

``at: 0`` only counts: ``GET`` then lists every write seen since arming (``seen``, ``writes``), so
a test measures a reference rollout first. Reads are never held or counted.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gitdeploy.localcluster.apierrors import ApiError

__all__ = ["GatePhase", "WriteGate"]

_HOLD_LIMIT_SECONDS = 300.0
"""A held request is let go after this long even if nobody disarms the gate (a test that died)."""


class GatePhase(StrEnum):
    BEFORE = "before"
    AFTER = "after"


@dataclass
class _Arming:
    at: int = 0
    phase: GatePhase = GatePhase.BEFORE
    namespace: str | None = None
    writes: list[str] = field(default_factory=list)
    tripped_by: str | None = None
    held: int = 0


class WriteGate:
    """See the module docstring; thread-safe, one per cluster, disarmed at start."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._arming: _Arming | None = None

    def arm(self, at: int, phase: GatePhase, namespace: str | None) -> None:
        """Count writes in ``namespace`` (None: every namespace) from now, tripping at the ``at``-th."""
        if at < 0:
            raise ApiError.bad_request(f"at must be 0 (count only) or more, not {at}")
        with self._changed:
            self._arming = _Arming(at, phase, namespace)
            self._changed.notify_all()

    def disarm(self) -> None:
        with self._changed:
            self._arming = None
            self._changed.notify_all()

    def to_json(self) -> dict[str, Any]:
        with self._changed:
            arming = self._arming
            if arming is None:
                return {"armed": False}
            return {
                "armed": True,
                "at": arming.at,
                "phase": arming.phase.value,
                "namespace": arming.namespace,
                "seen": len(arming.writes),
                "writes": list(arming.writes),
                "tripped": arming.tripped_by is not None,
                "write": arming.tripped_by,
                "held": arming.held,
            }

    @contextlib.contextmanager
    def passage(self, write: str, namespace: str | None) -> Iterator[None]:
        """Wrap the applying of one write (``write`` names it, e.g. ``patch replicasets/scale ns/x``)."""
        hold_after: _Arming | None = None
        with self._changed:
            arming = self._arming
            if arming is not None and arming.tripped_by is not None:
                self._hold(arming)
                raise ApiError(503, "ServiceUnavailable", "the write gate dropped this write (test support)")
            if arming is not None and (arming.namespace is None or arming.namespace == namespace):
                arming.writes.append(write)
                if len(arming.writes) == arming.at:
                    arming.tripped_by = write
                    self._changed.notify_all()
                    if arming.phase is GatePhase.BEFORE:
                        self._hold(arming)
                        raise ApiError(503, "ServiceUnavailable", "the write gate dropped this write")
                    hold_after = arming
        yield
        if hold_after is not None:
            with self._changed:
                self._hold(hold_after)

    def _hold(self, arming: _Arming) -> None:
        """Wait (the condition held) until ``arming`` is replaced or removed."""
        arming.held += 1
        try:
            self._changed.wait_for(lambda: self._arming is not arming, timeout=_HOLD_LIMIT_SECONDS)
        finally:
            arming.held -= 1
