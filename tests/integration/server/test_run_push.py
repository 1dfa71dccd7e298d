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
from tests.fixtures.manifests import deployment
from tests.integration.server.scrape import Samples, parse, total

SECRET = b"push-secret-4c9e1f"
SETTINGS = "paths: [apps]\ndefaultNamespace: shop\n"


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


class Running:
    """``gitdeploy run --interval 1h --listen ... --webhook-secret-file ...`` in a subprocess."""

    def __init__(self, git_remote: GitRemote, tmp_path: Path, *extra: str, env: dict[str, str] | None = None):
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
            *extra,
        ]
        full_env = {
            **os.environ,
            "GITDEPLOY_STATE_DIR": str(tmp_path / "state"),
            "NO_COLOR": "1",
            **(env or {}),
        }
        full_env.pop("KUBECONFIG", None)
        self.process = subprocess.Popen(
            command, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.base = f"http://127.0.0.1:{port}"
        self.remote_url = git_remote.url

    def metrics(self) -> Samples:
        return parse(httpx.get(f"{self.base}/metrics", timeout=10).text)

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            assert self.process.poll() is None, "gitdeploy run exited early"
            return False

    def deliver(self, after: str, *, secret: bytes | None = SECRET) -> int:
        """POST a GitHub push of ``after`` to main, signed with ``secret`` (unsigned when None)."""
        body = json.dumps(
            {"ref": "refs/heads/main", "after": after, "repository": {"clone_url": self.remote_url}}
        ).encode()
        headers = {"X-GitHub-Event": "push", "Content-Type": "application/json"}
        if secret is not None:
            headers["X-Hub-Signature-256"] = github_signature(body, secret)
        return httpx.post(f"{self.base}/hooks/git", content=body, headers=headers, timeout=10).status_code

    def stop(self) -> str:
        """SIGTERM, and the output; the exit code must be 0."""
        self.process.send_signal(signal.SIGTERM)
        try:
            out, _ = self.process.communicate(timeout=30)
        finally:
            self.process.kill()
        assert self.process.returncode == 0, out
        return out


def test_a_signed_push_fetches_at_once_and_metrics_and_a_dead_receiver_behave(
    git_remote: GitRemote, cluster: None, tmp_path: Path
) -> None:
    # Given `gitdeploy run` polling hourly, with the webhook, and notifications to a dead port
    git_remote.commit_and_push(
        "Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web", "shop")}
    )
    run = Running(git_remote, tmp_path, "--notify-url", f"http://127.0.0.1:{free_port()}/nobody-listens")
    metrics = run.metrics
    try:
        eventually(run.ready, "/readyz")
        eventually(
            lambda: total(metrics(), "gitdeploy_rollouts_completed_total", cause="ConfigChange") == 1,
            "web deployed although nobody receives the notifications",
        )
        polls_before = total(metrics(), "gitdeploy_source_poll_duration_seconds_count")

        # When a new app is pushed, and GitHub delivers the push (first badly signed, then right)
        after = git_remote.commit_and_push("Add api", {"apps/api.yaml": deployment("api", "shop")})
        unsigned = run.deliver(after, secret=None)
        forged = run.deliver(after, secret=b"not the secret")
        signed = run.deliver(after)

        # Then only the signed delivery triggers a fetch, long before any poll was due, and api deploys
        assert (unsigned, forged, signed) == (401, 401, 200)
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
        out = run.stop()
    assert "not delivered" in out


def test_a_push_is_fetched_without_ls_remote_a_replay_is_harmless_and_a_force_push_deploys(
    git_remote: GitRemote, cluster: None, tmp_path: Path
) -> None:
    # Given `gitdeploy run` (git traced to a file) that deployed web
    initial = git_remote.commit_and_push(
        "Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web", "shop")}
    )
    trace = tmp_path / "git-trace.log"
    run = Running(git_remote, tmp_path, env={"GIT_TRACE": str(trace)})

    def git_ran(subcommand: str) -> int:
        return trace.read_text(errors="replace").count(f"built-in: git {subcommand} ")

    def started() -> float:
        return total(run.metrics(), "gitdeploy_rollouts_started_total", cause="ConfigChange")

    def polls() -> int:
        return int(total(run.metrics(), "gitdeploy_source_poll_duration_seconds_count"))

    try:
        eventually(run.ready, "/readyz")
        eventually(lambda: started() == 1, "web's rollout started")
        # (every poll so far asked ls-remote first; when both counts agree, none is under way)
        eventually(lambda: git_ran("ls-remote") == polls(), "the start-up polls are done")
        ls_remotes, fetches, polled = git_ran("ls-remote"), git_ran("fetch"), polls()

        # When api is pushed and the push delivered
        after = git_remote.commit_and_push("Add api", {"apps/api.yaml": deployment("api", "shop")})
        assert run.deliver(after) == 200
        # Then api rolls out after one poll that fetched the branch, without an ls-remote first
        eventually(lambda: started() == 2, "api's rollout started")
        assert (polls(), git_ran("ls-remote"), git_ran("fetch")) == (polled + 1, ls_remotes, fetches + 1)

        # When an old delivery (of a commit the mirror has) comes again
        assert run.deliver(initial) == 200
        eventually(lambda: polls() == polled + 2, "the replay's poll")
        # Then it is a poll without news: an ls-remote, no fetch, nothing rolls out
        assert (git_ran("ls-remote"), git_ran("fetch")) == (ls_remotes + 1, fetches + 1)
        assert started() == 2

        # When main is force-pushed to a commit that replaces api by worker, and delivered
        git_remote.reset_hard(initial)
        replacement = git_remote.commit_files(
            "Add worker instead", {"apps/worker.yaml": deployment("worker", "shop")}
        )
        git_remote.push(force=True)
        assert run.deliver(replacement) == 200
        # Then worker rolls out, and api, gone from git, is reported orphaned
        eventually(lambda: started() == 3, "worker's rollout started")
        eventually(
            lambda: total(run.metrics(), "gitdeploy_apps_sync_state", state="Orphaned") == 1,
            "api orphaned",
        )
        assert git_ran("ls-remote") == ls_remotes + 1
    finally:
        out = run.stop()
    assert "was force-pushed" in out
