"""The write gate: the N-th write in a namespace is held (before or after it is applied), every
later write is held too, and disarming drops the held writes that were not applied yet."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from gitdeploy.localcluster import LocalCluster


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


@pytest.fixture
def http(embedded_cluster: LocalCluster) -> httpx.Client:
    return httpx.Client(
        base_url=embedded_cluster.url, headers={"Authorization": f"Bearer {embedded_cluster.token}"}
    )


def create_in_background(
    http: httpx.Client, namespace: str, name: str, answers: list[int]
) -> threading.Thread:
    def create() -> None:
        answers.append(
            http.post(f"/api/v1/namespaces/{namespace}/configmaps", json=configmap(name)).status_code
        )

    thread = threading.Thread(target=create, daemon=True)
    thread.start()
    return thread


def names(http: httpx.Client, namespace: str) -> list[str]:
    listed = http.get(f"/api/v1/namespaces/{namespace}/configmaps").json()["items"]
    return sorted(item["metadata"]["name"] for item in listed)


def gate_when(http: httpx.Client, held: int) -> dict[str, Any]:
    """The gate's state once it has tripped and holds ``held`` requests."""
    for _ in range(500):
        gate: dict[str, Any] = http.get("/gitdeploy/v1/writegate").json()
        if gate["tripped"] and gate["held"] == held:
            return gate
        threading.Event().wait(0.02)
    raise AssertionError(f"the gate never tripped holding {held}: {gate}")


@pytest.mark.parametrize(("phase", "kept"), [("before", ["a"]), ("after", ["a", "b"])])
def test_the_nth_write_trips_the_gate_and_later_writes_wait(
    http: httpx.Client, phase: str, kept: list[str]
) -> None:
    http.put("/gitdeploy/v1/writegate", json={"at": 2, "phase": phase, "namespace": "default"})
    http.post("/api/v1/namespaces/kube-system/configmaps", json=configmap("elsewhere"))  # not counted
    assert http.post("/api/v1/namespaces/default/configmaps", json=configmap("a")).status_code == 201
    answers: list[int] = []
    second = create_in_background(http, "default", "b", answers)
    gate = gate_when(http, held=1)
    assert (gate["seen"], gate["write"]) == (2, "create configmaps default/")
    third = create_in_background(http, "kube-system", "c", answers)  # frozen too, whatever namespace
    gate_when(http, held=2)
    assert names(http, "default") == kept and answers == []

    http.delete("/gitdeploy/v1/writegate")
    second.join(10)
    third.join(10)
    assert sorted(answers) == ([201, 503] if phase == "after" else [503, 503])
    assert names(http, "default") == kept and "c" not in names(http, "kube-system")
    assert http.post("/api/v1/namespaces/default/configmaps", json=configmap("d")).status_code == 201


def test_at_zero_only_counts(http: httpx.Client) -> None:
    http.put("/gitdeploy/v1/writegate", json={"at": 0, "namespace": "default"})
    for name in ("a", "b"):
        assert http.post("/api/v1/namespaces/default/configmaps", json=configmap(name)).status_code == 201
    http.get("/api/v1/namespaces/default/configmaps")
    gate = http.get("/gitdeploy/v1/writegate").json()
    assert (gate["seen"], gate["tripped"], gate["writes"]) == (2, False, ["create configmaps default/"] * 2)
