"""A Rollout's analysis steps linked to the AnalysisTemplates of its namespace, or refused where
the step is written: a template not in the repo, an argument without a value, a metric in two
templates, a job provider."""

from __future__ import annotations

import pytest

from gitdeploy.core.models import AppKey
from tests.fixtures.argorollouts import WEB_AND_PROMETHEUS_TEMPLATE, canary_rollout
from tests.fixtures.manifests import load_texts


def template(name: str = "checks") -> str:
    return WEB_AND_PROMETHEUS_TEMPLATE.format(
        name=name, prometheus="http://p:9090", query="up", web="http://c/ok"
    )


def rollout(*templates: str, args: str = "          args: [{name: service, value: web}]\n") -> str:
    names = "".join(f"          - templateName: {t}\n" for t in templates)
    steps = f"      - setWeight: 50\n      - analysis:\n          templates:\n{names}{args}"
    return canary_rollout(steps=steps)


def test_an_analysis_step_runs_the_templates_of_its_namespace() -> None:
    result = load_texts({"web.yaml": rollout("checks"), "checks.yaml": template()})
    assert result.diagnostics == ()
    (app,) = result.apps
    assert app.strategy.canary is not None
    assert [t.key for t in app.strategy.canary.templates] == [AppKey("shop", "checks")]


REFUSED = [
    (
        "no such template",
        rollout("nope"),
        "analysis template 'nope' is not in namespace shop",
        "templateName",
    ),
    ("an argument without value", rollout("checks", args=""), "needs a value for service", "step's args"),
    (
        "a metric in two templates",
        rollout("checks", "more"),
        "metric checker, success-rate is in more",
        "rename",
    ),
]


@pytest.mark.parametrize(("text", "message", "hint"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_an_analysis_step_that_cannot_run_is_refused_at_the_step(text: str, message: str, hint: str) -> None:
    result = load_texts({"web.yaml": text, "checks.yaml": template(), "more.yaml": template("more")})
    (found,) = result.diagnostics
    assert (found.file, found.line, found.app, found.path) == (
        "web.yaml",
        23,
        "shop/web",
        "spec.strategy.canary.steps[1].analysis",
    )
    assert message in found.message and hint in found.hint, found.render()
    assert result.apps == () and result.invalid_apps == (AppKey("shop", "web"),)


def test_an_unknown_argument_in_a_template_is_refused() -> None:
    broken = template().replace("{{args.threshold}}", "{{args.treshold}}")
    result = load_texts({"web.yaml": rollout("checks"), "checks.yaml": broken})
    (found,) = result.diagnostics
    assert "{{args.treshold}} names no argument" in found.message
