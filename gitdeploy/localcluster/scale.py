"""The scale subresource of ReplicaSets: the Scale it reads, and the ReplicaSet a write of one makes."""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.resources import REPLICASETS
from gitdeploy.localcluster.selectors import label_selector_from_object, label_selector_to_string

__all__ = ["scale_of", "scaled_replicaset"]


def scale_of(replicaset: dict[str, Any]) -> dict[str, Any]:
    """The Scale of ``replicaset``, as its scale subresource reads."""
    meta = replicaset["metadata"]
    spec = replicaset.get("spec") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta.get("creationTimestamp"),
        },
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {
            "replicas": (replicaset.get("status") or {}).get("replicas", 0),
            "selector": label_selector_to_string(label_selector_from_object(spec.get("selector"))),
        },
    }


def scaled_replicaset(current: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
    """The ReplicaSet ``current`` as a write of ``scale`` to its scale subresource makes it (to be
    stored as an update): 409 if the Scale's resourceVersion is stale, 422 if its replicas are not a
    count."""
    meta = scale.get("metadata") or {}
    if meta.get("resourceVersion") and str(meta["resourceVersion"]) != current["metadata"]["resourceVersion"]:
        raise ApiError.conflict(REPLICASETS.qualified, current["metadata"]["name"])
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise ApiError.invalid(
            "Scale",
            "autoscaling",
            current["metadata"]["name"],
            [("spec.replicas", "must be greater than or equal to 0")],
        )
    return {
        **current,
        "metadata": {k: v for k, v in current["metadata"].items() if k != "resourceVersion"},
        "spec": {**(current.get("spec") or {}), "replicas": replicas},
    }
