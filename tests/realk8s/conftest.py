"""The real control plane for tests/realk8s: one per test session, shared by the tier's tests.

The ``control_plane`` fixture (tests/fixtures/controlplane.py, shared with tests/contract):
``scripts/realk8s up`` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
(see controlplane.py); kwok serves :func:`kwok_logs.chatty_log` as the log of every hook pod (its
container ``lifecycle``), through kube-apiserver and the nodes' kubelet endpoint. A build failure
or a component that does not come up fails the tests with the reason, never skips them. gitdeploy
talks to it as the ServiceAccount of ``deploy/`` with that account's token, never as admin, in
namespaces that enforce Pod Security "restricted" and carry ``deploy/rbac.yaml``'s Role.

All tests of the tier share one xdist group, so one worker runs them against one control plane.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.controlplane import REALK8S_GROUP
from tests.realk8s.controlplane import (
    ControlPlane,
    managed_namespace_for_gitdeploy,
    service_account_kubeconfig,
)
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the group into the node id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(REALK8S_GROUP)


@pytest.fixture(scope="session")
def gitdeploy_kubeconfig(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return service_account_kubeconfig(control_plane, tmp_path_factory.mktemp("sa") / "kubeconfig")


@pytest.fixture
def managed_namespace(control_plane: ControlPlane) -> Iterator[ManagedNamespace]:
    """``managed_namespace()``: a new namespace enforcing Pod Security "restricted", with
    deploy/rbac.yaml's Role and RoleBinding in it (the only rights gitdeploy has there), and
    deploy/deployer.yaml's unless ``deployer=False``."""
    made: list[str] = []

    def make(prefix: str = "t", deployer: bool = True) -> str:
        name = managed_namespace_for_gitdeploy(
            control_plane, f"{prefix}-{uuid.uuid4().hex[:6]}", deployer=deployer
        )
        made.append(name)
        return name

    yield make
    for name in made:
        control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def gitdeploy(run_cli: RunCli, gitdeploy_kubeconfig: Path) -> RunCli:
    """``gitdeploy("status", "-n", ns)``: the real CLI, as deploy/'s ServiceAccount."""

    def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return run_cli("--kubeconfig", str(gitdeploy_kubeconfig), *args, **kwargs)

    return run


@pytest.fixture
def runs(tmp_path: Path, gitdeploy_kubeconfig: Path) -> Iterator[Callable[..., Run]]:
    started: list[Run] = []

    def start(name: str, *args: str) -> Run:
        run = Run(gitdeploy_kubeconfig, tmp_path / f"state-{name}", tmp_path / f"{name}.log", *args)
        started.append(run)
        return run

    yield start
    for run in started:
        if run.process.poll() is None:
            run.process.kill()
        run.process.wait(timeout=30)
