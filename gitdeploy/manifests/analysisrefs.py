"""A Rollout's analysis, as far as gitdeploy runs it: an ``analysis`` step's templates found in the
repo (the Rollout's namespace), their arguments given, their metrics measured by a provider
gitdeploy has (web, prometheus). What it does not run yet is refused where it is written: the
background ``strategy.canary.analysis`` and the job provider."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gitdeploy.core.analysis.templates import TemplateError, resolve_args, run_metrics
from gitdeploy.core.analysistemplates import AnalysisTemplate, ProviderKind
from gitdeploy.core.canarysteps import AnalysisStep
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.models import App, AppKey
from gitdeploy.manifests.apps import Analysis, AppDraft
from gitdeploy.manifests.documents import Document
from gitdeploy.manifests.problems import get_field
from gitdeploy.manifests.rollouts import CANARY_PATH

BACKGROUND_ANALYSIS_NOT_SUPPORTED = "background analysis is not supported yet"
JOB_PROVIDER_NOT_SUPPORTED = "the job provider is not supported yet"


def read_rollout_analysis(doc: Document, analysis: Analysis) -> Analysis:
    """A Rollout's analysis read where it is written: the background ``analysis`` refused (its
    own problems after), the position of each ``analysis`` step kept for the repo-wide pass."""
    canary = get_field(doc.data, *CANARY_PATH)
    if not isinstance(canary, dict):
        return analysis
    if "analysis" in canary:
        path = (*CANARY_PATH, "analysis")
        refusal = Diagnostic(
            doc.file,
            *doc.position(path),
            "",
            BACKGROUND_ANALYSIS_NOT_SUPPORTED,
            "gitdeploy runs an analysis as a step, not in the background: move it into the steps "
            "(`- analysis: {templates: [...]}` after the setWeight it should judge), or leave this "
            "app to Argo Rollouts",
            ".".join(str(part) for part in path),
        )
        return replace(analysis, draft=None, diagnostics=(refusal, *analysis.diagnostics))
    steps = canary.get("steps")
    if analysis.draft is None or not isinstance(steps, list):
        return analysis
    positions = tuple(
        (index, *doc.position((*CANARY_PATH, "steps", index, "analysis")))
        for index, step in enumerate(steps)
        if isinstance(step, dict) and "analysis" in step
    )
    return replace(analysis, draft=replace(analysis.draft, analysis_positions=positions))


def _step_problems(
    app: App, step: AnalysisStep, templates: Mapping[AppKey, AnalysisTemplate], where: tuple[int, int, int]
) -> tuple[list[Diagnostic], list[AnalysisTemplate]]:
    index, line, column = where
    path = f"spec.strategy.canary.steps[{index}].analysis"

    def problem(message: str, hint: str) -> Diagnostic:
        return Diagnostic(app.location.file, line, column, str(app.key), message, hint, path)

    found, problems = [], []
    for name in step.analysis.templates:
        template = templates.get(AppKey(app.namespace, name))
        if template is None:
            problems.append(
                problem(
                    f"analysis template '{name}' is not in namespace {app.namespace}",
                    f"add an AnalysisTemplate named {name} to namespace {app.namespace} in the repo, "
                    "or fix templateName (ClusterAnalysisTemplate is not supported)",
                )
            )
            continue
        found.append(template)
        for metric in template.metrics:
            if metric.provider.kind is ProviderKind.JOB:
                problems.append(
                    problem(
                        f"{JOB_PROVIDER_NOT_SUPPORTED}: metric '{metric.name}' of analysis template "
                        f"'{name}' ({template.location}) runs a Job",
                        "measure it with the web or prometheus provider, or leave this app to Argo Rollouts",
                    )
                )
    if problems:
        return problems, found
    names = [m.name for t in found for m in t.metrics]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        hint = "rename the metric in one of the templates"
        return [
            problem(f"metric {', '.join(twice)} is in more than one of the step's templates", hint)
        ], found
    try:
        args = resolve_args(step.analysis, found, stable_hash="stable", latest_hash="latest")
        run_metrics(step.analysis, found, dict(args))
    except TemplateError as error:
        hint = "give it in the step's args ({name: ..., value: ...}) or a value in the template's args"
        return [problem(str(error), hint)], found
    return [], found


def link_templates(
    app: App, draft: AppDraft, templates: Mapping[AppKey, AnalysisTemplate]
) -> tuple[App, list[Diagnostic]]:
    """``app`` with the AnalysisTemplates its analysis steps name, or why it cannot run them."""
    params = app.strategy.canary
    if params is None:
        return app, []
    steps = [step for step in params.steps if isinstance(step, AnalysisStep)]
    problems: list[Diagnostic] = []
    used: dict[AppKey, AnalysisTemplate] = {}
    for step, where in zip(steps, draft.analysis_positions, strict=True):
        found, linked = _step_problems(app, step, templates, where)
        problems += found
        used.update((t.key, t) for t in linked)
    if problems or not used:
        return app, problems
    canary = replace(params, templates=tuple(used.values()))
    return replace(app, strategy=replace(app.strategy, canary=canary)), []
