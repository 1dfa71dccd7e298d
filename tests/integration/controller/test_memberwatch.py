"""The watch of the member Leases (controller/memberwatch.py) as gitdeploy's ServiceAccount with
deploy/'s Roles on the embedded cluster: it runs under them, and without ``watch`` on Leases the
replica says so and counts renewals from its lists, as before the watch."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from ruamel.yaml import YAML

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.membership import Membership
from gitdeploy.core.lease import LeaseTimings
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.access import Access
from tests.fixtures.rbac import service_account_client
from tests.fixtures.waiting import eventually
from tests.realk8s.controlplane import DEPLOY, GITDEPLOY_NAMESPACE

TIMINGS = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)


def without_watch(cluster: LocalCluster) -> None:
    """deploy/'s Roles, less the ``watch`` verb."""
    roles = [doc for doc in YAML(typ="safe").load_all((DEPLOY / "leader-election.yaml").read_text()) if doc]
    for doc in roles:
        for rule in doc.get("rules", []):
            rule["verbs"] = [verb for verb in rule["verbs"] if verb != "watch"]
    cluster.access = Access.from_objects(roles, GITDEPLOY_NAMESPACE, "gitdeploy")


@pytest.mark.parametrize("watch", [True, False], ids=["deploy-role", "role-without-watch"])
def test_the_member_watch_runs_under_deploys_role_and_without_watch_the_lists_suffice(
    embedded_cluster: LocalCluster,
    kube_client: Any,
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    watch: bool,
) -> None:
    Cluster(kube_client).ensure_namespace(GITDEPLOY_NAMESPACE)
    account = service_account_client(embedded_cluster, ["shop"])
    if not watch:
        without_watch(embedded_cluster)
    replica = Cluster(account)
    b = Membership(replica, GITDEPLOY_NAMESPACE, "b", fake_clock, fake_clock, TIMINGS, runs=lambda _pid: True)
    b.step()
    a = Membership(replica, GITDEPLOY_NAMESPACE, "a", fake_clock, fake_clock, TIMINGS, runs=lambda _pid: True)
    try:
        with caplog.at_level(logging.INFO, logger="gitdeploy.sharding"):
            a.start()
            # Then a counts b among the members either way
            eventually(lambda: a.members() == {"a", "b"}, "a sees b")
            if watch:  # and watches the member Leases under deploy/'s Role
                eventually(lambda: a.watch.watching, "a watches the member Leases")
                assert "forbidden" not in caplog.text
            else:  # or says that it cannot, and what it does instead
                eventually(lambda: "forbidden" in caplog.text, "a told its watch is forbidden")
                assert not a.watch.watching
                assert "renewals count from the lists (every retry period) meanwhile" in caplog.text
                role = "deploy/leader-election.yaml's Role and RoleBinding"
                hint = f"apply {role} in namespace {GITDEPLOY_NAMESPACE}"
                assert hint in caplog.text  # not the managed namespaces' Role, which has no Leases
    finally:
        a.close()
        b.close()
        account.close()
