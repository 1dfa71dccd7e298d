"""Apps sharded across ``gitdeploy run --sharding`` replicas: who owns an app, and when it may move
(pure, no I/O, no clock: time is an argument).

Each replica keeps a member Lease of its own (``coordination.k8s.io/v1``). The *live members* are
the Leases whose holder renewed them within their duration, by the rule of
:mod:`gitdeploy.core.lease`: a Lease is valid for ``leaseDurationSeconds`` after *this process saw
it change* (its own clock, never the writer's ``renewTime``).

Each app belongs to one live member by rendezvous (highest-random-weight) hashing of its shard:
a stable hash of the app's key puts it in one of :data:`SHARDS` shards, every member scores each
shard with a stable hash of (member, shard), and the highest score owns the shard and its apps. A
member that joins takes only the shards it now scores highest on (about 1/N of the apps); a member
that leaves gives up only its own. The apps of a shard always move together, so a replica's apps
are a set of shards: what a label selector can name (``gitdeploy.io/shard in (...)``), where a set
of apps would have to be named one by one.

Owning an app by the hash is not enough to act on it: the app record says who *claimed* it
(:class:`ShardClaim`: owner, a shard epoch that every claim increments, and whether the owner
released it). An app changes owner only after the old owner stopped acting on it: it released the
app in the record, or its member Lease expired. A claim is a write of the record naming the
resourceVersion it read, so of two replicas that claim at once one gets a conflict.

Worked example: three members; ``c`` joins a fleet of ``a`` and ``b``.

>>> before = frozenset({"a", "b"})
>>> after = before | {"c"}
>>> keys = [f"shop/app-{i}" for i in range(9)]
>>> [owner_of(k, before) for k in keys]
['a', 'b', 'a', 'b', 'b', 'b', 'b', 'b', 'b']
>>> [owner_of(k, after) for k in keys]
['a', 'b', 'c', 'c', 'b', 'b', 'b', 'b', 'b']

Only apps that moved to ``c`` moved (two of nine here; about a third in a large fleet).
``c`` may act on ``shop/app-3`` only once ``b`` released it or ``b``'s Lease expired;
meanwhile ``b`` releases it after the step in progress:

>>> held = ShardClaim("b", epoch=4)
>>> decide_shard(held, identity="c", owner="c", live=after).act
<ShardAct.WAIT: 'wait'>
>>> decide_shard(held, identity="b", owner="c", live=after)
ShardDecision(act=<ShardAct.RELEASE: 'release'>, write=ShardClaim(owner='b', epoch=4, released=True))
>>> decide_shard(ShardClaim("b", 4, released=True), identity="c", owner="c", live=after)
ShardDecision(act=<ShardAct.CLAIM: 'claim'>, write=ShardClaim(owner='c', epoch=5, released=False))
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from gitdeploy.core.lease import LeaseSpec

MEMBER_LABEL = "gitdeploy.io/member"
"""The label every member Lease carries (value ``true``), so that members can be listed."""
MEMBER_PREFIX = "gitdeploy-member-"
STALE_AFTER = 10
"""A member Lease left unchanged for this many of its durations is deleted by the leader (see
:func:`stale_members`)."""


def member_lease_name(identity: str) -> str:
    """The name of the member Lease of ``identity``: a DNS-1123 name made from a stable hash of
    it (identities hold ``_`` and ``.``, and may be long).

    >>> member_lease_name("web-0_1a2b3c4d.7_aa")
    'gitdeploy-member-d312389ca6130e05'
    """
    return MEMBER_PREFIX + hashlib.blake2b(identity.encode(), digest_size=8).hexdigest()


def weight(member: str, key: str) -> int:
    """The rendezvous score of ``key`` for ``member``: 64 bits of blake2b of both (the same on
    every machine and every run, unlike Python's ``hash()``).

    >>> weight("a", "shop/web"), weight("b", "shop/web")
    (15404821658235888624, 3253851077820888850)
    """
    digest = hashlib.blake2b(f"{member}\n{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


SHARDS = 1024
"""How many shards the apps are split into (see :func:`shard_of`)."""
SHARD_LABEL = "gitdeploy.io/shard"
"""The label of an app's shard (:func:`shard_of`) on its ReplicaSets and its record, with or
without ``--sharding``: ``kubectl get rs,configmaps -l gitdeploy.io/shard=294``."""


def shard_of(key: str) -> str:
    """The shard of the app ``key``: one of :data:`SHARDS`, by a stable hash of the key (the
    same on every machine and every run, whatever the members).

    >>> shard_of("shop/web"), shard_of("shop/db")
    ('294', '600')
    """
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return str(int.from_bytes(digest, "big") % SHARDS)


def owner_of(key: str, members: Iterable[str]) -> str | None:
    """The member that owns the app ``key``: the one that owns its :func:`shard_of`, or None
    when there is no member. Apps of one shard always have one owner and move together.

    >>> owner_of("shop/web", ["a", "b"]), owner_of("shop/web", [])
    ('b', None)
    """
    return shard_owner(shard_of(key), frozenset(members))


@functools.lru_cache(maxsize=4 * SHARDS)
def shard_owner(shard: str, members: frozenset[str]) -> str | None:
    """The member that owns ``shard``: the highest :func:`weight` (ties broken by name), or None
    when there is no member. Kept for the last few memberships: a change of members looks at
    every app, and there are far fewer shards than apps."""
    return max(members, key=lambda m: (weight(m, shard), m), default=None)


def shards_of(member: str, members: frozenset[str]) -> frozenset[str] | None:
    """The shards ``member`` owns among ``members``: what its watches select
    (:func:`shard_selector`); None when it owns them all (a lone member, or one not among
    ``members`` yet: its watches select everything until it knows better).

    >>> sorted(shards_of("a", frozenset({"a", "b"})), key=int)[:5]
    ['2', '7', '8', '12', '13']
    >>> shards_of("a", frozenset({"a"})) is None, shards_of("a", frozenset()) is None
    (True, True)
    """
    if member not in members or len(members) == 1:
        return None
    return frozenset(shard for shard in map(str, range(SHARDS)) if shard_owner(shard, members) == member)


def shard_selector(selector: str, shards: frozenset[str] | None) -> str:
    """``selector`` narrowed to the objects of ``shards`` (None: all of them, ``selector`` as is).

    >>> shard_selector("a=b", frozenset({"12", "3"})), shard_selector("a=b", None)
    ('a=b,gitdeploy.io/shard in (3,12)', 'a=b')
    """
    if shards is None:
        return selector
    return f"{selector},{SHARD_LABEL} in ({','.join(sorted(shards, key=int))})"


def covers(held: frozenset[str] | None, wanted: frozenset[str] | None) -> bool:
    """Whether objects selected by the shards ``held`` (None: all) include every object of the
    shards ``wanted`` (None: all).

    >>> covers(None, frozenset({"1"})), covers(frozenset({"1", "2"}), frozenset({"1"}))
    (True, True)
    >>> covers(frozenset({"1"}), None), covers(frozenset({"1"}), frozenset({"2"}))
    (False, False)
    """
    return held is None or (wanted is not None and wanted <= held)


@dataclass(frozen=True)
class SeenMember:
    """A member Lease as this process saw it: its spec, and when (this process's clock) it last
    saw it change."""

    spec: LeaseSpec
    observed_at: float


def live_members(seen: Iterable[SeenMember], now: float) -> frozenset[str]:
    """The holders of member Leases that are valid now: held (a released one names nobody), and
    seen changing less than ``leaseDurationSeconds`` ago.

    >>> live_members(
    ...     [SeenMember(LeaseSpec("a", 15), 100.0), SeenMember(LeaseSpec("b", 15), 80.0),
    ...      SeenMember(LeaseSpec("", 1), 100.0)], now=110.0)
    frozenset({'a'})
    """
    return frozenset(
        m.spec.holder for m in seen if m.spec.holder and now < m.observed_at + m.spec.duration_seconds
    )


def next_expiry(seen: Iterable[SeenMember], now: float, own: str) -> float | None:
    """Seconds until the first of the live members other than ``own`` expires unless its Lease
    changes (None: no other live member). A replica looks at the members again then rather than
    at its next renewal, so that a killed replica's apps move as soon as its Lease expired, not up
    to a retry period later; a member that renews meanwhile is seen changed, and stays.

    >>> seen = [SeenMember(LeaseSpec("a", 15), 100.0), SeenMember(LeaseSpec("b", 15), 92.0)]
    >>> next_expiry(seen, now=105.0, own="a"), next_expiry(seen, now=105.0, own="b")
    (2.0, 10.0)
    >>> next_expiry(seen, now=108.0, own="a") is None  # b expired already: nobody left to wait for
    True
    """
    left = [
        m.observed_at + m.spec.duration_seconds - now
        for m in seen
        if m.spec.holder and m.spec.holder != own and now < m.observed_at + m.spec.duration_seconds
    ]
    return min(left, default=None)


def stale_members(seen: Mapping[str, SeenMember], now: float) -> list[str]:
    """The member Leases (by name) the leader deletes: left unchanged for :data:`STALE_AFTER` ×
    their duration since this process first saw them so (a replica killed by ``kill -9`` never
    deletes its own). A member that still runs renews its Lease every retry period, so its Lease
    changes long before; one paused that long stopped acting at its renew deadline, and the delete
    names the resourceVersion seen (a renewal in between makes it fail), so a resumed replica
    finds its Lease gone and creates it anew.

    >>> seen = {"gone": SeenMember(LeaseSpec("a", 15), 100.0), "live": SeenMember(LeaseSpec("b", 15), 240.0)}
    >>> stale_members(seen, now=249.9), stale_members(seen, now=250.0)
    ([], ['gone'])
    """
    return sorted(
        name
        for name, member in seen.items()
        if now >= member.observed_at + STALE_AFTER * max(member.spec.duration_seconds, 1)
    )


class OwnerLease(Enum):
    """The member Lease of an app's claimed owner, as a one-shot reader (``gitdeploy status``)
    finds it."""

    LIVE = ""
    """Renewed within its duration: the owner acts on its apps (or cannot write, being fenced)."""
    EXPIRED = "lease expired"
    """Not renewed within its duration: the owner was killed, or is paused or cut off and no
    longer acts; the live members adopt its apps and claim them one after another."""
    MISSING = "no lease"
    """No member Lease names it: the owner stopped (SIGTERM deletes it), or the leader deleted it
    long after it expired."""


def owner_leases(owners: Iterable[str], members: Iterable[LeaseSpec], now: float) -> dict[str, OwnerLease]:
    """How each of ``owners``' member Leases stands at ``now`` among the listed ``members``.

    A one-shot reader cannot see a Lease change over time as the replicas do
    (:func:`live_members`), so it reads the holder's ``renewTime`` against its own clock, as
    ``kubectl`` shows a Lease's age; a Lease without ``renewTime`` counts as live. When no member
    Lease was listed at all (the Leases were looked for in another namespace than the fleet's,
    or every replica stopped), nothing can be told: the answer is empty.

    >>> members = [LeaseSpec("a", 15, renew_time=100.0), LeaseSpec("b", 15, renew_time=80.0)]
    >>> {o: s.value for o, s in owner_leases(["a", "b", "c"], members, now=110.0).items()}
    {'a': '', 'b': 'lease expired', 'c': 'no lease'}
    >>> owner_leases(["c"], [], now=110.0)
    {}
    """
    held: dict[str, list[LeaseSpec]] = {}
    for member in members:
        if member.holder:
            held.setdefault(member.holder, []).append(member)
    if not held:
        return {}
    return {owner: _standing(held.get(owner, []), now) for owner in sorted(set(owners))}


def _standing(leases: list[LeaseSpec], now: float) -> OwnerLease:
    if not leases:
        return OwnerLease.MISSING
    if any(m.renew_time is None or now < m.renew_time + m.duration_seconds for m in leases):
        return OwnerLease.LIVE
    return OwnerLease.EXPIRED


@dataclass(frozen=True)
class ShardClaim:
    """Who claimed an app, as its record keeps it. ``epoch`` grows with every claim; ``released``:
    the owner stopped acting on the app (any member that owns it by the hash may claim it)."""

    owner: str
    epoch: int
    released: bool = False


class ShardAct(Enum):
    ACT = "act"
    """This replica claimed the app: reconcile it."""
    CLAIM = "claim"
    """Write ``write`` (naming the record's resourceVersion), then reconcile it."""
    RELEASE = "release"
    """This replica claimed the app but no longer owns it: write ``write`` and leave it."""
    WAIT = "wait"
    """This replica owns the app but its old owner has not stopped acting on it yet."""
    IGNORE = "ignore"
    """Another replica's app."""


@dataclass(frozen=True)
class ShardDecision:
    act: ShardAct
    write: ShardClaim | None = None


def decide_shard(
    claim: ShardClaim | None, *, identity: str, owner: str | None, live: frozenset[str]
) -> ShardDecision:
    """What ``identity`` does with an app whose record says ``claim`` (None: no record, or a record
    nobody claimed) and that ``owner`` owns by the hash among the ``live`` members.

    >>> decide_shard(None, identity="a", owner="a", live=frozenset({"a"}))
    ShardDecision(act=<ShardAct.CLAIM: 'claim'>, write=ShardClaim(owner='a', epoch=1, released=False))
    >>> decide_shard(ShardClaim("a", 3), identity="a", owner="a", live=frozenset({"a"})).act
    <ShardAct.ACT: 'act'>
    >>> decide_shard(ShardClaim("gone", 3), identity="a", owner="a", live=frozenset({"a"})).write
    ShardClaim(owner='a', epoch=4, released=False)
    """
    if owner != identity:
        if claim is not None and claim.owner == identity and not claim.released:
            return ShardDecision(ShardAct.RELEASE, ShardClaim(identity, claim.epoch, released=True))
        return ShardDecision(ShardAct.IGNORE)
    if claim is None:
        return ShardDecision(ShardAct.CLAIM, ShardClaim(identity, 1))
    if claim.owner == identity and not claim.released:
        return ShardDecision(ShardAct.ACT)
    if claim.owner != identity and not claim.released and claim.owner in live:
        return ShardDecision(ShardAct.WAIT)
    return ShardDecision(ShardAct.CLAIM, ShardClaim(identity, claim.epoch + 1))


def moved(before: frozenset[str], after: frozenset[str], keys: Iterable[str]) -> list[str]:
    """The keys whose owner differs between two memberships.

    >>> moved(frozenset({"a", "b"}), frozenset({"a", "b", "c"}), [f"k{i}" for i in range(8)])
    ['k1', 'k2', 'k3', 'k4', 'k6']
    """
    return [k for k in keys if owner_of(k, before) != owner_of(k, after)]


K = TypeVar("K", bound=Hashable)


def concerned(
    identity: str, held: Iterable[K], before: frozenset[str], after: frozenset[str], keys: Iterable[K]
) -> list[K]:
    """Of ``keys`` and the ``held`` ones (claimed by ``identity``), those that a change of the live
    members from ``before`` to ``after`` concerns for ``identity``: the keys whose owner by the
    hash became or stopped being ``identity``, and the held keys that are not its own any more.
    Keys that moved between two other members are theirs to look at, so a change costs each
    member its own moves only, not a pass over every key.

    >>> concerned("a", ["k9"], frozenset({"a", "b"}), frozenset({"a", "b", "c"}), [f"k{i}" for i in range(8)])
    ['k9', 'k3', 'k6']
    """
    held = set(held)
    found = []
    for key in dict.fromkeys([*held, *keys]):
        first, then = owner_of(str(key), before), owner_of(str(key), after)
        if (first != then and identity in (first, then)) or (key in held and then != identity):
            found.append(key)
    return found
