"""Hand changes to gitdeploy's ReplicaSets (issue 21, item 2), through the real CLI on the embedded
cluster: ``status`` tells them as the cluster shows them, and ``gitdeploy run`` undoes them at once
(its ReplicaSet watch), not at the resync, with an event naming what it undid.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client, config

from tests.e2e.test_sync_history import SETTINGS, web
from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.waiting import eventually


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


@contextmanager
def _apps_api(tmp_path: Path) -> Iterator[tuple[client.AppsV1Api, client.CoreV1Api]]:
    api = config.new_client_from_config(str(tmp_path / "state" / "kubeconfig"))  # type: ignore[no-untyped-call]
    try:
        yield client.AppsV1Api(api), client.CoreV1Api(api)
    finally:
        api.close()


def _scale_by_hand(tmp_path: Path, replicas: int) -> str:
    """``kubectl scale rs web-… --replicas=N``: the ReplicaSet of shop/web that runs pods."""
    with _apps_api(tmp_path) as (apps, _):
        found: Any = apps.list_namespaced_replica_set("shop", label_selector="gitdeploy.io/app=web")
        [running] = [rs for rs in found.items if rs.spec.replicas]
        name: str = running.metadata.name
        apps.patch_namespaced_replica_set_scale(name, "shop", {"spec": {"replicas": replicas}})
    return name


def _spec_replicas(tmp_path: Path, name: str) -> int:
    with _apps_api(tmp_path) as (apps, _):
        found: Any = apps.read_namespaced_replica_set(name, "shop")
        return int(found.spec.replicas)


def _drift_events(tmp_path: Path) -> list[str]:
    with _apps_api(tmp_path) as (_, core):
        found: Any = core.list_namespaced_event("shop")
        return [str(e.message) for e in found.items if e.reason == "DriftCorrected"]


def _view(run_cli: RunCli) -> dict[str, Any]:
    shown = run_cli("status", "shop/web", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    [view] = json.loads(shown.stdout)
    return dict(view)


def _deploy(git_remote: GitRemote, run_cli: RunCli) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("web 1.25", {"apps/web.yaml": web("nginx:1.25")})
    done = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert done.returncode == 0, done.stdout + done.stderr


@contextmanager
def _running(git_remote: GitRemote, tmp_path: Path) -> Iterator[None]:
    """``gitdeploy run`` whose poll and resync are an hour away: only its watches can act. The
    block starts once its first pass over shop/web is logged and it has asked the embedded
    cluster for a ReplicaSet watch (from the resourceVersion of a list made before: every change
    after that reaches it)."""
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    command = [
        gitdeploy_executable(), "run", "--repo", git_remote.url, "--interval", "1h",
        "--resync-interval", "1h", "--no-leader-elect",
    ]  # fmt: skip
    log = tmp_path / "run.log"
    watches = _replica_set_watches(tmp_path)  # `sync --wait` watched too
    with log.open("w") as out:
        loop = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        eventually(
            lambda: (
                loop.poll() is None
                and "[shop/web] Synced/Healthy" in log.read_text()
                and _replica_set_watches(tmp_path) > watches
            ),
            "run's first pass over shop/web and its ReplicaSet watch",
        )
        yield
    finally:
        loop.send_signal(signal.SIGTERM)
        loop.wait(timeout=30)
    assert loop.returncode == 0, log.read_text()


def _replica_set_watches(tmp_path: Path) -> int:
    """How many ReplicaSet watches the embedded cluster was asked for (its request stats)."""
    state = tmp_path / "state"
    api = config.new_client_from_config(str(state / "kubeconfig"))  # type: ignore[no-untyped-call]
    try:
        response = httpx.get(
            f"{api.configuration.host}/gitdeploy/v1/stats",
            headers={"Authorization": f"Bearer {(state / 'token').read_text().strip()}"},
            verify=ssl.create_default_context(cafile=api.configuration.ssl_ca_cert),
        )
    finally:
        api.close()
    response.raise_for_status()
    requests = response.json()["requests"]
    return sum(r["count"] for r in requests if (r["verb"], r["resource"]) == ("watch", "replicasets"))


def test_status_tells_a_hand_scaled_replica_set_as_the_cluster_shows_it(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    _deploy(git_remote, run_cli)
    assert (_view(run_cli)["sync"], _view(run_cli)["health"]) == ("Synced", "Healthy")

    name = _scale_by_hand(tmp_path, 0)
    view = eventually(lambda: (v := _view(run_cli))["ready"] == 0 and v, "the pods to go")
    assert (view["ready"], view["replicas"]) == (0, 2)
    assert (view["sync"], view["health"]) == ("OutOfSync", "Degraded")
    assert f"{name} was scaled to 0 by hand (gitdeploy set 2)" in view["message"]

    done = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _spec_replicas(tmp_path, name) == 2
    assert _drift_events(tmp_path) == [f"{name} was scaled to 0 by hand; scaled back to 2"]
    view = _view(run_cli)
    assert (view["ready"], view["sync"], view["health"]) == (2, "Synced", "Healthy")


def test_run_undoes_a_hand_scale_at_once_and_says_so(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    _deploy(git_remote, run_cli)
    with _running(git_remote, tmp_path):
        name = _scale_by_hand(tmp_path, 0)
        eventually(lambda: _drift_events(tmp_path), "a DriftCorrected event", 30)
        assert _spec_replicas(tmp_path, name) == 2
        assert _drift_events(tmp_path) == [f"{name} was scaled to 0 by hand; scaled back to 2"]
        view = eventually(lambda: (v := _view(run_cli))["ready"] == 2 and v, "the pods back", 30)
        assert (view["sync"], view["health"]) == ("Synced", "Healthy")
