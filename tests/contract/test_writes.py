"""The writes gitdeploy makes succeed on both servers, and what follows them looks the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fixtures.contract import Side, configmap, event, lease, replicaset
from tests.fixtures.serverdefaults import DEFAULTED_TEMPLATE, POD_DEFAULTS, TEMPLATE, quantity_containers


def test_replicaset_create_scale_patch(side: Side) -> None:
    created = side.apps.create_namespaced_replica_set(side.namespace, replicaset("web", replicas=1))
    assert created.metadata.generation == 1
    side.apps.patch_namespaced_replica_set_scale("web", side.namespace, {"spec": {"replicas": 2}})
    patched = side.apps.patch_namespaced_replica_set(
        "web", side.namespace, {"metadata": {"annotations": {"gitdeploy.io/revision": "2"}}}
    )
    assert patched.spec.replicas == 2
    assert patched.metadata.annotations == {"gitdeploy.io/revision": "2"}
    assert patched.metadata.generation == 2


def test_configmap_create_and_replace(side: Side) -> None:
    created = side.core.create_namespaced_config_map(side.namespace, configmap("record"))
    body = configmap("record", data={"history": "[]"}, resourceVersion=created.metadata.resource_version)
    replaced = side.core.replace_namespaced_config_map("record", side.namespace, body)
    assert replaced.data == {"history": "[]"}


def test_pod_owned_by_a_replicaset(side: Side) -> None:
    owner = side.apps.create_namespaced_replica_set(side.namespace, replicaset("web", replicas=0))
    pod = {
        "metadata": {
            "name": "web-hook",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": owner.metadata.uid,
                    "controller": False,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "hook", "image": "busybox:1"}]},
    }
    created = side.core.create_namespaced_pod(side.namespace, pod)
    assert created.metadata.owner_references[0].uid == owner.metadata.uid


def test_event_and_lease(side: Side) -> None:
    recorded = side.core.create_namespaced_event(side.namespace, event(side.namespace, side.namespace))
    assert recorded.involved_object.name == "web"
    created = side.coordination.create_namespaced_lease(side.namespace, lease(15))
    created.spec.holder_identity = "b"
    renewed = side.coordination.replace_namespaced_lease("leader", side.namespace, created)
    assert renewed.spec.holder_identity == "b"


def _pod(side: Side, name: str) -> Any:
    found = side.core.list_namespaced_pod(side.namespace, field_selector=f"metadata.name={name}").items
    return found[0] if found else None


def test_a_deleted_pod_is_terminating_before_it_is_gone(side: Side) -> None:
    pod = {
        "metadata": {"name": "slow"},
        "spec": {"terminationGracePeriodSeconds": 5, "containers": [{"name": "main", "image": "nginx:1"}]},
    }
    side.core.create_namespaced_pod(side.namespace, pod)
    side.wait_for("the pod running", lambda: _pod(side, "slow").status.phase == "Running")
    side.core.delete_namespaced_pod("slow", side.namespace)
    terminating = _pod(side, "slow")
    assert terminating is not None and terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 5
    side.wait_for("the pod gone", lambda: _pod(side, "slow") is None)


def test_replicaset_status_catches_up_after_the_write(side: Side) -> None:
    """The ReplicaSet controller acts after a write, not in it: the write's answer carries the
    status of the spec before it (``observedGeneration`` behind), which catches up a moment later."""
    side.apps.create_namespaced_replica_set(side.namespace, replicaset("web", replicas=1))

    def caught_up(generation: int, replicas: int) -> Callable[[], bool]:
        def check() -> bool:
            found = side.apps.read_namespaced_replica_set("web", side.namespace)
            status = found.status
            return bool(
                found.metadata.generation == status.observed_generation == generation
                and status.replicas == replicas
                and status.ready_replicas == replicas
            )

        return check

    side.wait_for("1 ready replica", caught_up(1, 1))
    scaled = side.apps.patch_namespaced_replica_set("web", side.namespace, {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    assert (scaled.status.observed_generation, scaled.status.replicas) == (1, 1)
    side.wait_for("3 ready replicas", caught_up(2, 3))


def test_deleting_a_replicaset_deletes_its_pods(side: Side) -> None:
    side.apps.create_namespaced_replica_set(
        side.namespace, replicaset("web", replicas=2, terminationGracePeriodSeconds=2)
    )

    def pods() -> list[Any]:
        return list(side.core.list_namespaced_pod(side.namespace, label_selector="app=web").items)

    side.wait_for("2 pods", lambda: len(pods()) == 2)
    side.apps.delete_namespaced_replica_set("web", side.namespace, propagation_policy="Background")
    side.wait_for("the pods gone", lambda: not pods())


def test_the_defaults_gitdeploy_reads(side: Side) -> None:
    """A ReplicaSet's template reads back with exactly the API server's defaults; a pod's spec
    carries the same (a real server's admission adds more to a pod: its ServiceAccount, tolerations)."""
    created = side.apps.create_namespaced_replica_set(
        side.namespace, replicaset("web", replicas=0, **TEMPLATE)
    )
    rs = side.api.sanitize_for_serialization(created)
    assert rs["spec"]["template"]["spec"] == DEFAULTED_TEMPLATE
    assert "minReadySeconds" not in rs["spec"]
    pod = side.core.create_namespaced_pod(side.namespace, {"metadata": {"name": "p"}, "spec": TEMPLATE})
    spec = side.api.sanitize_for_serialization(pod)["spec"]
    assert {key: spec.get(key) for key in POD_DEFAULTS} == POD_DEFAULTS
    assert [{k: c.get(k) for k in DEFAULTED_TEMPLATE["containers"][1]} for c in spec["containers"]][1] == (
        DEFAULTED_TEMPLATE["containers"][1]
    )
    assert spec["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_resource_quantities_read_back_canonical(side: Side) -> None:
    """The API server stores a quantity in its canonical form (``0.5`` → ``500m``, ``1024Mi`` →
    ``1Gi``), in a ReplicaSet's template as in a pod."""
    given, stored = quantity_containers(0), quantity_containers(1)
    created = side.apps.create_namespaced_replica_set(
        side.namespace, replicaset("web", replicas=0, containers=given)
    )
    read = side.api.sanitize_for_serialization(side.apps.read_namespaced_replica_set("web", side.namespace))
    for answer in (side.api.sanitize_for_serialization(created), read):
        assert [c["resources"] for c in answer["spec"]["template"]["spec"]["containers"]] == [
            c["resources"] for c in stored
        ]
    pod = side.core.create_namespaced_pod(
        side.namespace, {"metadata": {"name": "p"}, "spec": {"containers": given}}
    )
    assert [c["resources"] for c in side.api.sanitize_for_serialization(pod)["spec"]["containers"]] == [
        c["resources"] for c in stored
    ]
