"""SQLite persistence of the embedded cluster: objects, the change log for watches, timers.

Layout (one database file, WAL mode, safe for several processes at once):

* ``objects``: one row per object, keyed by (resource key, namespace, name) (a unique index of a
  rowid table, so that a row of a few KB stays in its page), with its ``uid``,
  ``resourceVersion``, labels (JSON, for selectors without parsing the body) and the body as
  compact JSON that already carries its ``resourceVersion``, so a list is a string join.
  Objects are also indexed by their ``gitdeploy.io/app`` label (:data:`INDEXED_LABEL`), so that
  a list of one app's objects (``gitdeploy.io/app=X``) reads only those rows.
* ``owners``: owner uid → dependent uid (from ``ownerReferences``), for garbage collection and
  for "the pods of this ReplicaSet".
* ``changes``: the watch log (``rv``, type, body, the time it was written), kept per resource as
  kube-apiserver's watch cache keeps it (:class:`WatchWindow`); a watch of a resource from before
  the point its log was trimmed to gets ``410 Gone``.
* ``timers``: due simulation transitions (a pod becomes ready at t...). Reads materialise the
  timers that are due by the clock, so the state is a function of the clock.
* ``meta``: the cluster-wide ``resourceVersion`` counter and the compaction points (``compacted``
  for all resources, ``compacted:<resource>`` for one).

Every read-modify-write runs in ``BEGIN IMMEDIATE`` (:meth:`Store.write`): the write lock is
taken before reading, so two processes never interleave a read and a write and lose an update.
Within a process writers are additionally serialised by a lock, to avoid SQLite's busy back-off.
A transaction counts versions in memory and stores the counter once, at its end. WAL with
``synchronous=NORMAL``: a committed write survives a crash of the process (not of the machine).

A process also keeps its latest committed changes in memory, in commit order, and wakes the
watches of each (resource, namespace) it wrote (:meth:`Store.wait_for_commit`,
:meth:`Store.recent_changes`); other processes' writes are found in the ``changes`` table.
"""

from __future__ import annotations

import json
import json.encoder
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Change", "Look", "Store", "Timer", "Txn", "WatchWindow", "dumps"]

INDEXED_LABEL = "gitdeploy.io/app"
"""The label of the ``objects_app`` index: gitdeploy's lists of one app select by it."""
_APP_EXPRESSION = f"json_extract(labels, '$.\"{INDEXED_LABEL}\"')"

_OBJECTS_COLUMNS = """
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    uid TEXT NOT NULL, rv INTEGER NOT NULL, labels TEXT NOT NULL, body TEXT NOT NULL
"""
"""The columns of ``objects``, a rowid table whose key (resource, namespace, name) is the unique
index ``objects_key``. A rowid table keeps a row of up to about 4 KB in its page; a
``WITHOUT ROWID`` table (the layout before, see :func:`_migrate_objects`) only about 1 KB, so
each write of a pod (1.26 KB with the API server's defaults) also rewrote an overflow page."""

_UPSERT_OBJECT = (
    "INSERT INTO objects(resource, namespace, name, uid, rv, labels, body) VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT(resource, namespace, name) DO UPDATE"
    " SET uid = excluded.uid, rv = excluded.rv, labels = excluded.labels, body = excluded.body"
)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('rv', 0), ('compacted', 0);
CREATE TABLE IF NOT EXISTS objects({_OBJECTS_COLUMNS});
CREATE UNIQUE INDEX IF NOT EXISTS objects_key ON objects(resource, namespace, name);
CREATE INDEX IF NOT EXISTS objects_uid ON objects(uid);
CREATE INDEX IF NOT EXISTS objects_app ON objects(resource, namespace, {_APP_EXPRESSION})
    WHERE {_APP_EXPRESSION} IS NOT NULL;
CREATE TABLE IF NOT EXISTS owners(
    owner_uid TEXT NOT NULL, dep_uid TEXT NOT NULL, controller INTEGER NOT NULL,
    PRIMARY KEY (owner_uid, dep_uid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS owners_dep ON owners(dep_uid);
CREATE TABLE IF NOT EXISTS changes(
    rv INTEGER PRIMARY KEY, resource TEXT NOT NULL, namespace TEXT NOT NULL,
    type TEXT NOT NULL, body TEXT NOT NULL, at REAL NOT NULL DEFAULT 0, previous TEXT
);
CREATE INDEX IF NOT EXISTS changes_resource ON changes(resource);
CREATE TABLE IF NOT EXISTS timers(
    uid TEXT NOT NULL, action TEXT NOT NULL, due REAL NOT NULL,
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (uid, action)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS timers_due ON timers(due);
"""

_COMPACT_EVERY = 32
"""A resource's log is trimmed after every this many of its changes (by one process)."""
#: how many of this process's latest changes watches can read without the database
_RECENT_CHANGES = 2048
#: SQLite's own busy handler backs off to long sleeps; the write lock is retried here instead.
_BUSY_TIMEOUT_MS = 20
_LOCK_WAIT_SECONDS = 30.0
#: Commits of this process after which its checkpoint thread copies the WAL back into the
#: database (:meth:`Store._checkpoint_later`), about 3,000 pages at the 25 to 30 pages a scale
#: write changes. A write changes the same hot pages (the version counter, the timers and their
#: index, the log's tail) again and again; each checkpoint copies a page once however often it
#: changed since the last one, so checkpointing every few thousand pages, not SQLite's 1,000,
#: copies far fewer pages per write.
_CHECKPOINT_EVERY_COMMITS = 100
#: WAL pages after which a commit checkpoints by itself (SQLite's automatic checkpoint): only when
#: the checkpoint thread falls far behind, or in a process whose thread is not running. A
#: checkpoint in a commit holds the write lock through two fsyncs: tens to hundreds of
#: milliseconds on a busy disk, which every write waiting for the lock waits too.
_WAL_CHECKPOINT_PAGES = 16000


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
# the C encoder of _ENCODER's options, made once: ``json.dumps`` with options makes a JSONEncoder
# and its C encoder on every call, which cost more than encoding a small object (labels, a Scale).
# No check for circular references (``markers`` None): what is encoded here was decoded from JSON.
_MAKE_C_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # not in the stubs
_C_ENCODE: Callable[[Any, int], Any] | None = (
    None
    if _MAKE_C_ENCODER is None
    else _MAKE_C_ENCODER(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
)


def dumps(value: Any) -> str:
    """Compact JSON, as stored and served (what ``json.dumps(value, separators=(",", ":"),
    ensure_ascii=False)`` gives)."""
    if _C_ENCODE is None:
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


@dataclass(frozen=True)
class WatchWindow:
    """How much watch history is kept per resource, as kube-apiserver's watch cache keeps it.

    The watch cache of a resource (k8s.io/apiserver ``watchCacheHistory``) starts at 100 events,
    doubles while all it holds is younger than 75 s (``DefaultEventFreshDuration``: the 1 min
    bookmark period plus 15 s) and halves when its newest quarter is older, up to 102,400 events.
    Here: a resource keeps its newest ``events`` changes and every change younger than
    ``fresh_seconds`` by the cluster's clock, trimmed after every few of its changes (so up to
    32 more); the 102,400 cap is not modelled. A watch of a resource from a version older than its
    kept log is 410 Gone.
    """

    events: int = 100
    fresh_seconds: float = 75.0


@dataclass(frozen=True)
class Timer:
    """A simulation transition due at ``due`` for one object."""

    due: float
    resource: str
    namespace: str
    name: str
    uid: str
    action: str


@dataclass(frozen=True)
class Look:
    """A look of the ReplicaSet controller that a write of a ReplicaSet left pending, due at
    ``due``: kept in the memory of the process that wrote, not as a timer row (see lifecycle.py).
    ``obj``: the ReplicaSet as that write stored it (version ``rv``), or None when not known."""

    due: float
    namespace: str
    name: str
    uid: str
    obj: dict[str, Any] | None
    rv: int


@dataclass(frozen=True)
class Change:
    """One entry of the watch log. ``previous``: the object before a ``MODIFIED`` change that
    changed its labels (None when they stayed), so that a watch with a label selector can tell
    an object that stopped matching (``DELETED``) or began to (``ADDED``), as kube-apiserver's
    watch cache does."""

    rv: int
    resource: str
    namespace: str
    type: str
    body: str
    previous: str | None = None


class _ObjectReads:
    """The reads of object rows in a transaction (see :class:`Txn`)."""

    _conn: sqlite3.Connection

    def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        row = self._conn.execute(
            "SELECT body FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
            (resource, namespace, name),
        ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def exists(self, resource: str, namespace: str, name: str) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
            (resource, namespace, name),
        ).fetchone()
        return row is not None

    def uid_of(self, resource: str, namespace: str, name: str) -> str | None:
        """The uid of the object, without reading its body; None when there is none."""
        row = self._conn.execute(
            "SELECT uid FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
            (resource, namespace, name),
        ).fetchone()
        return None if row is None else str(row[0])

    def rv_of(self, resource: str, namespace: str, name: str) -> int | None:
        """The ``resourceVersion`` of the object, without reading its body; None when there is none."""
        row = self._conn.execute(
            "SELECT rv FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
            (resource, namespace, name),
        ).fetchone()
        return None if row is None else int(row[0])

    def behind(self, resource: str) -> list[tuple[str, str, str]]:
        """``(namespace, name, uid)`` of each object of ``resource`` whose
        ``status.observedGeneration`` is not its ``metadata.generation``."""
        rows = self._conn.execute(
            "SELECT namespace, name, uid FROM objects WHERE resource = ?"
            " AND json_extract(body, '$.status.observedGeneration')"
            " IS NOT json_extract(body, '$.metadata.generation')",
            (resource,),
        ).fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in rows]

    def list_raw(
        self,
        resource: str,
        namespace: str | None,
        *,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
        app: str | None = None,
    ) -> list[tuple[str, str, str, str]]:
        """Rows ``(namespace, name, labels JSON, body JSON)`` in (namespace, name) order; with
        ``app``, only the objects labelled :data:`INDEXED_LABEL` ``= app``, found by the index
        without reading the others."""
        sql = "SELECT namespace, name, labels, body FROM objects"
        sql += " INDEXED BY objects_app WHERE resource = ?" if app is not None else " WHERE resource = ?"
        args: list[Any] = [resource]
        if namespace is not None:
            sql += " AND namespace = ?"
            args.append(namespace)
        if app is not None:
            sql += f" AND {_APP_EXPRESSION} = ?"
            args.append(app)
        if after is not None:
            sql += " AND (namespace, name) > (?, ?)"
            args.extend(after)
        sql += " ORDER BY namespace, name"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in self._conn.execute(sql, args)]

    def count(self, resource: str, namespace: str | None = None) -> int:
        if namespace is None:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM objects WHERE resource = ?", (resource,)
            ).fetchone()
        else:
            row = self._conn.execute(
                "SELECT COUNT(*) FROM objects WHERE resource = ? AND namespace = ?", (resource, namespace)
            ).fetchone()
        return int(row[0])


class Txn(_ObjectReads):
    """The operations of one transaction. Obtain it from :meth:`Store.read` or :meth:`Store.write`."""

    def __init__(self, conn: sqlite3.Connection, writable: bool, now: float = 0.0) -> None:
        self._conn = conn
        self.now = now
        """The cluster's time of a write transaction: its changes are logged at it."""
        self.writable = writable
        #: the changes this transaction logged, in order
        self.logged: list[Change] = []
        #: id → (object, its JSON as stored last), for answering with the same text
        self.encoded: dict[int, tuple[dict[str, Any], str]] = {}
        #: the earliest due time of the timers added since it was last set to None
        self.earliest_timer: float | None = None
        #: called once the transaction committed (not after a rollback or a dry run)
        self.after_commit: list[Callable[[], None]] = []
        #: the ReplicaSet controller's looks this transaction left pending, by (namespace, name),
        #: and those pending before it that it took (see lifecycle.py: its process keeps them)
        self.looks: dict[tuple[str, str], Look] = {}
        self.looks_taken: dict[tuple[str, str], Look] = {}
        # a write transaction counts versions here and stores the last one once, at its end
        self._rv: int | None = None

    # -- resource versions ---------------------------------------------------------------------

    def current_rv(self) -> int:
        if self._rv is not None:
            return self._rv
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'rv'").fetchone()
        return int(row[0])

    def compacted_rv(self, resource: str) -> int:
        """The version up to which ``resource``'s changes are no longer kept."""
        row = self._conn.execute(
            "SELECT MAX(value) FROM meta WHERE key IN ('compacted', ?)", (f"compacted:{resource}",)
        ).fetchone()
        return int(row[0])

    def compact(self, resource: str, window: WatchWindow) -> None:
        """Trim ``resource``'s log to ``window``: drop what is neither among its newest
        ``events`` changes nor younger than ``fresh_seconds``."""
        kept = self._conn.execute(
            "SELECT rv FROM changes WHERE resource = ? ORDER BY rv DESC LIMIT 1 OFFSET ?",
            (resource, max(window.events - 1, 0)),
        ).fetchone()
        if kept is None:
            return
        fresh = self._conn.execute(
            "SELECT rv FROM changes WHERE resource = ? AND at > ? ORDER BY rv LIMIT 1",
            (resource, self.now - window.fresh_seconds),
        ).fetchone()
        floor = int(kept[0]) - 1 if fresh is None else min(int(kept[0]), int(fresh[0])) - 1
        self._conn.execute("DELETE FROM changes WHERE resource = ? AND rv <= ?", (resource, floor))
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = MAX(value, excluded.value)",
            (f"compacted:{resource}", floor),
        )

    def _next_rv(self) -> int:
        self._rv = self.current_rv() + 1
        return self._rv

    def _store_rv(self) -> None:
        """Write the version counter back (at the end of a write transaction that moved it)."""
        if self._rv is not None:
            self._conn.execute("UPDATE meta SET value = ? WHERE key = 'rv'", (self._rv,))

    # -- objects -------------------------------------------------------------------------------

    def put(
        self,
        resource: str,
        obj: dict[str, Any],
        event_type: str,
        *,
        owners_changed: bool = True,
        labels_changed: bool = True,
    ) -> dict[str, Any]:
        """Store ``obj`` (created or modified) with a new ``resourceVersion``; log the change.

        ``owners_changed`` False: the caller knows the stored object has the same owner
        references (a status change), so the owner index is left as it is. ``labels_changed``
        False: it knows the stored object has the same labels, so a ``MODIFIED`` change needs no
        look at the stored one for the body before it (see :class:`Change`).
        """
        assert self.writable, "put needs a write transaction"
        meta = obj["metadata"]
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        namespace = meta.get("namespace", "")
        body = dumps(obj)
        # the labels' JSON: for a new row, and to compare with the stored ones (not needed when
        # the caller knows they stayed: the row is updated without them)
        labels = None if event_type == "MODIFIED" and not labels_changed else dumps(meta.get("labels") or {})
        previous = None
        if labels is not None and event_type == "MODIFIED":
            previous = self._relabelled(resource, namespace, meta["name"], labels)
        self.encoded[id(obj)] = (obj, body)
        same_labels = event_type == "MODIFIED" and previous is None
        self._store_row(resource, namespace, meta, rv, labels, body, same_labels)
        if owners_changed:
            if event_type != "ADDED":  # a new object has a new uid: nothing to remove
                self._conn.execute("DELETE FROM owners WHERE dep_uid = ?", (meta["uid"],))
            for ref in meta.get("ownerReferences") or []:
                self._conn.execute(
                    "INSERT OR REPLACE INTO owners(owner_uid, dep_uid, controller) VALUES (?, ?, ?)",
                    (ref.get("uid", ""), meta["uid"], 1 if ref.get("controller") else 0),
                )
        self._log(Change(rv, resource, namespace, event_type, body, previous))
        return obj

    def _store_row(
        self,
        resource: str,
        namespace: str,
        meta: dict[str, Any],
        rv: int,
        labels: str | None,
        body: str,
        same: bool,
    ) -> None:
        """Write the object's row; a modified one's in place, without its labels when they stayed
        (``same``): SQLite rewrites the entry of every index on a column that an ``UPDATE``
        sets, changed or not, so the uid and app indexes are left alone (a uid never changes)."""
        if same:
            updated = self._conn.execute(
                "UPDATE objects SET rv = ?, body = ? WHERE resource = ? AND namespace = ? AND name = ?",
                (rv, body, resource, namespace, meta["name"]),
            )
            if updated.rowcount == 1:
                return
        if labels is None:
            labels = dumps(meta.get("labels") or {})
        self._conn.execute(_UPSERT_OBJECT, (resource, namespace, meta["name"], meta["uid"], rv, labels, body))

    def _relabelled(self, resource: str, namespace: str, name: str, labels: str) -> str | None:
        """The stored body of the object, if its labels differ from ``labels``; else None."""
        row = self._conn.execute(
            "SELECT CASE WHEN labels = ? THEN NULL ELSE body END FROM objects"
            " WHERE resource = ? AND namespace = ? AND name = ?",
            (labels, resource, namespace, name),
        ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def delete(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Remove ``obj``; the ``DELETED`` event carries it with a new ``resourceVersion``."""
        assert self.writable, "delete needs a write transaction"
        meta = obj["metadata"]
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        namespace = meta.get("namespace", "")
        self._conn.execute(
            "DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
            (resource, namespace, meta["name"]),
        )
        self._conn.execute("DELETE FROM owners WHERE dep_uid = ?", (meta["uid"],))
        self._conn.execute("DELETE FROM timers WHERE uid = ?", (meta["uid"],))
        body = dumps(obj)
        self.encoded[id(obj)] = (obj, body)
        self._log(Change(rv, resource, namespace, "DELETED", body))
        return obj

    def _log(self, change: Change) -> None:
        self._conn.execute(
            "INSERT INTO changes(rv, resource, namespace, type, body, at, previous)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                change.rv,
                change.resource,
                change.namespace,
                change.type,
                change.body,
                self.now,
                change.previous,
            ),
        )
        self.logged.append(change)

    # -- owner references ----------------------------------------------------------------------

    def dependents(self, owner_uid: str) -> list[tuple[str, dict[str, Any]]]:
        """``(resource, object)`` of every object with an owner reference to ``owner_uid``."""
        rows = self._conn.execute(
            "SELECT o.resource, o.body FROM owners w CROSS JOIN objects o ON o.uid = w.dep_uid"
            " WHERE w.owner_uid = ?",
            (owner_uid,),
        ).fetchall()
        return [(str(resource), dict(json.loads(body))) for resource, body in rows]

    def controlled(self, owner_uid: str, resource: str) -> list[dict[str, Any]]:
        """Objects of ``resource`` whose controller reference is ``owner_uid``."""
        rows = self._conn.execute(
            # CROSS JOIN: owners first, then each object by its uid (not every object of the
            # resource by objects_key, which SQLite would choose)
            "SELECT o.body FROM owners w CROSS JOIN objects o ON o.uid = w.dep_uid"
            " WHERE w.owner_uid = ? AND w.controller = 1 AND o.resource = ?",
            (owner_uid, resource),
        ).fetchall()
        return [dict(json.loads(body)) for (body,) in rows]

    # -- timers --------------------------------------------------------------------------------

    def add_timer(self, timer: Timer) -> None:
        if self.earliest_timer is None or timer.due < self.earliest_timer:
            self.earliest_timer = timer.due
        self._conn.execute(
            "INSERT OR REPLACE INTO timers(uid, action, due, resource, namespace, name)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (timer.uid, timer.action, timer.due, timer.resource, timer.namespace, timer.name),
        )

    def drop_timers(self, uid: str, actions: tuple[str, ...]) -> None:
        """Remove the timers of ``uid`` whose action is one of ``actions``."""
        marks = ", ".join("?" * len(actions))
        self._conn.execute(f"DELETE FROM timers WHERE uid = ? AND action IN ({marks})", (uid, *actions))

    def next_due(self, *, besides: str = "") -> float | None:
        """When the next timer is due (one whose action is not ``besides``)."""
        row = self._conn.execute("SELECT MIN(due) FROM timers WHERE action != ?", (besides,)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def pop_due(self, now: float) -> list[Timer]:
        """Remove and return the timers due at ``now``, earliest first."""
        # read, then delete only if some are due (every write asks first, and often none is): a
        # SELECT and a DELETE cost less than one DELETE ... RETURNING (about 8 us less per call,
        # SQLite keeping the returned rows aside), and nothing is deleted when none is due
        rows = self._conn.execute(
            "SELECT due, resource, namespace, name, uid, action FROM timers WHERE due <= ?", (now,)
        ).fetchall()
        if rows:
            self._conn.execute("DELETE FROM timers WHERE due <= ?", (now,))
        timers = [Timer(float(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5])) for r in rows]
        return sorted(timers, key=lambda t: (t.due, t.action, t.namespace, t.name))

    # -- watch log -----------------------------------------------------------------------------

    def changes_since(self, rv: int, resource: str, namespace: str | None, limit: int = 1000) -> list[Change]:
        sql = (
            "SELECT rv, resource, namespace, type, body, previous FROM changes WHERE rv > ? AND resource = ?"
        )
        args: list[Any] = [rv, resource]
        if namespace is not None:
            sql += " AND namespace = ?"
            args.append(namespace)
        sql += " ORDER BY rv LIMIT ?"
        args.append(limit)
        return [
            Change(int(a), str(b), str(c), str(d), str(e), None if f is None else str(f))
            for a, b, c, d, e, f in self._conn.execute(sql, args)
        ]


def _migrate_objects(conn: sqlite3.Connection) -> int | None:
    """Move a database's ``objects`` from a ``WITHOUT ROWID`` table (the layout until 2026-11-25)
    to a rowid table (:data:`_OBJECTS_COLUMNS`), keeping every row as it is (so every object, its
    ``resourceVersion``, and the watch log and version counter, which are other tables); the
    indexes are made afterwards by :data:`_SCHEMA`. Returns how many objects moved, None when
    there was nothing to do (a new database, or one migrated already).

    Runs in the caller's transaction, which holds the write lock from before the check: a process
    that dies or fails midway leaves the old table as it was (the WAL's uncommitted pages are
    ignored), and a second process opening the database at the same time finds it done."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'objects'").fetchone()
    if row is None or "WITHOUT ROWID" not in str(row[0]).upper():
        return None
    columns = "resource, namespace, name, uid, rv, labels, body"
    conn.execute("ALTER TABLE objects RENAME TO objects_without_rowid")
    conn.execute(f"CREATE TABLE objects({_OBJECTS_COLUMNS})")
    moved = conn.execute(
        f"INSERT INTO objects({columns}) SELECT {columns} FROM objects_without_rowid"
        " ORDER BY resource, namespace, name"
    ).rowcount
    conn.execute("DROP TABLE objects_without_rowid")  # and its indexes: _SCHEMA makes them again
    return int(moved)


class Store:
    """The database of one embedded cluster (``<state_dir>/cluster.db``)."""

    def __init__(
        self,
        path: Path,
        *,
        watch_window: WatchWindow | None = None,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], None] | None = None,
    ) -> None:
        """Open (or create) the database at ``path``; a database with the objects table of an
        older layout is migrated first, in the same transaction (see :func:`_migrate_objects`),
        and ``log`` is told."""
        self.path = path
        self.watch_window = watch_window or WatchWindow()
        self._clock = clock
        self._unkempt: dict[str, int] = {}  # changes per resource since its log was last trimmed
        self._pool: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        # the changes of this process's latest commits, for watches to read without the database
        # (see recent_changes), and a condition for each (resource, namespace) and (resource, None)
        # that a watch waits on (see wait_for_commit)
        self._commit_lock = threading.Lock()
        self._recent: deque[Change] = deque(maxlen=_RECENT_CHANGES)
        self._last_write = threading.local()  # each thread's last write transaction (see encoded)
        self._commit_waits: dict[tuple[str, str | None], threading.Condition] = {}
        # the checkpoint thread, started by the first commit, and the commits since it last ran
        self._checkpointer: threading.Thread | None = None
        self._checkpoint_due = threading.Event()
        self._uncheckpointed = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connection() as conn:
            self._begin_immediate(conn)
            try:
                started = time.monotonic()
                migrated = _migrate_objects(conn)
                for statement in _SCHEMA.split(";"):  # not executescript: it would commit first
                    conn.execute(statement)
                columns = [row[1] for row in conn.execute("PRAGMA table_info(changes)")]
                if "at" not in columns:  # an older db
                    conn.execute("ALTER TABLE changes ADD COLUMN at REAL NOT NULL DEFAULT 0")
                if "previous" not in columns:
                    conn.execute("ALTER TABLE changes ADD COLUMN previous TEXT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        if migrated is not None and log is not None:
            log(
                f"{path}: moved its {migrated} objects to a rowid table (objects with the API server's"
                f" defaults no longer overflow their page; versions and watch history kept) in"
                f" {time.monotonic() - started:.2f} s"
            )

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        conn.execute(f"PRAGMA wal_autocheckpoint={_WAL_CHECKPOINT_PAGES}")
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._pool_lock:
            if self._closed:
                raise RuntimeError("the store is closed")
            conn = self._pool.pop() if self._pool else None
        if conn is None:
            conn = self._open()
        try:
            yield conn
        finally:
            with self._pool_lock:
                if self._closed:
                    conn.close()
                else:
                    self._pool.append(conn)

    @contextmanager
    def read(self, *, snapshot: bool = True) -> Iterator[Txn]:
        """A consistent snapshot for reads; ``snapshot`` False for one statement, which is
        consistent on its own (it saves the transaction's BEGIN and COMMIT)."""
        with self._connection() as conn:
            if not snapshot:
                yield Txn(conn, writable=False)
                return
            conn.execute("BEGIN")
            try:
                yield Txn(conn, writable=False)
            finally:
                conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[Txn]:
        """A read-modify-write transaction holding the database write lock from its start."""
        with self._write_lock, self._connection() as conn:
            self._begin_immediate(conn)
            txn = Txn(conn, writable=True, now=self._clock())
            try:
                try:
                    yield txn
                    self._trim_logs(txn)
                    txn._store_rv()
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                if getattr(self._last_write, "dry_run", False):
                    conn.execute("ROLLBACK")  # the answer is computed, nothing is kept or told
                else:
                    conn.execute("COMMIT")
                    self._checkpoint_later()
                    if txn.logged:  # still holding the write lock: commits are told in their order
                        self._committed_changes(txn.logged)
                    for call in txn.after_commit:
                        call()
            finally:
                # a call may hold the transaction (lifecycle.py's does): dropped, the transaction
                # and all it refers to (the objects it wrote) are freed when the last reference
                # goes, not left in a cycle for the garbage collector (about 38 objects a write)
                txn.after_commit.clear()
        self._last_write.encoded = txn.encoded

    def _checkpoint_later(self) -> None:
        """Count a commit (holding the write lock); every :data:`_CHECKPOINT_EVERY_COMMITS`, have
        the checkpoint thread copy the WAL back into the database, outside the write lock: a
        ``PASSIVE`` checkpoint lets writers go on appending to the WAL while it copies and syncs,
        so the writes queued for the lock no longer wait behind its two fsyncs (SQLite's automatic
        checkpoint would run in this commit). A write may still wait in the kernel while the
        filesystem commits its journal for the fsync, but less often and less long."""
        self._uncheckpointed += 1
        if self._uncheckpointed < _CHECKPOINT_EVERY_COMMITS:
            return
        self._uncheckpointed = 0
        if self._checkpointer is None:
            self._checkpointer = threading.Thread(
                target=self._run_checkpoints, name="localcluster-checkpoint", daemon=True
            )
            self._checkpointer.start()
        self._checkpoint_due.set()

    def _run_checkpoints(self) -> None:
        while True:
            self._checkpoint_due.wait()
            self._checkpoint_due.clear()
            try:
                with self._connection() as conn:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except (RuntimeError, sqlite3.Error):
                if self._closed:
                    return
                # not now (the database is busy or gone): the next commits ask again, and a
                # commit checkpoints by itself if the WAL grows far enough (_WAL_CHECKPOINT_PAGES)
            if self._closed:
                return

    def _trim_logs(self, txn: Txn) -> None:
        """Trim the log of each resource ``txn`` wrote once it has grown by ``_COMPACT_EVERY``."""
        for change in txn.logged:
            count = self._unkempt[change.resource] = self._unkempt.get(change.resource, 0) + 1
            if count >= _COMPACT_EVERY:
                self._unkempt[change.resource] = 0
                txn.compact(change.resource, self.watch_window)

    @contextmanager
    def dry_run(self) -> Iterator[None]:
        """This thread's write transactions inside are rolled back instead of committed, as a
        request with ``dryRun=All`` (``kubectl diff``, ``apply --dry-run=server``) asks."""
        self._last_write.dry_run = True
        try:
            yield
        finally:
            self._last_write.dry_run = False

    def encoded(self, obj: dict[str, Any]) -> str | None:
        """The JSON text that this thread's last write transaction stored for ``obj`` (that very
        object, which the transaction's code does not change after storing it), to answer with
        without encoding it again; None when it stored no such object."""
        found = getattr(self._last_write, "encoded", {}).get(id(obj))
        return found[1] if found is not None and found[0] is obj else None

    def _committed_changes(self, changes: list[Change]) -> None:
        with self._commit_lock:
            if self._recent and self._recent[-1].rv + 1 != changes[0].rv:
                self._recent.clear()  # another process wrote in between: those are not here
            self._recent.extend(changes)
            for change in changes:
                for key in ((change.resource, change.namespace), (change.resource, None)):
                    waiting = self._commit_waits.get(key)
                    if waiting is not None:
                        waiting.notify_all()

    def wait_for_commit(self, resource: str, namespace: str | None, after: int, timeout: float) -> bool:
        """Wait until this process commits a change to an object of ``resource`` (in ``namespace``,
        or any with None) with a ``resourceVersion`` above ``after``, at most ``timeout`` seconds;
        False when the time ran out."""
        key = (resource, namespace)
        with self._commit_lock:
            waiting = self._commit_waits.get(key)
            if waiting is None:
                waiting = self._commit_waits[key] = threading.Condition(self._commit_lock)
            # derived from the kept changes: one after ``after``, or some no longer kept (None)
            return waiting.wait_for(
                lambda: bool(self._recent) and self._changes_after(after, resource, namespace) != [], timeout
            )

    def recent_changes(
        self, after: int, resource: str, namespace: str | None
    ) -> tuple[list[Change], int] | None:
        """This process's latest committed changes of ``resource`` (in ``namespace``, or any with
        None) after version ``after``, and the version up to which that is all of them; None when
        the changes kept in memory do not reach back to ``after`` (read the log instead)."""
        with self._commit_lock:
            newer = self._changes_after(after, resource, namespace)
            return None if newer is None else (newer, self._recent[-1].rv)

    def _changes_after(self, after: int, resource: str, namespace: str | None) -> list[Change] | None:
        """The kept changes of ``resource`` (in ``namespace``, or any with None) after version
        ``after``, oldest first; None when those kept do not reach back to ``after``. Called
        holding the commit lock."""
        if not self._recent or self._recent[0].rv > after + 1:
            return None
        newer: list[Change] = []
        for change in reversed(self._recent):
            if change.rv <= after:
                break
            if change.resource == resource and (namespace is None or change.namespace == namespace):
                newer.append(change)
        newer.reverse()
        return newer

    @staticmethod
    def _begin_immediate(conn: sqlite3.Connection) -> None:
        """Take the database write lock, waiting in short steps while another process holds it."""
        deadline = time.monotonic() + _LOCK_WAIT_SECONDS
        pause = 0.0005
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as problem:
                if "locked" not in str(problem) or time.monotonic() > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, []
        self._checkpoint_due.set()
        if self._checkpointer is not None:
            self._checkpointer.join(timeout=30)
        for conn in pool:
            conn.close()
