"""Normalise one validated document into the core model, with the semantic checks a schema cannot do.

Deployment and DeploymentConfig become one :class:`~gitdeploy.core.models.App` with the documented
defaults:

=========================  ==========================  ===============================
field                      Deployment                  DeploymentConfig
=========================  ==========================  ===============================
replicas                   1 for a new app; omitted keeps the live count (autoscaler)
strategy                   RollingUpdate 25%/25%       Rolling 25%/25%, intervalSeconds 1,
                                                       updatePeriodSeconds 1, timeoutSeconds 600
triggers                   implicit ConfigChange       only those declared
selector                   required                    defaults to the template labels
revisionHistoryLimit       10                          10
progressDeadlineSeconds    600                         (timeoutSeconds of the strategy)
minReadySeconds            0                           0
auto-rollback on failure   off                         on
podReplacementPolicy       TerminationStarted          (not a DeploymentConfig field)
=========================  ==========================  ===============================

An Argo Rollouts ``Rollout`` reads like a Deployment (selector, triggers, deadline, defaults),
with its ``strategy.canary`` normalised by :mod:`gitdeploy.manifests.rollouts`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gitdeploy.core.analysistemplates import AnalysisTemplate
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.hashing import HASH_LENGTH, canonical_json, canonical_template, template_hash
from gitdeploy.core.models import (
    App,
    AppKey,
    AppKind,
    CustomParams,
    EnvVar,
    FailurePolicy,
    Hook,
    HookPhase,
    ImageChangeTrigger,
    ImageStream,
    ImageStreamTag,
    LabelSelectorRequirement,
    Location,
    PodReplacementPolicy,
    RecreateParams,
    RollingParams,
    Selector,
    Strategy,
    StrategyType,
    Triggers,
    TriggerType,
    pack_manifest,
)
from gitdeploy.core.pruning import PRUNE_ANNOTATION
from gitdeploy.manifests.documents import Document, FieldPath
from gitdeploy.manifests.problems import Problems, check_bounds, get_field
from gitdeploy.manifests.rollouts import canary_strategy, check_canary
from gitdeploy.manifests.schemas import iter_violations

AUTO_ROLLBACK_ANNOTATION = "gitdeploy.io/auto-rollback"
CHANGE_CAUSE_ANNOTATION = "kubernetes.io/change-cause"
POD_SUFFIX_LENGTH = 6  # "-xxxxx" added to ReplicaSet names for pods
HOOK_SUFFIX_LENGTH = len("-hook-post")
APP_KINDS = frozenset(kind.value for kind in AppKind)
"""The kinds that define an app (others define image streams or analysis templates)."""
MAX_APP_NAME_LENGTH = 63 - 1 - HASH_LENGTH - max(POD_SUFFIX_LENGTH, HOOK_SUFFIX_LENGTH)
"""Longest app name for which ``<app>-<hash>-hook-post`` and pod names stay DNS-1123 labels."""


@dataclass(frozen=True, slots=True)
class AppDraft:
    """An app as far as one document can tell; the repo-wide pass completes it.

    ``app.key.namespace`` is empty when the manifest names no namespace (the repo default applies),
    and so is the stream namespace of triggers that name none.
    """

    app: App
    auto_rollback_annotation: bool | None
    namespace_position: tuple[int, int]
    trigger_positions: tuple[tuple[int, int], ...]
    analysis_positions: tuple[tuple[int, int, int], ...] = ()
    """A Rollout's ``analysis`` steps: ``(index, line, column)`` of each, in order."""


@dataclass(frozen=True, slots=True)
class Analysis:
    """What one document is: an app, an image stream, something ignored, or problems."""

    kind: str
    name: str
    namespace: str
    location: Location
    draft: AppDraft | None = None
    image_stream: ImageStream | None = None
    analysis_template: AnalysisTemplate | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    ignored: bool = False


def _env(items: Any) -> tuple[EnvVar, ...]:
    return tuple(EnvVar(str(e["name"]), str(e.get("value", ""))) for e in items or [])


def _hook(raw: Any) -> Hook | None:
    if not isinstance(raw, dict):
        return None
    pod = raw["execNewPod"]
    return Hook(
        failure_policy=FailurePolicy(raw["failurePolicy"]),
        container_name=str(pod["containerName"]),
        command=tuple(pod.get("command") or ()),
        env=_env(pod.get("env")),
        volumes=tuple(pod.get("volumes") or ()),
    )


def _strategy(kind: AppKind, raw: Any) -> Strategy:
    raw = raw or {}
    resources = canonical_json(raw.get("resources") or {})
    if kind is AppKind.DEPLOYMENT:
        stype = StrategyType(raw.get("type", "RollingUpdate"))
        if stype is StrategyType.RECREATE:
            return Strategy(stype, recreate=RecreateParams(), resources_json=resources)
        params = raw.get("rollingUpdate") or {}
        rolling = RollingParams(
            max_surge=params.get("maxSurge", "25%"), max_unavailable=params.get("maxUnavailable", "25%")
        )
        return Strategy(stype, rolling=rolling, resources_json=resources)
    stype = StrategyType(raw.get("type", "Rolling"))
    if stype is StrategyType.ROLLING:
        p = raw.get("rollingParams") or {}
        rolling = RollingParams(
            max_surge=p.get("maxSurge", "25%"),
            max_unavailable=p.get("maxUnavailable", "25%"),
            interval_seconds=p.get("intervalSeconds", 1),
            update_period_seconds=p.get("updatePeriodSeconds", 1),
            timeout_seconds=p.get("timeoutSeconds", 600),
            pre=_hook(p.get("pre")),
            post=_hook(p.get("post")),
        )
        return Strategy(stype, rolling=rolling, resources_json=resources)
    if stype is StrategyType.RECREATE:
        p = raw.get("recreateParams") or {}
        recreate = RecreateParams(
            timeout_seconds=p.get("timeoutSeconds", 600),
            pre=_hook(p.get("pre")),
            mid=_hook(p.get("mid")),
            post=_hook(p.get("post")),
        )
        return Strategy(stype, recreate=recreate, resources_json=resources)
    p = raw.get("customParams") or {}
    custom = CustomParams(
        image=str(p.get("image", "")),
        command=tuple(p.get("command") or ()),
        environment=_env(p.get("environment")),
    )
    deadline = raw.get("activeDeadlineSeconds")
    return Strategy(
        stype,
        custom=custom,
        resources_json=resources,
        active_deadline_seconds=int(deadline) if deadline is not None else None,
    )


def _selector(kind: AppKind, raw: Any, template_labels: dict[str, str]) -> Selector:
    if kind is AppKind.DEPLOYMENT_CONFIG:
        labels = raw if isinstance(raw, dict) and raw else template_labels
        return Selector(match_labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())))
    raw = raw or {}
    return Selector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items())),
        match_expressions=tuple(
            LabelSelectorRequirement(str(e["key"]), str(e["operator"]), tuple(e.get("values") or ()))
            for e in raw.get("matchExpressions") or []
        ),
    )


def _check_selector(
    kind: AppKind, spec: dict[str, Any], selector: Selector, labels: dict[str, str], problems: Problems
) -> None:
    raw = spec.get("selector")
    path: FieldPath = ("spec", "selector")
    if kind is not AppKind.DEPLOYMENT_CONFIG:
        if not selector.match_labels and not selector.match_expressions:
            problems.add(
                path, "spec.selector selects nothing", "add spec.selector.matchLabels matching the pod labels"
            )
            return
        for expr in selector.match_expressions:
            if expr.operator in ("In", "NotIn") and not expr.values:
                problems.add(
                    path,
                    f"selector expression on '{expr.key}' needs values for {expr.operator}",
                    "add values: [...]",
                )
            if expr.operator in ("Exists", "DoesNotExist") and expr.values:
                problems.add(
                    path,
                    f"selector expression on '{expr.key}' must not list values for {expr.operator}",
                    "remove values",
                )
    if raw is not None and not selector.matches(labels):
        shown = ", ".join(f"{k}={v}" for k, v in selector.match_labels) or "its expressions"
        problems.add(
            path,
            f"selector ({shown}) does not match the template labels",
            "make spec.template.metadata.labels carry every label the selector asks for",
        )


def _check_rolling(path: FieldPath, rolling: RollingParams | None, problems: Problems) -> None:
    if rolling is not None:
        check_bounds(path, rolling.max_surge, rolling.max_unavailable, problems)


def _check_hook_containers(
    kind: AppKind, strategy_raw: Any, containers: set[str], problems: Problems
) -> None:
    if kind is not AppKind.DEPLOYMENT_CONFIG or not isinstance(strategy_raw, dict):
        return
    for params_name in ("rollingParams", "recreateParams"):
        params = strategy_raw.get(params_name) or {}
        for phase in HookPhase:
            name = get_field(params, phase, "execNewPod", "containerName")
            if name is not None and name not in containers:
                problems.add(
                    ("spec", "strategy", params_name, phase, "execNewPod", "containerName"),
                    f"{phase} hook names container '{name}', which the template does not have",
                    f"use one of: {', '.join(sorted(containers))}",
                )


def _triggers(
    kind: AppKind, raw: Any, containers: set[str], namespace: str, problems: Problems
) -> tuple[Triggers, tuple[tuple[int, int], ...]]:
    if kind is not AppKind.DEPLOYMENT_CONFIG:
        return Triggers(config_change=True), ()
    config_change = False
    image: list[ImageChangeTrigger] = []
    positions: list[tuple[int, int]] = []
    for i, trigger in enumerate(raw or []):
        if trigger["type"] == TriggerType.CONFIG_CHANGE:
            config_change = True
            continue
        params = trigger["imageChangeParams"]
        stream, _, tag = str(params["from"]["name"]).partition(":")
        for j, cname in enumerate(params["containerNames"]):
            if cname not in containers:
                problems.add(
                    ("spec", "triggers", i, "imageChangeParams", "containerNames", j),
                    f"ImageChange trigger names container '{cname}', which the template does not have",
                    f"use one of: {', '.join(sorted(containers))}",
                )
        image.append(
            ImageChangeTrigger(
                automatic=bool(params.get("automatic", True)),
                container_names=tuple(params["containerNames"]),
                stream_namespace=str(params["from"].get("namespace", namespace)),
                stream_name=stream,
                tag=tag,
            )
        )
        positions.append(problems.doc.position(("spec", "triggers", i, "imageChangeParams", "from", "name")))
    return Triggers(config_change=config_change, image_change=tuple(image)), tuple(positions)


def _check_annotations(annotations: dict[str, str], problems: Problems) -> None:
    """gitdeploy's own annotations take "true" or "false"."""
    for key, hint in (
        (AUTO_ROLLBACK_ANNOTATION, 'use "true" or "false"'),
        (PRUNE_ANNOTATION, 'use "false" (never prune this app) or "true"'),
    ):
        value = annotations.get(key)
        if value not in (None, "true", "false"):
            problems.add(("metadata", "annotations", key), f"{key} is '{value}'", hint)


def _check_name_length(name: str, problems: Problems) -> None:
    """The app's name leaves room for the names gitdeploy derives from it."""
    if len(name) > MAX_APP_NAME_LENGTH:
        problems.add(
            ("metadata", "name"),
            f"name '{name}' is {len(name)} characters; at most {MAX_APP_NAME_LENGTH} fit",
            f"ReplicaSets are named <app>-<{HASH_LENGTH}-letter hash> and hook pods add '-hook-post', "
            "all within 63 characters: shorten the name",
        )


def _check_restart_policy(template_raw: dict[str, Any], problems: Problems) -> None:
    """A deployment's pods restart Always."""
    restart = get_field(template_raw, "spec", "restartPolicy")
    if restart not in (None, "Always"):
        problems.add(
            ("spec", "template", "spec", "restartPolicy"),
            f"restartPolicy is {restart}; a deployment's pods must restart Always",
            "remove restartPolicy or set it to Always",
        )


def _check_strategy(
    kind: AppKind, strategy_raw: Any, strategy: Strategy, containers: set[str], problems: Problems
) -> None:
    """The strategy's parameters fit its type (and its hooks name containers of the template)."""
    if kind is AppKind.ROLLOUT:
        check_canary(strategy_raw, strategy, problems)
        return
    params_key = "rollingUpdate" if kind is AppKind.DEPLOYMENT else "rollingParams"
    _check_rolling(("spec", "strategy", params_key), strategy.rolling, problems)
    if (
        kind is AppKind.DEPLOYMENT
        and strategy.type is StrategyType.RECREATE
        and get_field(strategy_raw, "rollingUpdate")
    ):
        problems.add(
            ("spec", "strategy", "rollingUpdate"),
            "rollingUpdate is set but the strategy type is Recreate",
            "remove rollingUpdate or use type: RollingUpdate",
        )
    if strategy.type is StrategyType.CUSTOM and not get_field(strategy_raw, "customParams"):
        problems.add(
            ("spec", "strategy"),
            "a Custom strategy needs customParams",
            "add customParams: {image: ..., command: [...]}",
        )
    _check_hook_containers(kind, strategy_raw, containers, problems)


def _ready_and_deadline(
    kind: AppKind, spec: dict[str, Any], strategy: Strategy, problems: Problems
) -> tuple[int, int]:
    """``(minReadySeconds, progress deadline)``: a DeploymentConfig's deadline is its strategy's
    timeout; a Deployment's or a Rollout's must be greater than its minReadySeconds."""
    min_ready = int(spec.get("minReadySeconds", 0))
    deadline = int(spec.get("progressDeadlineSeconds", 600))
    if kind is not AppKind.DEPLOYMENT_CONFIG and deadline <= min_ready:
        problems.add(
            ("spec", "progressDeadlineSeconds"),
            f"progressDeadlineSeconds ({deadline}) must be greater than minReadySeconds ({min_ready})",
            "raise progressDeadlineSeconds or lower minReadySeconds",
        )
    if kind is AppKind.DEPLOYMENT_CONFIG and strategy.rolling is not None:
        deadline = strategy.rolling.timeout_seconds
    elif kind is AppKind.DEPLOYMENT_CONFIG and strategy.recreate is not None:
        deadline = strategy.recreate.timeout_seconds
    return min_ready, deadline


def analyse_app(doc: Document, kind: AppKind) -> Analysis:
    """Validate and normalise a Deployment, DeploymentConfig or Rollout document."""
    data = doc.data
    name = str(get_field(data, "metadata", "name") or "")
    namespace = str(get_field(data, "metadata", "namespace") or "")
    label = f"{namespace}/{name}" if namespace else name
    location = Location(doc.file, doc.line, doc.column)
    problems = Problems(doc, label)
    for path, message, hint in iter_violations(kind.value, data):
        problems.add(path, message, hint)
    if problems.items:
        return Analysis(kind.value, name, namespace, location, diagnostics=tuple(problems.items))

    spec: dict[str, Any] = data["spec"]
    meta: dict[str, Any] = data["metadata"]
    _check_name_length(name, problems)
    template_raw: dict[str, Any] = spec["template"]
    unpacked = canonical_template(template_raw)
    labels, containers = unpacked.labels, {c.name for c in unpacked.containers}
    template = unpacked.packed()  # MEMORY: the app keeps it for as long as git has it
    _check_restart_policy(template_raw, problems)
    selector = _selector(kind, spec.get("selector"), labels)
    _check_selector(kind, spec, selector, labels, problems)
    strategy = canary_strategy(spec) if kind is AppKind.ROLLOUT else _strategy(kind, spec.get("strategy"))
    _check_strategy(kind, spec.get("strategy"), strategy, containers, problems)
    min_ready, deadline = _ready_and_deadline(kind, spec, strategy, problems)
    triggers, trigger_positions = _triggers(kind, spec.get("triggers"), containers, namespace, problems)
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    _check_annotations(annotations, problems)
    auto = annotations.get(AUTO_ROLLBACK_ANNOTATION)
    if problems.items:
        return Analysis(kind.value, name, namespace, location, diagnostics=tuple(problems.items))

    app = App(
        kind=kind,
        api_version=str(data["apiVersion"]),
        key=AppKey(namespace, name),
        location=location,
        template=template,
        template_hash=template_hash(unpacked),
        selector=selector,
        strategy=strategy,
        triggers=triggers,
        replicas=spec.get("replicas"),
        paused=bool(spec.get("paused", False)),
        revision_history_limit=int(spec.get("revisionHistoryLimit", 10)),
        min_ready_seconds=min_ready,
        progress_deadline_seconds=deadline,
        auto_rollback=kind is AppKind.DEPLOYMENT_CONFIG,
        pod_replacement_policy=PodReplacementPolicy(
            spec.get("podReplacementPolicy", PodReplacementPolicy.TERMINATION_STARTED)
        ),
        change_cause=annotations.get(CHANGE_CAUSE_ANNOTATION, ""),
        labels=tuple(sorted((str(k), str(v)) for k, v in (meta.get("labels") or {}).items())),
        annotations=tuple(sorted(annotations.items())),
        manifest_packed=pack_manifest(canonical_json(data), template),
    )
    draft = AppDraft(
        app=app,
        auto_rollback_annotation=None if auto is None else auto == "true",
        namespace_position=doc.position(("metadata", "namespace")),
        trigger_positions=trigger_positions,
    )
    return Analysis(kind.value, name, namespace, location, draft=draft)


def analyse_image_stream(doc: Document) -> Analysis:
    data = doc.data
    name = str(get_field(data, "metadata", "name") or "")
    namespace = str(get_field(data, "metadata", "namespace") or "")
    location = Location(doc.file, doc.line, doc.column)
    problems = Problems(doc, f"{namespace}/{name}" if namespace else name)
    for path, message, hint in iter_violations("ImageStream", data):
        problems.add(path, message, hint)
    if problems.items:
        return Analysis("ImageStream", name, namespace, location, diagnostics=tuple(problems.items))
    tags = tuple(
        ImageStreamTag(
            name=str(t["name"]),
            from_kind=str(get_field(t, "from", "kind") or "DockerImage"),
            from_name=str(get_field(t, "from", "name") or ""),
            scheduled=bool(get_field(t, "importPolicy", "scheduled")),
        )
        for t in get_field(data, "spec", "tags") or []
    )
    stream = ImageStream(AppKey(namespace, name), location, tags)
    return Analysis("ImageStream", name, namespace, location, image_stream=stream)


def place_in_namespace(app: App, namespace: str) -> App:
    """Fill the namespace of an app (and of its triggers' streams) that its manifest left out."""
    if app.key.namespace:
        return app
    triggers = replace(
        app.triggers,
        image_change=tuple(
            t if t.stream_namespace else replace(t, stream_namespace=namespace)
            for t in app.triggers.image_change
        ),
    )
    return replace(app, key=AppKey(namespace, app.key.name), triggers=triggers)
