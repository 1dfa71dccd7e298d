"""The real ``gitdeploy run`` with --listen: a signed push makes it fetch at once, a badly signed
one is refused, /metrics shows what happened, and a notification receiver that is down stops
nothing. Polling is every hour, so only the push can explain a second fetch."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from gitdeploy.server.webhook import github_signature
from tests.fixtures.cli import gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.integration.server.scrape import Samples, parse, total

SECRET = b"push-secret-4c9e1f"
SETTINGS = "paths: [apps]\ndefaultNamespace: shop\n"


def deployment(name: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: main, image: "nginx:1.25"}}]
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def eventually(check: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    """Wait until ``check()`` holds (a bound against hanging, not a measurement)."""
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def test_a_signed_push_fetches_at_once_and_metrics_and_a_dead_receiver_behave(
    git_remote: GitRemote, cluster: None, tmp_path: Path
) -> None:
    # Given `gitdeploy run` polling hourly, with the webhook, and notifications to a dead port
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web")})
    secret_file = tmp_path / "webhook-secret"
    secret_file.write_bytes(SECRET + b"\n")
    port = free_port()
    command = [
        gitdeploy_executable(),
        "run",
        "--repo",
        git_remote.url,
        "--interval",
        "1h",
        "--listen",
        f"127.0.0.1:{port}",
        "--webhook-secret-file",
        str(secret_file),
        "--notify-url",
        f"http://127.0.0.1:{free_port()}/nobody-listens",
    ]
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"

    def metrics() -> Samples:
        return parse(httpx.get(f"{base}/metrics", timeout=10).text)

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            assert process.poll() is None, "gitdeploy run exited early"
            return False

    try:
        eventually(ready, "/readyz")
        eventually(
            lambda: total(metrics(), "gitdeploy_rollouts_completed_total", cause="ConfigChange") == 1,
            "web deployed although nobody receives the notifications",
        )
        polls_before = total(metrics(), "gitdeploy_source_poll_duration_seconds_count")

        # When a new app is pushed, and GitHub delivers the push (first badly signed, then right)
        after = git_remote.commit_and_push("Add api", {"apps/api.yaml": deployment("api")})
        body = json.dumps(
            {"ref": "refs/heads/main", "after": after, "repository": {"clone_url": git_remote.url}}
        ).encode()
        headers = {"X-GitHub-Event": "push", "Content-Type": "application/json"}
        unsigned = httpx.post(f"{base}/hooks/git", content=body, headers=headers, timeout=10)
        forged = httpx.post(
            f"{base}/hooks/git",
            content=body,
            headers={**headers, "X-Hub-Signature-256": github_signature(body, b"not the secret")},
            timeout=10,
        )
        signed = httpx.post(
            f"{base}/hooks/git",
            content=body,
            headers={**headers, "X-Hub-Signature-256": github_signature(body, SECRET)},
            timeout=10,
        )

        # Then only the signed delivery triggers a fetch, long before any poll was due, and api deploys
        assert (unsigned.status_code, forged.status_code, signed.status_code) == (401, 401, 200)
        eventually(
            lambda: total(metrics(), "gitdeploy_rollouts_started_total", cause="ConfigChange") == 2,
            "api's rollout started after the push",
        )
        samples = metrics()
        assert total(samples, "gitdeploy_source_poll_duration_seconds_count") > polls_before
        assert total(samples, "gitdeploy_webhook_deliveries_total", outcome="triggered") == 1
        assert total(samples, "gitdeploy_webhook_deliveries_total") == 3
        assert total(samples, "gitdeploy_source_poll_errors_total") == 0
        for verb in ("list", "create", "patch"):
            assert total(samples, "gitdeploy_kube_api_requests_total", verb=verb) > 0, verb
        assert total(samples, "gitdeploy_reconcile_duration_seconds_count") > 0
        assert total(samples, "gitdeploy_leader") == 1
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            out, _ = process.communicate(timeout=30)
        finally:
            process.kill()
    assert process.returncode == 0, out
    assert "not delivered" in out
