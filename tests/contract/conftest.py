"""One contract, two servers: every test of tests/contract runs against the embedded cluster and
against the real control plane, through the official client, and expects the same answers.

``side`` is a :class:`Side` per server, each with a fresh namespace of its own:

* ``embedded`` — a :class:`LocalCluster` on a fake clock (``embedded_cluster``), whose time moves
  only when a test waits;
* ``real`` — the ``control_plane`` fixture's kube-apiserver as admin, in the xdist group of
  tests/realk8s so that one control plane serves both directories. It never skips: when the
  control plane cannot be built or started, the test fails.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.connection import connect
from gitdeploy.localcluster import LocalCluster, WatchWindow
from gitdeploy.localcluster.resources import CONFIGMAPS
from tests.fixtures.cluster import api_client_for
from tests.fixtures.contract import Side, client
from tests.fixtures.controlplane import REALK8S_GROUP
from tests.fixtures.rbac import service_account_client
from tests.realk8s.controlplane import (
    ControlPlane,
    apply_to_namespace,
    restart_apiserver,
    service_account_kubeconfig,
)


def _embedded_side(request: pytest.FixtureRequest, namespace: str) -> Iterator[Side]:
    cluster: LocalCluster = request.getfixturevalue("embedded_cluster")
    clock: FakeClock = request.getfixturevalue("fake_clock")

    def step() -> None:
        clock.advance(1.0)
        cluster.registry.materialise()

    api = api_client_for(cluster)
    try:
        client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})

        def forget() -> None:  # changes that are stale and not among the newest are dropped
            window = WatchWindow()
            for index in range(4 * window.events):
                if index % (2 * window.events) == 0:
                    clock.advance(window.fresh_seconds + 1)
                cluster.registry.create(CONFIGMAPS, "default", {"metadata": {"name": f"{namespace}-{index}"}})

        yield Side(
            "embedded", api, namespace, step, lambda: service_account_client(cluster, [namespace]), forget
        )
    finally:
        api.close()


def _real_side(request: pytest.FixtureRequest, namespace: str) -> Iterator[Side]:
    plane: ControlPlane = request.getfixturevalue("control_plane")
    api: Any = connect(plane.admin_kubeconfig).api  # as gitdeploy connects, as admin
    core = client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": namespace}})
        side = Side(
            "real",
            api,
            namespace,
            lambda: time.sleep(0.2),
            lambda: _real_gitdeploy(plane, namespace),
            lambda: restart_apiserver(plane),
        )
        # pods are refused until the namespace's default ServiceAccount exists
        side.wait_for("the default ServiceAccount", lambda: _has_default_account(core, namespace))
        yield side
        core.delete_namespace(namespace)
    finally:
        api.close()


def _real_gitdeploy(plane: ControlPlane, namespace: str) -> Any:
    apply_to_namespace(plane, "rbac.yaml", namespace)
    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = service_account_kubeconfig(plane, Path(scratch) / "kubeconfig")
        return connect(kubeconfig).api


def _has_default_account(core: Any, namespace: str) -> bool:
    names = [a.metadata.name for a in core.list_namespaced_service_account(namespace).items]
    return "default" in names


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the group into the node id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real side of every contract test joins tests/realk8s's xdist group (one control plane)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("side") == "real":
            item.add_marker(REALK8S_GROUP)


@pytest.fixture(params=["embedded", "real"])
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    namespace = f"contract-{uuid.uuid4().hex[:8]}"
    make = _embedded_side if request.param == "embedded" else _real_side
    yield from make(request, namespace)
