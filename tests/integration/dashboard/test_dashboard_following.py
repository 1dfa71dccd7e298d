"""``gitdeploy dashboard``'s own watches (:mod:`gitdeploy.web.following`) on the embedded cluster:
as gitdeploy's ServiceAccount with deploy/'s namespaced Role, ``-n`` watches what the Role allows;
without ``-n`` the watch of every namespace is refused, and the dashboard says so once and lists."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.history.records import AppRecord
from gitdeploy.errors import ForbiddenError
from gitdeploy.localcluster import LocalCluster
from gitdeploy.web.following import followed_apps
from tests.fixtures.cluster import api_client_for
from tests.fixtures.rbac import service_account_client
from tests.fixtures.waiting import eventually


@pytest.fixture
def admin(embedded_cluster: LocalCluster) -> Iterator[Cluster]:
    api = api_client_for(embedded_cluster)
    try:
        cluster = Cluster(api)
        for namespace in ("shop", "payments"):
            cluster.ensure_namespace(namespace)
        cluster.write_app_record("shop", "web", AppRecord().to_json(), None)
        cluster.write_app_record("payments", "api", AppRecord().to_json(), None)
        yield cluster
    finally:
        api.close()


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    """Set when the test ends: the dashboard's watches stop with the test's cluster."""
    event = threading.Event()
    try:
        yield event
    finally:
        event.set()


def dashboard_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("dashboard-")}


@pytest.fixture
def service_account(embedded_cluster: LocalCluster, admin: Cluster) -> Iterator[Cluster]:
    """gitdeploy's ServiceAccount with deploy/rbac.yaml's Role in shop only."""
    api = service_account_client(embedded_cluster, ["shop"])
    try:
        yield Cluster(api)
    finally:
        api.close()


def test_every_namespace_is_followed_and_a_change_moves_the_stamp(
    admin: Cluster, stop: threading.Event
) -> None:
    apps = followed_apps(admin, stop=stop)
    assert sorted(str(v.key) for v in apps.read()) == ["payments/api", "shop/web"]
    stamp = eventually(apps.stamp, "the watches hold both namespaces")
    assert apps.stamp() == stamp, "nothing changed: the same stamp"

    admin.write_app_record("shop", "cart", AppRecord().to_json(), None)
    eventually(lambda: apps.stamp() != stamp, "the watch saw the new app")
    assert "shop/cart" in {str(v.key) for v in apps.read()}
    admin.ensure_namespace("billing")
    admin.write_app_record("billing", "invoices", AppRecord().to_json(), None)  # a namespace new to gitdeploy
    eventually(lambda: "billing/invoices" in {str(v.key) for v in apps.read()}, "the new namespace")
    assert eventually(apps.stamp, "held too")[1] == ("billing", "payments", "shop")


def test_a_namespaced_role_is_followed_in_its_namespace(
    service_account: Cluster, stop: threading.Event
) -> None:
    apps = followed_apps(service_account, ["shop"], stop)
    assert [str(v.key) for v in apps.read()] == ["shop/web"]
    assert eventually(apps.stamp, "the watches of shop hold it")[1] == ("shop",)


def test_a_refused_watch_of_every_namespace_is_said_once_and_the_apps_are_listed(
    service_account: Cluster, caplog: pytest.LogCaptureFixture, stop: threading.Event
) -> None:
    caplog.set_level(logging.WARNING, "gitdeploy.dashboard")
    apps = followed_apps(service_account, stop=stop)
    with pytest.raises(ForbiddenError):  # listed as before: every namespace, which the Role refuses too
        apps.read()
    assert apps.stamp() is None, "listed at each refresh"
    refusals = [
        r.getMessage() for r in caplog.records if "may not watch records in every namespace" in r.getMessage()
    ]
    assert len(refusals) == 1, refusals
    assert "it lists them at each refresh instead" in refusals[0]


def test_the_watches_end_once_told_to_stop(
    embedded_cluster: LocalCluster, admin: Cluster, stop: threading.Event
) -> None:
    # Given the dashboard's watches of every namespace, following both namespaces
    before = dashboard_threads()  # earlier tests' watches, ending with their clusters
    apps = followed_apps(admin, stop=stop)
    eventually(apps.stamp, "the watches hold both namespaces")
    started = dashboard_threads() - before
    assert len(started) == 3  # every namespace's records, and each namespace's ReplicaSets
    # When they are told to stop, and the cluster goes (a watch ends when its connection does)
    stop.set()
    embedded_cluster.stop()
    # Then every one of them ends, rather than retrying for as long as the process runs
    eventually(lambda: not any(t.is_alive() for t in started), "the dashboard's watches ended")
