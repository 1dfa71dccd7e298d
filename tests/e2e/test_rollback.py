"""Rollback that sticks, through the real CLI: ``rollback``, ``deploy``, ``sync``, ``history``,
``status`` and ``run`` on a real git repo and the embedded cluster.

Given three deployed commits of ``shop/web`` (nginx 1.25, 1.26, 1.27), each scenario rolls back
and checks what the revision log, the ReplicaSets and the status say afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.shopweb import (
    SETTINGS,
    deploy_three_releases,
    running_loop,
    sync_and_wait,
    wait_for,
    web,
    web_history,
    web_status,
)


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def test_rollback_to_the_previous_revision_sticks_until_the_manifest_changes(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, read_record: Callable[[], dict[str, Any]]
) -> None:
    deploy_three_releases(git_remote, run_cli)
    before = web_history(run_cli)

    done = run_cli("rollback", "web", "-n", "shop", "-m", "1.27 breaks checkout")
    assert done.returncode == 0, done.stderr
    assert "revision 3 -> revision 2's template" in done.stdout
    assert "image: nginx:1.27 -> nginx:1.26" in done.stdout
    assert f"reuses ReplicaSet {before[1]['replicaSet']}" in done.stdout

    sync_and_wait(run_cli, git_remote)
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["outcome"]) == (4, "Rollback", "Complete")
    assert (last["rolledBackFrom"], last["rolledBackTo"]) == (3, 2)
    assert last["replicaSet"] == before[1]["replicaSet"]
    assert last["by"] and "@" in last["by"]
    assert last["images"] == [{"container": "web", "image": "nginx:1.26"}]
    assert last["commit"]["sha"] == before[1]["commit"]["sha"]
    view = web_status(run_cli)
    assert (view["revision"], view["sync"]) == (4, "Pinned")
    assert "deploy shop/web --latest" in view["message"]
    record = read_record()
    assert record["triggersSuspended"] is True and "1.27 breaks checkout" in record["suspendedReason"]

    # polls of the unchanged manifest do not roll forward again
    git_remote.commit_and_push("unrelated", {"README.md": "docs\n"})
    sync_and_wait(run_cli, git_remote)
    assert [e["revision"] for e in web_history(run_cli)] == [1, 2, 3, 4]
    assert web_status(run_cli)["sync"] == "Pinned"

    # a commit that changes the app's manifest rolls forward; image triggers stay suspended
    git_remote.commit_and_push("web 1.28", {"apps/web.yaml": web("nginx:1.28")})
    sync_and_wait(run_cli, git_remote)
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["images"]) == (
        5,
        "ConfigChange",
        [{"container": "web", "image": "nginx:1.28"}],
    )
    assert web_status(run_cli)["sync"] == "Synced"
    record = read_record()
    assert record["pin"] is None and record["triggersSuspended"] is True

    resumed = run_cli("deploy", "shop/web", "--enable-triggers")
    assert resumed.returncode == 0, resumed.stderr
    assert read_record()["triggersSuspended"] is False


def test_rollback_to_a_chosen_revision_dry_run_and_refusals(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, read_record: Callable[[], dict[str, Any]]
) -> None:
    deploy_three_releases(git_remote, run_cli)
    record_before = read_record()

    dry = run_cli("rollback", "shop/web", "--to-revision", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "image: nginx:1.27 -> nginx:1.25" in dry.stdout and "dry run, nothing changed" in dry.stdout
    assert read_record() == record_before

    unknown = run_cli("rollback", "shop/web", "--to-revision", "9")
    assert unknown.returncode == 1
    said = "error: shop/web has no revision 9 (kept revisions: 1–3)"  # the app named once
    assert unknown.stderr.startswith(said), unknown.stderr
    no_commit = run_cli("rollback", "shop/web", "--to-commit", "deadbeef")
    assert (
        no_commit.returncode == 1 and "no revision of shop/web was deployed from commit" in no_commit.stderr
    )
    same = run_cli("rollback", "shop/web", "--to-revision", "3")
    assert same.returncode == 0 and "skipped rollback" in same.stdout
    assert read_record() == record_before

    first_commit = web_history(run_cli)[0]["commit"]["sha"]
    done = run_cli("rollback", "shop/web", "--to-commit", first_commit[:8], "-o", "json")
    assert done.returncode == 0, done.stderr
    [plan] = json.loads(done.stdout)
    assert (plan["from"], plan["to"], plan["applied"]) == (3, 1, True)
    sync_and_wait(run_cli, git_remote)
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["rolledBackTo"], last["images"]) == (
        4,
        1,
        [{"container": "web", "image": "nginx:1.25"}],
    )


def test_rollback_after_the_history_limit_removed_the_replica_set_rebuilds_it_from_git(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    deploy_three_releases(git_remote, run_cli, limit=1)
    first = web_history(run_cli)[0]

    without_repo = run_cli("rollback", "shop/web", "--to-revision", "1")
    assert without_repo.returncode == 1
    assert "removed by the history limit" in without_repo.stderr and "--repo" in without_repo.stderr

    done = run_cli("rollback", "shop/web", "--to-revision", "1", "--repo", git_remote.url)
    assert done.returncode == 0, done.stderr
    assert "rebuilt from git" in done.stdout
    sync_and_wait(run_cli, git_remote)
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["outcome"], last["rolledBackTo"]) == (
        4,
        "Rollback",
        "Complete",
        1,
    )
    assert last["images"] == [{"container": "web", "image": "nginx:1.25"}]
    assert last["templateHash"] == first["templateHash"]


def test_deploy_latest_releases_the_pin_and_rolls_forward_to_git(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    deploy_three_releases(git_remote, run_cli)
    assert run_cli("rollback", "shop/web").returncode == 0
    sync_and_wait(run_cli, git_remote)
    assert web_status(run_cli)["sync"] == "Pinned"

    latest = run_cli("deploy", "shop/web", "--latest")
    assert latest.returncode == 0, latest.stderr
    assert "released the pin to revision 2" in latest.stdout
    sync_and_wait(run_cli, git_remote)
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["images"], last["returnsTo"]) == (
        5,
        [{"container": "web", "image": "nginx:1.27"}],
        3,
    )
    assert web_status(run_cli)["sync"] == "Synced"


def test_cancel_stops_a_stuck_rollout_and_brings_the_previous_revision_back(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("typo", {"apps/web.yaml": web("nginx:missing")})
    started = run_cli("sync", "--repo", git_remote.url)  # one pass: revision 2 starts, and gets stuck
    assert "revision 2 started" in started.stdout, started.stderr

    refused = run_cli("deploy", "shop/web", "--latest")
    assert refused.returncode == 1 and "rollout in progress" in refused.stderr
    cancelled = run_cli("deploy", "shop/web", "--cancel")
    assert cancelled.returncode == 0, cancelled.stderr
    sync_and_wait(run_cli, git_remote)
    history = web_history(run_cli)
    assert [(e["revision"], e["outcome"]) for e in history] == [
        (1, "Complete"),
        (2, "Cancelled"),
        (3, "Complete"),
    ]
    assert history[-1]["images"] == [{"container": "web", "image": "nginx:1.25"}]
    assert web_status(run_cli)["sync"] == "Pinned"


def test_a_running_loop_carries_out_a_rollback_made_from_another_terminal(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    deploy_three_releases(git_remote, run_cli)
    with running_loop(git_remote, tmp_path):
        assert run_cli("rollback", "shop/web").returncode == 0
        wait_for(
            lambda: (
                (web_history(run_cli)[-1]["revision"], web_history(run_cli)[-1]["outcome"]) == (4, "Complete")
            )
        )
        history = web_history(run_cli)
        assert (history[-1]["revision"], history[-1]["cause"]) == (4, "Rollback")
