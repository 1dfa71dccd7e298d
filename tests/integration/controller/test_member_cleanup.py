"""The leader deletes the member Leases that replicas killed without a clean shutdown left behind
(controller/membership.py against the embedded cluster over HTTP, on a fake clock): only after
they went unchanged for ``STALE_AFTER`` × their duration, never a live member's, and a replica
resumed after its Lease was deleted creates it anew and is a member again."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.membership import Membership
from gitdeploy.controller.shards import ShardGate
from gitdeploy.core.lease import LeaseTimings
from gitdeploy.core.models import AppKey
from gitdeploy.core.sharding import STALE_AFTER, member_lease_name
from gitdeploy.errors import ConflictError, TransientError

NAMESPACE = "gitdeploy-system"
TIMINGS = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
A, B, C = "a_1", "b_2", "c_3"
BOUND = STALE_AFTER * 15


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    cluster = Cluster(kube_client, "embedded")
    cluster.ensure_namespace(NAMESPACE)
    return cluster


def member(adapter: Cluster, identity: str, clock: FakeClock, *, leading: bool = False) -> Membership:
    found = Membership(adapter, NAMESPACE, identity, clock, clock, TIMINGS, runs=lambda _pid: True)
    found.leading = lambda: leading
    return found


def lease_of(adapter: Cluster, identity: str) -> Any:
    return adapter.read_lease(NAMESPACE, member_lease_name(identity))


def keep_renewing(clock: FakeClock, seconds: float, *members: Membership) -> None:
    """Move the clock ``seconds`` ahead a retry period at a time, ``members`` renewing each time."""
    for _ in range(int(seconds / TIMINGS.retry_period)):
        clock.advance(TIMINGS.retry_period)
        for m in members:
            m.step()


def test_the_leader_deletes_a_killed_members_lease_after_ten_durations_and_no_one_else_does(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    leader, other, killed = (
        member(adapter, A, fake_clock, leading=True),
        member(adapter, B, fake_clock),
        member(adapter, C, fake_clock),
    )
    killed.step()
    other.step()
    leader.step()  # both see c's Lease as it is now
    other.step()
    assert leader.members() == other.members() == {A, B, C}

    # When c stops renewing (kill -9: it never deletes its own Lease)
    keep_renewing(fake_clock, 2 * 15, leader, other)
    assert leader.members() == other.members() == {A, B}  # expired, not yet deleted
    assert lease_of(adapter, C) is not None
    keep_renewing(fake_clock, BOUND - 2 * 15 - TIMINGS.retry_period, leader, other)
    assert lease_of(adapter, C) is not None  # just under the bound: still there

    # Then the leader deletes it once it went unchanged for ten durations; the others never do
    keep_renewing(fake_clock, TIMINGS.retry_period, other)
    assert lease_of(adapter, C) is not None
    keep_renewing(fake_clock, TIMINGS.retry_period, leader)
    assert lease_of(adapter, C) is None
    # ... and the live members' Leases stay, renewed all along
    assert lease_of(adapter, A) is not None and lease_of(adapter, B) is not None
    leader.step()
    assert leader.members() == {A, B}


def test_a_paused_member_whose_lease_was_deleted_creates_it_anew_and_its_old_step_stays_fenced(
    adapter: Cluster, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    leader, paused = member(adapter, A, fake_clock, leading=True), member(adapter, B, fake_clock)
    paused.step()
    leader.step()
    gate = ShardGate(paused, adapter, fake_clock)
    key = AppKey("shop", "web")
    assert gate.admit(key, None, lambda *_: pytest.fail("no write"), orphan=False).act
    term = paused.term

    # When b is paused (SIGSTOP) long enough for the leader to delete its Lease
    keep_renewing(fake_clock, BOUND + TIMINGS.retry_period, leader)
    assert lease_of(adapter, B) is None

    # Then on resume its first renewal finds its Lease gone and creates it anew (no error)
    caplog.set_level(logging.INFO, logger="gitdeploy")
    paused.step()
    assert lease_of(adapter, B) is not None and lease_of(adapter, B).spec.holder == B
    assert paused.fresh() and paused.term == term + 1
    # ... and says that it was away, for how long, and that it acted on nothing meanwhile
    away = BOUND + TIMINGS.retry_period  # the clock moved on while it was paused
    assert f"renewed again after {away:.0f} s, past the 10 s renew deadline" in caplog.text
    assert "it acted on no app meanwhile" in caplog.text
    # ... the step it was in when paused writes nothing
    with pytest.raises(TransientError, match="not renewed within"):
        gate.fence(key)
    # ... and the others count it as a member again at their next renewal
    leader.step()
    assert leader.members() == paused.members() == {A, B}
    keep_renewing(fake_clock, BOUND + TIMINGS.retry_period, leader, paused)
    assert lease_of(adapter, B) is not None  # renewed all along: never deleted


def test_a_delete_naming_an_old_resource_version_leaves_a_renewed_lease(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    """What makes the leader's delete safe against a member renewing at that very moment."""
    b = member(adapter, B, fake_clock)
    b.step()
    seen = lease_of(adapter, B)
    fake_clock.advance(TIMINGS.retry_period)
    b.step()
    with pytest.raises(ConflictError):
        adapter.delete_lease(NAMESPACE, member_lease_name(B), seen.resource_version)
    assert lease_of(adapter, B) is not None
