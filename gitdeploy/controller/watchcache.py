"""What the loop's watches saw: every managed ReplicaSet and app record of the watched namespaces,
kept as the API server last told them (an informer's cache, in the small).

The ReplicaSet and record watches (:mod:`gitdeploy.controller.watcher`) list each namespace once,
then follow its changes from the list's resourceVersion; each list replaces what the cache held of
the namespace, each event updates one object. The apps-by-state gauges are counted from it at each
``/metrics`` scrape (:func:`~gitdeploy.controller.inspect.count_app_states`): O(apps) in memory and
no API request, where listing both kinds in every managed namespace took two lists per namespace
per scrape. A namespace is served from the cache only once both of its watches have listed it
(:meth:`WatchCache.contents`); until then the counting lists it, as ``gitdeploy status`` does.

A ReplicaSet is kept without its pod template unless the template was edited by hand, with the
annotations the counting reads only (see :func:`_without_template`), and an app record with its
payload compressed (see :attr:`WatchCache._records`); repeated strings (namespaces, annotation
keys, phases) are one object each. Like an informer's cache, it is as current as the watches: an
event arrives milliseconds after the change, and a watch that breaks off resumes from the version
it reached, so no change is missed.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from dataclasses import replace
from enum import StrEnum

from gitdeploy.core.canaryview import CANARY_VIEWED_ANNOTATIONS
from gitdeploy.core.observed import COMMIT_ANNOTATION, PHASE_ANNOTATION, ObservedReplicaSet, StoredRecord
from gitdeploy.core.rollout.templatedrift import (
    REPLACING_PODS_ANNOTATION,
    TEMPLATE_DIGEST_ANNOTATION,
    edited_by_hand,
)
from gitdeploy.core.sharding import covers


class Kind(StrEnum):
    """The two kinds of object the cache holds."""

    REPLICA_SETS = "replicasets"
    RECORDS = "records"


DELETED = "DELETED"
"""A watch event's type when the object is gone."""


class WatchCache:
    """The managed ReplicaSets and app records of each watched namespace (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replica_sets: dict[str, dict[str, ObservedReplicaSet]] = {}
        self._records: dict[str, dict[str, StoredRecord]] = {}
        """Each app record as last listed or changed, its payload compressed
        (:meth:`~gitdeploy.core.observed.StoredRecord.packed`), parsed by whoever reads it: a
        pass, and a scrape or the dashboard only for an app whose objects changed since they last
        looked (:class:`~gitdeploy.controller.inspect.AppTally`). Every replica holds every app's
        record (with ``run --sharding``, for the moment it adopts the app), and one of 100
        revisions takes 13 KiB so, against 55 KiB as JSON and 112 KiB parsed
        (``bench/record_memory.py``)."""
        self._generation = 0
        """Counts the changes of what the cache holds: a reader that saw this number sees the same
        contents while it stays (the dashboard computes its apps list again only when it moved)."""
        self._changed: dict[str, int] = {}
        """The generation of each namespace's last change (see :meth:`changed`)."""
        self._shards: dict[tuple[str, Kind], frozenset[str] | None] = {}
        """The shards each namespace's objects of each kind were listed for (None: all): a
        replica of ``run --sharding`` watches its own apps' objects only (see :meth:`holds`)."""

    @property
    def generation(self) -> int:
        """A number that moves each time a list, an event or a forget changes what is held."""
        with self._lock:
            return self._generation

    def changed(self, namespace: str) -> int:
        """The :attr:`generation` at the last change of what is held of ``namespace`` (0: never
        changed): while it stays, so does :meth:`contents` (read it before the contents)."""
        with self._lock:
            return self._changed.get(namespace, 0)

    def _moved(self, namespace: str) -> None:
        """What is held of ``namespace`` changed (with the lock held)."""
        self._generation += 1
        self._changed[namespace] = self._generation

    def replace_replica_sets(
        self, namespace: str, listed: Iterable[ObservedReplicaSet], shards: frozenset[str] | None = None
    ) -> None:
        """A list of the namespace's ReplicaSets (of the apps of ``shards`` only, when given):
        what it says replaces what the cache held."""
        slim = {rs.name: _without_template(rs) for rs in listed}
        with self._lock:
            self._replica_sets[namespace] = slim
            self._shards[namespace, Kind.REPLICA_SETS] = shards
            self._moved(namespace)

    def replica_set_changed(self, kind: str, rs: ObservedReplicaSet) -> None:
        """A watch event of one ReplicaSet (``kind``: ADDED, MODIFIED, DELETED)."""
        rs = _without_template(rs)
        with self._lock:
            held = self._replica_sets.get(rs.namespace)
            if held is None:
                return  # not listed yet: the list will say
            if kind == DELETED:
                held.pop(rs.name, None)
            else:
                held[rs.name] = rs
            self._moved(rs.namespace)

    def replace_records(
        self, namespace: str, listed: Iterable[StoredRecord], shards: frozenset[str] | None = None
    ) -> None:
        """A list of the namespace's app records (of the apps of ``shards`` only, when given):
        what it says replaces what the cache held."""
        packed = {stored.app: _held(stored) for stored in listed}  # MEMORY: see _records
        with self._lock:
            self._records[namespace] = packed
            self._shards[namespace, Kind.RECORDS] = shards
            self._moved(namespace)

    def record_changed(self, kind: str, stored: StoredRecord) -> None:
        """A watch event of one app record (``kind``: ADDED, MODIFIED, DELETED)."""
        stored = _held(stored)
        with self._lock:
            held = self._records.get(stored.namespace)
            if held is None:
                return
            if kind == DELETED:
                held.pop(stored.app, None)
            else:
                held[stored.app] = stored
            self._moved(stored.namespace)

    def forget(self, namespace: str, kind: Kind) -> None:
        """The watch of ``kind`` in ``namespace`` stopped: the namespace is listed again when read."""
        with self._lock:
            self._moved(namespace)
            self._shards.pop((namespace, kind), None)
            if kind is Kind.REPLICA_SETS:
                self._replica_sets.pop(namespace, None)
                return
            self._records.pop(namespace, None)

    def holds(self, namespace: str, kind: Kind | None = None) -> bool:
        """The watch of ``kind`` in ``namespace`` has listed all of it, not only some shards' (no
        kind: both have, and :meth:`contents` is not None)."""
        with self._lock:
            return all(self._covers(namespace, each, None) for each in ([kind] if kind else Kind))

    def _covers(self, namespace: str, kind: Kind, shards: frozenset[str] | None) -> bool:
        """Whether the watch of ``kind`` in ``namespace`` listed every object of ``shards`` (None:
        all), with the lock held."""
        held = self._replica_sets if kind is Kind.REPLICA_SETS else self._records
        return namespace in held and covers(self._shards.get((namespace, kind)), shards)

    def records(self, namespace: str, shards: frozenset[str] | None = None) -> dict[str, StoredRecord] | None:
        """The app records of ``namespace`` by app name (those of the apps of ``shards`` at
        least, when given), or None while its record watch has not listed them."""
        with self._lock:
            if not self._covers(namespace, Kind.RECORDS, shards):
                return None
            return dict(self._records[namespace])

    def contents(
        self, namespace: str, *, partial: bool = False
    ) -> tuple[list[ObservedReplicaSet], list[StoredRecord]] | None:
        """The ReplicaSets and app records of ``namespace``, or None while one of its watches has
        not listed all of it yet (``partial``: has not listed it at all; a sharded replica's
        watches list its own apps' objects, and what it reads of them is all there)."""
        with self._lock:
            replica_sets, records = self._replica_sets.get(namespace), self._records.get(namespace)
            if replica_sets is None or records is None:
                return None
            if not partial and not all(self._covers(namespace, kind, None) for kind in Kind):
                return None
            return list(replica_sets.values()), list(records.values())


def _without_template(rs: ObservedReplicaSet) -> ObservedReplicaSet:
    """``rs`` as the cache keeps it: without its pod template unless that was edited by hand, and
    with only the annotations counting the apps reads (:data:`VIEWED_ANNOTATIONS`).

    Counting the apps reads a template only to tell a hand edit (its digest against the
    annotation, :func:`~gitdeploy.core.rollout.templatedrift.find_template_drift`), which is decided here
    once per change instead of at every scrape; and 20,000 parsed templates would be most of the
    memory of ``run``."""
    namespace = sys.intern(rs.namespace)  # MEMORY: one string for the namespace's every object
    if edited_by_hand(rs):
        kept = _kept(rs, (*VIEWED_ANNOTATIONS, TEMPLATE_DIGEST_ANNOTATION))
        return replace(rs, namespace=namespace, annotations=kept)
    return replace(rs, namespace=namespace, template=None, annotations=_kept(rs, VIEWED_ANNOTATIONS))


def _held(stored: StoredRecord) -> StoredRecord:
    """``stored`` as the cache keeps it: its payload compressed, its namespace one string for all."""
    packed = stored.packed()
    return replace(packed, namespace=sys.intern(packed.namespace))


VIEWED_ANNOTATIONS = (
    COMMIT_ANNOTATION,
    PHASE_ANNOTATION,
    REPLACING_PODS_ANNOTATION,
    *CANARY_VIEWED_ANNOTATIONS,
)
"""The annotations :func:`~gitdeploy.controller.inspect.app_views` reads of a ReplicaSet, a
canary's line included (the others, parsed into its ``state`` or only read by a pass, are not
kept: they are most of its size). The digest is kept with an edited template, to tell the edit."""


def _kept(rs: ObservedReplicaSet, keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The annotations of ``keys`` that ``rs`` has, in the order of ``keys``. MEMORY: each under
    the module's own key string, and a phase as one string for all, not the copies every watch
    event decodes anew (a third of a cached ReplicaSet's size)."""
    held = dict(rs.annotations)
    return tuple(
        (key, sys.intern(held[key]) if key == PHASE_ANNOTATION else held[key]) for key in keys if key in held
    )


__all__ = ["DELETED", "Kind", "WatchCache"]
