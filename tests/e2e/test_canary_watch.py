"""``gitdeploy rollout promote`` reaches a running ``gitdeploy run`` through its ReplicaSet watch
(issue 21: what the user writes through the CLI reaches the loop at once), on the embedded cluster.
``run`` polls git and resyncs hourly; its log says when a watch made it pass over the app."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web_status
from tests.fixtures.waiting import eventually

STEPS = "      - setWeight: 50\n      - pause: {}\n"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def test_a_promote_wakes_a_running_loop_through_its_watch(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web, a Rollout, deployed, and a new image pushed
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("web 1.25", {"apps/web.yaml": canary_rollout("nginx:1.25", 2, STEPS)})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": canary_rollout("nginx:1.26", 2, STEPS)})
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    log = tmp_path / "run.log"
    with log.open("w") as out:
        loop = subprocess.Popen(
            [gitdeploy_executable(), "run", "--repo", git_remote.url, "--interval", "1h",
             "--resync-interval", "1h", "--no-leader-elect"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        # and run has walked its canary to the `pause: {}`
        eventually(lambda: web_status(run_cli)["health"] == "Suspended", "the canary at its pause")
        assert "a canary request" not in log.read_text()

        # When someone promotes it
        done = run_cli("rollout", "promote", "shop/web")
        assert done.returncode == 0, done.stderr

        # Then run's ReplicaSet watch passes over web at once, and the canary completes
        eventually(
            lambda: "[shop/web] a canary request on web-" in log.read_text(), "the watch's wake-up", 30
        )
        eventually(lambda: web_status(run_cli)["phase"] == "Complete", "revision 2 complete", 30)
    finally:
        loop.send_signal(signal.SIGTERM)
        loop.wait(timeout=30)
    assert loop.returncode == 0, log.read_text()
