"""The app page's hook logs, read through the official client from the embedded cluster's pod log
API: the last lines of a live pod, a clear sentence when the pod is gone (with the tail its
revision kept), and one when RBAC refuses ``pods/log`` to the dashboard's account."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.history.records import CommitRef, HookResult, RevisionEntry
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import APP_LABEL, POD_ROLE_LABEL, REVISION_ANNOTATION
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.access import Access
from gitdeploy.web.hooklogs import read_hook_logs
from tests.fixtures.cluster import api_client_for
from tests.fixtures.rbac import _documents
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, deploy_manifest_for

KEY = AppKey("shop", "web")
POD = "web-5d8f-hook-pre"


@pytest.fixture
def hook_pod(kube_client: Any) -> str:
    """A pre hook pod of shop/web's revision 2, as gitdeploy makes them, with two containers."""
    core: Any = client.CoreV1Api(kube_client)
    core.create_namespace({"metadata": {"name": "shop"}})
    core.create_namespaced_pod(
        "shop",
        {
            "metadata": {
                "name": POD,
                "labels": {APP_LABEL: "web", POD_ROLE_LABEL: "hook-pre"},
                "annotations": {REVISION_ANNOTATION: "2"},
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "lifecycle", "image": "registry.test/web:2", "command": ["/bin/migrate"]},
                    {"name": "proxy", "image": "registry.test/proxy:1"},
                ],
            },
        },
    )
    return POD


def entry(log: str = "") -> RevisionEntry:
    hook = HookResult(phase="pre", pod=POD, outcome="Failed", exit_code=1, log=log)
    return RevisionEntry(2, "5d8f", "web-5d8f", CommitRef("0123abcd"), hooks=(hook,))


@pytest.fixture
def admin(kube_client: Any) -> Cluster:
    return Cluster(kube_client, "embedded")


def test_a_live_hook_pods_log_is_read_from_the_pod_log_api(admin: Cluster, hook_pod: str) -> None:
    # When the app page reads the hook logs of a revision whose pre hook pod runs
    [shown] = read_hook_logs(admin, KEY, [entry()])

    # Then it shows the pod's log as the API serves it, with no note
    assert (shown.revision, shown.phase, shown.pod, shown.note) == (2, "pre", hook_pod, "")
    assert shown.text.startswith("[lifecycle] pulling image registry.test/web:2\n"), shown.text
    # and a pod the record does not name yet (a hook running now) is found by its labels
    [running] = read_hook_logs(admin, KEY, [])
    assert running.pod == hook_pod and running.text == shown.text


def test_only_the_last_lines_are_read(admin: Cluster, hook_pod: str) -> None:
    # The embedded cluster answers tailLines as the kubelet does: the last N lines
    whole = admin.tail_pod_log("shop", hook_pod, 1000, 8192)
    last = admin.tail_pod_log("shop", hook_pod, 1, 8192)
    assert whole.splitlines()[-1] == "[proxy] pulling image registry.test/proxy:1"
    assert len(whole.splitlines()) >= 2 and last == whole.splitlines(keepends=True)[-1]


def test_a_pod_that_is_gone_is_said_so_with_the_tail_its_revision_kept(
    admin: Cluster, kube_client: Any
) -> None:
    # Given no pod any more (deleted with its ReplicaSet), and revision 2 that kept its log's end
    core: Any = client.CoreV1Api(kube_client)
    core.create_namespace({"metadata": {"name": "shop"}})
    [kept] = read_hook_logs(admin, KEY, [entry("migration 7 failed\n")])
    assert kept.note == f"pod {POD} is gone; the end of its log kept on revision 2 follows"
    assert kept.text == "migration 7 failed\n"
    # and without a kept tail, the page says the log went with the pod
    [lost] = read_hook_logs(admin, KEY, [entry()])
    assert (
        lost.text == ""
        and "is gone (deleted with its ReplicaSet, or by hand), and its log with it" in lost.note
    )


@pytest.fixture
def without_pod_logs(embedded_cluster: LocalCluster) -> Iterator[Cluster]:
    """gitdeploy's ServiceAccount with deploy/rbac.yaml's Role in shop, minus its ``pods/log`` rule."""
    objects = _documents(deploy_manifest_for("rbac.yaml", "shop"))
    for role in (o for o in objects if o.get("kind") == "Role"):
        role["rules"] = [r for r in role["rules"] if "pods/log" not in r.get("resources", [])]
    assert all("pods/log" not in str(o) for o in objects)
    embedded_cluster.access = Access.from_objects(objects, GITDEPLOY_NAMESPACE, "gitdeploy")
    api = api_client_for(embedded_cluster, token=embedded_cluster.service_account_token)
    try:
        yield Cluster(api, "embedded")
    finally:
        api.close()


def test_a_log_rbac_refuses_is_a_sentence_saying_so(without_pod_logs: Cluster, hook_pod: str) -> None:
    # When the dashboard's account may list pods but not get pods/log
    [refused] = read_hook_logs(without_pod_logs, KEY, [entry("kept tail\n")])

    # Then the page says RBAC refuses it, and shows what the revision kept
    assert refused.note == (
        f"the cluster refuses this dashboard the log of pod {hook_pod}: its account may not get "
        "pods/log in namespace shop (RBAC); the end kept on the revision follows"
    )
    assert refused.text == "kept tail\n"
