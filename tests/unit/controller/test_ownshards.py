"""The shards a sharded replica's watches follow (OwnShards): its own among the live members,
kept while its Lease lapsed, and grown only once a handover is done."""

from __future__ import annotations

from dataclasses import dataclass, field

from gitdeploy.controller.shards import OwnShards
from gitdeploy.core.sharding import shards_of


@dataclass
class Seen:
    identity: str = "a"
    live: frozenset[str] = field(default_factory=lambda: frozenset({"a"}))

    def members(self) -> frozenset[str]:
        return self.live


def test_a_replica_follows_its_shards_among_the_members_as_they_come_and_go() -> None:
    seen = Seen()
    own = OwnShards(seen)
    assert own() is None  # alone: every app
    seen.live = frozenset({"a", "b", "c"})
    assert own() == shards_of("a", seen.live)
    seen.live = frozenset({"a", "b"})
    assert own() == shards_of("a", seen.live)


def test_a_replica_whose_lease_lapsed_keeps_following_what_it_did() -> None:
    seen = Seen(live=frozenset({"a", "b", "c"}))
    own = OwnShards(seen)
    three = own()
    seen.live = frozenset({"b", "c"})  # its own Lease not fresh: not among the members it sees
    assert own() == three
    seen.live = frozenset({"a", "b"})
    assert own() == shards_of("a", seen.live)


def test_more_shards_wait_for_the_handover_and_fewer_do_not() -> None:
    seen, busy = Seen(live=frozenset({"a", "b", "c"})), [True]
    own = OwnShards(seen, lambda: busy[0])
    three = own()
    assert three is not None
    seen.live = frozenset({"a", "b"})  # c left: a gets more shards once its handover is done
    assert own() == three
    busy[0] = False
    two = own()
    assert two is not None and two > three
    busy[0] = True
    seen.live = frozenset({"a", "b", "d"})  # d joined: a gives shards up at once
    fewer = own()
    assert fewer == shards_of("a", seen.live) and fewer is not None and fewer < two
    seen.live = frozenset({"a"})  # alone again: every app, once the handover is done
    assert own() == fewer
    busy[0] = False
    assert own() is None
