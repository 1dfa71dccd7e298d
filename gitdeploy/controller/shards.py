"""Ownership of apps in the loop of ``gitdeploy run --sharding``: claim, act, release, fence.

:meth:`ShardGate.admit` runs at the start of every pass over an app (:mod:`gitdeploy.controller.reconcile`)
and decides, by :func:`~gitdeploy.core.sharding.decide_shard`, whether this replica acts on it:

* it owns the app by the hash among the live members and its record names it: act;
* it owns the app and the record names nobody, or an owner that released the app or whose member
  Lease expired: claim it (write the record with the next shard epoch, naming the resourceVersion
  read: of two claimers one gets a conflict), then act. A new app's record is created with this
  replica's claim (creating is the claim: of two creators one finds it exists). A
  :class:`~gitdeploy.controller.handover.Handover` instead *adopts* the apps a membership change
  gave this replica: it holds them at once, with the next epoch, and writes their claims after
  their passes are due (:meth:`ShardGate.settle`); until then a step's record write carries the
  claim (:meth:`ShardGate.before_write`), so the record is still written first, naming the
  resourceVersion read, and the fencing is the same;
* it claimed the app but no longer owns it: release it in the record (the step in progress is
  over: a pass is one step) and leave it;
* otherwise leave it (another replica's app, or the new owner waits for the old one to stop).

Every write for an app is fenced twice: :meth:`ShardGate.fence` refuses it when this replica's
member Lease is not fresh by its own monotonic clock (:meth:`Membership.fresh`) or lapsed since
the pass began (a SIGSTOP past the renew deadline; nor is a pass admitted on what it read before
a lapse: :meth:`Admissions.reading`), and every step
that changes anything writes the app record first, naming the resourceVersion the pass read, so a
replica whose app was claimed by another since fails with a conflict before its step's actions.

Leader-only work (orphan pruning, image stream polling) is not sharded: it stays with the holder
of the leader Lease (``leading``). An app that left git is the leader's to claim, by the same rules
(its old owner releases it once its own head says it left git, or its Lease expired), so a replica
still behind in git never acts on an app the leader prunes.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.gitposition import GitPosition
from gitdeploy.controller.membership import Membership
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import StoredRecord, record_name
from gitdeploy.core.sharding import (
    ShardAct,
    ShardClaim,
    ShardDecision,
    concerned,
    covers,
    decide_shard,
    owner_of,
    shards_of,
)
from gitdeploy.errors import ConflictError, DamagedRecordError, GitdeployError, TransientError

log = logging.getLogger("gitdeploy.sharding")

RecordWriter = Callable[[AppKey, AppRecord, "str | None"], StoredRecord]
Announce = Callable[[AppKey, StoredRecord, str, str], None]
"""Tells of a claim or a release: (the app, its record as written, the event's reason, its message)."""


class Handing:
    """The apps a handover is to admit (:attr:`ShardGate.handing`), shared by its thread and
    the passes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[AppKey] = set()

    def add(self, keys: Iterable[AppKey]) -> None:
        """``keys`` are the handover's to admit."""
        with self._lock:
            self._keys.update(keys)

    def done(self, keys: Iterable[AppKey]) -> None:
        """The handover is done with ``keys``: their passes decide them now."""
        with self._lock:
            self._keys.difference_update(keys)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._keys)


class Members(Protocol):
    """What :class:`OwnShards` reads of a :class:`~gitdeploy.controller.membership.Membership`."""

    @property
    def identity(self) -> str: ...

    def members(self) -> frozenset[str]: ...


class OwnShards:
    """The shards this replica owns among the live members (None: all of them): what its
    watches follow (:attr:`~gitdeploy.controller.loop.Controller.watched_shards`).

    Two changes wait: while this replica is not among the members (its Lease lapsed: it acts on
    nothing, and its watches keep following what they did rather than every app), and more
    shards while ``busy()`` (a handover is under way: the watches list their new shards once it
    has read the moved apps' records, rather than competing with it for the CPU and the API)."""

    def __init__(self, membership: Members, busy: Callable[[], bool] = lambda: False) -> None:
        self.membership = membership
        self.busy = busy
        self._last: tuple[frozenset[str], frozenset[str] | None] = (frozenset(), None)
        """The last answer, with the members it was worked out for."""

    def __call__(self) -> frozenset[str] | None:
        members = self.membership.members()
        held_for, held = self._last
        if members == held_for or (held_for and self.membership.identity not in members):
            return held
        shards = shards_of(self.membership.identity, members)
        if held_for and self.busy() and not covers(held, shards):
            return held
        self._last = (members, shards)
        return shards


@dataclass(frozen=True)
class Admission:
    """Whether this pass acts on the app, with the record it acts on (after a claim: as written)."""

    act: bool
    stored: StoredRecord | None = None
    requeue_after: float | None = None
    """When not acting: look again after this long (None: when something changes)."""


class ShardGate:
    """This replica's claims (see the module docstring). Thread-safe."""

    def __init__(
        self,
        membership: Membership,
        cluster: Cluster,
        clock: Clock,
        leading: Callable[[], bool] = lambda: True,
        leader: Callable[[], str] = lambda: "",
        position: GitPosition | None = None,
    ) -> None:
        self.membership = membership
        self.identity = membership.identity
        self.cluster = cluster
        self.clock = clock
        self.leading = leading
        """Whether this replica holds the leader Lease (orphans are the leader's)."""
        self.leader = leader
        """The holder of the leader Lease, as this replica last saw it ('' when unknown)."""
        self.position = position
        """Where this replica's git head stands (None: never behind)."""
        self._lock = threading.Lock()
        self.claims: dict[AppKey, int] = {}
        """The apps this replica claimed, with their shard epoch."""
        self.moves = 0
        """Apps this replica took over from another replica."""
        self.observers: list[Callable[[int, int], None]] = []
        """(apps owned, moves so far) after every change of either."""
        self.on_drop: list[Callable[[AppKey], None]] = []
        """Told of every app this replica no longer holds (released, claimed by another, or held
        before its Lease lapsed: :meth:`Admissions.admit`)."""
        self.admissions = Admissions(membership, self.on_drop)
        self.unwritten: dict[AppKey, ShardClaim | None] = {}
        """Apps adopted ahead of their passes whose claim is not written yet (see :meth:`settle`),
        with the claim their record named then."""
        self.handing = Handing()
        """Apps a :class:`~gitdeploy.controller.handover.Handover` is to admit: a pass leaves them
        until then (it is due again after), so the two never race to claim one."""

    @property
    def retry(self) -> float:
        return self.membership.timings.lease_duration

    def fence(self, key: AppKey) -> None:
        """Refuse a write for ``key`` unless this replica's member Lease is fresh and did not lapse
        since the pass was admitted (a pause past the renew deadline: :meth:`Admissions.current`)."""
        if not self.membership.fresh() or not self.admissions.current(key, passing=True):
            raise _lapsed(key, self.membership)

    def mine(self, key: AppKey) -> bool:
        """Whether this replica owns ``key`` by the hash among the live members (a resync looks at
        it; see :class:`~gitdeploy.controller.loop.ShardScope`)."""
        return owner_of(str(key), self.membership.members()) == self.identity

    def concerned(self, before: frozenset[str], now: frozenset[str], keys: Iterable[AppKey]) -> list[AppKey]:
        """:func:`~gitdeploy.core.sharding.concerned`, with the apps this replica holds."""
        return concerned(self.identity, self.held(), before, now, keys)

    def looks_at(self, key: AppKey) -> bool:
        """Whether this replica owns ``key`` by the hash or claimed it (see :meth:`mine`)."""
        with self._lock:
            if key in self.claims:
                return True
        return self.mine(key)

    def held(self) -> list[AppKey]:
        """The apps this replica claimed."""
        with self._lock:
            return list(self.claims)

    def finds_orphans(self) -> bool:
        """Whether this replica looks for orphans: the leader's work."""
        return self.leading()

    def holds(self, key: AppKey) -> bool:
        """Whether this replica holds ``key``: claimed, and admitted since its Lease last lapsed."""
        with self._lock:
            held = key in self.claims
        return held and self.admissions.current(key)

    def before_write(self, key: AppKey, record: AppRecord, version: str | None) -> AppRecord:
        """Fence a record write; a record this replica creates names it as the owner (epoch 1),
        and so does one of an app it adopted whose claim is not written yet (the step's write is
        the claim)."""
        self.fence(key)
        if version is None and record.shard is None:
            return dataclasses.replace(record, shard=ShardClaim(self.identity, 1))
        with self._lock:
            epoch = self.claims.get(key) if key in self.unwritten else None
        if epoch is not None and (record.shard is None or record.shard.owner != self.identity):
            return dataclasses.replace(record, shard=ShardClaim(self.identity, epoch))
        return record

    def admit(
        self,
        key: AppKey,
        stored: StoredRecord | None,
        write: RecordWriter,
        *,
        orphan: bool,
        ahead: Announce | None = None,
        parsed: AppRecord | None = None,
        read_in: int | None = None,
    ) -> Admission:
        """Decide whether this pass acts on ``key`` (claiming or releasing it first if need be).
        ``ahead``: a handover admits it ahead of its pass, and tells of a claim or a release
        through it (else an event on the app's record does, at once). ``parsed``: ``stored``'s
        record, when the caller has it parsed already (a watch cache keeps it so). ``read_in``:
        see :meth:`Admissions.reading`. A write that conflicts after this replica's own claim of
        the app was written (the pass read the record before it: right after a handover) is
        decided again on the record read anew."""
        try:
            return self._admit(key, stored, write, orphan, ahead, parsed, read_in)
        except ConflictError:
            with self._lock:
                written = key in self.claims and key not in self.unwritten
            if not written:
                raise
            fresh = self.cluster.read_app_record(key.namespace, key.name)
            return self._admit(key, fresh, write, orphan, ahead, None, None)

    def _admit(
        self,
        key: AppKey,
        stored: StoredRecord | None,
        write: RecordWriter,
        orphan: bool,
        ahead: Announce | None,
        parsed: AppRecord | None,
        read_in: int | None,
    ) -> Admission:
        announce = ahead or self.announce
        if key in self.handing and ahead is None:
            return Admission(False)
        if not self.admissions.admit(key, read_in):  # read before a lapse: read anew
            return Admission(False, requeue_after=0.0)
        if not self.membership.fresh():
            return Admission(False, requeue_after=self.membership.timings.retry_period)
        members = self.membership.members()
        owner = owner_of(str(key), members)
        if orphan:  # pruning is leader-only work: the leader claims orphans, as owners claim apps
            owner = self.identity if self.leading() else (self.leader() or None)
        try:
            record = AppRecord.from_json(stored.payload) if parsed is None and stored is not None else parsed
        except DamagedRecordError:  # nothing writes a damaged record: its owner reports it
            return Admission(owner == self.identity, stored)
        claim = record.shard if record is not None else None
        decision = decide_shard(claim, identity=self.identity, owner=owner, live=members)
        if decision.act is ShardAct.ACT:
            assert claim is not None and record is not None
            self._hold(key, claim.epoch)
            if self._behind(key, record):
                return Admission(False, requeue_after=self.membership.timings.retry_period)
            return Admission(True, stored)
        if decision.act is ShardAct.WAIT:  # another replica holds it: so this one does not
            self._drop(key)
            return Admission(False, requeue_after=self.retry)
        if decision.act is ShardAct.IGNORE:
            self._drop(key)
            return Admission(False)
        if stored is None or record is None:  # a new app: creating its record is the claim
            return Admission(True, stored)
        if decision.act is ShardAct.RELEASE:
            assert decision.write is not None
            written = write(key, dataclasses.replace(record, shard=decision.write), stored.resource_version)
            self._drop(key)
            announce(key, written, "ShardReleased", f"released by {self.identity}: it now belongs to {owner}")
            log.info("[%s] released: it now belongs to %s", key, owner)
            return Admission(False)
        return self._claim(key, stored, record, decision, write, announce, adopt=ahead is not None)

    def _claim(
        self,
        key: AppKey,
        stored: StoredRecord,
        record: AppRecord,
        decision: ShardDecision,
        write: RecordWriter,
        announce: Announce,
        *,
        adopt: bool,
    ) -> Admission:
        """Claim ``key`` as ``decision`` says: adopt it (its claim is written after, by
        :meth:`settle` or its step's record write), or write the claim now, then act."""
        assert decision.write is not None
        if self._behind(key, record):
            return Admission(False, requeue_after=self.membership.timings.retry_period)
        if adopt or self._adopted(key, decision.write):
            self._adopt(key, record.shard, decision.write.epoch)
            return Admission(True, stored)
        written = write(key, dataclasses.replace(record, shard=decision.write), stored.resource_version)
        self._claimed(key, written, record.shard, decision.write.epoch, announce)
        return Admission(True, written)

    def settle(
        self,
        key: AppKey,
        stored: StoredRecord,
        write: RecordWriter,
        announce: Announce,
        parsed: AppRecord | None = None,
    ) -> bool:
        """Write the claim of ``key``, adopted ahead of its pass, into its record ``stored`` (with
        ``parsed``, its record parsed already) as :meth:`admit` would have, unless a step wrote it
        already; tell of it through ``announce``.
        False when it is not this replica's to claim any more (the record changed: another
        replica claimed it, or its old owner came back): the adoption is dropped and its next
        pass decides. Raises what the write raises (a conflict: read the record again)."""
        with self._lock:
            if key not in self.unwritten or key not in self.claims:
                return True  # dropped meanwhile
            before, mine = self.unwritten[key], ShardClaim(self.identity, self.claims[key])
        record = parsed if parsed is not None else AppRecord.from_json(stored.payload)
        if record.shard != mine:  # else a step wrote it
            members = self.membership.members()
            owner = owner_of(str(key), members)
            if decide_shard(record.shard, identity=self.identity, owner=owner, live=members).write != mine:
                self._drop(key)
                return False
            stored = write(key, dataclasses.replace(record, shard=mine), stored.resource_version)
        with self._lock:
            self.unwritten.pop(key, None)
        self._told_claim(key, stored, before, mine.epoch, announce)
        return True

    def release_adopted(self, key: AppKey) -> None:
        """:meth:`settle` could not write the claim of ``key``: let go of it, so that its next
        pass decides it again (and claims it, if it still may)."""
        with self._lock:
            if key not in self.unwritten:
                return
            before = self.unwritten[key]
            self.moves -= before is not None and before.owner != self.identity
        self._drop(key)

    def _adopted(self, key: AppKey, claim: ShardClaim) -> bool:
        """Whether ``key`` was adopted with ``claim`` and that claim is not written yet."""
        with self._lock:
            return key in self.unwritten and self.claims.get(key) == claim.epoch

    def _adopt(self, key: AppKey, claim: ShardClaim | None, epoch: int) -> None:
        with self._lock:
            if key in self.unwritten and self.claims.get(key) == epoch:
                return  # adopted ahead of this pass
            self.unwritten[key] = claim
            self.moves += claim is not None and claim.owner != self.identity
        self._hold(key, epoch)

    def _behind(self, key: AppKey, record: AppRecord) -> bool:
        return self.position is not None and self.position.waits(key, record)

    def _claimed(
        self, key: AppKey, written: StoredRecord, claim: ShardClaim | None, epoch: int, announce: Announce
    ) -> None:
        with self._lock:
            self.moves += claim is not None and claim.owner != self.identity
        self._hold(key, epoch)
        self._told_claim(key, written, claim, epoch, announce)

    def _told_claim(
        self, key: AppKey, written: StoredRecord, claim: ShardClaim | None, epoch: int, announce: Announce
    ) -> None:
        how = ""
        if claim is not None and claim.owner != self.identity:
            how = f" from {claim.owner} ({'released' if claim.released else 'no longer a live member'})"
        announce(key, written, "ShardClaimed", f"claimed by {self.identity}{how}, shard epoch {epoch}")
        log.info("[%s] claimed%s, shard epoch %d", key, how, epoch)

    def _hold(self, key: AppKey, epoch: int) -> None:
        with self._lock:
            changed = self.claims.get(key) != epoch
            self.claims[key] = epoch
        if changed:
            self._tell()

    def _drop(self, key: AppKey) -> None:
        with self._lock:
            self.unwritten.pop(key, None)
            changed = self.claims.pop(key, None) is not None
        if changed:
            for dropped in self.on_drop:
                dropped(key)
            self._tell()

    def _tell(self) -> None:
        with self._lock:
            owned, moves = len(self.claims), self.moves
        for observer in self.observers:
            observer(owned, moves)

    def announce(self, key: AppKey, written: StoredRecord, reason: str, message: str) -> None:
        """An event on the app's record (:data:`Announce`)."""
        involved = ("ConfigMap", record_name(key.name), written.uid)
        shard_event(self.cluster, self.clock, key.namespace, involved, reason, message)


class Admissions:
    """The membership term in which each app's pass under way was admitted (thread-safe): a
    pass's writes are fenced once the term moved on (:meth:`ShardGate.fence`)."""

    def __init__(self, membership: Membership, on_lapse: list[Callable[[AppKey], None]]) -> None:
        self.membership = membership
        self.on_lapse = on_lapse
        """Told of every app admitted again after a lapse (what was known of it is stale)."""
        self._lock = threading.Lock()
        self._terms: dict[AppKey, int] = {}
        self._passing = threading.local()
        """``admission``: the app and term this thread's last admission was for."""

    def reading(self) -> int:
        """What a pass notes before it reads an app's objects, and hands to
        :meth:`ShardGate.admit` with them: the term they are read in. When this replica's Lease
        lapsed since, what it read may be from before other replicas acted on the app (a pause
        fell between its reads and its admission), and the pass is not admitted: it is due again
        at once, and reads anew."""
        return self.membership.term

    def admit(self, key: AppKey, read_in: int | None = None) -> bool:
        """Admit a pass over ``key`` now, on this thread, unless it read in an earlier term than
        this one (``read_in``: see :meth:`reading`; False: not admitted). Admitted again after a
        lapse, the app may have moved meanwhile: :attr:`on_lapse` forgets what was known of it."""
        term = self.membership.term  # once: a lapse right after leaves this admission void
        if read_in is not None and read_in != term:
            return False
        self._passing.admission = (key, term)
        with self._lock:
            earlier, self._terms[key] = self._terms.get(key), term
        for forget in self.on_lapse if earlier not in (None, term) else ():
            forget(key)
        return True

    def current(self, key: AppKey, *, passing: bool = False) -> bool:
        """Whether ``key`` was admitted in this term. ``passing``: whether the pass this thread
        was admitted for was, when it was admitted for ``key``: another thread that admitted the
        app again since the lapse (a handover) renews no pass begun before it."""
        admitted = getattr(self._passing, "admission", None) if passing else None
        if admitted is None or admitted[0] != key:
            with self._lock:
                admitted = (key, self._terms.get(key))
        return admitted[1] == self.membership.term


def _lapsed(key: AppKey, membership: Membership) -> TransientError:
    """Why a write for ``key`` is refused: this replica's member Lease lapsed (:meth:`ShardGate.fence`)."""
    return TransientError(
        f"[{key}] not written: this replica's member Lease {membership.lease} was not renewed "
        f"within {membership.timings.renew_deadline:g} s, so another replica may own the app now",
        hint="it acts again once it renewed its Lease and still owns the app",
        retry_after=membership.timings.retry_period,
    )


def shard_event(
    cluster: Cluster, clock: Clock, namespace: str, involved: tuple[str, str, str], reason: str, message: str
) -> None:
    """An event of a claim or a release on ``involved`` (never worth failing a step for)."""
    try:
        cluster.record_event(namespace, involved, reason, message, now=clock.now())
    except GitdeployError as problem:
        log.warning(
            "could not record event %s on %s %s/%s: %s", reason, involved[0], namespace, involved[1], problem
        )
