"""Contract tests: the official Kubernetes client against the embedded cluster, over real HTTP."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as kubernetes_client
from kubernetes import watch as kubernetes_watch

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster import LocalCluster, SimulationConfig, WatchWindow
from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.resources import CONFIGMAPS
from tests.fixtures.cluster import JOB_SECONDS, POD_START_SECONDS, api_client_for
from tests.fixtures.rbac import service_account_client

NS = "team"
# The generated client's annotations (Optional everywhere) do not help tests: use it untyped.
client: Any = kubernetes_client
watch: Any = kubernetes_watch


def replicaset(
    name: str = "web", replicas: int = 3, min_ready: int = 0, image: str = "nginx:1"
) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "labels": {**labels, "tier": "front"}},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


@pytest.fixture
def core(kube_client: Any) -> Any:
    api = client.CoreV1Api(kube_client)
    api.create_namespace({"metadata": {"name": NS}})
    return api


@pytest.fixture
def apps(kube_client: Any, core: Any) -> Any:
    return client.AppsV1Api(kube_client)


def pods_of(core: Any, app: str = "web") -> list[Any]:
    return list(core.list_namespaced_pod(NS, label_selector=f"app={app}").items)


def test_replicaset_pods_become_ready_and_available(core: Any, apps: Any, fake_clock: FakeClock) -> None:
    apps.create_namespaced_replica_set(NS, replicaset(replicas=3, min_ready=10))

    pods = pods_of(core)
    assert len(pods) == 3
    assert {p.status.phase for p in pods} == {"Pending"}
    assert all(p.metadata.owner_references[0].kind == "ReplicaSet" for p in pods)
    status = apps.read_namespaced_replica_set("web", NS).status
    assert (status.replicas, status.ready_replicas, status.observed_generation) == (3, None, 1)

    fake_clock.advance(POD_START_SECONDS)
    assert {p.status.phase for p in pods_of(core)} == {"Running"}
    status = apps.read_namespaced_replica_set("web", NS).status
    assert (status.ready_replicas, status.available_replicas) == (3, None)

    fake_clock.advance(9)
    assert apps.read_namespaced_replica_set("web", NS).status.available_replicas is None
    fake_clock.advance(1)
    status = apps.read_namespaced_replica_set("web", NS).status
    assert (status.ready_replicas, status.available_replicas, status.fully_labeled_replicas) == (3, 3, 3)


def test_scale_down_deletes_unready_pods_first(core: Any, apps: Any, fake_clock: FakeClock) -> None:
    apps.create_namespaced_replica_set(NS, replicaset(replicas=2))
    fake_clock.advance(POD_START_SECONDS)
    ready = {p.metadata.name for p in pods_of(core)}
    apps.patch_namespaced_replica_set_scale("web", NS, {"spec": {"replicas": 4}})
    assert len(pods_of(core)) == 4

    scale = apps.patch_namespaced_replica_set_scale("web", NS, {"spec": {"replicas": 2}})

    assert scale.spec.replicas == 2
    assert {p.metadata.name for p in live_pods_of(core)} == ready
    apps.patch_namespaced_replica_set_scale("web", NS, {"spec": {"replicas": 1}})
    assert len(live_pods_of(core)) == 1
    replica_set = apps.read_namespaced_replica_set("web", NS)
    assert (replica_set.metadata.generation, replica_set.status.observed_generation) == (4, 4)
    assert replica_set.status.replicas == 1
    reasons = [e.reason for e in core.list_namespaced_event(NS).items]
    assert reasons.count("SuccessfulCreate") == 4
    assert reasons.count("SuccessfulDelete") == 3


def live_pods_of(core: Any, app: str = "web") -> list[Any]:
    """The pods that are not Terminating."""
    return [p for p in pods_of(core, app) if p.metadata.deletion_timestamp is None]


def test_deleted_pods_terminate_for_their_grace_period(core: Any, apps: Any, fake_clock: FakeClock) -> None:
    # Given a ReplicaSet of 3 ready pods, one of which asks for a 10 s grace period
    apps.create_namespaced_replica_set(NS, replicaset(replicas=3))
    fake_clock.advance(POD_START_SECONDS)
    short, *others = sorted(p.metadata.name for p in pods_of(core))
    core.delete_namespaced_pod(short, NS, body={"gracePeriodSeconds": 10})
    # When it is scaled to 0
    apps.patch_namespaced_replica_set_scale("web", NS, {"spec": {"replicas": 0}})
    # Then every pod is Terminating, none is counted, and the terminating ones are reported
    pods = pods_of(core)
    assert len(pods) == 4  # the pod deleted by hand, its replacement and the two others
    assert all(p.metadata.deletion_timestamp is not None for p in pods)
    assert {p.metadata.deletion_grace_period_seconds for p in pods if p.metadata.name != short} == {30}
    status = apps.read_namespaced_replica_set("web", NS).status
    assert status.replicas == 0
    assert (
        json.loads(apps.read_namespaced_replica_set("web", NS, _preload_content=False).data)["status"][
            "terminatingReplicas"
        ]
        == 4
    )
    # and each goes when its grace period is over, not before
    fake_clock.advance(10)
    assert short not in {p.metadata.name for p in pods_of(core)}
    fake_clock.advance(19)
    assert set(others) <= {p.metadata.name for p in pods_of(core)}
    fake_clock.advance(1)
    assert pods_of(core) == []
    assert (
        "terminatingReplicas"
        not in json.loads(apps.read_namespaced_replica_set("web", NS, _preload_content=False).data)["status"]
    )


def test_a_pod_scaled_away_before_it_started_leaves_only_its_removal_pending(
    core: Any, apps: Any, embedded_cluster: LocalCluster, fake_clock: FakeClock
) -> None:
    # Given a ReplicaSet whose one pod has not started yet
    apps.create_namespaced_replica_set(NS, replicaset(replicas=1))
    assert len(pods_of(core)) == 1
    # When it is scaled to 0 before the pod starts (a read lets the ReplicaSet controller act)
    apps.patch_namespaced_replica_set_scale("web", NS, {"spec": {"replicas": 0}})
    assert all(p.metadata.deletion_timestamp is not None for p in pods_of(core))
    # Then the next transition is the pod's removal when its grace period is over: its start,
    # which would do nothing to a terminating pod, is no longer pending
    assert embedded_cluster.registry.next_transition_in() == pytest.approx(30)
    fake_clock.advance(30)
    assert pods_of(core) == []


def test_pods_that_ended_are_deleted_at_once(core: Any, fake_clock: FakeClock) -> None:
    spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "hook:1"}]}
    core.create_namespaced_pod(NS, {"metadata": {"name": "done"}, "spec": spec})
    fake_clock.advance(JOB_SECONDS)

    core.delete_namespaced_pod("done", NS)

    assert core.list_namespaced_pod(NS).items == []


def test_stale_resource_version_conflicts(apps: Any) -> None:
    apps.create_namespaced_replica_set(NS, replicaset(replicas=1))
    first = apps.read_namespaced_replica_set("web", NS)
    first.metadata.labels["changed"] = "yes"
    apps.replace_namespaced_replica_set("web", NS, first)

    first.metadata.labels["changed"] = "again"
    with pytest.raises(client.ApiException) as caught:
        apps.replace_namespaced_replica_set("web", NS, first)
    assert caught.value.status == 409
    assert json.loads(caught.value.body)["reason"] == "Conflict"

    stale = {"metadata": {"resourceVersion": first.metadata.resource_version}, "spec": {"replicas": 2}}
    with pytest.raises(client.ApiException) as caught:
        apps.patch_namespaced_replica_set("web", NS, stale)
    assert caught.value.status == 409


def test_generation_moves_on_spec_changes_only(apps: Any) -> None:
    apps.create_namespaced_replica_set(NS, replicaset(replicas=1))
    apps.patch_namespaced_replica_set("web", NS, {"metadata": {"annotations": {"a": "b"}}})
    assert apps.read_namespaced_replica_set("web", NS).metadata.generation == 1
    apps.patch_namespaced_replica_set("web", NS, {"spec": {"minReadySeconds": 3}})
    replica_set = apps.read_namespaced_replica_set("web", NS)
    assert (replica_set.metadata.generation, replica_set.status.observed_generation) == (2, 2)


def test_patch_formats(apps: Any) -> None:
    apps.create_namespaced_replica_set(NS, replicaset(replicas=0))
    strategic = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    apps.patch_namespaced_replica_set("web", NS, strategic)
    json_patch = [{"op": "add", "path": "/metadata/labels/extra", "value": "1"}]
    apps.patch_namespaced_replica_set("web", NS, json_patch)
    merge = {"metadata": {"labels": {"tier": None}}}
    apps.patch_namespaced_replica_set("web", NS, merge, _content_type="application/merge-patch+json")

    replica_set = apps.read_namespaced_replica_set("web", NS)
    containers = replica_set.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [("main", "nginx:2")]
    assert replica_set.metadata.labels == {"app": "web", "extra": "1"}


def test_delete_collects_dependents(core: Any, apps: Any) -> None:
    apps.create_namespaced_replica_set(NS, replicaset(name="web", replicas=2))
    apps.create_namespaced_replica_set(NS, replicaset(name="api", replicas=2))

    apps.delete_namespaced_replica_set("web", NS)
    apps.delete_namespaced_replica_set("api", NS, propagation_policy="Orphan")

    assert pods_of(core, "web") == []
    orphans = pods_of(core, "api")
    assert len(orphans) == 2
    assert all(not p.metadata.owner_references for p in orphans)


def test_owner_reference_to_a_configmap_is_collected(core: Any, apps: Any) -> None:
    record = core.create_namespaced_config_map(
        NS, {"metadata": {"name": "gitdeploy.web"}, "data": {"k": "v"}}
    )
    owned = replicaset(replicas=2)
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "gitdeploy.web",
            "uid": record.metadata.uid,
            "controller": True,
        }
    ]
    apps.create_namespaced_replica_set(NS, owned)

    core.delete_namespaced_config_map("gitdeploy.web", NS)

    assert apps.list_namespaced_replica_set(NS).items == []
    assert pods_of(core) == []


def test_an_owner_of_the_same_name_with_another_uid_counts_as_absent(core: Any, apps: Any) -> None:
    # Given a ConfigMap deleted and created again (a new uid), and a ReplicaSet owned by the old one
    old = core.create_namespaced_config_map(NS, {"metadata": {"name": "gitdeploy.web"}})
    core.delete_namespaced_config_map("gitdeploy.web", NS)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "gitdeploy.web"}})
    owned = replicaset(replicas=2)
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "gitdeploy.web", "uid": old.metadata.uid}
    ]
    # Then the garbage collector removes the ReplicaSet (and so its pods), as a real one does
    apps.create_namespaced_replica_set(NS, owned)
    assert apps.list_namespaced_replica_set(NS).items == []
    assert pods_of(core) == []


def test_the_collector_runs_at_the_next_tick_not_inside_the_write(
    core: Any, embedded_cluster: LocalCluster
) -> None:
    # Given a dependent written with an owner that does not exist (straight to the registry: no
    # request, so no tick of the simulation)
    registry = embedded_cluster.registry
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "ghost",
        "uid": "0b6f1a3e-2222-4e8e-9a52-2f7c0c0b3d01",
    }
    registry.create(CONFIGMAPS, NS, {"metadata": {"name": "child", "ownerReferences": [ghost]}})
    # Then the write kept it; the collector deletes it at the next tick
    assert registry.get(CONFIGMAPS, NS, "child")["metadata"]["ownerReferences"] == [ghost]
    registry.materialise()
    with pytest.raises(ApiError) as gone:
        registry.get(CONFIGMAPS, NS, "child")
    assert gone.value.code == 404


def test_watch_sees_every_change_in_order(core: Any) -> None:
    start = core.list_namespaced_config_map(NS).metadata.resource_version
    core.create_namespaced_config_map(NS, {"metadata": {"name": "one"}, "data": {"n": "1"}})
    core.patch_namespaced_config_map("one", NS, {"data": {"n": "2"}})
    core.create_namespaced_config_map(NS, {"metadata": {"name": "two"}})
    core.delete_namespaced_config_map("one", NS)

    seen = []
    watcher = watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_config_map, NS, resource_version=start, timeout_seconds=30
    ):
        seen.append((event["type"], event["object"].metadata.name, (event["object"].data or {}).get("n")))
        if len(seen) == 4:
            watcher.stop()
    assert seen == [
        ("ADDED", "one", "1"),
        ("MODIFIED", "one", "2"),
        ("ADDED", "two", None),
        ("DELETED", "one", "2"),
    ]


def test_watch_sees_pods_become_ready_when_the_clock_moves(
    core: Any, apps: Any, fake_clock: FakeClock
) -> None:
    apps.create_namespaced_replica_set(NS, replicaset(replicas=1))
    start = core.list_namespaced_pod(NS).metadata.resource_version
    fake_clock.advance(POD_START_SECONDS)  # no request materialises it: the watch itself must
    watcher = watch.Watch()
    for event in watcher.stream(core.list_namespaced_pod, NS, resource_version=start, timeout_seconds=30):
        assert event["type"] == "MODIFIED"
        assert event["object"].status.phase == "Running"
        watcher.stop()


def test_watch_from_a_compacted_version_is_gone(tmp_path: Any, fake_clock: FakeClock) -> None:
    with LocalCluster(
        tmp_path, clock=fake_clock, watch_window=WatchWindow(events=10, fresh_seconds=0)
    ) as cluster:
        for index in range(300):
            cluster.registry.create(
                CONFIGMAPS,
                "default",
                {"metadata": {"name": f"cm-{index}"}},
            )
        api = api_client_for(cluster)
        try:
            core = client.CoreV1Api(api)
            with pytest.raises(client.ApiException) as caught:
                for _ in watch.Watch().stream(
                    core.list_namespaced_config_map, "default", resource_version="5", timeout_seconds=5
                ):
                    pass
            assert caught.value.status == 410
        finally:
            api.close()


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=front", {"a", "b"}),
        ("tier==front", {"a", "b"}),
        ("tier!=front", {"c", "d"}),
        ("tier in (back,db)", {"c"}),
        ("tier notin (front)", {"c", "d"}),
        ("tier", {"a", "b", "c"}),
        ("!tier", {"d"}),
        ("tier=front,app=a", {"a"}),
    ],
)
def test_list_with_label_selectors(core: Any, selector: str, expected: set[str]) -> None:
    for name, labels in {
        "a": {"tier": "front"},
        "b": {"tier": "front"},
        "c": {"tier": "back"},
        "d": {},
    }.items():
        core.create_namespaced_config_map(NS, {"metadata": {"name": name, "labels": {**labels, "app": name}}})
    found = core.list_namespaced_config_map(NS, label_selector=selector).items
    assert {cm.metadata.name for cm in found} == expected


def test_field_selector_and_paging(core: Any) -> None:
    for index in range(7):
        core.create_namespaced_config_map(NS, {"metadata": {"name": f"cm-{index}"}})
    assert [
        c.metadata.name
        for c in core.list_namespaced_config_map(NS, field_selector="metadata.name=cm-3").items
    ] == ["cm-3"]
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map(NS, limit=3, _continue=token)
        names.extend(c.metadata.name for c in page.items)
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"cm-{i}" for i in range(7)]
    assert pages == 3


def test_errors_are_kubernetes_statuses(core: Any, apps: Any) -> None:
    with pytest.raises(client.ApiException) as missing:
        apps.read_namespaced_replica_set("nope", NS)
    assert missing.value.status == 404
    assert json.loads(missing.value.body)["reason"] == "NotFound"

    core.create_namespaced_config_map(NS, {"metadata": {"name": "x"}})
    with pytest.raises(client.ApiException) as duplicate:
        core.create_namespaced_config_map(NS, {"metadata": {"name": "x"}})
    assert (duplicate.value.status, json.loads(duplicate.value.body)["reason"]) == (409, "AlreadyExists")

    bad = replicaset()
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(client.ApiException) as invalid:
        apps.create_namespaced_replica_set(NS, bad)
    body = json.loads(invalid.value.body)
    assert (invalid.value.status, body["reason"]) == (422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "spec.template.metadata.labels"

    with pytest.raises(client.ApiException) as no_namespace:
        core.create_namespaced_config_map("absent", {"metadata": {"name": "x"}})
    assert no_namespace.value.status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        # 1 MiB + 2 bytes of UTF-8 (the client sends each as \u20ac: 2 MiB, under the body limit)
        ({"data": {"record": "€" * (1024 * 1024 // 3 + 1)}}, "[]"),
        ({"data": {"a": "x" * (600 * 1024), "b": "y" * (500 * 1024)}}, "[]"),
        ({"binaryData": {"blob": "QUJD" * (350 * 1024)}}, "[]"),  # 1.05 MiB decoded
        ({"metadata": {"annotations": {"big": "z" * (256 * 1024)}}}, "metadata.annotations"),
    ],
    ids=["utf8-data", "two-keys", "binary-data", "annotations"],
)
def test_objects_over_the_api_size_limits_are_invalid(core: Any, body: dict[str, Any], field: str) -> None:
    config_map = {**body, "metadata": {"name": "big", **body.get("metadata", {})}}

    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_config_map(NS, config_map)

    status = json.loads(refused.value.body)
    assert (refused.value.status, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == field
    assert "Too long" in status["details"]["causes"][0]["message"]
    core.create_namespaced_config_map(NS, {"metadata": {"name": "small"}, "data": {"k": "v" * 1000}})
    with pytest.raises(client.ApiException) as grown:
        core.patch_namespaced_config_map(
            "small", NS, {k: v for k, v in body.items() if k != "metadata"} or {"metadata": body["metadata"]}
        )
    assert grown.value.status == 422


def test_a_namespaced_role_refuses_the_cluster_scope_and_other_namespaces(
    core: Any, embedded_cluster: LocalCluster
) -> None:
    # Given gitdeploy's ServiceAccount token, deploy/rbac.yaml's Role bound in NS only
    account = service_account_client(embedded_cluster, [NS])
    gitdeploy = client.CoreV1Api(account)
    gitdeploy.create_namespaced_config_map(NS, {"metadata": {"name": "allowed"}, "data": {"k": "v"}})
    # Then lists at the cluster scope, anything in another namespace and what the Role does not
    # grant (Secrets; getting events) are 403 Forbidden
    attempts: list[Callable[[], Any]] = [
        lambda: gitdeploy.list_config_map_for_all_namespaces(),
        lambda: gitdeploy.create_namespaced_config_map("default", {"metadata": {"name": "x"}}),
        lambda: gitdeploy.read_namespace(NS),
        lambda: gitdeploy.list_namespaced_secret(NS),
        lambda: gitdeploy.read_namespaced_event("some", NS),
    ]
    for refused in attempts:
        with pytest.raises(client.ApiException) as caught:
            refused()
        status = json.loads(caught.value.body)
        assert (caught.value.status, status["reason"]) == (403, "Forbidden")
        assert 'User "system:serviceaccount:gitdeploy:gitdeploy" cannot' in status["message"]
    # And the connection still answers the next request (a refused body is not read as one)
    assert [c.metadata.name for c in gitdeploy.list_namespaced_config_map(NS).items] == ["allowed"]
    # And the admin token is still allowed everything
    assert core.read_namespace(NS).metadata.name == NS
    account.close()


def test_kubelet_simulation(core: Any, fake_clock: FakeClock) -> None:
    def pod(name: str, image: str, restart: str = "Always") -> dict[str, Any]:
        spec = {"restartPolicy": restart, "containers": [{"name": "c", "image": image, "command": ["run"]}]}
        return {"metadata": {"name": name}, "spec": spec}

    for name, image, restart in [
        ("ok", "app:1", "Always"),
        ("pull", "app:missing", "Always"),
        ("crash", "app:crash", "Always"),
        ("unready", "app:unready", "Always"),
        ("job", "hook:1", "Never"),
        ("job-fail", "hook:crash", "Never"),
    ]:
        core.create_namespaced_pod(NS, pod(name, image, restart))
    fake_clock.advance(POD_START_SECONDS)

    def state(name: str) -> tuple[str, bool, str]:
        found = core.read_namespaced_pod(name, NS).status
        container = found.container_statuses[0]
        waiting = container.state.waiting.reason if container.state.waiting else ""
        return found.phase, container.ready, waiting

    assert state("ok") == ("Running", True, "")
    assert state("pull") == ("Pending", False, "ImagePullBackOff")
    assert state("crash") == ("Running", False, "CrashLoopBackOff")
    assert state("unready") == ("Running", False, "")
    assert state("job")[0] == "Running"
    fake_clock.advance(JOB_SECONDS - POD_START_SECONDS)
    assert state("job")[0] == "Succeeded"
    assert state("job-fail")[0] == "Failed"
    assert "completed successfully" in core.read_namespaced_pod_log("job", NS)
    assert "exited with code 1" in core.read_namespaced_pod_log("job-fail", NS)
    fake_clock.advance(3600)
    assert state("pull") == ("Pending", False, "ImagePullBackOff")


def test_request_stats(embedded_cluster: LocalCluster, core: Any) -> None:
    embedded_cluster.stats.reset()
    core.list_namespaced_pod(NS)
    core.list_namespaced_pod(NS)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "x"}})
    assert embedded_cluster.stats.count("list", "pods") == 2
    assert embedded_cluster.stats.total() == 3

    headers = {"Authorization": f"Bearer {embedded_cluster.token}"}
    request = urllib.request.Request(f"{embedded_cluster.url}/gitdeploy/v1/stats", headers=headers)
    with urllib.request.urlopen(request) as response:
        body = json.loads(response.read())
    assert body["total"] == 3
    assert {"verb": "create", "resource": "configmaps", "count": 1} in body["requests"]
    # ... and by client (User-Agent), reads included
    agent = core.api_client.user_agent
    assert {"agent": agent, "verb": "list", "resource": "pods", "count": 2} in body["byAgent"]
    mine = urllib.request.Request(
        f"{embedded_cluster.url}/api/v1/namespaces/{NS}/pods/none", headers={**headers, "User-Agent": "me"}
    )
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(mine)
    with urllib.request.urlopen(request) as response:
        body = json.loads(response.read())
    assert [row for row in body["byAgent"] if row["agent"] == "me"] == [
        {"agent": "me", "verb": "get", "resource": "pods", "count": 1}
    ]
    reset = urllib.request.Request(
        f"{embedded_cluster.url}/gitdeploy/v1/stats", headers=headers, method="DELETE"
    )
    with urllib.request.urlopen(reset):
        pass
    assert embedded_cluster.stats.total() == 0


def test_requests_without_the_token_are_refused(embedded_cluster: LocalCluster) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{embedded_cluster.url}/api/v1/namespaces")
    assert refused.value.code == 401


def test_restart_keeps_every_object(
    tmp_path: Any, fake_clock: FakeClock, simulation_config: SimulationConfig
) -> None:
    with LocalCluster(tmp_path, clock=fake_clock, config=simulation_config) as first:
        api = api_client_for(first)
        client.CoreV1Api(api).create_namespace({"metadata": {"name": NS}})
        client.AppsV1Api(api).create_namespaced_replica_set(NS, replicaset(replicas=2))
        before = {p.metadata.name for p in client.CoreV1Api(api).list_namespaced_pod(NS).items}
        api.close()
    with LocalCluster(tmp_path, clock=fake_clock, config=simulation_config) as second:
        api = api_client_for(second)
        fake_clock.advance(POD_START_SECONDS)
        pods = client.CoreV1Api(api).list_namespaced_pod(NS).items
        assert {p.metadata.name for p in pods} == before
        assert {p.status.phase for p in pods} == {"Running"}
        assert client.AppsV1Api(api).read_namespaced_replica_set("web", NS).status.ready_replicas == 2
        api.close()


def test_two_servers_on_one_state_lose_no_update(tmp_path: Any, fake_clock: FakeClock) -> None:
    """Read-modify-write with conflict retries through two servers sharing one database."""
    rounds = 25
    with (
        LocalCluster(tmp_path, clock=fake_clock) as first,
        LocalCluster(tmp_path, clock=fake_clock) as second,
    ):
        setup = api_client_for(first)
        client.CoreV1Api(setup).create_namespaced_config_map(
            "default", {"metadata": {"name": "counter"}, "data": {"n": "0"}}
        )
        setup.close()
        conflicts: list[int] = []

        def increment(cluster: LocalCluster) -> None:
            api = api_client_for(cluster)
            core = client.CoreV1Api(api)
            try:
                for _ in range(rounds):
                    while True:
                        current = core.read_namespaced_config_map("counter", "default")
                        current.data["n"] = str(int(current.data["n"]) + 1)
                        try:
                            core.replace_namespaced_config_map("counter", "default", current)
                            break
                        except client.ApiException as problem:
                            assert problem.status == 409
                            conflicts.append(1)
            finally:
                api.close()

        workers = [threading.Thread(target=increment, args=(c,)) for c in (first, second)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        check = api_client_for(second)
        final = client.CoreV1Api(check).read_namespaced_config_map("counter", "default").data["n"]
        check.close()
    assert final == str(2 * rounds)
