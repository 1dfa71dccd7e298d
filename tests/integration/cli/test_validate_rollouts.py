"""`gitdeploy validate` of Argo Rollouts manifests through the installed command: a Rollout
without analysis is valid, so is one whose template runs a job; a job spec gitdeploy cannot run, or
an analysis whose template is not in the repo, is refused at its file and line, and an
AnalysisTemplate is checked as any manifest is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.argorollouts import ROLLOUT, STEP_ANALYSIS_ONLY, TEMPLATE, WITHOUT_ANALYSIS
from tests.fixtures.cli import RunCli


def test_an_analysis_of_a_template_not_in_the_repo_is_refused_at_its_line(
    run_cli: RunCli, tmp_path: Path
) -> None:
    (tmp_path / "web.yaml").write_text(ROLLOUT)  # namespace default; the template is in shop
    (tmp_path / "analysis.yaml").write_text(TEMPLATE)
    done = run_cli("validate", str(tmp_path))
    assert done.returncode == 1
    missing = "analysis template 'error-rate' is not in namespace default"
    assert f"{tmp_path}/web.yaml:23:7: default/web: {missing}" in done.stderr
    assert f"{tmp_path}/web.yaml:35:9: default/web: {missing}" in done.stderr


def test_a_step_whose_template_runs_a_job_is_valid(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(
        STEP_ANALYSIS_ONLY.replace("  name: web\n", "  name: web\n  namespace: shop\n").replace(
            "          - name: hash\n",
            "          - name: service\n            value: web\n          - name: hash\n",
        )
    )
    (tmp_path / "analysis.yaml").write_text(TEMPLATE.replace("{{args.token}}", "{{args.service}}"))
    done = run_cli("validate", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 app(s) valid, 1 analysis template(s)" in done.stdout


# (id, replaced, replacement, line, message fragment, hint fragment): a job spec gitdeploy cannot run
BAD_JOBS = [
    ("no-restart-policy", "              restartPolicy: Never\n", "", 31, "restartPolicy'", "Never"),
    (
        "parallel",
        "          backoffLimit: 1\n",
        "          parallelism: 3\n",
        29,
        "parallelism must be at most 1",
        "one pod",
    ),
    (
        "ttl",
        "          backoffLimit: 1\n",
        "          ttlSecondsAfterFinished: 60\n",
        29,
        "ttlSeconds",
        "known",
    ),
    (
        "no-containers",
        "              containers:\n",
        "              initContainers:\n",
        31,
        "containers'",
        "",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "line", "message", "hint"), [c[1:] for c in BAD_JOBS], ids=[c[0] for c in BAD_JOBS]
)
def test_a_job_spec_gitdeploy_cannot_run_is_refused_at_its_line(
    run_cli: RunCli, tmp_path: Path, old: str, new: str, line: int, message: str, hint: str
) -> None:
    assert old in TEMPLATE
    (tmp_path / "analysis.yaml").write_text(TEMPLATE.replace(old, new, 1))
    done = run_cli("validate", str(tmp_path), "-o", "json")
    assert done.returncode == 1
    (error,) = json.loads(done.stdout)["errors"]
    assert (error["file"], error["line"], error["app"]) == (
        f"{tmp_path}/analysis.yaml",
        line,
        "shop/error-rate",
    ), error
    assert message in error["message"] and hint in error["hint"], error


def test_a_rollout_without_analysis_is_valid(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(WITHOUT_ANALYSIS)
    done = run_cli("validate", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "1 app(s) valid" in done.stdout


def test_an_unsupported_field_of_a_template_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "analysis.yaml").write_text(
        TEMPLATE.replace("      prometheus:\n", "      datadog: {}\n      prometheus:\n")
    )
    done = run_cli("validate", str(tmp_path), "-o", "json")
    assert done.returncode == 1
    (error,) = json.loads(done.stdout)["errors"]
    assert (error["line"], error["app"]) == (21, "shop/error-rate")
    assert "datadog is not supported" in error["message"] and error["hint"] == "use prometheus, web or job"


def test_a_template_is_counted(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "analysis.yaml").write_text(TEMPLATE)
    done = run_cli("validate", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "0 app(s) valid, 1 analysis template(s)" in done.stdout
