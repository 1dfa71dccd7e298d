"""Argo Rollouts' ``Rollout`` (canary) manifests: what is read into the App model, what is
refused at which line with which message (analyses and their templates: test_analysisrefs.py)."""

from __future__ import annotations

import pytest

from gitdeploy.core.canarysteps import (
    AnalysisArg,
    AnalysisRef,
    AnalysisStep,
    BackgroundAnalysis,
    CanaryParams,
    Pause,
    SetWeight,
)
from gitdeploy.core.models import AppKey, AppKind, StrategyType
from gitdeploy.manifests.apps import Analysis, analyse_app
from gitdeploy.manifests.documents import ManifestFile, parse_documents
from tests.fixtures.argorollouts import MINIMAL_ROLLOUT, ROLLOUT, WITHOUT_ANALYSIS
from tests.fixtures.manifests import deployment, load_texts


def analysed(text: str, path: str = "web.yaml") -> Analysis:
    (doc,), problems = parse_documents(ManifestFile(path, text.encode()))
    assert problems == []
    return analyse_app(doc, AppKind.ROLLOUT)


def test_a_rollout_is_read_into_the_app_model() -> None:
    analysis = analysed(ROLLOUT)
    assert analysis.diagnostics == ()
    assert analysis.draft is not None
    app = analysis.draft.app
    assert (app.kind, app.api_version) == (AppKind.ROLLOUT, "argoproj.io/v1alpha1")
    assert app.key == AppKey("", "web")
    assert (app.replicas, app.paused, app.revision_history_limit) == (5, False, 3)
    assert (app.min_ready_seconds, app.progress_deadline_seconds) == (5, 300)
    assert app.triggers.config_change and not app.auto_rollback
    assert app.strategy.type is StrategyType.CANARY
    assert app.strategy.rolling is None and app.strategy.hooks == {}
    hash_arg = AnalysisArg("hash", pod_template_hash="Latest")
    assert app.strategy.canary == CanaryParams(
        steps=(
            SetWeight(20),
            Pause(),
            SetWeight(50),
            Pause(5400),
            AnalysisStep(AnalysisRef(("error-rate",), (hash_arg,))),
            SetWeight(100),
        ),
        max_surge=1,
        max_unavailable=0,
        analysis=BackgroundAnalysis(AnalysisRef(("error-rate",), (AnalysisArg("service", "web"),)), 2),
        abort_scale_down_delay_seconds=10,
        progress_deadline_abort=True,
    )


def test_argo_rollouts_defaults() -> None:
    analysis = analysed(MINIMAL_ROLLOUT)
    assert analysis.draft is not None
    app = analysis.draft.app
    assert app.strategy.canary == CanaryParams()
    assert (app.replicas, app.revision_history_limit, app.progress_deadline_seconds) == (None, 10, 600)
    assert app.strategy.canary.steps == () and app.strategy.canary.abort_scale_down_delay_seconds is None


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [("duration: 30", 30), ("duration: 30s", 30), ("duration: 5m", 300), ("duration: 1h", 3600), ("", None)],
)
def test_pause_durations(duration: str, seconds: int | None) -> None:
    text = MINIMAL_ROLLOUT.replace("canary: {}", f"canary:\n      steps:\n      - pause: {{{duration}}}")
    analysis = analysed(text)
    assert analysis.draft is not None and analysis.draft.app.strategy.canary is not None
    assert analysis.draft.app.strategy.canary.steps == (Pause(seconds),)


def in_canary(fields: str) -> str:
    """ROLLOUT with ``fields`` (indented for spec.strategy.canary) added at line 23."""
    after = "      abortScaleDownDelaySeconds: 10\n"
    return ROLLOUT.replace(after, after + fields)


def as_step(step: str) -> str:
    """ROLLOUT with ``step`` as its second step, at line 32."""
    return ROLLOUT.replace("      - pause: {}\n", f"      - {step}\n")


# (id, Rollout text, line, message fragment, hint fragment)
REFUSED: list[tuple[str, str, int, str, str]] = [
    (
        "traffic-routing",
        in_canary("      trafficRouting:\n        nginx: {stableIngress: web}\n"),
        23,
        "spec.strategy.canary.trafficRouting is not supported: gitdeploy drives no traffic router",
        "remove trafficRouting",
    ),
    (
        "canary-service",
        in_canary("      canaryService: web-canary\n"),
        23,
        "canaryService is not supported: gitdeploy does not edit Services",
        "gitdeploy.io/template-hash",
    ),
    (
        "set-canary-scale",
        as_step("setCanaryScale: {replicas: 3}"),
        32,
        "spec.strategy.canary.steps[1].setCanaryScale is not supported",
        "use setWeight",
    ),
    ("experiment", as_step("experiment: {templates: []}"), 32, "experiment is not supported", "analysis"),
    ("header-route", as_step("setHeaderRoute: {name: x}"), 32, "setHeaderRoute is not supported", "remove"),
    (
        "blue-green",
        ROLLOUT.replace("    canary:\n", "    blueGreen: {activeService: web}\n    canary:\n"),
        19,
        "spec.strategy.blueGreen is not supported: gitdeploy runs canary rollouts only",
        "use strategy.canary",
    ),
    (
        "workload-ref",
        ROLLOUT.replace("  replicas: 5\n", "  replicas: 5\n  workloadRef: {kind: Deployment, name: web}\n"),
        7,
        "spec.workloadRef is not supported",
        "spec.template",
    ),
    (
        "cluster-analysis-template",
        ROLLOUT.replace("- templateName: error-rate\n", "- {templateName: error-rate, clusterScope: true}\n"),
        25,
        "clusterScope is not supported",
        "AnalysisTemplate in the Rollout's namespace",
    ),
    (
        "arg-from-field",
        ROLLOUT.replace("podTemplateHashValue: Latest\n", "fieldRef: {fieldPath: x}\n"),
        41,
        "valueFrom.fieldRef is not supported",
        "value: ...",
    ),
    ("two-actions", as_step("{setWeight: 30, pause: {}}"), 32, "has setWeight and pause", "split it"),
    ("empty-step", as_step("{}"), 32, "steps[1] must be not empty", "setWeight"),
    ("weight-over-100", as_step("setWeight: 150"), 32, "setWeight must be at most 100", "percentage"),
    ("bad-duration", as_step("pause: {duration: 5 minutes}"), 32, 'duration is "5 minutes"', '"5m"'),
    (
        "starting-step-past-the-end",
        ROLLOUT.replace("startingStep: 2", "startingStep: 6"),
        26,
        "startingStep 6 is past the last step (5)",
        "index of a step",
    ),
    (
        "surge-and-unavailable-both-zero",
        ROLLOUT.replace("maxSurge: 1", "maxSurge: 0%"),
        21,
        "maxSurge and maxUnavailable are both 0",
        "maxSurge: 1",
    ),
    ("unknown-field", in_canary("      maxSurg: 2\n"), 23, "unknown field", "did you mean 'maxSurge'?"),
    ("no-strategy", ROLLOUT.split("  strategy:\n")[0], 5, "missing required field 'spec.strategy'", "add"),
    ("no-canary", ROLLOUT.split("    canary:\n")[0] + "    {}\n", 18, "'spec.strategy.canary'", "add"),
    ("api-version", ROLLOUT.replace("v1alpha1", "v1"), 1, "expected argoproj.io/v1alpha1", "v1alpha1"),
    ("deadline", ROLLOUT.replace("minReadySeconds: 5", "minReadySeconds: 300"), 43, "(300)", "raise"),
]


@pytest.mark.parametrize(
    ("text", "line", "message", "hint"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_what_gitdeploy_cannot_honour_is_refused_where_it_is_written(
    text: str, line: int, message: str, hint: str
) -> None:
    result = load_texts({"web.yaml": text})
    matching = [d for d in result.diagnostics if message in d.message]
    assert matching, [d.render() for d in result.diagnostics]
    found = matching[0]
    assert (found.file, found.line, found.app) == ("web.yaml", line, "default/web"), found.render()
    assert hint in found.hint, found.render()
    assert result.apps == () and result.invalid_apps == (AppKey("default", "web"),)


def test_every_refused_field_is_told_apart_from_a_typo() -> None:
    result = load_texts({"web.yaml": in_canary("      dynamicStableScale: true\n")})
    (found,) = [d for d in result.diagnostics if d.message != NO_TEMPLATE]
    assert "unknown field" not in found.message and "traffic router" in found.message


def test_a_rollout_without_analysis_loads_as_an_app() -> None:
    result = load_texts({"api.yaml": MINIMAL_ROLLOUT, "web.yaml": WITHOUT_ANALYSIS})
    assert result.diagnostics == ()
    assert sorted(str(a.key) for a in result.apps) == ["default/api", "default/web"]


NO_TEMPLATE = "analysis template 'error-rate' is not in namespace default"


def test_analyses_whose_template_is_not_in_the_repo_are_refused_each_where_it_is_written() -> None:
    """The background analysis (line 23) and the analysis step (line 35) name a template the
    repo does not hold: refused there, and nothing else of the Rollout."""
    result = load_texts({"web.yaml": ROLLOUT, "api.yaml": deployment("api", "default")})
    assert [(d.file, d.line, d.app, d.message, d.path) for d in result.diagnostics] == [
        ("web.yaml", 23, "default/web", NO_TEMPLATE, "spec.strategy.canary.analysis"),
        ("web.yaml", 35, "default/web", NO_TEMPLATE, "spec.strategy.canary.steps[4].analysis"),
    ]
    assert [str(a.key) for a in result.apps] == ["default/api"]
    assert result.invalid_apps == (AppKey("default", "web"),)


def test_an_invalid_rollout_is_refused_with_its_problems() -> None:
    result = load_texts({"web.yaml": ROLLOUT.replace("setWeight: 20", "setWeight: -5")})
    assert [d.message for d in result.diagnostics] == [
        "spec.strategy.canary.steps[0].setWeight must be at least 0"
    ]


def test_a_near_miss_of_the_kind_names_it() -> None:
    result = load_texts({"web.yaml": ROLLOUT.replace("kind: Rollout", "kind: Rolout")})
    (found,) = result.diagnostics
    assert "did you mean 'Rollout'?" in found.hint
