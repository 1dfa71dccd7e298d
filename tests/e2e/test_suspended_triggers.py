"""Suspended image triggers are shown wherever the app's state is (issue 21, item 4).

Given ``shop/web``, a DeploymentConfig whose automatic ImageChange trigger follows ``shop/web:prod``
(pinned to a digest in git, so no registry is involved), rolled back and then released with
``deploy --latest`` (so it is Synced again, with its triggers still suspended): ``status`` (table,
``status APP`` and ``-o json``), ``history`` and ``plan --live`` say that its triggers are suspended,
why, and what resumes them. A plain Deployment rolled back says nothing about image triggers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.imagestreams import pinned_image as image
from tests.fixtures.imagestreams import pinned_stream
from tests.fixtures.imagetriggers import web_config
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, tag_prod, web

WAY_OUT = "`gitdeploy deploy shop/web --enable-triggers` resumes them"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _status_json(run_cli: RunCli) -> dict[str, Any]:
    [view] = json.loads(run_cli("status", "shop/web", "-o", "json").stdout)
    return dict(view)


def _shown(run_cli: RunCli, git_remote: GitRemote) -> dict[str, str]:
    """What each command prints about shop/web (stdout; each must succeed)."""
    commands = {
        "status": ("status",),
        "status APP": ("status", "shop/web"),
        "history": ("history", "shop/web"),
        "plan --live": ("plan", "--repo", git_remote.url, "--live"),
    }
    shown = {}
    for name, args in commands.items():
        done = run_cli(*args)
        assert done.returncode == 0, f"{name}: {done.stderr}"
        shown[name] = " ".join(done.stdout.split())  # a table wraps a long message in its column
    return shown


def test_triggers_suspended_by_a_rollback_are_shown_with_the_reason_and_the_way_out(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    # Given web ran A, then B (a tag moved), then was rolled back and released with deploy --latest
    git_remote.commit_and_push(
        "web follows its image stream",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/stream.yaml": pinned_stream(image("A")),
            "apps/web.yaml": web_config(),
        },
    )
    sync_and_wait(run_cli, git_remote)
    tag_prod(run_cli, "B")
    sync_and_wait(run_cli, git_remote)
    rolled = run_cli("rollback", "shop/web", "-m", "B breaks checkout")
    assert rolled.returncode == 0, rolled.stderr
    assert f"image triggers: suspended ({WAY_OUT})" in rolled.stdout
    sync_and_wait(run_cli, git_remote)
    latest = run_cli("deploy", "shop/web", "--latest")
    assert latest.returncode == 0, latest.stderr
    sync_and_wait(run_cli, git_remote)

    # Then status is Synced Healthy and says the triggers are suspended, why, and the way out
    view = _status_json(run_cli)
    assert (view["sync"], view["health"]) == ("Synced", "Healthy")
    assert view["triggersSuspended"] is True
    assert "B breaks checkout" in view["suspendedReason"]
    assert "image triggers suspended" in view["message"] and WAY_OUT in view["message"]
    # and so do the status table, status APP, history and plan --live
    for name, text in _shown(run_cli, git_remote).items():
        assert "image triggers suspended" in text and "B breaks checkout" in text, f"{name}: {text}"
        assert WAY_OUT in text, name
    plan = json.loads(run_cli("plan", "--repo", git_remote.url, "--live", "-o", "json").stdout)
    [app] = plan["apps"]
    assert app["change"] == "manual" and "image triggers suspended" in app["reason"]

    # When the triggers are enabled again
    resumed = run_cli("deploy", "shop/web", "--enable-triggers")
    assert resumed.returncode == 0, resumed.stderr

    # Then nothing says they are suspended, before any pass and after one
    for _ in range(2):
        view = _status_json(run_cli)
        assert (view["triggersSuspended"], view["suspendedReason"]) == (False, "")
        for name, text in _shown(run_cli, git_remote).items():
            assert "triggers suspended" not in text, name
        sync_and_wait(run_cli, git_remote)


def test_a_plain_deployment_rolled_back_says_nothing_of_image_triggers(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    # Given a Deployment without image triggers at its second revision
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": web("nginx:1.26")})
    sync_and_wait(run_cli, git_remote)

    # When it is rolled back (after a dry run) and released
    dry = run_cli("rollback", "shop/web", "--dry-run")
    assert dry.returncode == 0 and "image triggers" not in dry.stdout, dry.stdout + dry.stderr
    rolled = run_cli("rollback", "shop/web", "-o", "json")
    assert rolled.returncode == 0, rolled.stderr
    assert json.loads(rolled.stdout)[0]["triggersSuspended"] is False
    sync_and_wait(run_cli, git_remote)
    assert run_cli("deploy", "shop/web", "--latest").returncode == 0
    sync_and_wait(run_cli, git_remote)

    # Then nothing it shows mentions image triggers
    assert _status_json(run_cli)["triggersSuspended"] is False
    for name, text in _shown(run_cli, git_remote).items():
        assert "image trigger" not in text, name
