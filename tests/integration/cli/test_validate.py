"""`gitdeploy validate` through the installed command: examples, the seed manifests, broken copies."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.fixtures.cli import EXAMPLES, RunCli


def test_examples_validate(run_cli: RunCli) -> None:
    done = run_cli("validate", "examples/")
    assert done.returncode == 0, done.stderr
    apps: tuple[str, ...] = (
        "nginx-deployment",
        "frontend",
        "api",
        "worker",
        "reports",
        "rollouts-demo",
        "example-rollout",
    )
    apps += ("guestbook", "checkout")  # a canary with analysis, background analysis
    for app in apps:
        assert f"demo/{app}" in done.stdout
    # the hash of an app whose images come from image triggers is marked, and the mark explained
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith("demo/")}
    assert rows["demo/frontend"][4].endswith("*") and not rows["demo/api"][4].endswith("*")
    assert "* the hash of the template as git has it: its ImageChange triggers set the images" in done.stderr
    assert (
        "9 app(s) valid, 1 image stream(s), 2 analysis template(s), 1 document(s) ignored (Service)"
        in done.stdout
    )


def test_examples_json_output(run_cli: RunCli) -> None:
    done = run_cli("validate", "examples", "-o", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == []
    by_name = {a["name"]: a for a in report["apps"]}
    assert set(by_name["nginx-deployment"]) == {
        "kind",
        "namespace",
        "name",
        "file",
        "line",
        "templateHash",
        "triggers",
        "strategy",
    }
    assert by_name["nginx-deployment"] | {"templateHash": None} == {
        "kind": "Deployment",
        "namespace": "demo",
        "name": "nginx-deployment",
        "file": "examples/apps/nginx-deployment.yaml",
        "line": 2,
        "templateHash": None,
        "triggers": ["ConfigChange"],
        "strategy": "RollingUpdate",
    }
    assert by_name["frontend"]["triggers"] == ["ConfigChange", "ImageChange(origin-ruby-sample:latest)"]


def test_a_json_manifest_without_a_comma_fails_at_the_line_after_it(run_cli: RunCli, tmp_path: Path) -> None:
    # The published example lacks the comma between the template and "replicas".
    text = (EXAMPLES / "apps" / "frontend.json").read_text()
    broken = text.replace('    },\n    "replicas"', '    }\n    "replicas"')
    assert broken != text
    (tmp_path / "frontend.json").write_text(broken)
    done = run_cli("validate", str(tmp_path), "-o", "json")
    assert done.returncode == 1
    (error,) = json.loads(done.stdout)["errors"]
    assert error["line"] == broken.splitlines().index('    "replicas": 5,') + 1
    assert "Expecting ','" in error["message"]
    assert error["hint"]


def test_replicas_given_as_a_string_fails_naming_file_line_and_field(run_cli: RunCli, tmp_path: Path) -> None:
    text = (EXAMPLES / "apps" / "nginx-deployment.yaml").read_text()
    (tmp_path / "nginx.yaml").write_text(text.replace("replicas: 3", "replicas: three"))
    done = run_cli("validate", str(tmp_path))
    assert done.returncode == 1
    line = text.splitlines().index("  replicas: 3") + 1
    assert (
        f"nginx.yaml:{line}:3: default/nginx-deployment: spec.replicas must be an integer, not a string"
        in done.stderr
    )


def test_one_file_can_be_validated(run_cli: RunCli) -> None:
    done = run_cli("validate", "examples/apps/nginx-deployment.yaml")
    assert done.returncode == 0, done.stderr
    assert "1 app(s) valid" in done.stdout


def test_symlink_leaving_the_tree_is_reported_and_not_read(run_cli: RunCli, tmp_path: Path) -> None:
    outside = tmp_path / "secret.yaml"
    outside.write_text("password: hunter2\n")
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES, repo)
    os.symlink(outside, repo / "apps" / "link.yaml")
    done = run_cli("validate", str(repo))
    assert done.returncode == 1
    assert "link.yaml:1:1: is a symlink to" in done.stderr and "which leaves the repository" in done.stderr
    assert "hunter2" not in done.stdout + done.stderr


def test_dot_directories_are_skipped(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci.yaml").write_text("on: [push]\n")
    shutil.copy(EXAMPLES / "apps" / "nginx-deployment.yaml", tmp_path)
    done = run_cli("validate", str(tmp_path))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("args", [["validate", "/no/such/dir"], ["validate", "-o", "xml"]])
def test_usage_errors_exit_2(run_cli: RunCli, args: list[str]) -> None:
    done = run_cli(*args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_messages_quoting_the_manifest_are_printed_verbatim(run_cli: RunCli, tmp_path: Path) -> None:
    text = (EXAMPLES / "apps" / "nginx-deployment.yaml").read_text()
    (tmp_path / "web.yaml").write_text(
        text.replace("spec:\n  replicas: 3", 'spec:\n  replicas: "[bold]3[/bold]"')
    )
    done = run_cli("validate", str(tmp_path))
    assert done.returncode == 1
    assert "spec.replicas must be an integer, not a string" in done.stderr
    (tmp_path / "web.yaml").write_text(
        text.replace(
            "app: nginx\nspec", "app: nginx\n  annotations: {gitdeploy.io/auto-rollback: '[red]x'}\nspec"
        )
    )
    done = run_cli("validate", str(tmp_path))
    assert "gitdeploy.io/auto-rollback is '[red]x'" in done.stderr
