"""The apps-by-state counts of a watch cache, worked out again only for the apps that changed
(:class:`~gitdeploy.controller.inspect.AppTally`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from kubernetes import client

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.inspect import AppTally, app_views, count_app_states, watched_app_views
from gitdeploy.controller.watchcache import WatchCache
from gitdeploy.core.canarystate import (
    CANARY_PAUSED_AT_ANNOTATION,
    CANARY_STEP_ANNOTATION,
    CANARY_STEPS_ANNOTATION,
)
from gitdeploy.core.history.records import AppRecord, SyncStatus, load_record
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import ObservedReplicaSet, StoredRecord
from gitdeploy.core.scaling.replicasets import ReplicaSetState

NO_CLUSTER = Cluster(client.ApiClient(), "unused")  # never asked: the cache holds what is counted


def replica_set(app: str, version: str, ready: int = 2) -> ObservedReplicaSet:
    name = f"{app}-abc"
    state = ReplicaSetState(name, "abc", 1, 1.0, 2, 2, ready, ready)
    return ObservedReplicaSet("shop", app, state, resource_version=version)


def record(app: str, version: str, sync: str = "Synced", health: str = "Healthy") -> StoredRecord:
    payload = AppRecord(status=SyncStatus(sync, health)).to_json()
    return StoredRecord("shop", app, payload, version, f"uid-{app}")


def test_a_count_works_out_again_only_the_apps_whose_objects_changed() -> None:
    cache = WatchCache()
    cache.replace_replica_sets("shop", [replica_set("web", "1"), replica_set("api", "2")])
    cache.replace_records("shop", [record("web", "3"), record("api", "4"), record("db", "5", "Unknown")])
    loaded: list[str] = []

    def load(stored: StoredRecord) -> AppRecord:
        loaded.append(stored.app)
        return load_record(stored.namespace, stored.app, stored.payload)

    held = cache.contents("shop")
    assert held is not None
    tally = AppTally.of_states()

    # Given a first count, which works out every app
    first = tally.tally("shop", held, load)
    assert sorted(loaded) == ["api", "db", "web"]
    assert sorted(first) == [("Synced", "Healthy", False)] * 2 + [("Unknown", "Healthy", False)]

    # When nothing changed, the next count works nothing out again
    loaded.clear()
    assert sorted(tally.tally("shop", held, load)) == sorted(first) and loaded == []

    # When web's ReplicaSet loses its ready pods and api's record is replaced (and db is gone)
    cache.replica_set_changed("MODIFIED", replica_set("web", "6", ready=0))
    cache.record_changed("MODIFIED", record("api", "7", "OutOfSync", "Progressing"))
    cache.record_changed("DELETED", record("db", "8"))
    held = cache.contents("shop")
    assert held is not None
    states = tally.tally("shop", held, load)

    # Then those two are worked out again, and the counts are what a count from nothing gives
    assert sorted(loaded) == ["api", "web"]
    fresh = count_app_states(NO_CLUSTER, ["shop"], cache)
    counted = count_app_states(NO_CLUSTER, ["shop"], cache, tally)
    assert counted == fresh and fresh.sync == {"Synced": 1, "OutOfSync": 1}
    assert sorted(states) == [("OutOfSync", "Progressing", False), ("Synced", "Healthy", False)]


def test_an_object_of_unknown_version_is_worked_out_at_every_count() -> None:
    cache = WatchCache()
    cache.replace_replica_sets("shop", [replace(replica_set("web", ""), resource_version="")])
    cache.replace_records("shop", [record("web", "1")])
    held = cache.contents("shop")
    assert held is not None
    loaded: list[str] = []

    def load(stored: StoredRecord) -> AppRecord:
        loaded.append(stored.app)
        return load_record(stored.namespace, stored.app, stored.payload)

    tally = AppTally.of_states()
    tally.tally("shop", held, load)
    tally.tally("shop", held, load)
    assert loaded == ["web", "web"]


def test_a_sharded_replica_counts_only_the_apps_it_holds() -> None:
    cache = WatchCache()
    cache.replace_replica_sets("shop", [replica_set("web", "1"), replica_set("api", "2", ready=0)])
    cache.replace_records("shop", [record("web", "3"), record("api", "4", "OutOfSync", "Progressing")])
    whole = count_app_states(NO_CLUSTER, ["shop"], cache)
    # Given two replicas, one holding web and one api, When each counts (with a tally and without)
    counts = []
    for app in ("web", "api"):
        only = [AppKey("shop", app)]
        counted = count_app_states(NO_CLUSTER, ["shop"], cache, AppTally.of_states(), only)
        assert counted == count_app_states(NO_CLUSTER, ["shop"], cache, None, only)
        counts.append(counted)
    # Then each counts its own app alone, and the two add up to the count of every app
    assert [sum(c.sync.values()) for c in counts] == [1, 1]
    assert counts[0].sync == {"Synced": 1} and counts[1].sync == {"OutOfSync": 1}
    web, api = counts
    assert Counter(web.sync) + Counter(api.sync) == whole.sync
    assert Counter(web.health) + Counter(api.health) == whole.health


def test_the_views_of_a_tally_are_those_worked_out_afresh_and_kept_while_nothing_changed() -> None:
    # Given a watch cache of three apps, read once through a tally (as the dashboard reads it)
    cache = WatchCache()
    cache.replace_replica_sets("shop", [replica_set("web", "1"), replica_set("api", "2")])
    cache.replace_records("shop", [record("web", "3"), record("api", "4"), record("db", "5", "Unknown")])
    tally = AppTally.of_views()
    first = watched_app_views(NO_CLUSTER, ["shop"], cache, tally)
    assert first == watched_app_views(NO_CLUSTER, ["shop"], cache)
    assert [view.key for view in first] == [AppKey("shop", name) for name in ("api", "db", "web")]

    # When nothing changed, the views are those it worked out before
    again = watched_app_views(NO_CLUSTER, ["shop"], cache, tally)
    assert all(kept is view for kept, view in zip(again, first, strict=True))

    # When api's record changes and web's ReplicaSet loses its pods, those two are worked out again
    cache.record_changed("MODIFIED", record("api", "7", "OutOfSync", "Progressing"))
    cache.replica_set_changed("MODIFIED", replica_set("web", "8", ready=0))
    changed = watched_app_views(NO_CLUSTER, ["shop"], cache, tally)
    assert changed == watched_app_views(NO_CLUSTER, ["shop"], cache)
    assert changed[0].sync == "OutOfSync" and changed[2].ready == 0 and changed[1] is first[1]


def test_a_namespace_where_nothing_changed_is_counted_from_the_last_count() -> None:
    # Given two namespaces of a watch cache, counted once through a tally
    cache = WatchCache()
    for namespace in ("shop", "blog"):
        cache.replace_replica_sets(namespace, [replace(replica_set("web", "1"), namespace=namespace)])
        cache.replace_records(namespace, [replace(record("web", "2"), namespace=namespace)])
    tally = AppTally.of_states()
    first = count_app_states(NO_CLUSTER, ["shop", "blog"], cache, tally)
    shop, blog = cache.changed("shop"), cache.changed("blog")
    assert tally.unchanged("shop", (shop, None)) == [("Synced", "Healthy", False)]

    # When web's record changes in blog alone
    cache.record_changed(
        "MODIFIED", replace(record("web", "3", "OutOfSync", "Progressing"), namespace="blog")
    )

    # Then shop's count stands as it was, blog's is worked out again, and together they are what a
    # count from nothing gives
    assert cache.changed("shop") == shop and cache.changed("blog") > blog
    assert tally.unchanged("blog", (cache.changed("blog"), None)) is None
    counted = count_app_states(NO_CLUSTER, ["shop", "blog"], cache, tally)
    assert counted == count_app_states(NO_CLUSTER, ["shop", "blog"], cache) != first
    assert counted.sync == {"Synced": 1, "OutOfSync": 1}


def test_a_count_of_other_apps_or_of_a_canary_is_worked_out_again() -> None:
    cache = WatchCache()
    cache.replace_replica_sets("shop", [replica_set("web", "1"), replica_set("api", "2", ready=0)])
    cache.replace_records("shop", [record("web", "3"), record("api", "4", "OutOfSync", "Progressing")])
    tally = AppTally.of_states()
    # Given a sharded replica's count of web alone
    web = count_app_states(NO_CLUSTER, ["shop"], cache, tally, [AppKey("shop", "web")])
    # When it holds api as well (a handover), with nothing changed in the cache
    both = count_app_states(
        NO_CLUSTER, ["shop"], cache, tally, [AppKey("shop", "web"), AppKey("shop", "api")]
    )
    # Then api counts too
    assert web.sync == {"Synced": 1} and both.sync == {"Synced": 1, "OutOfSync": 1}


def test_a_namespace_with_a_canary_is_worked_out_at_every_count() -> None:
    # Given web at a canary's timed pause (its line counts the pause down), counted once
    walking = replace(replica_set("web", "1"), annotations=((CANARY_STEPS_ANNOTATION, "1:w25,p30"),))
    tally = AppTally.of_views()
    stamp = (1, None)
    [view] = tally.tally("shop", ([walking], [record("web", "2")]), stamp=stamp)
    assert view.canary
    # Then no count is taken as it stands, though nothing changed
    assert tally.unchanged("shop", stamp) is None


def test_a_canary_seen_through_the_watch_cache_has_its_line() -> None:
    # Given web's canary at its second step, paused (a ReplicaSet as a pass left it)
    walking = replace(
        replica_set("web", "1"),
        annotations=(
            (CANARY_STEPS_ANNOTATION, "1:w25,p"),
            (CANARY_STEP_ANNOTATION, "1:1"),
            (CANARY_PAUSED_AT_ANNOTATION, "1:2026-11-30T08:00:00Z"),
        ),
    )
    stored = record("web", "2", "OutOfSync", "Progressing")
    [as_listed] = app_views([walking], [stored])
    assert as_listed.canary, as_listed
    # When the watch cache holds it
    cache = WatchCache()
    cache.replace_replica_sets("shop", [walking])
    cache.replace_records("shop", [stored])
    # Then the view worked out from the cache is the one from the ReplicaSet as listed
    [as_cached] = watched_app_views(NO_CLUSTER, ["shop"], cache)
    assert (as_cached.canary, as_cached.canary_steady) == (as_listed.canary, as_listed.canary_steady)
