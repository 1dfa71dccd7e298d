"""What the tests of tests/realk8s read back from the real control plane: an app's pods and their
images, the events of a reason, gitdeploy's requests in the audit log, and the canary tests'
ReplicaSet sizes."""

from __future__ import annotations

import urllib.parse
from typing import Any

from gitdeploy.core.observed import POD_ROLE_LABEL
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.podwatch import PodState


def app_pods(pods: dict[str, PodState]) -> list[PodState]:
    return [p for p in pods.values() if POD_ROLE_LABEL not in p.labels and p.labels.get("app") == "worker"]


def running_images(control_plane: ControlPlane, namespace: str, app: str = "worker") -> set[str]:
    """The images of the app's pods that are not going (no hook pods)."""
    pods: Any = control_plane.get_json("pods", "-n", namespace, "-l", f"app={app},!{POD_ROLE_LABEL}")
    return {
        p["spec"]["containers"][0]["image"]
        for p in pods["items"]
        if not p["metadata"].get("deletionTimestamp")
    }


def events(control_plane: ControlPlane, namespace: str, reason: str) -> list[str]:
    found: Any = control_plane.get_json("events", "-n", namespace, "--field-selector", f"reason={reason}")
    return [e["message"] for e in found["items"]]


def requests(
    events: list[dict[str, Any]], namespace: str, resource: str, verb: str, **query: str
) -> list[dict[str, Any]]:
    """gitdeploy's requests (the last audit stage of each) of ``verb`` on ``resource`` in
    ``namespace`` whose query has every ``query`` parameter given (``labelSelector`` and so on)."""
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        ref = event.get("objectRef") or {}
        if (event.get("verb"), ref.get("resource"), ref.get("namespace")) != (verb, resource, namespace):
            continue
        asked = urllib.parse.parse_qs(urllib.parse.urlsplit(event["requestURI"]).query)
        if all(asked.get(name) == [value] for name, value in query.items()):
            found[event["auditID"]] = event
    return list(found.values())


def replica_sets_by_tag(control_plane: ControlPlane, namespace: str) -> dict[str, int]:
    """``{image tag: spec.replicas}`` of the namespace's ReplicaSets."""
    found: Any = control_plane.get_json("replicasets", "-n", namespace)
    return {
        rs["spec"]["template"]["spec"]["containers"][0]["image"].rsplit(":", 1)[1]: rs["spec"]["replicas"]
        for rs in found["items"]
    }


def canary_within_surge(replica_sets: dict[str, int]) -> None:
    """The canary tests' bound: their Rollouts run 2 replicas with maxSurge 1."""
    assert sum(replica_sets.values()) <= 3, f"{replica_sets} ask for more than 2 replicas + maxSurge 1"
