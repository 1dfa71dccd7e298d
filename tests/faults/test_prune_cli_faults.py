"""Bad commits and mass removals through the real ``gitdeploy`` command (``sync``, ``status``,
``prune``) on the embedded cluster: what runs is never taken down by a broken manifest or setting,
and a commit's prunes over ``pruneLimit`` wait for ``gitdeploy prune --confirm``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config", "cluster")

SETTINGS = "paths: [apps]\ndefaultNamespace: shop\nallowedNamespaces: [shop]\nprune: true\n"
EIGHT = [f"app{i}" for i in range(8)]


def sync(run_cli: RunCli, remote: GitRemote, *extra: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    done = run_cli("sync", "--repo", remote.url, "--wait", "--timeout", "60s", "-o", "json", *extra)
    rows = json.loads(done.stdout) if done.stdout.strip() else []
    return done.returncode, {row["app"]: row for row in rows}, done.stderr


def status(run_cli: RunCli) -> dict[str, dict[str, Any]]:
    done = run_cli("status", "-o", "json")
    assert done.returncode == 0, done.stderr
    return {view["key"]: view for view in json.loads(done.stdout)}


def start(run_cli: RunCli, remote: GitRemote, names: list[str]) -> None:
    files = {f"apps/{n}.yaml": deployment(n, "shop", replicas=2) for n in names}
    remote.commit_and_push("apps", {"gitdeploy.yaml": SETTINGS, **files})
    code, rows, err = sync(run_cli, remote)
    assert code == 0 and {r["sync"] for r in rows.values()} == {"Synced"}, (rows, err)


def test_a_broken_manifest_with_prune_is_invalid_and_keeps_running(
    run_cli: RunCli, git_remote: GitRemote
) -> None:
    start(run_cli, git_remote, ["web", "api"])
    # When a commit makes api's selector miss its template labels (prune is on)
    broken = deployment("api", "shop", replicas=2).replace(
        "matchLabels: {app: api}", "matchLabels: {app: apiv2}"
    )
    git_remote.commit_and_push("api: new selector", {"apps/api.yaml": broken})
    code, rows, _ = sync(run_cli, git_remote)
    # Then sync calls api InvalidManifest with file:line and exits 1; status agrees; nothing is deleted
    assert code == 1
    api = rows["shop/api"]
    assert api["sync"] == "InvalidManifest" and "apps/api.yaml:6" in api["message"], api
    assert rows["shop/web"]["sync"] == "Synced"
    views = status(run_cli)
    assert views["shop/api"]["sync"] == "InvalidManifest" and views["shop/api"]["ready"] == 2, views[
        "shop/api"
    ]
    assert views["shop/web"]["sync"] == "Synced"
    history = run_cli("history", "shop/api", "-o", "json")
    assert history.returncode == 0 and len(json.loads(history.stdout)) == 1


def test_a_settings_file_that_does_not_parse_fails_closed(run_cli: RunCli, git_remote: GitRemote) -> None:
    start(run_cli, git_remote, ["web", "api"])
    # When gitdeploy.yaml stops parsing in the commit that adds an app in kube-system and drops api
    intruder = deployment("intruder", "kube-system", "evil:666")
    git_remote.commit_and_push_changes(
        "oops",
        {
            "gitdeploy.yaml": "paths: [apps\nprune: true\n",
            "apps/intruder.yaml": intruder,
            "apps/api.yaml": None,
        },
    )
    code, rows, err = sync(run_cli, git_remote)
    # Then sync exits 1 naming gitdeploy.yaml:line; nothing deploys, nothing is pruned
    assert code == 1 and "error: gitdeploy.yaml:2" in err and "nothing is pruned" in err, err
    assert {app: row["sync"] for app, row in rows.items()} == {
        "shop/api": "InvalidSettings",
        "shop/web": "InvalidSettings",
    }
    views = status(run_cli)
    assert sorted(views) == ["shop/api", "shop/web"]
    assert {v["sync"] for v in views.values()} == {"InvalidSettings"}
    assert all(v["ready"] == 2 for v in views.values())


def test_a_paths_typo_with_prune_is_an_error_that_touches_nothing(
    run_cli: RunCli, git_remote: GitRemote
) -> None:
    start(run_cli, git_remote, ["web", "api"])
    git_remote.commit_and_push("typo", {"gitdeploy.yaml": SETTINGS.replace("[apps]", "[appz]")})
    code, _, err = sync(run_cli, git_remote)
    assert code == 1 and "gitdeploy.yaml:1:9: paths entry 'appz' matches no manifest file" in err, err
    assert {v["sync"] for v in status(run_cli).values()} == {"InvalidSettings"}
    validate = run_cli("validate", str(git_remote.work))
    assert validate.returncode == 1 and "gitdeploy.yaml:1:9" in validate.stdout + validate.stderr


def test_a_mass_prune_waits_for_prune_confirm(run_cli: RunCli, git_remote: GitRemote) -> None:
    # Given eight apps, prune on; When one commit removes six (over the default limit of five)
    start(run_cli, git_remote, EIGHT)
    git_remote.commit_and_push_changes("drop six", {f"apps/{n}.yaml": None for n in EIGHT[:6]})
    head = git_remote.head_sha()
    code, rows, _ = sync(run_cli, git_remote)
    # Then sync exits 1 with six PruneHeld apps, and nothing is deleted
    assert code == 1
    assert sorted(app for app, row in rows.items() if row["sync"] == "PruneHeld") == [
        f"shop/{n}" for n in EIGHT[:6]
    ]
    assert sorted(status(run_cli)) == [f"shop/{n}" for n in EIGHT]
    listed = run_cli("prune", "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert [(h["app"], h["commit"], h["confirmed"]) for h in json.loads(listed.stdout)] == [
        (f"shop/{n}", head, False) for n in EIGHT[:6]
    ]
    # When a person confirms, and the loop runs again
    confirmed = run_cli("prune", "--confirm")
    assert confirmed.returncode == 0 and f"6 apps held by commit {head[:7]}" in confirmed.stdout, confirmed
    code, rows, _ = sync(run_cli, git_remote)
    # Then the six are gone and the two others run
    assert code == 0, rows
    assert sorted(status(run_cli)) == [f"shop/{n}" for n in EIGHT[6:]]
    assert run_cli("prune").stdout.strip() == "no prunes are held"


def test_the_prune_limit_flag_lets_a_mass_prune_through(run_cli: RunCli, git_remote: GitRemote) -> None:
    start(run_cli, git_remote, EIGHT)
    git_remote.commit_and_push_changes("drop six", {f"apps/{n}.yaml": None for n in EIGHT[:6]})
    code, rows, err = sync(run_cli, git_remote, "--prune-limit", "75%")
    assert code == 0, (rows, err)
    assert sorted(status(run_cli)) == [f"shop/{n}" for n in EIGHT[6:]]
    bad = run_cli("sync", "--repo", git_remote.url, "--prune-limit", "many")
    assert bad.returncode == 2 and "'many' is not a limit" in bad.stderr
