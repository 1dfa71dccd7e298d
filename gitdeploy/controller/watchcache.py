"""What the loop's watches saw: every managed ReplicaSet and app record of the watched namespaces,
kept as the API server last told them (an informer's cache, in the small).

The ReplicaSet and record watches (:mod:`gitdeploy.controller.watcher`) list each namespace once,
then follow its changes from the list's resourceVersion; each list replaces what the cache held of
the namespace, each event updates one object. The apps-by-state gauges are counted from it at each
``/metrics`` scrape (:func:`~gitdeploy.controller.inspect.count_app_states`): O(apps) in memory and
no API request, where listing both kinds in every managed namespace took two lists per namespace
per scrape. A namespace is served from the cache only once both of its watches have listed it
(:meth:`WatchCache.contents`); until then the counting lists it, as ``gitdeploy status`` does.

A ReplicaSet is kept without its pod template unless the template was edited by hand (see
:func:`_without_template`). Like an informer's cache, it is as current as the watches: an event
arrives milliseconds after the change, and a watch that breaks off resumes from the version it
reached, so no change is missed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from enum import StrEnum

from gitdeploy.core.observed import ObservedReplicaSet, StoredRecord
from gitdeploy.core.records import AppRecord, load_record
from gitdeploy.core.templatedrift import edited_by_hand


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
        self._loaded: dict[tuple[str, str], tuple[str, AppRecord]] = {}
        """Each record as last loaded, with the resourceVersion it was loaded at."""

    def replace_replica_sets(self, namespace: str, listed: Iterable[ObservedReplicaSet]) -> None:
        """A list of the namespace's ReplicaSets: what it says replaces what the cache held."""
        slim = {rs.name: _without_template(rs) for rs in listed}
        with self._lock:
            self._replica_sets[namespace] = slim

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

    def replace_records(self, namespace: str, listed: Iterable[StoredRecord]) -> None:
        """A list of the namespace's app records: what it says replaces what the cache held."""
        with self._lock:
            self._records[namespace] = held = {stored.app: stored for stored in listed}
            for key in [k for k in self._loaded if k[0] == namespace and k[1] not in held]:
                del self._loaded[key]

    def record_changed(self, kind: str, stored: StoredRecord) -> None:
        """A watch event of one app record (``kind``: ADDED, MODIFIED, DELETED)."""
        with self._lock:
            held = self._records.get(stored.namespace)
            if held is None:
                return
            if kind == DELETED:
                held.pop(stored.app, None)
                self._loaded.pop((stored.namespace, stored.app), None)
            else:
                held[stored.app] = stored

    def load(self, stored: StoredRecord) -> AppRecord:
        """:func:`~gitdeploy.core.records.load_record` of ``stored``, parsed once per version (a
        scrape would otherwise parse every record again); a damaged one raises each time."""
        key = (stored.namespace, stored.app)
        with self._lock:
            loaded = self._loaded.get(key)
        if loaded is not None and loaded[0] == stored.resource_version:
            return loaded[1]
        record = load_record(stored.namespace, stored.app, stored.payload)
        with self._lock:
            self._loaded[key] = (stored.resource_version, record)
        return record

    def forget(self, namespace: str, kind: Kind) -> None:
        """The watch of ``kind`` in ``namespace`` stopped: the namespace is listed again when read."""
        with self._lock:
            if kind is Kind.REPLICA_SETS:
                self._replica_sets.pop(namespace, None)
                return
            self._records.pop(namespace, None)
            for key in [k for k in self._loaded if k[0] == namespace]:
                del self._loaded[key]

    def contents(self, namespace: str) -> tuple[list[ObservedReplicaSet], list[StoredRecord]] | None:
        """The ReplicaSets and app records of ``namespace``, or None while one of its watches has
        not listed it yet."""
        with self._lock:
            replica_sets, records = self._replica_sets.get(namespace), self._records.get(namespace)
            if replica_sets is None or records is None:
                return None
            return list(replica_sets.values()), list(records.values())


def _without_template(rs: ObservedReplicaSet) -> ObservedReplicaSet:
    """``rs`` as the cache keeps it: without its pod template unless that was edited by hand.

    Counting the apps reads a template only to tell a hand edit (its digest against the
    annotation, :func:`~gitdeploy.core.templatedrift.find_template_drift`), which is decided here
    once per change instead of at every scrape; and 20,000 parsed templates would be most of the
    memory of ``run``."""
    return rs if edited_by_hand(rs) else replace(rs, template=None)


__all__ = ["DELETED", "Kind", "WatchCache"]
