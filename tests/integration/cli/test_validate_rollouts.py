"""`gitdeploy validate` of Argo Rollouts manifests through the installed command: a Rollout
without analysis is valid, an analysis whose template runs a job (not run yet) or is not in the
repo is refused at its file and line, and an AnalysisTemplate is checked as any manifest is."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_a_step_whose_template_runs_a_job_is_refused_at_the_step(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text(
        STEP_ANALYSIS_ONLY.replace("  name: web\n", "  name: web\n  namespace: shop\n")
    )
    (tmp_path / "analysis.yaml").write_text(TEMPLATE)
    done = run_cli("validate", str(tmp_path), "-o", "json")
    assert done.returncode == 1
    (error,) = json.loads(done.stdout)["errors"]
    assert (error["file"], error["line"], error["app"]) == (f"{tmp_path}/web.yaml", 29, "shop/web")
    assert error["message"].startswith("the job provider is not supported yet: metric 'smoke'")
    assert "analysis.yaml:1" in error["message"] and "web or prometheus" in error["hint"]


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
