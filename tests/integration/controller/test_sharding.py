"""Membership and ownership of ``run --sharding`` (controller/membership.py, controller/shards.py)
against the embedded cluster over HTTP, on a fake clock: each ``step()`` is one renewal, so the
scenarios decide who renews when, and a pause is the clock moving while a replica does nothing."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.handover import EVENTS_PER_HANDOVER, Handover
from gitdeploy.controller.membership import EXPIRY_MARGIN, Membership
from gitdeploy.controller.shards import Admission, ShardGate
from gitdeploy.controller.watchcache import WatchCache
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.lease import JITTER_FACTOR, LeaseTimings
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import StoredRecord
from gitdeploy.core.sharding import MEMBER_LABEL, ShardClaim, member_lease_name, owner_of
from gitdeploy.errors import ConflictError, TransientError
from gitdeploy.localcluster import LocalCluster
from tests.fixtures.waiting import eventually

NAMESPACE = "gitdeploy-system"
TIMINGS = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
A, B = "a_1", "b_2"


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    cluster = Cluster(kube_client, "embedded")
    cluster.ensure_namespace(NAMESPACE)
    cluster.ensure_namespace("shop")
    return cluster


def member(adapter: Cluster, identity: str, clock: FakeClock) -> Membership:
    return Membership(adapter, NAMESPACE, identity, clock, clock, TIMINGS, runs=lambda _pid: True)


def lone_gate(adapter: Cluster, clock: FakeClock) -> tuple[Membership, ShardGate]:
    """Replica a, alone and renewed, and its gate."""
    a = member(adapter, A, clock)
    a.step()
    return a, ShardGate(a, adapter, clock)


def app_owned_by(identity: str, members: list[str]) -> AppKey:
    """An app the hash gives to ``identity`` among ``members``."""
    return next(
        AppKey("shop", f"app-{i}") for i in range(100) if owner_of(f"shop/app-{i}", members) == identity
    )


def write(adapter: Cluster) -> Any:
    def writer(key: AppKey, record: AppRecord, version: str | None) -> StoredRecord:
        return adapter.write_app_record(key.namespace, key.name, record.to_json(), version)

    return writer


def record_of(adapter: Cluster, key: AppKey) -> tuple[AppRecord, StoredRecord]:
    stored = adapter.read_app_record(key.namespace, key.name)
    assert stored is not None
    return AppRecord.from_json(stored.payload), stored


def test_members_are_the_leases_renewed_within_their_duration_on_my_clock(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    a.step()
    b.step()
    a.step()
    assert a.members() == b.members() == {A, B}
    assert adapter.read_lease(NAMESPACE, member_lease_name(A)) is not None

    # When a stops renewing: b still counts it for 15 s after it last saw a's Lease change
    fake_clock.advance(14)
    b.step()
    assert b.members() == {A, B}
    assert not a.fresh()  # a's own fence lapsed after 10 s without a renewal
    assert a.members() == {B}
    fake_clock.advance(1)
    b.step()
    assert b.members() == {B}

    # When b shuts down cleanly, its Lease is gone: a sees it gone at its next renewal
    b.close()
    assert adapter.read_lease(NAMESPACE, member_lease_name(B)) is None
    a.step()
    assert a.members() == {A}


def test_a_replica_looks_at_the_members_again_as_soon_as_a_silent_ones_lease_expires(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    b.step()
    a.step()
    regular = (TIMINGS.retry_period / JITTER_FACTOR, TIMINGS.retry_period)
    assert regular[0] <= a.next_wait() <= regular[1]

    # When b stops renewing, and a looks 14 s after it saw b's Lease change
    fake_clock.advance(14)
    a.step()
    assert a.members() == {A, B}

    # Then a looks again just after b's Lease expires, 1 s on, not a retry period (2 s) later
    wait = a.next_wait()
    assert wait == pytest.approx(1 + EXPIRY_MARGIN)
    fake_clock.advance(wait)
    a.step()
    assert a.members() == {A}
    # ... and, with no other member left, at its retry period again
    assert regular[0] <= a.next_wait() <= regular[1]


def test_a_renewal_the_watch_delivered_counts_from_then_not_from_the_next_list(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    b.step()
    a.step()
    # Given b renews, and a's watch of the member Leases delivers the renewal at once
    fake_clock.advance(2)
    b.step()
    listed, _ = adapter.leases.list_leases_at(NAMESPACE, f"{MEMBER_LABEL}=true")
    a.watch.heard(next(lease for lease in listed if lease.name == member_lease_name(B)))
    # When b stops renewing, and a lists the members a retry period (2 s) later, and 8 s on
    fake_clock.advance(2)
    a.step()
    fake_clock.advance(8)
    a.step()
    assert a.members() == {A, B}
    # Then b's Lease expires 15 s after the watch delivered its renewal, not 15 s after the list
    fake_clock.advance(5 + EXPIRY_MARGIN)
    a.step()
    assert a.members() == {A}


def test_a_member_lease_deleted_is_seen_gone_at_once_not_at_the_next_retry_period(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    # Given a replica that lists the members only every 60 s, and b a member
    slow = LeaseTimings(lease_duration=120, renew_deadline=90, retry_period=60)
    b = member(adapter, B, fake_clock)
    b.step()
    a = Membership(adapter, NAMESPACE, A, fake_clock, fake_clock, slow, runs=lambda _pid: True)
    a.start()
    try:
        eventually(lambda: (a.watch.watching and a.members() == {A, B}) or None, "a sees b", timeout=10)
        # When b shuts down cleanly (its Lease deleted)
        b.close()
        # Then a's watch sees the Lease go, and a lists the members at once
        eventually(lambda: a.members() == {A} or None, "a sees b gone", timeout=10)
    finally:
        a.close()


def test_a_paused_replica_refuses_the_writes_of_the_step_it_was_in_even_after_renewing(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, gate = lone_gate(adapter, fake_clock)
    forgotten: list[AppKey] = []
    gate.on_drop.append(forgotten.append)
    key = AppKey("shop", "web")
    admitted = gate.admit(key, None, write(adapter), orphan=False)
    assert admitted.act
    gate.fence(key)  # fresh: may write
    assert gate.admit(key, None, write(adapter), orphan=False).act and forgotten == []

    # When the replica is paused past its renew deadline in the middle of the step
    fake_clock.advance(10)
    with pytest.raises(TransientError, match="not renewed within 10 s"):
        gate.fence(key)
    # ... and on resume its membership thread renews first: the step's writes are still refused
    a.step()
    assert a.fresh()
    with pytest.raises(TransientError):
        gate.fence(key)
    # Then a new pass is admitted again (and decides anew from the record), and what was known
    # of the app before the lapse is forgotten: another replica may have acted on it meanwhile
    assert gate.admit(key, None, write(adapter), orphan=False).act
    gate.fence(key)
    assert forgotten == [key]


def test_a_pass_that_read_before_its_replica_was_paused_is_not_admitted_after_it(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    b.step()
    a.step()
    gate = ShardGate(a, adapter, fake_clock)
    key = app_owned_by(A, [A, B])
    adapter.write_app_record(key.namespace, key.name, AppRecord(shard=ShardClaim(A, 1)).to_json(), None)
    assert gate.admit(key, record_of(adapter, key)[1], write(adapter), orphan=False).act

    # Given a pass that read the app's record (and objects), naming a as its owner
    read_in = gate.admissions.reading()
    _, stored = record_of(adapter, key)
    # When a is paused past its renew deadline, and b claims the app meanwhile
    fake_clock.advance(10)
    b.step()
    adapter.write_app_record(
        key.namespace, key.name, AppRecord(shard=ShardClaim(B, 2)).to_json(), stored.resource_version
    )
    # ... and on resume a renews its Lease before the pass decides on what it read
    a.step()
    admitted = gate.admit(key, stored, write(adapter), orphan=False, read_in=read_in)

    # Then the pass does not act on what it read before the pause: it is due again at once
    assert admitted == Admission(False, requeue_after=0.0)
    with pytest.raises(TransientError):
        gate.fence(key)
    # ... and a pass that reads anew sees the other claim: a holds the app no more
    read_in = gate.admissions.reading()
    waiting = gate.admit(key, record_of(adapter, key)[1], write(adapter), orphan=False, read_in=read_in)
    assert not waiting.act and not gate.holds(key) and gate.held() == []


def test_a_step_begun_before_a_pause_stays_fenced_when_a_handover_admits_its_app_again(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, gate = lone_gate(adapter, fake_clock)
    key = AppKey("shop", "web")
    assert gate.admit(key, None, write(adapter), orphan=False).act  # a step under way on this thread
    _, stored = record_of_created(adapter, gate, key)

    # When the replica is paused past its renew deadline, and on resume its handover (another
    # thread) admits the app anew before the step goes on
    fake_clock.advance(10)
    a.step()
    handover = threading.Thread(target=lambda: gate.admit(key, stored, write(adapter), orphan=False))
    handover.start()
    handover.join()
    assert gate.holds(key)

    # Then the step begun before the pause still may not write
    with pytest.raises(TransientError):
        gate.fence(key)
    # ... while a pass admitted after it may
    gate.admit(key, stored, write(adapter), orphan=False)
    gate.fence(key)


def record_of_created(adapter: Cluster, gate: ShardGate, key: AppKey) -> tuple[AppRecord, StoredRecord]:
    """Create ``key``'s record as a pass of ``gate`` does (naming its replica), and read it."""
    adapter.write_app_record(
        key.namespace, key.name, gate.before_write(key, AppRecord(), None).to_json(), None
    )
    return record_of(adapter, key)


def test_a_record_created_by_a_replica_names_it_and_two_claimers_conflict(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    b.step()  # b sees only itself
    a.step()  # a sees both
    assert b.members() == {B} and a.members() == {A, B}
    key = app_owned_by(A, [A, B])
    gate_a, gate_b = ShardGate(a, adapter, fake_clock), ShardGate(b, adapter, fake_clock)

    # Given a record claimed by a replica that is gone
    adapter.write_app_record(
        key.namespace, key.name, AppRecord(shard=ShardClaim("gone_9", 4)).to_json(), None
    )
    _, stored = record_of(adapter, key)

    # When both claim it from the same read (their views of the members differ)
    claimed = gate_a.admit(key, stored, write(adapter), orphan=False)
    assert claimed.act
    with pytest.raises(ConflictError):
        gate_b.admit(key, stored, write(adapter), orphan=False)

    # Then one claim went through, with the next epoch
    record, _ = record_of(adapter, key)
    assert record.shard == ShardClaim(A, 5)
    assert gate_a.claims == {key: 5} and gate_b.claims == {}
    # ... and a record a replica creates (a new app) names it, at epoch 1
    assert gate_a.before_write(key, AppRecord(), None).shard == ShardClaim(A, 1)
    assert gate_a.before_write(key, AppRecord(), "7").shard is None  # a replace keeps what it read


def test_an_app_moves_only_after_its_owner_released_it(adapter: Cluster, fake_clock: FakeClock) -> None:
    a, gate_a = lone_gate(adapter, fake_clock)
    key = app_owned_by(B, [A, B])
    adapter.write_app_record(key.namespace, key.name, AppRecord(shard=ShardClaim(A, 1)).to_json(), None)
    _, stored = record_of(adapter, key)
    assert gate_a.admit(key, stored, write(adapter), orphan=False).act  # a alone: a's app
    assert gate_a.holds(key)

    # When b joins, the hash gives the app to b; b waits while a has not released it
    b = member(adapter, B, fake_clock)
    b.step()
    gate_b = ShardGate(b, adapter, fake_clock)
    waiting = gate_b.admit(key, stored, write(adapter), orphan=False)
    assert not waiting.act and waiting.requeue_after == 15

    # When a sees b and passes over the app: it releases it (and acts no more)
    a.step()
    released = gate_a.admit(key, stored, write(adapter), orphan=False)
    assert not released.act
    record, stored = record_of(adapter, key)
    assert record.shard == ShardClaim(A, 1, released=True) and gate_a.claims == {}
    assert not gate_a.holds(key)  # the new owner's changes to its ReplicaSets are no hand's

    # Then b claims it, with the next epoch
    assert gate_b.admit(key, stored, write(adapter), orphan=False).act
    record, _ = record_of(adapter, key)
    assert record.shard == ShardClaim(B, 2)
    events = [e for e in adapter.list_events("shop") if e.get("reason", "").startswith("Shard")]
    assert [e["reason"] for e in events] == ["ShardReleased", "ShardClaimed"]


def test_an_app_that_left_git_is_the_leaders_once_its_owner_released_it(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    a.step()
    b.step()
    a.step()
    leader = ShardGate(a, adapter, fake_clock, leading=lambda: True, leader=lambda: A)
    owner = ShardGate(b, adapter, fake_clock, leading=lambda: False, leader=lambda: A)
    key = app_owned_by(B, [A, B])
    adapter.write_app_record(key.namespace, key.name, AppRecord(shard=ShardClaim(B, 1)).to_json(), None)
    _, stored = record_of(adapter, key)

    # The leader waits while the app's owner still holds it
    assert not leader.admit(key, stored, write(adapter), orphan=True).act
    # When the owner's head says the app left git too, it releases it to the leader
    assert not owner.admit(key, stored, write(adapter), orphan=True).act
    record, stored = record_of(adapter, key)
    assert record.shard == ShardClaim(B, 1, released=True)
    # Then the leader claims it (and prunes it)
    assert leader.admit(key, stored, write(adapter), orphan=True).act
    assert record_of(adapter, key)[0].shard == ShardClaim(A, 2)


def test_a_membership_change_concerns_a_replica_only_in_its_own_moves_and_holds(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    _, gate = lone_gate(adapter, fake_clock)
    keys = [AppKey("shop", f"app-{i}") for i in range(300)]
    before, after = frozenset({A, B}), frozenset({A, B, "c_3"})
    held = next(k for k in keys if owner_of(str(k), before) == owner_of(str(k), after) == B)
    adapter.write_app_record(held.namespace, held.name, AppRecord(shard=ShardClaim(A, 1)).to_json(), None)
    _, stored = record_of(adapter, held)
    assert gate.admit(held, stored, write(adapter), orphan=False).act  # a alone: it claimed the app
    assert gate.holds(held)

    concerned = gate.concerned(before, after, keys)

    owners = {k: (owner_of(str(k), before), owner_of(str(k), after)) for k in keys}
    from_a = {k for k, (first, then) in owners.items() if first == A != then}
    between_others = {k for k, (first, then) in owners.items() if first == B and then == "c_3"}
    assert from_a and between_others and held not in between_others
    assert set(concerned) == from_a | {held} and len(concerned) == len(set(concerned))
    assert not set(concerned) & between_others  # c's to take from b: not a's business
    # ... and when c leaves again, a's apps come back to it
    back = gate.concerned(after, before, keys)
    assert set(back) == from_a | {held}


def test_a_handover_claims_the_apps_of_a_member_that_went_ahead_of_their_passes(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    b.step()
    a.step()
    keys = [AppKey("shop", f"app-{i}") for i in range(50)]
    for key in keys:  # each app claimed by its owner
        claim = ShardClaim(owner_of(str(key), [A, B]) or "", 1)
        adapter.write_app_record(key.namespace, key.name, AppRecord(shard=claim).to_json(), None)
    b_apps = [key for key in keys if owner_of(str(key), [A, B]) == B]
    gate = ShardGate(a, adapter, fake_clock)
    due: list[AppKey] = []
    handover = Handover(gate, adapter, write(adapter), due.extend)
    handover.start()

    # When b's member Lease expires (it stopped renewing) and a sees it gone
    fake_clock.advance(15)
    a.step()
    assert a.members() == {A}
    moved = gate.concerned(frozenset({A, B}), frozenset({A}), keys)
    assert set(moved) == set(b_apps)
    gate.handing.add(moved)
    # ... a pass that comes before the handover leaves them to it
    _, stored = record_of(adapter, b_apps[0])
    assert gate.admit(b_apps[0], stored, write(adapter), orphan=False) == Admission(False)
    handover.take(moved)
    handover.close()

    # Then a claimed every one of them, once, and they are due for their passes
    for key in b_apps:
        assert record_of(adapter, key)[0].shard == ShardClaim(A, 2)
    assert gate.claims == dict.fromkeys(b_apps, 2) and gate.moves == len(b_apps)
    assert sorted(due) == sorted(b_apps) and not gate.handing
    # ... told by an event on each of the first ten apps' records, and one on a's member Lease
    claimed = [e for e in adapter.list_events("shop") if e.get("reason") == "ShardClaimed"]
    assert len(claimed) == EVENTS_PER_HANDOVER < len(b_apps)
    assert all(f"claimed by {A} from {B} (no longer a live member)" in e["message"] for e in claimed)
    (summary,) = [e for e in adapter.list_events(NAMESPACE) if e.get("reason") == "ShardClaimed"]
    assert summary["involvedObject"]["name"] == member_lease_name(A)
    assert summary["message"].startswith(f"{len(b_apps) - EVENTS_PER_HANDOVER} more apps claimed by {A}")
    # ... and a pass over one acts on the claim without writing it again
    _, stored = record_of(adapter, b_apps[0])
    assert gate.admit(b_apps[0], stored, write(adapter), orphan=False).act
    assert record_of(adapter, b_apps[0])[1].resource_version == stored.resource_version


def b_gone(adapter: Cluster, fake_clock: FakeClock, apps: int) -> tuple[ShardGate, list[AppKey]]:
    """Given a and b, each app's record claimed by its owner, then b's member Lease expired: a's
    gate (its membership sees a alone), and the apps b had."""
    a, b = member(adapter, A, fake_clock), member(adapter, B, fake_clock)
    b.step()
    a.step()
    keys = [AppKey("shop", f"app-{i}") for i in range(apps)]
    for key in keys:
        claim = ShardClaim(owner_of(str(key), [A, B]) or "", 1)
        adapter.write_app_record(key.namespace, key.name, AppRecord(shard=claim).to_json(), None)
    fake_clock.advance(15)
    a.step()
    assert a.members() == {A}
    return ShardGate(a, adapter, fake_clock), [key for key in keys if owner_of(str(key), [A, B]) == B]


def test_a_failover_hands_apps_to_their_passes_before_any_claim_is_written(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    gate, b_apps = b_gone(adapter, fake_clock, 40)
    seen_when_due: list[tuple[AppKey, ShardClaim | None, bool]] = []

    def due(keys: Any) -> None:  # what a pass would find when the apps become due
        for key in keys:
            seen_when_due.append((key, record_of(adapter, key)[0].shard, gate.holds(key)))

    handover = Handover(gate, adapter, write(adapter), due)
    handover.start()

    # When a's handover takes b's apps
    handover.take(b_apps)
    handover.close()

    # Then they were due while their records still named b: a held them (adopted), unwritten
    assert sorted(k for k, _, _ in seen_when_due) == sorted(b_apps)
    assert all(claim == ShardClaim(B, 1) and held for _, claim, held in seen_when_due)
    # ... and afterwards every record names a, at the next epoch, each written once
    for key in b_apps:
        assert record_of(adapter, key)[0].shard == ShardClaim(A, 2)
    assert gate.claims == dict.fromkeys(b_apps, 2) and not gate.unwritten
    assert gate.moves == len(b_apps)
    claimed = [e for e in adapter.list_events("shop") if e.get("reason") == "ShardClaimed"]
    assert all(f"claimed by {A} from {B} (no longer a live member)" in e["message"] for e in claimed)


def test_the_step_of_an_adopted_app_writes_its_claim_and_the_handover_does_not_again(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    gate, b_apps = b_gone(adapter, fake_clock, 20)
    key = b_apps[0]
    record, stored = record_of(adapter, key)
    told: list[tuple[str, str]] = []

    def tell(_key: AppKey, _written: StoredRecord, reason: str, message: str) -> None:
        told.append((reason, message))

    # Given a adopted the app ahead of its pass: nothing written
    assert gate.admit(key, stored, write(adapter), orphan=False, ahead=tell).act
    assert record_of(adapter, key)[1].resource_version == stored.resource_version and not told
    # ... and its pass acts on it without writing either
    assert gate.admit(key, stored, write(adapter), orphan=False).act
    assert record_of(adapter, key)[1].resource_version == stored.resource_version

    # When the step writes the record it read (as it would after a rollout step)
    step = gate.before_write(key, record, stored.resource_version)
    assert step.shard == ShardClaim(A, 2)  # the step's write is the claim
    write(adapter)(key, step, stored.resource_version)

    # Then the handover's claim from its older read conflicts; from a new read, it only tells
    with pytest.raises(ConflictError):
        gate.settle(key, stored, write(adapter), tell)
    _, current = record_of(adapter, key)
    assert gate.settle(key, current, write(adapter), tell)
    assert record_of(adapter, key)[1].resource_version == current.resource_version
    assert told == [("ShardClaimed", f"claimed by {A} from {B} (no longer a live member), shard epoch 2")]
    assert gate.claims == {key: 2} and not gate.unwritten and gate.moves == 1
    # ... and a record the replica holds and claimed is written as it is (a release keeps its word)
    released = AppRecord(shard=ShardClaim(A, 2, released=True))
    assert gate.before_write(key, released, current.resource_version) == released


def test_an_adopted_app_whose_record_another_replica_claimed_is_let_go(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    gate, b_apps = b_gone(adapter, fake_clock, 20)
    key = b_apps[0]
    _, stored = record_of(adapter, key)
    assert gate.admit(key, stored, write(adapter), orphan=False, ahead=lambda *_: None).act

    # When another replica claimed the record meanwhile (a view of the members that differed)
    adapter.write_app_record(
        key.namespace, key.name, AppRecord(shard=ShardClaim("c_3", 2)).to_json(), stored.resource_version
    )
    member(adapter, "c_3", fake_clock).step()  # ... and c is live to a as well
    gate.membership.step()
    _, current = record_of(adapter, key)

    # Then a writes no claim over it and lets the app go (its pass decides: c's app, or a's once
    # c released it)
    assert not gate.settle(key, current, write(adapter), lambda *_: None)
    assert record_of(adapter, key)[0].shard == ShardClaim("c_3", 2)
    assert key not in gate.claims and not gate.unwritten and not gate.holds(key)


def test_a_handover_settles_claims_that_steps_wrote_or_whose_record_went_away(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    gate, b_apps = b_gone(adapter, fake_clock, 40)
    due: list[AppKey] = []
    handover = Handover(gate, adapter, write(adapter), due.extend)
    stepped, gone, rest = b_apps[0], b_apps[1], b_apps[2:]

    # Given a's handover adopted b's apps (nothing written yet)
    adopted = handover.claim(b_apps)
    assert set(adopted) == set(b_apps) and set(gate.unwritten) == set(b_apps)
    # ... then one app's step wrote its record (the claim with it), and one app's record was deleted
    record, stored = record_of(adapter, stepped)
    version = stored.resource_version
    write(adapter)(stepped, gate.before_write(stepped, record, version), version)
    adapter.delete_app_record(gone.namespace, gone.name)

    # When the handover writes the claims from what it read
    handover.settle(adopted)

    # Then the stepped app's claim stands as its step wrote it, told like the others
    assert record_of(adapter, stepped)[0].shard == ShardClaim(A, 2)
    assert all(record_of(adapter, key)[0].shard == ShardClaim(A, 2) for key in rest)
    claimed = [e for e in adapter.list_events("shop") if e.get("reason") == "ShardClaimed"]
    summary = [e for e in adapter.list_events(NAMESPACE) if e.get("reason") == "ShardClaimed"]
    assert len(claimed) == EVENTS_PER_HANDOVER
    assert summary[0]["message"].startswith(f"{len(b_apps) - 1 - EVENTS_PER_HANDOVER} more apps claimed")
    # ... and the app whose record went away is let go and due, for its pass to decide
    assert gone not in gate.claims and due == [gone]
    assert not gate.unwritten and gate.moves == len(b_apps) - 1


def test_a_handover_takes_the_moved_apps_records_from_the_watch_cache_even_when_it_lags(
    adapter: Cluster, embedded_cluster: LocalCluster, fake_clock: FakeClock
) -> None:
    gate, b_apps = b_gone(adapter, fake_clock, 40)
    cache = WatchCache()
    cache.replace_records("shop", adapter.list_app_records("shop"))  # what a's record watch listed
    assert cache.records("shop") is not None
    # ... and one app's record was written since, its watch event not in yet: the cache lags
    lagging = b_apps[0]
    record, stored = record_of(adapter, lagging)
    edited = dataclasses.replace(record, deploy_requested=True)  # as `gitdeploy deploy` asks
    adapter.write_app_record("shop", lagging.name, edited.to_json(), stored.resource_version)
    due: list[AppKey] = []
    handover = Handover(gate, adapter, write(adapter), due.extend, cache=cache)
    before = embedded_cluster.stats.snapshot()

    # When a's handover takes b's apps
    handover.start()
    handover.take(b_apps)
    handover.close()

    # Then it read no record to admit them: the one read is the lagging record's, after its
    # claim from the cache's version conflicted
    requests = Counter(embedded_cluster.stats.snapshot()) - Counter(before)
    assert requests[("list", "configmaps")] == 0 and requests[("get", "configmaps")] == 1
    # ... and every record names a at the next epoch, each written once (the edit is kept)
    assert all(record_of(adapter, key)[0].shard == ShardClaim(A, 2) for key in b_apps)
    assert record_of(adapter, lagging)[0].deploy_requested
    assert requests[("update", "configmaps")] == len(b_apps) + 1  # the lagging one's conflict too
    assert sorted(due) == sorted(b_apps) and not gate.unwritten and gate.moves == len(b_apps)


def test_a_pass_that_read_a_record_before_its_claim_was_written_acts_on_it_read_anew(
    adapter: Cluster, embedded_cluster: LocalCluster, fake_clock: FakeClock
) -> None:
    gate, b_apps = b_gone(adapter, fake_clock, 20)
    key = b_apps[0]
    _, listed = record_of(adapter, key)  # what a pass listed before a's handover wrote the claim
    handover = Handover(gate, adapter, write(adapter), lambda _keys: None)
    handover.settle(handover.claim(b_apps))
    assert record_of(adapter, key)[0].shard == ShardClaim(A, 2)
    before = embedded_cluster.stats.snapshot()

    # When the pass admits the app on the record it listed (naming b, at epoch 1)
    admitted = gate.admit(key, listed, write(adapter), orphan=False)

    # Then its claim from that read conflicts, and it acts on the record read anew: a's claim
    # stands as the handover wrote it, and the pass does not fail on a conflict
    _, current = record_of(adapter, key)
    assert admitted.act and admitted.stored is not None
    assert admitted.stored.resource_version == current.resource_version
    assert AppRecord.from_json(current.payload).shard == ShardClaim(A, 2)
    requests = Counter(embedded_cluster.stats.snapshot()) - Counter(before)
    # ... after one write that conflicted and one read (the other read is this test's, above)
    assert (requests[("update", "configmaps")], requests[("get", "configmaps")]) == (1, 2)
    assert gate.claims[key] == 2 and gate.holds(key)
