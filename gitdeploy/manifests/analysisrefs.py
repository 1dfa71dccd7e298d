"""A Rollout's analyses (its ``analysis`` steps, and the background ``strategy.canary.analysis``)
as far as gitdeploy runs them: their templates found in the repo (the Rollout's namespace), their
arguments given (job, web and prometheus metrics alike), checked where the analysis is written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gitdeploy.core.analysis.templates import TemplateError, resolve_args, run_metrics
from gitdeploy.core.analysistemplates import AnalysisTemplate
from gitdeploy.core.canarysteps import AnalysisRef, AnalysisStep
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.models import App, AppKey
from gitdeploy.manifests.apps import Analysis, AppDraft
from gitdeploy.manifests.documents import Document
from gitdeploy.manifests.problems import get_field
from gitdeploy.manifests.rollouts import CANARY_PATH

BACKGROUND_INDEX = -1


def read_rollout_analysis(doc: Document, analysis: Analysis) -> Analysis:
    """A Rollout's analyses read where they are written: the position of each ``analysis`` step
    (and of the background ``analysis``, index -1) kept for the repo-wide pass."""
    canary = get_field(doc.data, *CANARY_PATH)
    if analysis.draft is None or not isinstance(canary, dict):
        return analysis
    steps = canary.get("steps")
    positions = tuple(
        (index, *doc.position((*CANARY_PATH, "steps", index, "analysis")))
        for index, step in enumerate(steps if isinstance(steps, list) else ())
        if isinstance(step, dict) and "analysis" in step
    )
    if "analysis" in canary:
        positions += ((BACKGROUND_INDEX, *doc.position((*CANARY_PATH, "analysis"))),)
    return replace(analysis, draft=replace(analysis.draft, analysis_positions=positions))


def _step_problems(
    app: App, ref: AnalysisRef, templates: Mapping[AppKey, AnalysisTemplate], where: tuple[int, int, int]
) -> tuple[list[Diagnostic], list[AnalysisTemplate]]:
    index, line, column = where
    path = "spec.strategy.canary." + ("analysis" if index == BACKGROUND_INDEX else f"steps[{index}].analysis")

    def problem(message: str, hint: str) -> Diagnostic:
        return Diagnostic(app.location.file, line, column, str(app.key), message, hint, path)

    found, problems = [], []
    for name in ref.templates:
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
        args = resolve_args(ref, found, stable_hash="stable", latest_hash="latest")
        run_metrics(ref, found, dict(args))
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
    refs = [step.analysis for step in params.steps if isinstance(step, AnalysisStep)]
    refs += [params.analysis.analysis] if params.analysis is not None else []
    problems: list[Diagnostic] = []
    used: dict[AppKey, AnalysisTemplate] = {}
    for ref, where in zip(refs, draft.analysis_positions, strict=True):
        found, linked = _step_problems(app, ref, templates, where)
        problems += found
        used.update((t.key, t) for t in linked)
    if problems or not used:
        return app, problems
    canary = replace(params, templates=tuple(used.values()))
    return replace(app, strategy=replace(app.strategy, canary=canary)), []
