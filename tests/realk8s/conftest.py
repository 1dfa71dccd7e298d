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

import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.controlplane import PULL_FAILURE_IMAGE as PULL_FAILURE_IMAGE
from tests.fixtures.controlplane import REALK8S_GROUP
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import (
    ControlPlane,
    managed_namespace_for_gitdeploy,
    service_account_kubeconfig,
)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the group into the node id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(REALK8S_GROUP)


@pytest.fixture(scope="session")
def gitdeploy_kubeconfig(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return service_account_kubeconfig(control_plane, tmp_path_factory.mktemp("sa") / "kubeconfig")


ManagedNamespace = Callable[..., str]


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


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll ``check`` until true; fail naming ``what`` (the real cluster moves at its own pace)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def gitdeploy(run_cli: RunCli, gitdeploy_kubeconfig: Path) -> RunCli:
    """``gitdeploy("status", "-n", ns)``: the real CLI, as deploy/'s ServiceAccount."""

    def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return run_cli("--kubeconfig", str(gitdeploy_kubeconfig), *args, **kwargs)

    return run


def synced(gitdeploy: RunCli, repo: GitRemote, *, expect: int = 0, timeout: str = "60s") -> str:
    """``gitdeploy sync --repo REPO --wait``; fail unless it exits with ``expect``."""
    done = gitdeploy("sync", "--repo", repo.url, "--wait", "--timeout", timeout, timeout=600)
    assert done.returncode == expect, done.stdout + done.stderr
    return done.stdout


def history(gitdeploy: RunCli, app: str) -> list[dict[str, Any]]:
    done = gitdeploy("history", app, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


class Run:
    """One ``gitdeploy run`` in the background, as the ServiceAccount; its log goes to a file."""

    def __init__(self, kubeconfig: Path, state: Path, log: Path, *args: str) -> None:
        env = {**os.environ, "GITDEPLOY_STATE_DIR": str(state), "NO_COLOR": "1"}
        env.pop("KUBECONFIG", None)
        self.log_path = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [gitdeploy_executable(), "--kubeconfig", str(kubeconfig), "run", *args],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def leads(self) -> bool:
        return re.search(r"became leader", self.log) is not None


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
