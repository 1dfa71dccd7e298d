"""Whole scenarios through the real ``gitdeploy`` command: a git repo, the embedded cluster (in the
background, fast simulated pods), ``sync --wait``, ``status``, ``history``, ``rollout status``, ``run``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, web


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def test_three_commits_three_revisions_and_a_revert(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    for author, tag in [("Ada", "1.25"), ("Grace", "1.26"), ("Linus", "1.27")]:
        git_remote.write_files({"apps/web.yaml": web(f"nginx:{tag}")})
        git_remote.commit_all(f"web {tag}", author=(author, f"{author.lower()}@example.com"))
        git_remote.push()
        synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
        assert synced.returncode == 0, synced.stdout + synced.stderr
        assert "shop/web" in synced.stdout and "Synced" in synced.stdout

    history = run_cli("history", "shop/web", "-o", "json")
    assert history.returncode == 0, history.stderr
    revisions = json.loads(history.stdout)
    log = git_remote.run_git("log", "--format=%H|%an|%s", "--", "apps/web.yaml").splitlines()[::-1]
    assert [(r["commit"]["sha"], r["commit"]["author"], r["commit"]["subject"]) for r in revisions] == [
        tuple(line.split("|")) for line in log
    ]
    assert [(r["revision"], r["outcome"]) for r in revisions] == [
        (1, "Complete"),
        (2, "Complete"),
        (3, "Complete"),
    ]

    # git revert: the old ReplicaSet comes back as revision 4
    git_remote.run_git("revert", "--no-edit", "HEAD")
    git_remote.push()
    assert run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s").returncode == 0
    table = run_cli("history", "web")
    assert table.returncode == 0
    last = table.stdout.strip().splitlines()[-1]
    assert last.split()[0] == "4" and "template of revision 2" in last and "Complete" in last

    status = run_cli("status", "-o", "json")
    [view] = json.loads(status.stdout)
    assert (view["key"], view["revision"], view["sync"], view["health"], view["ready"]) == (
        "shop/web",
        4,
        "Synced",
        "Healthy",
        2,
    )
    assert run_cli("rollout", "status", "web").returncode == 0


def test_a_failed_rollout_makes_sync_exit_1_and_status_say_why(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    assert run_cli("sync", "--repo", git_remote.url, "--wait").returncode == 0
    broken = web("nginx:missing").replace("  replicas: 2\n", "  replicas: 2\n  progressDeadlineSeconds: 2\n")
    git_remote.commit_and_push("typo", {"apps/web.yaml": broken})
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert synced.returncode == 1
    assert "Degraded" in synced.stdout
    rollout = run_cli("rollout", "status", "shop/web", "--timeout", "5s")
    assert rollout.returncode == 1 and "failed" in rollout.stderr
    history = json.loads(run_cli("history", "web", "-o", "json").stdout)
    assert (history[-1]["outcome"], history[-1]["reason"]) == ("Failed", "ProgressDeadlineExceeded")


def test_run_stopped_mid_rollout_and_restarted_finishes_it(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    git_remote.commit_and_push(
        "Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25", 6)}
    )
    assert run_cli("sync", "--repo", git_remote.url, "--wait").returncode == 0
    git_remote.commit_and_push("bump", {"apps/web.yaml": web("nginx:1.26", 6)})
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    command = [gitdeploy_executable(), "run", "--repo", git_remote.url, "--interval", "1s"]
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(100):  # wait until the rollout is under way
            views = json.loads(run_cli("status", "-o", "json").stdout)
            if views and views[0]["revision"] == 2:
                break
            time.sleep(0.1)
        first.send_signal(signal.SIGTERM)
        out, _ = first.communicate(timeout=30)
    finally:
        first.kill()
    assert first.returncode == 0, out
    assert "finishing the step in progress" in out
    finished = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    history = json.loads(run_cli("history", "web", "-o", "json").stdout)
    assert [(r["revision"], r["outcome"], r["commit"]["subject"]) for r in history] == [
        (1, "Complete", "Settings"),
        (2, "Complete", "bump"),
    ]
