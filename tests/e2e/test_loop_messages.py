"""What ``sync --wait`` and ``gitdeploy run`` say, as a person reads it (issue 24): a new app's wait
says nothing of old replicas, a commit that only scales an app logs the scale, and an invalid
manifest is a warning that says each problem once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import SETTINGS, running_loop, wait_for, web, web_status

BAD = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad}\nspec:\n  replicas: two\n"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def test_sync_wait_of_a_new_app_says_nothing_of_old_replicas(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert synced.returncode == 0, synced.stderr
    assert "Waiting for rollout to" in synced.stderr
    assert "old replicas" not in synced.stderr, synced.stderr


def test_run_logs_a_scale_only_commit_and_warns_of_an_invalid_manifest(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    # Given shop/web running 2 pods
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    assert run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s").returncode == 0

    # When a commit scales it to 3 and adds an invalid manifest, and `gitdeploy run` applies it
    git_remote.commit_and_push("web: 3 pods", {"apps/web.yaml": web("nginx:1.25", 3), "apps/bad.yaml": BAD})
    with running_loop(git_remote, tmp_path) as log:
        wait_for(lambda: web_status(run_cli)["ready"] == 3)
    (logged,) = log

    # Then the scale is logged, with the revision it scaled
    assert re.search(r"INFO +\[shop/web\] revision 1: Scaled up replica set web-\w+ to 3$", logged, re.M), (
        logged
    )
    # and the invalid manifest is a warning naming the file and line, each problem once
    (warning,) = [line for line in logged.splitlines() if "[shop/bad]" in line]
    assert (
        " WARNING [shop/bad] InvalidManifest/Missing: apps/bad.yaml:4:1: shop/bad: missing required"
        in warning
    )
    assert warning.count("spec.selector") == 1 and "apps/bad.yaml:5:3" in warning
