"""``gitdeploy cluster up|status|down`` through the real console script, plus kubectl when present."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as kubernetes_client
from kubernetes import config as kubernetes_config

from gitdeploy.localcluster import stop
from tests.fixtures.kubectl import kubectl_path

# The generated client is used untyped in tests (its annotations are too partial for --strict).
client: Any = kubernetes_client
kube_config: Any = kubernetes_config


def gitdeploy(state_dir: Path, *args: str, expect: int = 0) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GITDEPLOY_STATE_DIR")}
    done = subprocess.run(
        [sys.executable, "-m", "gitdeploy", "--state-dir", str(state_dir), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == expect, done.stderr
    return done.stdout


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    try:
        yield tmp_path
    finally:
        stop(tmp_path)  # never leave a daemon behind, whatever the test did


def client_for(state_dir: Path) -> Any:
    return kube_config.new_client_from_config(config_file=str(state_dir / "kubeconfig"))


def test_up_status_down_up_keeps_objects(state_dir: Path) -> None:
    started = gitdeploy(
        state_dir, "cluster", "up", "--pod-start-seconds", "0", "--image-pull-failure", "*:gone"
    )
    assert "started at https://127.0.0.1:" in started
    assert "already running" in gitdeploy(state_dir, "cluster", "up")
    assert (state_dir / "kubeconfig").stat().st_mode & 0o777 == 0o600
    status = gitdeploy(state_dir, "cluster", "status")
    assert "running at https://127.0.0.1:" in status
    assert "image pull failures: *:gone" in status

    api = client_for(state_dir)
    try:
        client.CoreV1Api(api).create_namespaced_config_map(
            "default", {"metadata": {"name": "kept"}, "data": {"k": "v"}}
        )
    finally:
        api.close()

    env = {**os.environ, "KUBECONFIG": str(state_dir / "kubeconfig")}
    kubectl = str(kubectl_path())  # the control plane's build: a missing one fails, never skips
    listed = subprocess.run(
        [kubectl, "get", "rs,pods,cm", "-A"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert "kept" in listed.stdout
    events = subprocess.run([kubectl, "get", "events"], capture_output=True, text=True, env=env, timeout=60)
    assert events.returncode == 0, events.stderr

    assert "stopped" in gitdeploy(state_dir, "cluster", "down")
    assert "not running" in gitdeploy(state_dir, "cluster", "status", expect=1)
    assert "was not running" in gitdeploy(state_dir, "cluster", "down")

    gitdeploy(state_dir, "cluster", "up")
    api = client_for(state_dir)
    try:
        kept = client.CoreV1Api(api).read_namespaced_config_map("kept", "default")
        assert kept.data == {"k": "v"}
    finally:
        api.close()
    assert "image pull failures: *:gone" in gitdeploy(state_dir, "cluster", "status")


def test_kubectl_sees_replicasets_and_pods(state_dir: Path) -> None:
    gitdeploy(state_dir, "cluster", "up")
    env = {**os.environ, "KUBECONFIG": str(state_dir / "kubeconfig")}
    kubectl = str(kubectl_path())  # the control plane's build: a missing one fails, never skips
    manifest = """
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""
    created = subprocess.run(
        [kubectl, "create", "--validate=false", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert created.returncode == 0, created.stderr
    listed = subprocess.run(
        [kubectl, "get", "rs,pods", "-A"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert "replicaset.apps/web" in listed.stdout
    assert listed.stdout.count("pod/web-") == 2
    events = subprocess.run([kubectl, "get", "events"], capture_output=True, text=True, env=env, timeout=60)
    assert "SuccessfulCreate" in events.stdout
