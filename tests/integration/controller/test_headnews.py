"""The head announcement of ``run --sharding`` (controller/headnews.py, cluster/headleases.py)
against the embedded cluster over HTTP: compare-and-swap writes, dropping a write that the object
already names, one fetch per announced commit, and the watch by name that hands another replica's
announcement over."""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.headnews import HeadNews
from gitdeploy.core.headnews import Announced, HeadAnnouncement, WriteAct
from gitdeploy.core.lease import LeaseSpec
from tests.fixtures.waiting import eventually

NAMESPACE = "gitdeploy-system"
NAME = "gitdeploy-head"
MAIN = "main"
X, Y, Z = "1" * 40, "2" * 40, "3" * 40


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    cluster = Cluster(kube_client, "embedded")
    cluster.ensure_namespace(NAMESPACE)
    return cluster


class Replica:
    """One replica's HeadNews, with a head of its own and the commits it was asked to fetch."""

    def __init__(self, adapter: Cluster, identity: str, clock: FakeClock, head: str | None = X) -> None:
        self.head = head
        self.fetched: list[str] = []
        self.news = HeadNews(
            adapter, (NAMESPACE, NAME), identity, MAIN, lambda: self.head, clock, self.fetched.append
        )


def said(adapter: Cluster) -> HeadAnnouncement | None:
    observed = adapter.head_leases.read(NAMESPACE, NAME)
    return observed.announcement if observed is not None else None


def test_of_two_replicas_announcing_one_commit_the_second_drops_its_write(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = Replica(adapter, "a", fake_clock), Replica(adapter, "b", fake_clock)
    wanted = HeadAnnouncement(Y, MAIN, "a", fake_clock.now(), Announced.PUSH)
    assert a.news.write(wanted) is WriteAct.WRITE
    # b has seen nothing: it reads the object, finds Y named, and writes nothing
    assert b.news.write(HeadAnnouncement(Y, MAIN, "b", fake_clock.now(), Announced.POLL)) is WriteAct.DROP
    assert said(adapter) == wanted
    assert a.news.announced == 1 and b.news.announced == 0


def test_a_write_from_a_stale_read_conflicts_reads_again_and_goes_through(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = Replica(adapter, "a", fake_clock), Replica(adapter, "b", fake_clock)
    assert a.news.write(HeadAnnouncement(X, MAIN, "a", 1.0, Announced.POLL)) is WriteAct.WRITE
    assert b.news.write(HeadAnnouncement(Y, MAIN, "b", 2.0, Announced.PUSH)) is WriteAct.WRITE
    # a still holds the object as it wrote it (X): its next write names a stale resourceVersion
    latest = HeadAnnouncement(Z, MAIN, "a", 3.0, Announced.POLL)
    assert a.news.write(latest) is WriteAct.WRITE
    assert said(adapter) == latest


def test_a_replica_fetches_once_for_another_replicas_announcement(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = Replica(adapter, "a", fake_clock), Replica(adapter, "b", fake_clock)
    a.news.write(HeadAnnouncement(Y, MAIN, "a", 1.0, Announced.PUSH))
    observed = adapter.head_leases.read(NAMESPACE, NAME)
    assert observed is not None
    b.news.noticed(observed)
    b.news.noticed(observed)  # listed again after a reconnect: nothing more
    a.news.noticed(observed)  # its own: its poll moves its head
    assert (a.fetched, b.fetched) == ([], [Y])
    # When b's fetch moved its head to Y, its poll announces nothing (the object names Y)
    b.head = Y
    b.news.after_poll()
    assert b.news.announced == 0


def test_the_watch_by_name_hands_another_replicas_push_over_and_a_moved_head_is_announced(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    a, b = Replica(adapter, "a", fake_clock), Replica(adapter, "b", fake_clock)
    adapter.write_lease(NAMESPACE, "gitdeploy", LeaseSpec("someone", 15), None)  # not watched
    b.news.start()
    a.news.start()
    try:
        eventually(lambda: b.news.watching and a.news.watching, "both watch the announcement")
        # When a receives a push of Y
        a.news.pushed(Y)
        # Then b is asked to fetch Y (and a is not: it fetches for the push itself)
        eventually(lambda: b.fetched == [Y], "b asked to fetch Y")
        # When a's poll moves its head to Z, it announces Z, and b is asked to fetch it
        a.head = Z
        a.news.after_poll()
        eventually(lambda: b.fetched == [Y, Z], "b asked to fetch Z")
        assert a.fetched == []
        news = said(adapter)
        assert news is not None and (news.sha, news.by, news.source) == (Z, "a", Announced.POLL)
    finally:
        a.news.close()
        b.news.close()
