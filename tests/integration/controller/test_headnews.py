"""The head announcement of ``run --sharding`` (controller/headnews.py, cluster/headleases.py)
against the embedded cluster over HTTP: compare-and-swap writes, dropping a write that the object
already names, one fetch per announced commit, the watch by name that hands another replica's
announcement over, and deploy/leader-election.yaml's `watch` verb as what lets that watch run."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from ruamel.yaml import YAML

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.headnews import HeadNews
from gitdeploy.controller.membership import Membership
from gitdeploy.core.headnews import FOLLOWER_POLL_FACTOR, Announced, HeadAnnouncement, WriteAct
from gitdeploy.core.lease import LeaseSpec, LeaseTimings
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.access import Access
from tests.fixtures.rbac import service_account_client
from tests.fixtures.waiting import eventually
from tests.realk8s.controlplane import DEPLOY, GITDEPLOY_NAMESPACE

NAMESPACE = "gitdeploy-system"
TIMINGS = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
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


def test_a_replica_of_another_branch_is_told_once_and_not_followed(
    adapter: Cluster, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a replica of the fleet started with another --branch, which announced its head
    a, b = Replica(adapter, "a", fake_clock), Replica(adapter, "b", fake_clock)
    a.news.ref = "refs/heads/staging"
    a.news.write(HeadAnnouncement(Y, "refs/heads/staging", "a", 1.0, Announced.POLL))
    observed = adapter.head_leases.read(NAMESPACE, NAME)
    assert observed is not None
    # When b sees it (listed, then again after a reconnect)
    with caplog.at_level(logging.WARNING, logger="gitdeploy.sharding"):
        b.news.noticed(observed)
        b.news.noticed(observed)
    # Then b fetches nothing, and says once that the two follow different branches
    assert b.fetched == []
    warnings = [r.getMessage() for r in caplog.records if "follows refs/heads/staging" in r.getMessage()]
    assert len(warnings) == 1 and "--branch" in warnings[0], caplog.text


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


def test_deploys_role_lets_replicas_watch_the_head_lease_and_without_watch_they_poll_instead(
    embedded_cluster: LocalCluster, kube_client: Any, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given gitdeploy's ServiceAccount with deploy/'s Roles, and the Leases in gitdeploy's namespace
    Cluster(kube_client).ensure_namespace(GITDEPLOY_NAMESPACE)
    account = service_account_client(embedded_cluster, ["shop"])
    try:
        replica = Cluster(account)
        a, b = Replica(replica, "a", fake_clock), Replica(replica, "b", fake_clock)
        for news in (a.news, b.news):
            news.namespace = GITDEPLOY_NAMESPACE
            news.leader = lambda: "a"  # a leader is known: only the watch decides b's poll period
        b.news.start()
        try:
            # Then b watches the announcement, and a push a announces reaches it
            eventually(lambda: b.news.watching, "b watches under deploy/'s Role")
            assert b.news.period(30.0) == 30.0 * FOLLOWER_POLL_FACTOR
            assert a.news.write(HeadAnnouncement(Y, MAIN, "a", 1.0, Announced.PUSH)) is WriteAct.WRITE
            eventually(lambda: b.fetched == [Y], "b asked to fetch Y")
        finally:
            b.news.close()

        # When the Role lacks `watch` (as before this change), a new replica c cannot watch:
        # it says so, and polls git at --interval instead of waiting for news
        roles = [
            doc for doc in YAML(typ="safe").load_all((DEPLOY / "leader-election.yaml").read_text()) if doc
        ]
        for doc in roles:
            for rule in doc.get("rules", []):
                rule["verbs"] = [verb for verb in rule["verbs"] if verb != "watch"]
        embedded_cluster.access = Access.from_objects(roles, GITDEPLOY_NAMESPACE, "gitdeploy")
        c = Replica(replica, "c", fake_clock)
        c.news.namespace, c.news.leader = GITDEPLOY_NAMESPACE, lambda: "a"
        with caplog.at_level(logging.WARNING, logger="gitdeploy.sharding"):
            c.news.start()
            try:
                eventually(lambda: "forbidden" in caplog.text, "c told its watch is forbidden")
            finally:
                c.news.close()
        assert not c.news.watching and c.news.period(30.0) == 30.0
        assert "polling git at --interval meanwhile" in caplog.text
    finally:
        account.close()


def test_an_announcement_that_could_not_be_written_is_written_after_the_next_poll(
    adapter: Cluster, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a replica whose poll moved its head to Y, and a lease namespace that is not there yet
    a = Replica(adapter, "a", fake_clock, head=Y)
    a.news.namespace = "made-later"
    a.news.start()
    try:
        with caplog.at_level(logging.INFO, logger="gitdeploy.sharding"):
            a.news.after_poll()
            eventually(lambda: "again after the next poll" in caplog.text, "the write given up")
        assert adapter.head_leases.read("made-later", NAME) is None
        # When the namespace exists and the replica polls again (its head did not move)
        adapter.ensure_namespace("made-later")
        a.news.after_poll()
        # Then it announces Y now
        eventually(lambda: adapter.head_leases.read("made-later", NAME) is not None, "Y announced")
        observed = adapter.head_leases.read("made-later", NAME)
        assert observed is not None and observed.announcement is not None
        assert (observed.announcement.sha, observed.announcement.source) == (Y, Announced.POLL)
        # ... and a poll after that, with the object naming Y, writes nothing more
        a.news.after_poll()
        assert a.news.announced == 1
    finally:
        a.news.close()


def test_a_missing_lease_namespace_is_named_with_what_to_do(
    kube_client: Any, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a fleet whose --lease-namespace does not exist
    adapter = Cluster(kube_client, "embedded")
    membership = Membership(adapter, NAMESPACE, "a", fake_clock, fake_clock, TIMINGS, runs=lambda _pid: True)
    news = Replica(adapter, "a", fake_clock).news
    # When a replica renews its member Lease and announces a head
    with caplog.at_level(logging.WARNING, logger="gitdeploy.sharding"):
        membership.step()
        assert news.write(HeadAnnouncement(Y, MAIN, "a", 1.0, Announced.PUSH)) is WriteAct.DROP
    # Then both say that the namespace is missing, and what to do
    hint = f"create namespace {NAMESPACE}, or pass --lease-namespace"
    told = [r.getMessage() for r in caplog.records]
    assert len(told) == 2 and all(hint in line for line in told), told
