"""Watches over a change log that other resources' writes dominate, as in a rollout of many apps."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kubernetes import client as kubernetes_client
from kubernetes import watch as kubernetes_watch

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.resources import CONFIGMAPS, CORE_EVENTS
from tests.fixtures.cluster import POD_START_SECONDS, api_client_for

client: Any = kubernetes_client
watch: Any = kubernetes_watch
NS = "default"


def _event(index: int) -> dict[str, Any]:
    return {"metadata": {"name": f"e-{index}"}, "involvedObject": {"kind": "ConfigMap", "name": "x"}}


def _names(core: Any, start: str, count: int) -> list[str]:
    names: list[str] = []
    watcher = watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_config_map, NS, resource_version=start, timeout_seconds=30
    ):
        names.append(event["object"].metadata.name)
        if len(names) == count:
            watcher.stop()
    return names


def test_a_watch_hears_every_change_of_its_resource_among_many_others(
    embedded_cluster: LocalCluster, kube_client: Any
) -> None:
    """Given 3,000 changes, every other one a ConfigMap (more ConfigMaps than one read of the log
    returns), when a ConfigMap watch replays them, then it yields every ConfigMap change in order."""
    core = client.CoreV1Api(kube_client)
    start = core.list_namespaced_config_map(NS).metadata.resource_version
    expected = []
    for index in range(3_000):
        if index % 2 == 0:
            embedded_cluster.registry.create(CONFIGMAPS, NS, {"metadata": {"name": f"cm-{index}"}})
            expected.append(f"cm-{index}")
        else:
            embedded_cluster.registry.create(CORE_EVENTS, NS, _event(index))
    assert _names(core, start, len(expected)) == expected


def test_a_waiting_watch_hears_a_change_after_many_of_other_resources(
    embedded_cluster: LocalCluster, kube_client: Any
) -> None:
    """Given a ConfigMap watch that is open, when 1,500 events and then one ConfigMap are
    written, then the watch yields that ConfigMap."""
    core = client.CoreV1Api(kube_client)
    start = core.list_namespaced_config_map(NS).metadata.resource_version
    heard: list[str] = []
    listener = threading.Thread(target=lambda: heard.extend(_names(core, start, 1)))
    listener.start()
    for index in range(1_500):
        embedded_cluster.registry.create(CORE_EVENTS, NS, _event(index))
    embedded_cluster.registry.create(CONFIGMAPS, NS, {"metadata": {"name": "second"}})
    listener.join(timeout=30)
    assert heard == ["second"]


def test_a_watch_hears_writes_of_another_server_on_the_same_state(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    """Given two servers on one state directory, when the second creates a ConfigMap and then the
    first another, then a watch on the first from before both yields both, in order."""
    with (
        LocalCluster(tmp_path, clock=fake_clock) as first,
        LocalCluster(tmp_path, clock=fake_clock) as second,
    ):
        first.registry.create(CONFIGMAPS, NS, {"metadata": {"name": "a"}})
        api = api_client_for(first)
        try:
            core = client.CoreV1Api(api)
            start = core.list_namespaced_config_map(NS).metadata.resource_version
            second.registry.create(CONFIGMAPS, NS, {"metadata": {"name": "b"}})
            first.registry.create(CONFIGMAPS, NS, {"metadata": {"name": "c"}})
            assert _names(core, start, 2) == ["b", "c"]
        finally:
            api.close()


def test_pods_started_together_become_ready_in_one_status_write(
    embedded_cluster: LocalCluster, kube_client: Any, fake_clock: FakeClock
) -> None:
    """Given a ReplicaSet of 3 whose pods started at once, when their start delay passes, then a
    watch of ReplicaSets hears one change, with all 3 ready (not one change per pod)."""
    apps = client.AppsV1Api(kube_client)
    labels = {"app": "web"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "m", "image": "nginx:1"}]}}
    apps.create_namespaced_replica_set(
        NS,
        {
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": template},
        },
    )
    start = apps.list_namespaced_replica_set(NS).metadata.resource_version
    fake_clock.advance(POD_START_SECONDS)
    watcher = watch.Watch()
    for event in watcher.stream(
        apps.list_namespaced_replica_set, NS, resource_version=start, timeout_seconds=30
    ):
        assert (event["type"], event["object"].status.ready_replicas) == ("MODIFIED", 3)
        watcher.stop()
