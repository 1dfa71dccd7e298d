"""Sharding rules (gitdeploy.core.sharding): rendezvous ownership, live members, claim and handoff."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitdeploy.core import sharding
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.lease import LeaseSpec
from gitdeploy.core.sharding import (
    SHARDS,
    STALE_AFTER,
    OwnerLease,
    SeenMember,
    ShardAct,
    ShardClaim,
    ShardDecision,
    covers,
    decide_shard,
    live_members,
    member_lease_name,
    moved,
    owner_leases,
    owner_of,
    shard_of,
    shard_selector,
    shards_of,
    stale_members,
    weight,
)

A, B, C = "a_1", "b_2", "c_3"
ALL = frozenset({A, B, C})


@pytest.mark.parametrize(
    ("claim", "identity", "owner", "live", "expected"),
    [
        pytest.param(None, A, A, ALL, ShardDecision(ShardAct.CLAIM, ShardClaim(A, 1)), id="no claim, mine"),
        pytest.param(None, A, B, ALL, ShardDecision(ShardAct.IGNORE), id="no claim, theirs"),
        pytest.param(ShardClaim(A, 2), A, A, ALL, ShardDecision(ShardAct.ACT), id="claimed by me, mine"),
        pytest.param(
            ShardClaim(A, 2),
            A,
            B,
            ALL,
            ShardDecision(ShardAct.RELEASE, ShardClaim(A, 2, released=True)),
            id="claimed by me, theirs now: release (same epoch)",
        ),
        pytest.param(
            ShardClaim(A, 2, released=True), A, B, ALL, ShardDecision(ShardAct.IGNORE), id="released, theirs"
        ),
        pytest.param(
            ShardClaim(A, 2, released=True),
            A,
            A,
            ALL,
            ShardDecision(ShardAct.CLAIM, ShardClaim(A, 3)),
            id="I released it, mine again: claim anew (epoch + 1)",
        ),
        pytest.param(
            ShardClaim(B, 7), A, A, ALL, ShardDecision(ShardAct.WAIT), id="old owner live, not released: wait"
        ),
        pytest.param(
            ShardClaim(B, 7, released=True),
            A,
            A,
            ALL,
            ShardDecision(ShardAct.CLAIM, ShardClaim(A, 8)),
            id="old owner released: claim",
        ),
        pytest.param(
            ShardClaim(B, 7),
            A,
            A,
            frozenset({A, C}),
            ShardDecision(ShardAct.CLAIM, ShardClaim(A, 8)),
            id="old owner's Lease expired: claim",
        ),
        pytest.param(
            ShardClaim(B, 7), C, A, ALL, ShardDecision(ShardAct.IGNORE), id="a third member: ignore"
        ),
    ],
)
def test_decide_shard(
    claim: ShardClaim | None, identity: str, owner: str, live: frozenset[str], expected: ShardDecision
) -> None:
    assert decide_shard(claim, identity=identity, owner=owner, live=live) == expected


@pytest.mark.parametrize(
    ("seen", "now", "expected"),
    [
        pytest.param([], 0.0, frozenset(), id="nobody"),
        pytest.param([SeenMember(LeaseSpec(A, 15), 100.0)], 114.9, frozenset({A}), id="0.1 s before expiry"),
        pytest.param([SeenMember(LeaseSpec(A, 15), 100.0)], 115.0, frozenset(), id="expired on my clock"),
        pytest.param(
            [SeenMember(LeaseSpec(A, 15, renew_time=1.0), 500.0)],
            501.0,
            frozenset({A}),
            id="renewTime long past but seen changing just now: live (no trust in other clocks)",
        ),
        pytest.param([SeenMember(LeaseSpec("", 1), 100.0)], 100.0, frozenset(), id="released"),
    ],
)
def test_live_members(seen: list[SeenMember], now: float, expected: frozenset[str]) -> None:
    assert live_members(seen, now) == expected


def test_weight_is_stable_across_processes() -> None:
    # blake2b, not hash(): the same on every replica (hash() of str is salted per process)
    assert weight("a", "shop/web") == 15404821658235888624
    assert member_lease_name("x").startswith("gitdeploy-member-") and len(member_lease_name("x")) == 33


members = st.lists(
    st.text("abcdefghij_.0123456789", min_size=1, max_size=12), min_size=1, max_size=8, unique=True
)
app_keys = st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=60, unique=True)


def test_the_shard_of_an_app_is_stable_across_processes() -> None:
    assert (shard_of("shop/web"), shard_of("shop/db")) == ("294", "600")


@given(members, app_keys)
def test_apps_of_one_shard_have_one_owner(fleet: list[str], keys: list[str]) -> None:
    owners: dict[str, str | None] = {}
    for key in keys:
        assert owners.setdefault(shard_of(key), owner_of(key, fleet)) == owner_of(key, fleet)


def test_apps_spread_over_every_shard_and_members_get_about_as_many() -> None:
    keys = [f"ns-{i % 12}/app-{i}" for i in range(30_000)]
    shards = [shard_of(key) for key in keys]
    assert set(shards) == {str(n) for n in range(SHARDS)}
    fleet = [f"replica-{i}" for i in range(3)]
    counts = {member: 0 for member in fleet}
    for key in keys:
        owner = owner_of(key, fleet)
        assert owner is not None
        counts[owner] += 1
    assert all(abs(count / len(keys) - 1 / 3) < 0.05 for count in counts.values()), counts


@given(members, app_keys)
def test_a_member_watches_exactly_the_shards_of_the_apps_it_owns(fleet: list[str], keys: list[str]) -> None:
    live = frozenset(fleet)
    watched = {member: shards_of(member, live) for member in live}
    for key in keys:
        owner = owner_of(key, live)
        for member, shards in watched.items():
            selected = shards is None or shard_of(key) in shards
            assert selected == (member == owner) or len(live) == 1
    if len(live) > 1:  # every shard watched by exactly one member
        assert sorted(shard for shards in watched.values() for shard in shards or ()) == sorted(
            map(str, range(SHARDS))
        )


def test_a_lone_member_or_one_not_yet_live_watches_every_shard() -> None:
    assert shards_of("a", frozenset({"a"})) is None
    assert shards_of("a", frozenset({"b", "c"})) is None  # its own Lease not seen yet: all
    shards = shards_of("a", frozenset({"a", "b", "c"}))
    assert shards is not None and 0.28 < len(shards) / SHARDS < 0.39


@pytest.mark.parametrize(
    ("held", "wanted", "expected"),
    [
        (None, None, True),
        (None, frozenset({"1"}), True),
        (frozenset({"1", "2"}), frozenset({"2"}), True),
        (frozenset({"1", "2"}), frozenset(), True),
        (frozenset({"1"}), frozenset({"1", "2"}), False),
        (frozenset({"1"}), None, False),
    ],
)
def test_covers(held: frozenset[str] | None, wanted: frozenset[str] | None, expected: bool) -> None:
    assert covers(held, wanted) is expected


def test_a_shard_selector_names_the_shards_in_order() -> None:
    selector = shard_selector("app=web", frozenset(map(str, range(10, 0, -3))))
    assert selector == "app=web,gitdeploy.io/shard in (1,4,7,10)"
    assert shard_selector("app=web", None) == "app=web"


@given(members, app_keys)
def test_every_app_has_exactly_one_owner_among_the_members(fleet: list[str], keys: list[str]) -> None:
    for key in keys:
        owner = owner_of(key, fleet)
        assert owner in fleet
        assert owner_of(key, reversed(fleet)) == owner  # order of the members does not matter


@given(members, app_keys, st.text("klmnop", min_size=1, max_size=6))
def test_a_member_joining_moves_only_apps_to_it(fleet: list[str], keys: list[str], joiner: str) -> None:
    before = frozenset(fleet)
    after = before | {joiner}
    for key in moved(before, after, keys):
        assert owner_of(key, after) == joiner


@given(members.filter(lambda f: len(f) >= 2), app_keys, st.data())
def test_a_member_leaving_moves_only_its_apps(fleet: list[str], keys: list[str], data: st.DataObject) -> None:
    leaver = data.draw(st.sampled_from(fleet))
    before = frozenset(fleet)
    after = before - {leaver}
    for key in moved(before, after, keys):
        assert owner_of(key, before) == leaver
    for key in keys:
        if owner_of(key, before) != leaver:
            assert owner_of(key, after) == owner_of(key, before)


@settings(max_examples=20)
@given(st.integers(min_value=2, max_value=6))
def test_a_joining_member_takes_about_one_in_n_of_the_apps(n: int) -> None:
    keys = [f"ns-{i % 7}/app-{i}" for i in range(3000)]
    before = frozenset(f"replica-{i}" for i in range(n))
    after = before | {"replica-new"}
    share = len(moved(before, after, keys)) / len(keys)
    assert abs(share - 1 / (n + 1)) < 0.05, share


@given(st.sampled_from([None, ShardClaim(A, 1), ShardClaim(B, 4), ShardClaim(C, 2, released=True)]), members)
def test_of_two_replicas_with_one_view_at_most_one_acts_or_claims(
    claim: ShardClaim | None, fleet: list[str]
) -> None:
    live = frozenset(fleet)
    for key in ("shop/web", "shop/api", "db/pg"):
        owner = owner_of(key, live)
        acting = [
            m
            for m in live
            if decide_shard(claim, identity=m, owner=owner, live=live).act in (ShardAct.ACT, ShardAct.CLAIM)
        ]
        assert len(acting) <= 1
        assert not acting or acting == [owner]


@given(st.sampled_from([ShardClaim(A, 1), ShardClaim(B, 4), ShardClaim(C, 2, released=True)]))
def test_a_claim_always_raises_the_epoch(claim: ShardClaim) -> None:
    for identity in (A, B, C):
        decision = decide_shard(claim, identity=identity, owner=identity, live=frozenset({identity}))
        if decision.act is ShardAct.CLAIM:
            assert decision.write is not None and decision.write.epoch == claim.epoch + 1


@pytest.mark.parametrize(
    ("seen", "now", "expected"),
    [
        pytest.param(
            {"m": SeenMember(LeaseSpec(A, 15), 100.0)}, 249.0, [], id="unchanged 149 s of 150: kept"
        ),
        pytest.param({"m": SeenMember(LeaseSpec(A, 15), 100.0)}, 250.0, ["m"], id="150 s: deleted"),
        pytest.param({"m": SeenMember(LeaseSpec(A, 3), 100.0)}, 130.0, ["m"], id="its own duration counts"),
        pytest.param({"m": SeenMember(LeaseSpec(A, 15), 100.0)}, 116.0, [], id="just expired: kept"),
        pytest.param({"m": SeenMember(LeaseSpec("", 1), 100.0)}, 110.0, ["m"], id="released: after 10 s"),
        pytest.param({"m": SeenMember(LeaseSpec(A, 0), 100.0)}, 109.0, [], id="duration 0 counts as 1 s"),
        pytest.param(
            {"z": SeenMember(LeaseSpec(A, 1), 0.0), "y": SeenMember(LeaseSpec(B, 1), 0.0)},
            60.0,
            ["y", "z"],
            id="sorted by name",
        ),
    ],
)
def test_stale_members(seen: dict[str, SeenMember], now: float, expected: list[str]) -> None:
    assert stale_members(seen, now) == expected


LIVE, EXPIRED, MISSING = OwnerLease.LIVE, OwnerLease.EXPIRED, OwnerLease.MISSING


@pytest.mark.parametrize(
    ("owners", "members", "now", "expected"),
    [
        pytest.param([A], [LeaseSpec(A, 15, renew_time=100.0)], 114.9, {A: LIVE}, id="renewed 14.9 s ago"),
        pytest.param([A], [LeaseSpec(A, 15, renew_time=100.0)], 115.0, {A: EXPIRED}, id="15 s: expired"),
        pytest.param(
            [A], [LeaseSpec(A, 15, renew_time=100.0)], 90.0, {A: LIVE}, id="renewed ahead of my clock"
        ),
        pytest.param([A], [LeaseSpec(A, 15)], 1e9, {A: LIVE}, id="no renewTime: live"),
        pytest.param(
            [A, B], [LeaseSpec(A, 15, renew_time=100.0)], 101.0, {A: LIVE, B: MISSING}, id="no Lease of B"
        ),
        pytest.param(
            [A],
            [LeaseSpec(A, 15, renew_time=10.0), LeaseSpec(A, 15, renew_time=100.0)],
            101.0,
            {A: LIVE},
            id="two Leases of one holder: the live one counts",
        ),
        pytest.param(
            [A], [LeaseSpec(C, 15, renew_time=100.0)], 101.0, {A: MISSING}, id="another member's Lease only"
        ),
        pytest.param([A], [], 101.0, {}, id="no Lease at all: unknown"),
        pytest.param([A], [LeaseSpec("", 15, renew_time=1.0)], 101.0, {}, id="a released Lease names nobody"),
    ],
)
def test_owner_leases(
    owners: list[str], members: list[LeaseSpec], now: float, expected: dict[str, OwnerLease]
) -> None:
    assert owner_leases(owners, members, now) == expected


@given(
    st.integers(min_value=0, max_value=3600),
    st.floats(min_value=0, max_value=1e6),
    st.floats(min_value=0, max_value=1e6),
)
def test_a_stale_member_is_never_a_live_one(duration: int, observed_at: float, later: float) -> None:
    member = SeenMember(LeaseSpec(A, duration), observed_at)
    now = observed_at + later
    if stale_members({"m": member}, now):
        assert live_members([member], now) == frozenset()
        assert now - observed_at >= STALE_AFTER * duration


def test_docstring_examples() -> None:
    result = doctest.testmod(sharding)
    assert result.attempted > 0 and result.failed == 0


def test_the_app_record_keeps_the_shard_claim_only_when_set() -> None:
    claimed = AppRecord(shard=ShardClaim(A, 3, released=True))
    assert AppRecord.from_json(claimed.to_json()) == claimed
    assert '"shard"' not in AppRecord().to_json()  # records of unsharded runs are unchanged
    assert AppRecord.from_json(AppRecord().to_json()).shard is None
