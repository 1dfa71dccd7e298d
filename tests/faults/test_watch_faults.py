"""The app-record watch when the API server has forgotten old versions (410 Gone): it goes on from
the list's resourceVersion, and relists once, never in a loop (real embedded cluster over HTTP,
with a short watch history so that old versions are compacted away)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.watcher import follow_records_once
from gitdeploy.core.observed import StoredRecord
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.resources import CONFIGMAPS, NAMESPACES
from tests.fixtures.cluster import api_client_for


@pytest.fixture
def forgetful_cluster(tmp_path: Path, fake_clock: FakeClock) -> Iterator[LocalCluster]:
    """A cluster that keeps only the last 10 changes for watches, holding one app record (shop/web)
    written before 300 other changes."""
    with LocalCluster(tmp_path, clock=fake_clock, watch_history=10) as cluster:
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
