"""The Argo Rollouts examples (examples/apps, written as Argo Rollouts' docs write them) through the
real `gitdeploy` command on the embedded cluster, with no edits: they deploy at full size, and a
commit that changes one walks its canary to its `pause: {}`, where `status` says so."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.fixtures.cli import EXAMPLES, RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import wait_for

ROLLOUTS = ("demo/example-rollout", "demo/rollouts-demo")


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def views(run_cli: RunCli) -> dict[str, dict[str, Any]]:
    shown = run_cli("status", "-o", "json")
    assert shown.returncode == 0, shown.stderr
    return {v["key"]: v for v in json.loads(shown.stdout)}


def test_the_rollout_examples_deploy_unedited_then_a_change_walks_the_canary(
    run_cli: RunCli, cluster: None, git_remote: GitRemote
) -> None:
    # Given the Rollout examples, as they are, in a git repo (test_image_tags deploys them all)
    for name in ("gitdeploy.yaml", *(f"apps/{k.split('/')[1]}.yaml" for k in ROLLOUTS)):
        (git_remote.work / name).parent.mkdir(exist_ok=True)
        shutil.copy(EXAMPLES / name, git_remote.work / name)
    git_remote.commit_all("Examples")
    git_remote.push()

    # When synced, the Rollouts deploy at full size (a first revision walks no steps)
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "2m")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    shown = views(run_cli)
    assert [(shown[k]["phase"], shown[k]["ready"], shown[k]["canary"]) for k in ROLLOUTS] == [
        ("Complete", 10, ""),
        ("Complete", 5, ""),
    ]

    # When rollouts-demo's image changes (as the getting-started guide does, blue to yellow)
    path = git_remote.work / "apps" / "rollouts-demo.yaml"
    path.write_text(path.read_text().replace("rollouts-demo:blue", "rollouts-demo:yellow"))
    git_remote.commit_all("rollouts-demo: yellow")
    git_remote.push()

    def paused_after_a_pass() -> bool:
        run_cli("sync", "--repo", git_remote.url)  # one pass (exit 1 once Suspended)
        return "paused" in views(run_cli)["demo/rollouts-demo"]["canary"]

    wait_for(paused_after_a_pass)

    # Then its canary runs 1 pod of 5 and waits at its `pause: {}`
    demo = views(run_cli)["demo/rollouts-demo"]
    assert demo["canary"].startswith("revision 2: step 2/8, paused (waiting for promote)"), demo
    assert (demo["health"], demo["upToDate"], demo["ready"]) == ("Suspended", 1, 5)
