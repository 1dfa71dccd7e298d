"""What a write answers: the object as stored by that write, as the Kubernetes API does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client as kubernetes_client

client: Any = kubernetes_client
NS = "default"


def _replica_set(replicas: int) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "metadata": {"name": "web", "labels": labels, "annotations": {"note": "a"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "nginx:1"}]},
            },
        },
    }


def _json(response: Any) -> Any:
    return json.loads(response.data)


def test_create_answers_the_replica_set_before_its_controller_ran(kube_client: Any) -> None:
    """Given no ReplicaSet, when one of 2 replicas is created, then the answer has no pods in its
    status, while the stored ReplicaSet (a later version) counts the 2 pods its controller made."""
    apps = client.AppsV1Api(kube_client)
    created = _json(apps.create_namespaced_replica_set(NS, _replica_set(2), _preload_content=False))
    stored = _json(apps.read_namespaced_replica_set("web", NS, _preload_content=False))
    assert created["status"] == {"replicas": 0}
    assert stored["status"]["replicas"] == 2
    assert int(stored["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", {"spec": {"replicas": 3}, "metadata": {"annotations": {"n": "b"}}}),
        ("application/strategic-merge-patch+json", {"spec": {"replicas": 3}}),
        ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": 3}]),
    ],
)
def test_a_patch_answers_the_replica_set_before_its_controller_ran(
    kube_client: Any, content_type: str, patch: Any
) -> None:
    """Given a ReplicaSet of 1 replica whose controller caught up, when a patch scales it to 3,
    then the answer is the patch as stored: generation 2 with the status of generation 1 (the
    ReplicaSet controller runs after the write, as Kubernetes'), and the next read has caught up."""
    apps = client.AppsV1Api(kube_client)
    apps.create_namespaced_replica_set(NS, _replica_set(1))
    before = _json(apps.read_namespaced_replica_set("web", NS, _preload_content=False))
    assert (before["status"]["observedGeneration"], before["status"]["replicas"]) == (1, 1)
    answer = _json(
        apps.patch_namespaced_replica_set(
            "web", NS, patch, _preload_content=False, _content_type=content_type
        )
    )
    stored = _json(apps.read_namespaced_replica_set("web", NS, _preload_content=False))
    assert (answer["metadata"]["generation"], answer["status"]) == (2, before["status"])
    assert (stored["metadata"]["generation"], stored["status"]["observedGeneration"]) == (2, 2)
    assert stored["status"]["replicas"] == 3
    assert int(stored["metadata"]["resourceVersion"]) > int(answer["metadata"]["resourceVersion"])
    assert answer["metadata"]["annotations"]["note"] == "a"


def test_a_patch_of_metadata_only_keeps_the_generation(kube_client: Any) -> None:
    """Given a ReplicaSet, when only an annotation is patched (twice), then the generation stays 1
    and each answer carries its own annotation and a newer resourceVersion."""
    apps = client.AppsV1Api(kube_client)
    apps.create_namespaced_replica_set(NS, _replica_set(1))
    first, second = (
        _json(
            apps.patch_namespaced_replica_set(
                "web",
                NS,
                {"metadata": {"annotations": {"n": n}}},
                _preload_content=False,
                _content_type="application/merge-patch+json",
            )
        )
        for n in ("1", "2")
    )
    assert (first["metadata"]["generation"], second["metadata"]["generation"]) == (1, 1)
    assert (first["metadata"]["annotations"]["n"], second["metadata"]["annotations"]["n"]) == ("1", "2")
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


def test_a_delete_answers_the_object_at_its_deletion(kube_client: Any) -> None:
    """Given a ConfigMap, when it is deleted, then the answer is the ConfigMap with the version
    of its deletion, newer than the one it was created with."""
    core = client.CoreV1Api(kube_client)
    created = _json(
        core.create_namespaced_config_map(
            NS, {"metadata": {"name": "cm"}, "data": {"k": "v"}}, _preload_content=False
        )
    )
    deleted = _json(core.delete_namespaced_config_map("cm", NS, _preload_content=False))
    assert (deleted["metadata"]["name"], deleted["data"]) == ("cm", {"k": "v"})
    assert int(deleted["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
