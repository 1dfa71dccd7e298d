"""A ``run --sharding`` replica's watches follow the objects of its own shards, and move with
them: real watches over HTTP against the embedded cluster, the shards set by hand."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.watcher import watch_records, watch_rollouts
from gitdeploy.core.sharding import SHARD_LABEL, shard_of
from tests.fixtures.rswatch import eventually, settle

pytestmark = pytest.mark.usefixtures("isolated_git_config")  # git without the machine's configuration

APPS = [f"app-{n}" for n in range(40)]


def shard(app: str) -> str:
    return shard_of(f"shop/{app}")


@pytest.fixture
def shards(controller: Controller, fake_clock: FakeClock) -> Iterator[list[frozenset[str]]]:
    """Web settled, 40 more app records in shop (app-0's without its shard label, as an earlier
    gitdeploy wrote it), and the controller's watches running for the shards the test sets."""
    settle(controller, fake_clock)
    cluster = controller.cluster
    for app in APPS:
        cluster.write_app_record("shop", app, "{}", None)
    unlabel = {"metadata": {"labels": {SHARD_LABEL: None}}}
    cluster.kube.config_maps.patch("shop", "gitdeploy.app-0", unlabel).read()
    current = [frozenset(map(shard, APPS[:20])) | {shard("web")}]
    controller.watched_shards = lambda: current[0]
    stop = threading.Event()
    watch_records(controller, stop, lambda: None)
    watch_rollouts(controller, stop, lambda: None)
    yield current
    stop.set()


def held(controller: Controller, shards: frozenset[str]) -> list[str] | None:
    records = controller.watch_cache.records("shop", shards)
    return None if records is None else sorted(records)


def held_replica_sets(controller: Controller) -> list[str]:
    contents = controller.watch_cache.contents("shop", partial=True)
    return [] if contents is None else sorted(rs.app for rs in contents[0])


def of(shards: frozenset[str]) -> list[str]:
    return sorted(app for app in [*APPS, "web"] if shard(app) in shards)


def watches_of_records() -> int:
    return sum(thread.name == "watch-records-shop" for thread in threading.enumerate())


def test_a_replicas_watches_follow_its_shards_alone_and_move_with_them(
    controller: Controller, shards: list[frozenset[str]]
) -> None:
    # Given a replica that owns the shards of app-0 to app-19 and web's
    first = shards[0]

    # Then its watches hold the records of those apps alone (app-0's too: labelled first) and
    # web's ReplicaSet; a reader of the whole namespace is told the cache does not hold it
    assert eventually(lambda: held(controller, first) == of(first))
    assert "app-0" in of(first)
    assert eventually(lambda: held_replica_sets(controller) == ["web"])
    assert held(controller, frozenset(map(shard, APPS))) is None
    assert controller.watch_cache.contents("shop") is None

    # When its shards change (a member joined or left): the others', web's not among them
    second = frozenset(map(shard, APPS[20:])) - {shard("web")}
    shards[0] = second

    # Then its watches list the new shards' objects, and only those
    assert eventually(lambda: held(controller, second) == of(second), 15)
    assert eventually(lambda: held_replica_sets(controller) == [], 15)
    assert held(controller, first - second) is None

    # When a record of a shard it no longer follows changes
    left = next(app for app in of(first - second) if app != "web")
    stored = controller.cluster.read_app_record("shop", left)
    assert stored is not None
    controller.cluster.write_app_record("shop", left, '{"deployRequested": true}', stored.resource_version)

    # Then the old watch ends at that event, and the cache holds the new shards' records alone
    assert eventually(lambda: watches_of_records() == 1)
    assert held(controller, second) == of(second)
