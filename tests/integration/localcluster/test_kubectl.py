"""A real kubectl (the one ``scripts/realk8s`` builds) against the embedded cluster, as a user
watching a rollout runs it: the server's columns (and ``-o wide``), watches that keep their columns,
``--sort-by``, ``auth can-i``, ``get all``.

The cluster runs in process on the fake clock, over HTTPS (tests/fixtures/kubectl.py); a missing
kubectl fails these tests (``scripts/test`` builds it first), it never skips them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client as kubernetes_client

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.access import Access
from gitdeploy.localcluster.timefmt import format_time
from tests.fixtures.cluster import POD_START_SECONDS
from tests.fixtures.kubectl import Kubectl
from tests.fixtures.rbac import gitdeploy_access

client: Any = kubernetes_client
NS = "default"


@pytest.fixture
def kubectl(embedded_kubectl: Kubectl) -> Kubectl:
    return embedded_kubectl


@pytest.fixture
def api(tls_kube_client: Any) -> Any:
    return tls_kube_client


def _replica_set(name: str, replicas: int, image: str = "nginx:1") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
        },
    }


def _cells(line: str) -> list[str]:
    return line.split()


def test_watch_replica_sets_keeps_the_columns(kubectl: Kubectl, api: Any) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_replica_set(NS, _replica_set("web", 2))
    watching = kubectl.watch("get", "rs", "-n", NS, "-w")
    try:
        first = watching.until("web")
        assert _cells(first[0]) == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
        apps.patch_namespaced_replica_set_scale("web", NS, {"spec": {"replicas": 5}})
        later = watching.until("web")
        row = _cells(later[-1])
        assert row[:2] == ["web", "5"], later  # a row with the columns, not "replicaset.apps/web"
        assert len(row) == 5, later
    finally:
        watching.stop()


def test_watch_pods_keeps_the_columns(kubectl: Kubectl, api: Any, fake_clock: FakeClock) -> None:
    client.AppsV1Api(api).create_namespaced_replica_set(NS, _replica_set("web", 1))
    watching = kubectl.watch("get", "pods", "-n", NS, "-w")
    try:
        first = watching.until("web-")
        assert _cells(first[0]) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert _cells(first[-1])[1:3] == ["0/1", "ContainerCreating"], first
        fake_clock.advance(POD_START_SECONDS + 1)
        later = watching.until("Running")
        assert _cells(later[-1])[1:4] == ["1/1", "Running", "0"], later
    finally:
        watching.stop()


def test_wide_columns_of_pods_and_replica_sets(kubectl: Kubectl, api: Any) -> None:
    client.AppsV1Api(api).create_namespaced_replica_set(NS, _replica_set("web", 1, image="nginx:1.27"))
    rs_lines = kubectl.run("get", "rs", "-n", NS, "-o", "wide").splitlines()
    assert _cells(rs_lines[0]) == [
        "NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"
    ]  # fmt: skip
    assert _cells(rs_lines[1])[0] == "web"
    assert _cells(rs_lines[1])[-3:] == ["web", "nginx:1.27", "app=web"]
    pod_lines = kubectl.run("get", "pods", "-n", NS, "-o", "wide").splitlines()
    assert pod_lines[0].split() == [
        "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"
    ]  # fmt: skip
    assert _cells(pod_lines[1])[0].startswith("web-")
    assert _cells(pod_lines[1])[-2:] == ["<none>", "<none>"]
    plain = kubectl.run("get", "rs", "-n", NS).splitlines()
    assert _cells(plain[0]) == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]


def test_events_sorted_by_last_timestamp(kubectl: Kubectl, api: Any, fake_clock: FakeClock) -> None:
    core = client.CoreV1Api(api)
    for name, reason, at in (("late", "Second", 20.0), ("early", "First", 0.0), ("mid", "Middle", 10.0)):
        stamp = format_time(fake_clock.now() - 100 + at)
        core.create_namespaced_event(
            NS,
            {
                "metadata": {"name": name},
                "involvedObject": {"kind": "ReplicaSet", "name": "web", "namespace": NS},
                "reason": reason,
                "message": f"the {name} one",
                "type": "Normal",
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
            },
        )
    lines = kubectl.run("get", "events", "-n", NS, "--sort-by=.lastTimestamp").splitlines()
    assert _cells(lines[0]) == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [_cells(line)[2] for line in lines[1:]] == ["First", "Middle", "Second"]
    assert _cells(lines[1])[3] == "replicaset/web"
    newest_first = kubectl.run("get", "events", "-n", NS, "--sort-by=.metadata.name").splitlines()
    assert [_cells(line)[2] for line in newest_first[1:]] == ["First", "Second", "Middle"]


def test_auth_can_i_as_admin_and_as_the_role(kubectl: Kubectl, tls_cluster: LocalCluster) -> None:
    assert kubectl.run("auth", "can-i", "delete", "replicasets", "-n", NS).strip() == "yes"
    assert kubectl.run("auth", "can-i", "list", "pods", "--all-namespaces").strip() == "yes"
    # As gitdeploy's ServiceAccount, deploy/'s Roles bound in shop (and its own namespace)
    tls_cluster.access = gitdeploy_access(["shop"])
    sa = ("--token", tls_cluster.service_account_token)
    assert kubectl.run("auth", "can-i", "patch", "rs", "-n", "shop", *sa).strip() == "yes"
    assert (
        kubectl.run("auth", "can-i", "get", "pods", "--subresource=log", "-n", "shop", *sa).strip() == "yes"
    )
    assert kubectl.run("auth", "can-i", "patch", "rs", "-n", NS, *sa, expect=1).strip() == "no"
    assert kubectl.run("auth", "can-i", "patch", "pods", "-n", "shop", *sa, expect=1).strip() == "no"
    assert kubectl.run("auth", "can-i", "list", "namespaces", *sa, expect=1).strip() == "no"
    assert kubectl.run("auth", "can-i", "list", "pods", "-A", *sa, expect=1).strip() == "no"
    assert kubectl.run("auth", "can-i", "update", "lease/gitdeploy", "-n", "gitdeploy", *sa).strip() == "yes"
    # ... any Lease of its own namespace (member Leases are named after identities unknown beforehand)
    assert kubectl.run("auth", "can-i", "delete", "lease/other", "-n", "gitdeploy", *sa).strip() == "yes"
    # ... and may watch them (the head announcement of sharded replicas), but never patch them
    assert kubectl.run("auth", "can-i", "watch", "leases", "-n", "gitdeploy", *sa).strip() == "yes"
    assert kubectl.run("auth", "can-i", "patch", "leases", "-n", "gitdeploy", *sa, expect=1).strip() == "no"
    assert (
        kubectl.run("auth", "can-i", "update", "lease/gitdeploy", "-n", "shop", *sa, expect=1).strip() == "no"
    )


def test_auth_can_i_honours_a_roles_resource_names(kubectl: Kubectl, tls_cluster: LocalCluster) -> None:
    # A Role limited to one Lease by name (deploy/'s no longer is: member Leases have unknown names)
    role = {
        "kind": "Role",
        "metadata": {"name": "one-lease", "namespace": "gitdeploy"},
        "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["gitdeploy"],
             "verbs": ["get", "update"]},
        ],
    }  # fmt: skip
    binding = {
        "kind": "RoleBinding",
        "metadata": {"name": "one-lease", "namespace": "gitdeploy"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one-lease"},
        "subjects": [{"kind": "ServiceAccount", "name": "gitdeploy", "namespace": "gitdeploy"}],
    }
    tls_cluster.access = Access.from_objects([role, binding], "gitdeploy", "gitdeploy")
    sa = ("--token", tls_cluster.service_account_token)
    assert kubectl.run("auth", "can-i", "update", "lease/gitdeploy", "-n", "gitdeploy", *sa).strip() == "yes"
    assert (
        kubectl.run("auth", "can-i", "update", "lease/other", "-n", "gitdeploy", *sa, expect=1).strip()
        == "no"
    )


def test_get_all_lists_pods_and_replica_sets(kubectl: Kubectl, api: Any) -> None:
    client.AppsV1Api(api).create_namespaced_replica_set(NS, _replica_set("web", 2))
    client.CoreV1Api(api).create_namespaced_config_map(NS, {"metadata": {"name": "not-in-all"}})
    shown = kubectl.run("get", "all", "-n", NS)
    names = [_cells(line)[0] for line in shown.splitlines() if line and not line.startswith("NAME")]
    assert sorted(name.split("-")[0] for name in names) == ["pod/web", "pod/web", "replicaset.apps/web"]
    assert "not-in-all" not in shown


_APPLIED = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: default}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1}]}
"""


def test_apply_validates_against_the_served_openapi(kubectl: Kubectl, api: Any) -> None:
    assert "replicaset.apps/web created" in kubectl.run(
        "apply", "-f", "-", stdin=_APPLIED.replace("REPLICAS", "2")
    )
    assert "replicaset.apps/web configured" in kubectl.run(
        "apply", "-f", "-", stdin=_APPLIED.replace("REPLICAS", "3")
    )
    assert client.AppsV1Api(api).read_namespaced_replica_set("web", NS).spec.replicas == 3
    diff = kubectl.run("apply", "-f", "-", "--dry-run=client", stdin=_APPLIED.replace("REPLICAS", "3"))
    assert "replicaset.apps/web unchanged" in diff


def test_explain_replica_set(kubectl: Kubectl) -> None:
    explained = kubectl.run("explain", "rs.spec.replicas")
    assert "KIND:       ReplicaSet" in explained
    assert "FIELD: replicas <integer>" in explained
    fields = kubectl.run("explain", "pods.spec")
    assert "terminationGracePeriodSeconds\t<integer>" in fields


def test_apply_refuses_unknown_fields_as_kube_apiserver(kubectl: Kubectl, api: Any) -> None:
    typo = _APPLIED.replace("image: nginx:1", "imagePullPolcy: Always, image: nginx:1")
    refused = kubectl.run("apply", "-f", "-", stdin=typo.replace("REPLICAS", "2"), expect=1)
    assert refused == ""
    assert "cannot be handled as a ReplicaSet: strict decoding error: unknown field" in kubectl.last_stderr
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolcy"' in kubectl.last_stderr
    kubectl.run("apply", "-f", "-", stdin=_APPLIED.replace("REPLICAS", "2"))
    kubectl.run("apply", "-f", "-", stdin=typo.replace("REPLICAS", "4"), expect=1)
    assert "imagePullPolcy" in kubectl.last_stderr  # the patch is refused too
    assert client.AppsV1Api(api).read_namespaced_replica_set("web", NS).spec.replicas == 2


_TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _http_get(cluster: LocalCluster, path: str, accept: str = _TABLE) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{cluster.url}{path}", headers={"Authorization": f"Bearer {cluster.token}", "Accept": accept}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as problem:
        return int(problem.code), bytes(problem.read())


def test_a_table_watch_sends_tables_with_the_columns_once(
    embedded_cluster: LocalCluster, kube_client: Any
) -> None:
    core = client.CoreV1Api(kube_client)
    for name in ("a", "b"):
        core.create_namespaced_config_map(NS, {"metadata": {"name": name}, "data": {"k": "v"}})
    path = f"/api/v1/namespaces/{NS}/configmaps?watch=1&timeoutSeconds=0&includeObject=Object"
    status, body = _http_get(embedded_cluster, path)
    assert status == 200
    events = [json.loads(line) for line in body.splitlines()]
    assert [event["type"] for event in events] == ["ADDED", "ADDED"]
    tables = [event["object"] for event in events]
    assert [table["kind"] for table in tables] == ["Table", "Table"]
    assert [c["name"] for c in tables[0]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert tables[1]["columnDefinitions"] == []
    assert [table["rows"][0]["cells"][:2] for table in tables] == [["a", 1], ["b", 1]]
    assert tables[1]["rows"][0]["object"]["data"] == {"k": "v"}
    assert (
        tables[1]["metadata"]["resourceVersion"]
        == tables[1]["rows"][0]["object"]["metadata"]["resourceVersion"]
    )
    plain = json.loads(_http_get(embedded_cluster, path, accept="application/json")[1].splitlines()[0])
    assert plain["object"]["kind"] == "ConfigMap"  # no Table unless asked for


def test_an_unknown_include_object_is_a_bad_request(embedded_cluster: LocalCluster) -> None:
    status, body = _http_get(embedded_cluster, f"/api/v1/namespaces/{NS}/configmaps?includeObject=All")
    assert status == 400
    assert b'unrecognized includeObject value: \\"All\\"' in body


def test_create_namespace_and_configmap_sent_as_protobuf(kubectl: Kubectl, api: Any) -> None:
    """kubectl's typed client sends these as protobuf, and never retries them as JSON."""
    assert kubectl.run("create", "namespace", "shop").strip() == "namespace/shop created"
    created = kubectl.run(
        "create", "configmap", "settings", "-n", "shop", "--from-literal=a=1", "--from-literal=b=2"
    )
    assert created.strip() == "configmap/settings created"
    stored = client.CoreV1Api(api).read_namespaced_config_map("settings", "shop")
    assert stored.data == {"a": "1", "b": "2"}
    kubectl.run("label", "namespace", "shop", "team=web")
    assert client.CoreV1Api(api).read_namespace("shop").metadata.labels["team"] == "web"


def test_diff_and_server_dry_run_change_nothing(kubectl: Kubectl, api: Any) -> None:
    kubectl.run("apply", "-f", "-", stdin=_APPLIED.replace("REPLICAS", "2"))
    diff = kubectl.run("diff", "-f", "-", stdin=_APPLIED.replace("REPLICAS", "5"), expect=1)
    assert "-  replicas: 2\n+  replicas: 5" in diff
    dry = kubectl.run("apply", "-f", "-", "--dry-run=server", stdin=_APPLIED.replace("REPLICAS", "6"))
    assert dry.strip() == "replicaset.apps/web configured (server dry run)"
    kubectl.run("delete", "rs", "web", "--dry-run=server")
    apps = client.AppsV1Api(api)
    assert apps.read_namespaced_replica_set("web", NS).spec.replicas == 2
    assert len(client.CoreV1Api(api).list_namespaced_pod(NS).items) == 2


def test_describe_shows_the_defaulted_template(kubectl: Kubectl, api: Any) -> None:
    body = _replica_set("web", 0)
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    client.AppsV1Api(api).create_namespaced_replica_set(NS, body)
    described = [line.split() for line in kubectl.run("describe", "rs", "web", "-n", NS).splitlines()]
    assert ["Port:", "80/TCP"] in described  # not "80/": the server gave the port its protocol
