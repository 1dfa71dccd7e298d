"""An Argo Rollouts ``AnalysisTemplate``, validated by ``schemas/analysistemplate.schema.json``,
as :class:`~gitdeploy.core.analysistemplates.AnalysisTemplate`, with the check a schema cannot
make: a metric measures with exactly one provider."""

from __future__ import annotations

from typing import Any

from gitdeploy.core.analysistemplates import (
    AnalysisTemplate,
    JobProvider,
    Metric,
    PrometheusProvider,
    Provider,
    ProviderKind,
    TemplateArg,
    WebHeader,
    WebMethod,
    WebProvider,
)
from gitdeploy.core.hashing import canonical_json
from gitdeploy.core.models import AppKey, Location
from gitdeploy.manifests.apps import Analysis
from gitdeploy.manifests.documents import Document
from gitdeploy.manifests.problems import Problems, get_field
from gitdeploy.manifests.rollouts import parse_duration
from gitdeploy.manifests.schemas import iter_violations

KIND = "AnalysisTemplate"


def _provider(raw: dict[str, Any]) -> Provider:
    if (job := raw.get(ProviderKind.JOB)) is not None:
        return JobProvider(canonical_json(job["spec"]), canonical_json(job.get("metadata") or {}))
    if (web := raw.get(ProviderKind.WEB)) is not None:
        body = web.get("body", "")
        if "jsonBody" in web:
            body = canonical_json(web["jsonBody"])
        return WebProvider(
            url=str(web["url"]),
            method=WebMethod(web.get("method", WebMethod.GET)),
            headers=tuple(WebHeader(str(h["key"]), str(h["value"])) for h in web.get("headers") or ()),
            body=str(body),
            json_path=str(web.get("jsonPath", "")),
            timeout_seconds=web.get("timeoutSeconds"),
        )
    prometheus = raw[ProviderKind.PROMETHEUS]
    return PrometheusProvider(
        str(prometheus["address"]), str(prometheus["query"]), timeout_seconds=prometheus.get("timeout")
    )


def _seconds(raw: dict[str, Any], name: str) -> int | None:
    value = raw.get(name)
    return None if value is None else parse_duration(value)


def _metric(raw: dict[str, Any]) -> Metric:
    return Metric(
        name=str(raw["name"]),
        provider=_provider(raw["provider"]),
        interval_seconds=_seconds(raw, "interval"),
        initial_delay_seconds=_seconds(raw, "initialDelay") or 0,
        count=raw.get("count"),
        success_condition=str(raw.get("successCondition", "")),
        failure_condition=str(raw.get("failureCondition", "")),
        failure_limit=int(raw.get("failureLimit", 0)),
        inconclusive_limit=int(raw.get("inconclusiveLimit", 0)),
        consecutive_error_limit=int(raw.get("consecutiveErrorLimit", 4)),
    )


def _check_providers(metrics: list[dict[str, Any]], problems: Problems) -> None:
    for index, metric in enumerate(metrics):
        names = sorted(metric["provider"])
        if len(names) > 1:
            problems.add(
                ("spec", "metrics", index, "provider"),
                f"metric '{metric['name']}' has {len(names)} providers ({', '.join(names)}): "
                "a metric measures with one",
                "keep one provider and make the others metrics of their own",
            )


def analyse_analysis_template(doc: Document) -> Analysis:
    """Validate and read an AnalysisTemplate document."""
    data = doc.data
    name = str(get_field(data, "metadata", "name") or "")
    namespace = str(get_field(data, "metadata", "namespace") or "")
    location = Location(doc.file, doc.line, doc.column)
    problems = Problems(doc, f"{namespace}/{name}" if namespace else name)
    for path, message, hint in iter_violations(KIND, data):
        problems.add(path, message, hint)
    if not problems.items:
        _check_providers(data["spec"]["metrics"], problems)
    if problems.items:
        return Analysis(KIND, name, namespace, location, diagnostics=tuple(problems.items))
    spec = data["spec"]
    template = AnalysisTemplate(
        key=AppKey(namespace, name),
        location=location,
        args=tuple(TemplateArg(str(a["name"]), a.get("value")) for a in spec.get("args") or ()),
        metrics=tuple(_metric(m) for m in spec["metrics"]),
    )
    return Analysis(KIND, name, namespace, location, analysis_template=template)
