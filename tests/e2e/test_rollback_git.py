"""Rollback that writes git (``--git-revert``) and rollback that restores settings (``--change-*``),
through the real CLI on a real git repo and the embedded cluster.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

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


def _show(git_remote: GitRemote, rev: str, path: str) -> bytes:
    """The file's exact bytes at ``rev`` of the remote."""
    shown = subprocess.run(
        ["git", "-C", str(git_remote.bare), "show", f"{rev}:{path}"],
        env=git_remote.env,
        capture_output=True,
        check=True,
    )
    return shown.stdout


def test_git_revert_prints_the_commit_then_pushes_it_and_the_loop_deploys_it(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, read_record: Any
) -> None:
    # Given three deployed commits of shop/web
    deploy_three_releases(git_remote, run_cli)
    before = web_history(run_cli)
    head = git_remote.remote_sha()
    short = before[1]["commit"]["sha"][:7]

    # When the rollback is only asked for, it prints the commit and changes nothing
    dry = run_cli("rollback", "shop/web", "--git-revert", "--repo", git_remote.url)
    assert dry.returncode == 0, dry.stderr
    assert "would commit on main" in dry.stdout
    assert f"Roll back shop/web to revision 2 (commit {short})" in dry.stdout
    assert '-      containers: [{name: web, image: "nginx:1.27"}]' in dry.stdout
    assert '+      containers: [{name: web, image: "nginx:1.26"}]' in dry.stdout
    assert git_remote.remote_sha() == head

    # When it is pushed
    done = run_cli(
        "rollback", "shop/web", "--git-revert", "--push", "--repo", git_remote.url,
        "--author", "Ops Person <ops@example.com>", "-m", "1.27 breaks checkout",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    # Then main has one new commit whose tree has revision 2's manifest
    new = git_remote.remote_sha()
    assert git_remote.run_git("rev-parse", f"{new}^", cwd=git_remote.bare) == head
    assert _show(git_remote, new, "apps/web.yaml").decode() == web("nginx:1.26")
    logged = git_remote.run_git("log", "-1", "--format=%s%n%an <%ae>%n%b", new, cwd=git_remote.bare)
    assert logged.splitlines()[:2] == [
        f"Roll back shop/web to revision 2 (commit {short})",
        "Ops Person <ops@example.com>",
    ]
    assert "1.27 breaks checkout" in logged and "Rolled-back-by: " in logged

    # And the loop deploys it as a config change that returns to revision 2's ReplicaSet; no pin
    sync_and_wait(run_cli, git_remote)
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["outcome"], last["returnsTo"]) == (
        4,
        "ConfigChange",
        "Complete",
        2,
    )
    assert last["replicaSet"] == before[1]["replicaSet"]
    assert last["commit"]["sha"] == new
    assert web_status(run_cli)["sync"] == "Synced"
    record = read_record()
    assert record["pin"] is None and record["triggersSuspended"] is False

    # And a second revert to the same revision has nothing to write
    again = run_cli(
        "rollback", "shop/web", "--to-revision", "4", "--git-revert", "--push", "--repo", git_remote.url
    )
    assert again.returncode == 0 and "skipped rollback" in again.stdout
    assert git_remote.remote_sha() == new


HEADER = "# shop apps: edit with care\n"


def _api(image: str) -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n  replicas: 1\n"
        "  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n"
        f"    spec:\n      containers: [{{name: api, image: '{image}'}}]\n"
    )


def _config(value: str) -> str:
    weird = "kind: ConfigMap   # not an app\nmetadata:   {name: settings}\n"
    return f"apiVersion: v1\n{weird}data: {{k: {value}}}\n"


def _all(web_image: str, api_image: str, value: str) -> str:
    return "---\n".join((HEADER + web(web_image), _config(value), _api(api_image)))


def test_git_revert_of_two_apps_in_one_file_goes_to_a_new_branch_and_keeps_the_other_documents(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    # Given web and api in one file with a ConfigMap between them, deployed twice
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("v1", {"apps/all.yaml": _all("nginx:1.25", "api:1", "one")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("v2", {"apps/all.yaml": _all("nginx:1.26", "api:2", "two")})
    sync_and_wait(run_cli, git_remote)
    head = git_remote.remote_sha()

    # When both roll back with --git-revert onto a new branch
    done = run_cli(
        "rollback", "shop/web", "shop/api", "--git-revert", "--branch", "fix", "--push",
        "--repo", git_remote.url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "main is unchanged: open a pull request from fix into main" in done.stdout

    # Then main is untouched and fix has one commit naming both apps
    assert git_remote.remote_sha() == head
    fix = git_remote.remote_sha("fix")
    assert git_remote.run_git("rev-parse", f"{fix}^", cwd=git_remote.bare) == head
    subject = git_remote.run_git("log", "-1", "--format=%B", fix, cwd=git_remote.bare)
    assert subject.startswith("Roll back 2 apps\n")
    assert "- shop/api to revision 1" in subject and "- shop/web to revision 1" in subject
    # And the apps' documents are the old ones, the header and the ConfigMap as they are on main
    assert _show(git_remote, fix, "apps/all.yaml").decode() == _all("nginx:1.25", "api:1", "two")
    # And the loop tracking main has nothing to do
    sync_and_wait(run_cli, git_remote)
    assert [e["revision"] for e in web_history(run_cli)] == [1, 2]


def test_git_revert_needs_the_repo_and_other_git_flags_need_git_revert(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    deploy_three_releases(git_remote, run_cli)
    no_repo = run_cli("rollback", "shop/web", "--git-revert")
    assert no_repo.returncode == 2 and "--repo" in no_repo.stderr
    stray = run_cli("rollback", "shop/web", "--push")
    assert stray.returncode == 2 and "go with --git-revert" in stray.stderr
    restore = run_cli("rollback", "shop/web", "--change-strategy")
    assert restore.returncode == 2 and "give the repo with --repo" in restore.stderr
    author = run_cli("rollback", "shop/web", "--git-revert", "--repo", git_remote.url, "--author", "nobody")
    assert author.returncode == 2 and "'Name <email>'" in author.stderr


def _web(strategy: str, replicas: int, image: str) -> str:
    manifest = web(image, replicas=replicas)
    return manifest.replace("  selector:", f"  strategy: {{type: {strategy}}}\n  selector:", 1)


def _events(tmp_path: Path, reason: str) -> list[str]:
    """The messages of the events with ``reason`` in shop, in the order they were recorded."""
    api = config.new_client_from_config(str(tmp_path / "state" / "kubeconfig"))  # type: ignore[no-untyped-call]
    try:
        found: Any = client.CoreV1Api(api).list_namespaced_event("shop")
    finally:
        api.close()
    events = sorted(found.items, key=lambda e: int(e.metadata.resource_version))
    return [str(e.message) for e in events if e.reason == reason]


def _scaling_events(tmp_path: Path) -> list[str]:
    """``up|down <ReplicaSet> <n>`` of every scale the ScalingReplicaSet events tell, in order."""
    scales = [s.split() for m in _events(tmp_path, "ScalingReplicaSet") for s in m.split("; ")]
    return [f"{w[1]} {w[4]} {w[6]}" for w in scales]  # Scaled up replica set x to N[; Scaled ...]


def _deploy_recreate_then_rolling(git_remote: GitRemote, run_cli: RunCli) -> tuple[str, str]:
    """Revision 1 (Recreate, 3 replicas) and revision 2 (RollingUpdate, 2 replicas): their ReplicaSets."""
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("v1", {"apps/web.yaml": _web("Recreate", 3, "nginx:1.25")})
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("v2", {"apps/web.yaml": _web("RollingUpdate", 2, "nginx:1.26")})
    sync_and_wait(run_cli, git_remote)
    first, second = (e["replicaSet"] for e in web_history(run_cli))
    return first, second


def test_change_flags_restore_the_strategy_and_the_replicas_of_the_target(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path, read_record: Any
) -> None:
    # Given revision 1 (Recreate, 3 replicas) and revision 2 (RollingUpdate, 2 replicas)
    first, second = _deploy_recreate_then_rolling(git_remote, run_cli)

    # When rolling back to revision 1 with its strategy and scaling settings
    dry = run_cli(
        "rollback", "shop/web", "--change-strategy", "--change-scaling-settings", "--repo", git_remote.url,
        "--dry-run",
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "restores replicas: 3, selector: app=web" in dry.stdout
    assert "restores strategy: Recreate" in dry.stdout
    seen = len(_scaling_events(tmp_path))
    done = run_cli(
        "rollback", "shop/web", "--change-strategy", "--change-scaling-settings", "--repo", git_remote.url,
        "-o", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["restores"] == ["scaling", "strategy"]
    assert read_record()["pin"]["restore"] == ["scaling", "strategy"]
    sync_and_wait(run_cli, git_remote)

    # Then the rollout is a Recreate one (the running ReplicaSet goes down first) to 3 replicas
    assert _scaling_events(tmp_path)[seen:] == [f"down {second} 0", f"up {first} 3"]
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["outcome"], last["replicaSet"]) == (
        3,
        "Rollback",
        "Complete",
        first,
    )


def test_without_change_flags_only_the_template_rolls_back(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    first, _ = _deploy_recreate_then_rolling(git_remote, run_cli)
    seen = len(_scaling_events(tmp_path))

    assert run_cli("rollback", "shop/web").returncode == 0
    sync_and_wait(run_cli, git_remote)

    # a rolling update (the old template comes up first) to git's 2 replicas
    events = _scaling_events(tmp_path)[seen:]
    assert events[0].startswith(f"up {first} ") and events[-1].startswith("down ")
    assert max(int(e.split()[2]) for e in events if e.startswith(f"up {first}")) == 2


def _worker(image: str) -> str:
    return f"""\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: web
  annotations: {{"gitdeploy.io/auto-rollback": "false"}}
spec:
  replicas: 2
  selector: {{app: web}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "{image}"}}]
  strategy:
    type: Recreate
    recreateParams:
      pre: {{failurePolicy: Abort, execNewPod: {{containerName: web, command: [/bin/drain]}}}}
  triggers: [{{type: ConfigChange}}]
"""


def test_retry_runs_the_failed_revision_again_under_its_own_number(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path, read_record: Any
) -> None:
    # Given revision 1 Complete and revision 2 Failed in its pre hook (its image cannot be pulled)
    git_remote.commit_and_push(
        "Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": _worker("nginx:1.25")}
    )
    sync_and_wait(run_cli, git_remote)
    refused = run_cli("deploy", "shop/web", "--retry")
    assert refused.returncode == 1
    assert "last revision 1 is Complete, not Failed: nothing to retry" in refused.stderr
    git_remote.commit_and_push("typo", {"apps/web.yaml": _worker("nginx:missing")})
    run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert [(e["revision"], e["outcome"]) for e in web_history(run_cli)] == [(1, "Complete"), (2, "Failed")]
    hooks_run = len(_events(tmp_path, "HookStarted"))

    # When it is retried
    retried = run_cli("deploy", "shop/web", "--retry")
    assert retried.returncode == 0, retried.stderr
    assert "revision 2 runs again (retried by " in retried.stdout

    # Then revision 2 is Running again and says who retried it and what had failed
    entry = read_record()["revisions"][-1]
    assert (entry["revision"], entry["outcome"]) == (2, "Running")
    assert "retried by " in entry["message"] and "the pre hook failed" in entry["message"]
    # And the next pass runs its pre hook again (no second failure is recorded before that)
    started = run_cli("sync", "--repo", git_remote.url)
    assert "revision 2: pre hook running" in started.stdout, started.stdout + started.stderr
    assert _events(tmp_path, "HookStarted")[hooks_run:] == ["Running pre hook of revision 2 (attempt 1)"]
    assert read_record()["revisions"][-1]["outcome"] == "Running"
    # And when the hook fails again, revision 2 is Failed again: still no new revision number
    run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert [(e["revision"], e["outcome"]) for e in web_history(run_cli)] == [(1, "Complete"), (2, "Failed")]
    assert len(_events(tmp_path, "HookFailed")) == 2


def test_retry_in_a_running_loop_runs_the_hook_again_before_it_fails_again(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path, read_record: Any
) -> None:
    # Given revision 2 Failed in its pre hook, and a loop that has seen it fail (its status in memory)
    git_remote.commit_and_push(
        "Settings", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": _worker("nginx:1.25")}
    )
    sync_and_wait(run_cli, git_remote)
    git_remote.commit_and_push("typo", {"apps/web.yaml": _worker("nginx:missing")})
    with running_loop(git_remote, tmp_path):
        wait_for(lambda: len(_events(tmp_path, "HookFailed")) == 1)
        assert read_record()["revisions"][-1]["outcome"] == "Failed"

        # When it is retried while the loop runs
        assert run_cli("deploy", "shop/web", "--retry").returncode == 0

        # Then the loop runs the pre hook again and only its new failure fails the revision again
        wait_for(lambda: len(_events(tmp_path, "HookFailed")) == 2)
    started = _events(tmp_path, "HookStarted")
    assert started[-2:] == ["Running pre hook of revision 2 (attempt 1)"] * 2
    assert [(e["revision"], e["outcome"]) for e in web_history(run_cli)] == [(1, "Complete"), (2, "Failed")]
