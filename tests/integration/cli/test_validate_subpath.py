"""`validate`/`sync` with `--path DIR`: DIR/gitdeploy.yaml is the settings file, not a misplaced manifest."""

from __future__ import annotations

import json

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: "nginx:1.25"}]
"""


def test_validate_with_path_reads_the_settings_under_that_path(
    run_cli: RunCli, git_remote: GitRemote
) -> None:
    git_remote.commit_and_push(
        "Monorepo",
        {
            "deploy/gitdeploy.yaml": "paths: [apps]\ndefaultNamespace: shop\n",
            "deploy/apps/web.yaml": WEB,
            "deploy/notes/todo.yaml": "- not a manifest\n",
        },
    )

    done = run_cli("validate", "--repo", git_remote.url, "--path", "deploy", "-o", "json")

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == []
    assert [(a["namespace"], a["name"], a["file"]) for a in report["apps"]] == [
        ("shop", "web", "deploy/apps/web.yaml")
    ]


def test_a_broken_settings_file_under_path_is_reported_as_settings(
    run_cli: RunCli, git_remote: GitRemote
) -> None:
    git_remote.commit_and_push(
        "Monorepo", {"deploy/gitdeploy.yaml": "prune: maybe\n", "deploy/apps/web.yaml": WEB}
    )

    done = run_cli("validate", "--repo", git_remote.url, "--path", "deploy", "-o", "json")

    assert done.returncode == 1
    (error,) = json.loads(done.stdout)["errors"]
    assert error["file"] == "deploy/gitdeploy.yaml"
    assert error["path"] == "prune", error


def test_plan_with_path_reads_the_settings_under_that_path(run_cli: RunCli, git_remote: GitRemote) -> None:
    git_remote.commit_and_push(
        "Monorepo",
        {"deploy/gitdeploy.yaml": "paths: [apps]\ndefaultNamespace: shop\n", "deploy/apps/web.yaml": WEB},
    )
    git_remote.run_git("checkout", "-q", "-b", "feature")
    git_remote.commit_and_push(
        "Bump web", {"deploy/apps/web.yaml": WEB.replace("nginx:1.25", "nginx:1.26")}, "feature"
    )

    done = run_cli(
        "plan",
        "--repo",
        git_remote.url,
        "--base",
        "main",
        "--head",
        "feature",
        "--path",
        "deploy",
        "-o",
        "json",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [(a["app"], a["change"]) for a in report["apps"]] == [("shop/web", "rollout")]
