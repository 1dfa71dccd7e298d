"""Watches and lists: the read side of the API over the store's rows and change log.

A list answers with the stored JSON bodies joined into one document (no parse unless a selector
needs it), which keeps a list of 10,000 ReplicaSets fast. A watch replays the change log from a
``resourceVersion`` (or the current objects as ``ADDED`` when none is given), then follows new
changes: woken at once by writes of this process to the watched resource and namespace (read
from memory), and by polling the log for other processes' writes. A watch that asks for bookmarks
(``allowWatchBookmarks``) is sent them as kube-apiserver's cacher sends them (:class:`Bookmarks`).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gitdeploy.localcluster.apierrors import ApiError, status_object
from gitdeploy.localcluster.resources import ResourceType
from gitdeploy.localcluster.selectors import (
    FieldRequirement,
    LabelRequirement,
    SelectorError,
    matches_fields,
    matches_labels,
    parse_field_selector,
    parse_label_selector,
)
from gitdeploy.localcluster.store import INDEXED_LABEL, Change, Store, dumps

__all__ = ["Bookmarks", "ListResult", "Query", "list_objects", "watch_events"]

_POLL_SECONDS = 0.2
_CHUNK = 1000
BOOKMARK_SECONDS = 60.0


class Bookmarks:
    """When a watch that asked for bookmarks is sent one, on :func:`time.monotonic`: as
    kube-apiserver's cacher does (``cacheWatcher.nextBookmarkTime``), about every
    :data:`BOOKMARK_SECONDS` and 2 s before the watch's ``deadline``, so that the watch that
    follows starts from a version as new as can be; none in a watch shorter than 2 s. A bookmark
    is sent only when the version moved past the last event sent.

    >>> times = Bookmarks(deadline=100.0, now=0.0)
    >>> times.due(59.0), times.due(60.0), times.next_at, times.due(98.0), times.next_at
    (False, True, 98.0, True, None)
    >>> Bookmarks(deadline=1.0, now=0.0).next_at is None
    True
    """

    def __init__(self, deadline: float, now: float | None = None) -> None:
        self.deadline = deadline
        self.next_at = self._after(time.monotonic() if now is None else now)

    def _after(self, now: float) -> float | None:
        at = min(now + BOOKMARK_SECONDS, self.deadline - 2.0)
        return at if at > now else None

    def due(self, now: float) -> bool:
        """Whether a bookmark is due ``now`` (then the next one is scheduled)."""
        if self.next_at is None or now < self.next_at:
            return False
        self.next_at = self._after(now)
        return True


@dataclass(frozen=True)
class Query:
    """The selection of a list or watch request."""

    labels: list[LabelRequirement] = field(default_factory=list)
    fields: list[FieldRequirement] = field(default_factory=list)

    @classmethod
    def parse(cls, label_selector: str | None, field_selector: str | None) -> Query:
        try:
            return cls(parse_label_selector(label_selector), parse_field_selector(field_selector))
        except SelectorError as problem:
            raise ApiError.bad_request(f"unable to parse requirement: {problem}") from problem

    @property
    def everything(self) -> bool:
        return not self.labels and not self.fields

    @property
    def app(self) -> str | None:
        """The one value this query requires of the indexed app label (``k=v``), if it does."""
        return next(
            (
                r.values[0]
                for r in self.labels
                if r.key == INDEXED_LABEL and r.op in ("=", "in") and len(r.values) == 1
            ),
            None,
        )

    def matches_row(self, labels_json: str, body: str) -> bool:
        if self.labels and not matches_labels(self.labels, json.loads(labels_json)):
            return False
        return not self.fields or matches_fields(self.fields, json.loads(body))

    def matches_body(self, body: str) -> bool:
        obj = json.loads(body)
        if self.labels and not matches_labels(self.labels, (obj.get("metadata") or {}).get("labels") or {}):
            return False
        return not self.fields or matches_fields(self.fields, obj)


@dataclass(frozen=True)
class ListResult:
    """Raw JSON bodies of the selected objects, and the list metadata."""

    bodies: list[str]
    resource_version: str
    continue_token: str

    def list_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": self.resource_version}
        if self.continue_token:
            meta["continue"] = self.continue_token
        return meta

    def to_json(self, resource: ResourceType) -> str:
        head = dumps(
            {"kind": f"{resource.kind}List", "apiVersion": resource.api_version, "metadata": self.list_meta()}
        )
        return head[:-1] + ',"items":[' + ",".join(self.bodies) + "]}"


def _encode_continue(namespace: str, name: str) -> str:
    return base64.urlsafe_b64encode(dumps([namespace, name]).encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(namespace), str(name)
    except (ValueError, TypeError, binascii.Error) as problem:
        raise ApiError.bad_request("invalid continue token") from problem


def list_objects(
    store: Store,
    resource: ResourceType,
    namespace: str | None,
    query: Query,
    *,
    limit: int | None = None,
    continue_token: str | None = None,
) -> ListResult:
    """Select objects in (namespace, name) order, at most ``limit``, after the ``continue`` point."""
    after = _decode_continue(continue_token) if continue_token else None
    bodies: list[str] = []
    last: tuple[str, str] | None = None
    more = False
    with store.read() as txn:
        rv = txn.current_rv()
        if query.everything:
            rows = txn.list_raw(
                resource.key, namespace, after=after, limit=None if limit is None else limit + 1
            )
            if limit is not None and len(rows) > limit:
                rows, more = rows[:limit], True
            bodies = [row[3] for row in rows]
            last = (rows[-1][0], rows[-1][1]) if rows else None
        else:
            cursor = after
            while True:
                rows = txn.list_raw(resource.key, namespace, after=cursor, limit=_CHUNK, app=query.app)
                for row_ns, row_name, labels, body in rows:
                    if limit is not None and len(bodies) >= limit:
                        more = True
                        break
                    if query.matches_row(labels, body):
                        bodies.append(body)
                        last = (row_ns, row_name)
                if more or len(rows) < _CHUNK:
                    break
                cursor = (rows[-1][0], rows[-1][1])
    token = _encode_continue(*last) if more and last is not None else ""
    return ListResult(bodies, str(rv), token)


def _event_line(event_type: str, body: str) -> bytes:
    return f'{{"type":"{event_type}","object":{body}}}\n'.encode()


def _told(change: Change, query: Query) -> bytes | None:
    """The event line a watch selecting ``query`` is sent for ``change``, if any. As in
    kube-apiserver's watch cache, a change is judged by the object before and after it: one that
    stops matching is ``DELETED`` (the object as it was, at the change's version), one that begins
    to match is ``ADDED``. The object before is known when the labels changed; otherwise it is
    taken to match as the object after does."""
    if query.everything:
        return _event_line(change.type, change.body)
    matches = query.matches_body(change.body)
    if change.previous is None or matches == query.matches_body(change.previous):
        return _event_line(change.type, change.body) if matches else None
    if matches:
        return _event_line("ADDED", change.body)
    before = json.loads(change.previous)
    before["metadata"]["resourceVersion"] = str(change.rv)
    return _event_line("DELETED", dumps(before))


def watch_events(
    store: Store,
    resource: ResourceType,
    namespace: str | None,
    query: Query,
    resource_version: str | None,
    *,
    keep_going: Callable[[], bool],
    bookmarks: Bookmarks | None = None,
) -> Iterator[bytes]:
    """Yield watch event lines (``{"type":...,"object":...}``) until ``keep_going()`` is false,
    and ``BOOKMARK`` events when ``bookmarks`` says so.

    ``resource_version`` empty or ``"0"``: start with the current objects as ``ADDED``. A version
    older than the resource's kept change log (see ``WatchWindow``) yields one ``ERROR`` event with a
    410 ``Expired`` status, in kube-apiserver's words.
    """
    if resource_version in (None, "", "0"):
        initial = list_objects(store, resource, namespace, query)
        for body in initial.bodies:
            yield _event_line("ADDED", body)
        last = int(initial.resource_version)
    else:
        try:
            last = int(str(resource_version))
        except ValueError as problem:
            raise ApiError.bad_request(f"invalid resourceVersion {resource_version!r}") from problem
        with store.read() as txn:
            compacted = txn.compacted_rv(resource.key)
        if last < compacted:
            status = status_object(410, "Expired", f"too old resource version: {last} ({compacted})")
            yield _event_line("ERROR", dumps(status))
            return
    told = last
    woken = True
    while keep_going():
        # woken by this process's commit: its changes are in memory; else (a poll, other
        # processes' writes) read the log
        recent = store.recent_changes(last, resource.key, namespace) if woken else None
        if recent is not None:
            changes, seen = recent
        else:
            with store.read(snapshot=False) as txn:
                # the version first: every change up to it is in the read of the log that follows
                seen = txn.current_rv()
                changes = txn.changes_since(last, resource.key, namespace, _CHUNK)
            if len(changes) == _CHUNK:
                seen = 0  # more to read
        for change in changes:
            last = change.rv
            line = _told(change, query)
            if line is not None:
                told = change.rv
                yield line
        # nothing of this resource up to ``seen`` was left out: the next read starts there,
        # instead of reading every other resource's changes again
        last = max(last, seen)
        if bookmarks is not None and bookmarks.due(time.monotonic()) and last > told:
            told = last
            yield _event_line("BOOKMARK", _bookmark(resource, last))
        if not changes:
            # this process's writes to the resource in the namespace wake the watch at once
            # (pods starting too: LocalCluster materialises them when due); other processes'
            # writes are seen by polling
            woken = store.wait_for_commit(resource.key, namespace, last, _POLL_SECONDS)


def _bookmark(resource: ResourceType, version: int) -> str:
    """A bookmark's object: the kind and the version alone."""
    return dumps(
        {
            "kind": resource.kind,
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(version)},
        }
    )
