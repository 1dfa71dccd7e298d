"""The app-record watch when the API server has forgotten old versions (410 Gone): it goes on from
the list's resourceVersion, and relists once, never in a loop (real embedded cluster over HTTP,
with a short watch history so that old versions are compacted away)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.listwatch import keep_following
from gitdeploy.controller.watcher import follow_records_once
from gitdeploy.core.observed import StoredRecord
from gitdeploy.localcluster import LocalCluster, WatchWindow
from gitdeploy.localcluster.resources import CONFIGMAPS, NAMESPACES
from tests.fixtures.cluster import api_client_for
from tests.fixtures.waiting import eventually


@pytest.fixture
def forgetful_cluster(tmp_path: Path, fake_clock: FakeClock) -> Iterator[LocalCluster]:
    """A cluster that keeps only the last 10 changes of a resource for watches, holding one app
    record (shop/web) written before 300 other changes."""
    with LocalCluster(
        tmp_path, clock=fake_clock, watch_window=WatchWindow(events=10, fresh_seconds=0)
    ) as cluster:
        cluster.registry.create(NAMESPACES, "", {"metadata": {"name": "shop"}})
        labels = {"gitdeploy.io/record": "true", "gitdeploy.io/app": "web"}
        cluster.registry.create(CONFIGMAPS, "shop", {"metadata": {"name": "gitdeploy.web", "labels": labels}})
        for index in range(300):
            cluster.registry.create(CONFIGMAPS, "default", {"metadata": {"name": f"cm-{index}"}})
        yield cluster


def requests(cluster: LocalCluster, verb: str) -> int:
    return sum(n for (seen_verb, resource), n in cluster.stats.snapshot().items() if seen_verb == verb)


def test_a_restarted_record_watch_goes_on_from_the_lists_version(forgetful_cluster: LocalCluster) -> None:
    api = api_client_for(forgetful_cluster)
    try:
        cluster = Cluster(api, "embedded")
        seen: list[StoredRecord] = []
        forgetful_cluster.stats.reset()
        # When the record watch of shop runs three times in a row (the server ends each after 1 s)
        version = ""
        for _ in range(3):
            version = follow_records_once(cluster, "shop", version, seen.append, timeout_seconds=1)
        # Then it listed once and watched three times from the list's version: never a 410
        assert (requests(forgetful_cluster, "list"), requests(forgetful_cluster, "watch")) == (1, 3)
        assert [s.app for s in seen] == ["web"]
        assert version
    finally:
        api.close()


def test_a_watch_from_a_forgotten_version_relists_once(forgetful_cluster: LocalCluster) -> None:
    api = api_client_for(forgetful_cluster)
    try:
        cluster = Cluster(api, "embedded")
        seen: list[StoredRecord] = []
        forgetful_cluster.stats.reset()
        # Given a watch that resumes from a version the server no longer keeps
        version = follow_records_once(cluster, "shop", "5", seen.append, timeout_seconds=1)
        # Then it ends in 410 Gone and asks for one list
        assert version == ""
        assert (requests(forgetful_cluster, "list"), requests(forgetful_cluster, "watch")) == (0, 1)
        # And the next rounds list once and then only watch
        for _ in range(3):
            version = follow_records_once(cluster, "shop", version, seen.append, timeout_seconds=1)
        assert (requests(forgetful_cluster, "list"), requests(forgetful_cluster, "watch")) == (1, 4)
        assert [s.app for s in seen] == ["web"]
    finally:
        api.close()


def push_out_of_the_window(cluster: LocalCluster, clock: FakeClock, tag: str) -> None:
    """Other namespaces' ConfigMaps change, 75 s apart, until every older version is out of the
    default watch window."""
    window = WatchWindow()
    for index in range(4 * window.events):
        if index % (2 * window.events) == 0:
            clock.advance(window.fresh_seconds + 1)
        cluster.registry.create(CONFIGMAPS, "default", {"metadata": {"name": f"cm-{tag}-{index}"}})


def wait_for_watches(cluster: LocalCluster, more: int) -> None:
    watches = requests(cluster, "watch")
    eventually(lambda: requests(cluster, "watch") >= watches + more, f"{more} more watches")


def test_a_running_record_watch_relists_once_per_slide_of_the_default_window(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    """The loop gitdeploy runs (keep_following), against the default window (as kube-apiserver's
    watch cache): a quiet namespace's watch resumes from its last record's version, which other
    namespaces' ConfigMap changes push out; each time, one 410 and one list, never a storm."""
    with LocalCluster(tmp_path, clock=fake_clock) as embedded:
        embedded.registry.create(NAMESPACES, "", {"metadata": {"name": "shop"}})
        labels = {"gitdeploy.io/record": "true", "gitdeploy.io/app": "web"}
        embedded.registry.create(
            CONFIGMAPS, "shop", {"metadata": {"name": "gitdeploy.web", "labels": labels}}
        )
        api = api_client_for(embedded)
        cluster, stop, seen = Cluster(api, "embedded"), threading.Event(), list[StoredRecord]()

        def follow(version: str, reached: Callable[[str], None]) -> str:
            return follow_records_once(
                cluster, "shop", version, seen.append, timeout_seconds=1, reached=reached
            )

        following = threading.Thread(target=keep_following, args=(stop, "record watch", follow))
        following.start()
        try:
            wait_for_watches(embedded, 2)
            assert requests(embedded, "list") == 1
            # When shop's version is pushed out of the window, twice
            for slide in ("first", "second"):
                lists = requests(embedded, "list")
                push_out_of_the_window(embedded, fake_clock, slide)
                # Then the resumed watch is told 410 and lists once, and goes on watching
                eventually(lambda: requests(embedded, "list") > lists, "a relist")  # noqa: B023
                wait_for_watches(embedded, 2)
                assert requests(embedded, "list") == lists + 1
        finally:
            stop.set()
            following.join(timeout=10)
            api.close()
        assert {s.app for s in seen} == {"web"}


def test_a_quiet_namespaces_watch_goes_on_from_the_servers_bookmark(forgetful_cluster: LocalCluster) -> None:
    """Bookmarks (KEP-956): while shop's records are quiet, other namespaces' ConfigMaps change more
    often than the server keeps; the bookmark it sends before it ends the watch moves the version
    past them, so the next watch resumes without a 410 and without a list."""
    api = api_client_for(forgetful_cluster)
    try:
        cluster, seen = Cluster(api, "embedded"), list[StoredRecord]()
        listed, before = cluster.list_app_records_at("shop")
        forgetful_cluster.stats.reset()

        # When a watch of shop from the list's version runs 5 s, and 30 ConfigMaps of default change
        # 0.3 s after it began
        def churn() -> None:
            for index in range(30):
                forgetful_cluster.registry.create(
                    CONFIGMAPS, "default", {"metadata": {"name": f"late-{index}"}}
                )

        later = threading.Timer(0.3, churn)
        later.start()
        version = follow_records_once(cluster, "shop", before, seen.append, timeout_seconds=5)
        later.join()
        # Then the server's bookmark (2 s before the watch's end) moved the version on
        assert int(version) > int(before)
        # And the next watch goes on from it: no 410, no list, nothing seen that did not change
        assert follow_records_once(cluster, "shop", version, seen.append, timeout_seconds=1) == version
        assert (requests(forgetful_cluster, "list"), requests(forgetful_cluster, "watch")) == (0, 2)
        assert [s.app for s in listed] == ["web"] and seen == []
    finally:
        api.close()
