"""Claiming and releasing the apps a membership change moved (``run --sharding``), ahead of
their passes.

When a member's Lease expires, the survivors inherit its apps: thousands at once, in a large
fleet. Claiming each in the pass over it would make the last claim wait for every step before it
(a pass looks at each app it claims, a few at a time), while the apps go unowned; and when a
member joins, the apps it gets wait for their old owners to release them. :class:`Handover` does
both first, on a thread of its own (and the releases, a write each, on a few more): it reads the
moved apps' records (from the watch cache when its watch follows their shards: the apps a
replica releases are its own; else, as for the apps it gets until its watches follow their shards
too, one list of their shards per namespace, or one read per app when few moved there) and admits
each through
:meth:`~gitdeploy.controller.shards.ShardGate.admit`, by the same rules as a pass (an app whose
old owner has not let go yet waits; a release is written at once, naming the resourceVersion
read). An app whose old owner let go (released it, or its Lease expired) is *adopted*: held at
once with the next shard epoch, without a write, so a failover costs no write per app before the
survivors act. Each app is then due, and its pass acts on what was decided; a step that changes
anything writes the app record first, naming the resourceVersion read, and that write carries
the claim. Then the handover writes the claims that no step wrote, on a few threads
(:meth:`~gitdeploy.controller.shards.ShardGate.settle`), so every record names its owner again;
one that conflicts is read again, and one another replica claimed meanwhile is dropped and left
to its pass.

Events: the claims and releases of one handover are told once its writes are done, as events on
the records of the first :data:`EVENTS_PER_HANDOVER` apps, and for the rest one event per reason
on this replica's member Lease, with their count (the log has a line for every app, and each
record names its owner). So a failover of thousands of apps writes its claims, not as many events
again; the Kubernetes event recorder, too, folds a burst of similar events into one.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.shards import RecordWriter, ShardGate, shard_event
from gitdeploy.controller.watchcache import WatchCache
from gitdeploy.core.history.records import AppRecord, load_record
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import StoredRecord
from gitdeploy.core.sharding import shard_of
from gitdeploy.errors import ConflictError, DamagedRecordError, GitdeployError

log = logging.getLogger("gitdeploy.sharding")

READ_EACH_BELOW = 16
"""Fewer moved apps than this in a namespace are read one by one rather than by listing it."""

EVENTS_PER_HANDOVER = 10
"""The claims and releases of one handover told by an event on the app's record; the rest by one
event on the member Lease (the event recorder of client-go folds similar events after 10, too)."""

Read = tuple[StoredRecord, AppRecord | None]
"""An app record as read, with its parse when the watch cache had it (else its payload is parsed)."""

Told = tuple[AppKey, StoredRecord, str, str]
"""A claim or a release to tell of (:data:`~gitdeploy.controller.shards.Announce`'s arguments)."""


class Handover:
    """Admits the apps handed to :meth:`take` on a thread of its own, then marks them due (all of
    a change's at once: their passes do not take turns with the claims)."""

    def __init__(
        self,
        gate: ShardGate,
        cluster: Cluster,
        write: RecordWriter,
        mark_due: Callable[[Iterable[AppKey]], None],
        workers: int = 4,
        cache: WatchCache | None = None,
    ) -> None:
        self.gate = gate
        self.cache = cache
        """The loop's watch cache: the records of the namespaces it holds are read from it."""
        self.cluster = cluster
        self.write = write
        self.mark_due = mark_due
        self.workers = workers
        self._todo: queue.SimpleQueue[list[AppKey] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def take(self, keys: list[AppKey]) -> None:
        """Admit ``keys`` soon (they are due once that was tried, whatever came of it)."""
        if keys:
            self.gate.handing.add(keys)
            self._todo.put(keys)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="handover", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._todo.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while (keys := self._todo.get()) is not None:
            adopted: dict[AppKey, Read] = {}
            started = time.monotonic()
            try:
                adopted = self.claim(keys)
                log.info(
                    "handed over %d apps ahead of their passes in %.1f s (%d adopted: their claims follow)",
                    len(keys),
                    time.monotonic() - started,
                    len(adopted),
                )
            except Exception:  # a bug: logged, their passes decide, and this thread lives on
                log.exception("handing over %d apps ahead of their passes failed", len(keys))
                for key in keys:
                    self.gate.release_adopted(key)
            finally:  # whatever came of it, their passes decide them now
                self.gate.handing.done(keys)
                self.mark_due(keys)
            self.settle(adopted)

    def claim(self, keys: list[AppKey]) -> dict[AppKey, Read]:
        """Admit each of ``keys``, adopting or releasing it where the rules say so; the apps
        adopted, with their records as read (their claims are for :meth:`settle` to write)."""
        by_namespace: dict[str, list[AppKey]] = defaultdict(list)
        for key in keys:
            by_namespace[key.namespace].append(key)
        told: list[Told] = []
        in_place: list[tuple[AppKey, Read | None, bool]] = []
        releases: list[tuple[AppKey, Read | None, Future[bool]]] = []
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="handover") as pool:
            for namespace, members in sorted(by_namespace.items()):
                read_in = self.gate.admissions.reading()
                try:
                    records = self._records(namespace, members)
                except GitdeployError as problem:  # their passes decide
                    log.warning(
                        "could not read the app records in %s to hand them over: %s", namespace, problem
                    )
                    continue
                for key in members:
                    read = records.get(key.name)
                    if self.gate.mine(key):  # adopted, or left to wait: no write, so no thread
                        in_place.append((key, read, self._admit(key, read, read_in, told)))
                    else:  # released: a write each, a few at a time
                        releases.append((key, read, pool.submit(self._admit, key, read, read_in, told)))
        self._tell(told)
        admitted = in_place + [(key, read, release.result()) for key, read, release in releases]
        return {
            key: read
            for key, read, act in admitted
            if act and read is not None and key in self.gate.unwritten
        }

    def settle(self, adopted: dict[AppKey, Read]) -> None:
        """Write the claims of the ``adopted`` apps that no step wrote yet (see the module
        docstring), and tell of them."""
        told: list[Told] = []
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="handover") as pool:
            settling = {key: pool.submit(self._settle, key, read, told) for key, read in adopted.items()}
        for key, settled in settling.items():
            if settled.exception() is not None:  # a bug: logged; its pass claims it
                log.error("[%s] claim not written; its next pass decides", key, exc_info=settled.exception())
                self.gate.release_adopted(key)
                self.mark_due([key])
        if adopted:
            log.info("wrote %d claims of adopted apps in %.1f s", len(told), time.monotonic() - started)
        self._tell(told)

    def _settle(self, key: AppKey, read: Read, told: list[Told]) -> None:
        def tell(*what: *Told) -> None:
            told.append(what)

        problem = "its record kept changing"
        stored: StoredRecord | None
        stored, parsed = read
        for attempt in range(3):
            try:
                if attempt:  # a step wrote the record meanwhile (with the claim, or not)
                    stored, parsed = self.cluster.read_app_record(key.namespace, key.name), None
                if stored is None:
                    problem = "its record is gone"
                    break
                self.gate.settle(key, stored, self.write, tell, parsed)
                return
            except ConflictError:
                continue
            except GitdeployError as failed:
                problem = failed.message
                break
        log.info("[%s] claim not written (%s); its next pass decides", key, problem)
        self.gate.release_adopted(key)
        self.mark_due([key])

    def _records(self, namespace: str, keys: list[AppKey]) -> dict[str, Read]:
        cache, shards = self.cache, frozenset(shard_of(str(key)) for key in keys)
        if cache is not None and (held := cache.records(namespace, shards)) is not None:
            # as current as the watch: a write naming an older version than the server's conflicts
            return {key.name: _parsed(held[key.name]) for key in keys if key.name in held}
        if len(keys) < READ_EACH_BELOW:
            found = (self.cluster.read_app_record(namespace, key.name) for key in keys)
            return {record.app: (record, None) for record in found if record is not None}
        names = {key.name for key in keys}  # the watch follows other shards (until it lists these)
        listed = self.cluster.list_app_records(namespace, of_apps=names, shards=shards)
        return {record.app: (record, None) for record in listed}

    def _admit(self, key: AppKey, read: Read | None, read_in: int, told: list[Told]) -> bool:
        """Admit ``key`` ahead of its pass (``read`` in the term ``read_in``); whether it is this
        replica's to act on now."""

        def tell(*what: *Told) -> None:
            told.append(what)

        stored, parsed = read or (None, None)
        try:
            admitted = self.gate.admit(
                key, stored, self.write, orphan=False, ahead=tell, parsed=parsed, read_in=read_in
            )
            return admitted.act
        except GitdeployError as problem:  # a failed release: its pass looks again
            log.info("[%s] not handed over ahead of its pass: %s", key, problem.message)
            return False

    def _tell(self, told: list[Told]) -> None:
        """Events for the claims and releases of one handover (see the module docstring)."""
        for key, written, reason, message in told[:EVENTS_PER_HANDOVER]:
            self.gate.announce(key, written, reason, message)
        rest: dict[str, list[AppKey]] = defaultdict(list)
        for key, _, reason, _ in told[EVENTS_PER_HANDOVER:]:
            rest[reason].append(key)
        membership = self.gate.membership
        for reason, keys in sorted(rest.items()):
            done = "claimed by" if reason == "ShardClaimed" else "released by"
            named = ", ".join(map(str, keys[:3])) + (", ..." if len(keys) > 3 else "")
            message = (
                f"{len(keys)} more apps {done} {self.gate.identity} in one handover ({named}); "
                "each is in its log, and its record names its owner"
            )
            lease = ("Lease", membership.name, "")
            shard_event(self.cluster, self.gate.clock, membership.namespace, lease, reason, message)


def _parsed(stored: StoredRecord) -> Read:
    try:
        return stored, load_record(stored.namespace, stored.app, stored.payload)
    except DamagedRecordError:  # its payload is kept: the admission finds it damaged
        return stored, None
