"""Counting API requests by verb and resource, so tests can assert how many calls a pass made."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

__all__ = ["WRITE_VERBS", "RequestStats"]

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
MAX_WRITES_KEPT = 100_000


class RequestStats:
    """A thread-safe counter of ``(verb, resource)`` pairs, e.g. ``("patch", "replicasets/scale")``.

    Verbs are Kubernetes' request verbs: get, list, watch, create, update, patch, delete,
    deletecollection; discovery documents count as ``("get", "discovery")``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._by_agent: Counter[tuple[str, str, str]] = Counter()
        """Every request (reads and watches too) by the client's User-Agent, verb and resource:
        what each of several clients of one cluster costs it."""
        self._writes: list[dict[str, Any]] = []
        """Each write as asked: the client's User-Agent, verb, resource, ``namespace/name`` and the
        answer's code (200 for any success), oldest first; tests read who wrote what."""

    def record(self, verb: str, resource: str, agent: str = "") -> None:
        with self._lock:
            self._counts[(verb, resource)] += 1
            self._by_agent[(agent, verb, resource)] += 1

    def wrote(self, agent: str, verb: str, resource: str, where: str, *, code: int) -> None:
        with self._lock:
            if len(self._writes) < MAX_WRITES_KEPT:
                self._writes.append(
                    {"agent": agent, "verb": verb, "resource": resource, "object": where, "code": code}
                )

    def snapshot(self) -> dict[tuple[str, str], int]:
        """A copy of the counts."""
        with self._lock:
            return dict(self._counts)

    def count(self, verb: str | None = None, resource: str | None = None) -> int:
        """Requests matching ``verb`` and ``resource`` (None matches any); no arguments: the total."""
        with self._lock:
            return sum(
                n
                for (v, r), n in self._counts.items()
                if (verb is None or v == verb) and (resource is None or r == resource)
            )

    def total(self) -> int:
        return self.count()

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self._by_agent.clear()
            self._writes.clear()

    def to_json(self) -> dict[str, Any]:
        """The body of ``GET /gitdeploy/v1/stats``."""
        counts = self.snapshot()
        with self._lock:
            writes = list(self._writes)
            by_agent = sorted(self._by_agent.items())
        return {
            "writes": writes,
            "byAgent": [
                {"agent": agent, "verb": verb, "resource": resource, "count": n}
                for (agent, verb, resource), n in by_agent
            ],
            "total": sum(counts.values()),
            "requests": [
                {"verb": verb, "resource": resource, "count": n}
                for (verb, resource), n in sorted(counts.items())
            ],
        }
