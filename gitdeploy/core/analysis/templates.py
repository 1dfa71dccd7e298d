"""The metrics an analysis runs: its templates' metrics with ``{{args.NAME}}`` replaced by the
arguments the step gives (or the templates' defaults), as upstream resolves an AnalysisRun.

>>> from gitdeploy.core.analysistemplates import AnalysisTemplate, TemplateArg, WebProvider
>>> from gitdeploy.core.models import AppKey, Location
>>> template = AnalysisTemplate(AppKey("shop", "ok"), Location("t.yaml", 1, 1),
...     args=(TemplateArg("svc"), TemplateArg("min", "0.9")),
...     metrics=(Metric("ok", WebProvider("http://{{args.svc}}/ok"),
...                     success_condition="result >= {{ args.min }}"),))
>>> ref = AnalysisRef(("ok",), (AnalysisArg("svc", "web"),))
>>> args = resolve_args(ref, (template,), stable_hash="a1", latest_hash="b2")
>>> args
(('min', '0.9'), ('svc', 'web'))
>>> (metric,) = run_metrics(ref, (template,), dict(args))
>>> metric.provider.url, metric.success_condition
('http://web/ok', 'result >= 0.9')
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence

from gitdeploy.core.analysistemplates import (
    AnalysisTemplate,
    JobProvider,
    Metric,
    PrometheusProvider,
    WebProvider,
)
from gitdeploy.core.canarysteps import AnalysisArg, AnalysisRef

_ARG = re.compile(r"\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}")
STABLE = "Stable"
"""``podTemplateHashValue: Stable``: the stable ReplicaSet's hash (``Latest``: the canary's)."""


class TemplateError(ValueError):
    """An analysis that cannot run as written (a template not in the repo, an argument missing)."""


def templates_of(ref: AnalysisRef, templates: Sequence[AnalysisTemplate]) -> tuple[AnalysisTemplate, ...]:
    by_name = {t.key.name: t for t in templates}
    missing = [name for name in ref.templates if name not in by_name]
    if missing:
        raise TemplateError(f"analysis template {', '.join(missing)} is not in the repo")
    return tuple(by_name[name] for name in ref.templates)


def _value(arg: AnalysisArg, stable_hash: str, latest_hash: str) -> str | None:
    if arg.pod_template_hash is None:
        return arg.value
    return stable_hash if arg.pod_template_hash == STABLE else latest_hash


def resolve_args(
    ref: AnalysisRef, templates: Sequence[AnalysisTemplate], *, stable_hash: str, latest_hash: str
) -> tuple[tuple[str, str], ...]:
    """The run's arguments, sorted: the templates' defaults, then what the step gives
    (``podTemplateHashValue`` as the stable or the latest ReplicaSet's pod-template hash)."""
    values: dict[str, str | None] = {}
    for template in templates_of(ref, templates):
        for default in template.args:
            values.setdefault(default.name, default.default)
    for arg in ref.args:
        values[arg.name] = _value(arg, stable_hash, latest_hash)
    missing = sorted(name for name, value in values.items() if value is None)
    if missing:
        raise TemplateError(f"analysis {', '.join(ref.templates)} needs a value for {', '.join(missing)}")
    return tuple(sorted((name, value) for name, value in values.items() if value is not None))


def substitute(text: str, args: Mapping[str, str]) -> str:
    """``text`` with each ``{{args.NAME}}`` replaced (an unknown one is a :class:`TemplateError`)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in args:
            raise TemplateError(f"{{{{args.{name}}}}} names no argument of the analysis")
        return args[name]

    return _ARG.sub(value, text)


def _resolved(metric: Metric, args: Mapping[str, str]) -> Metric:
    provider = metric.provider
    if isinstance(provider, WebProvider):
        headers = tuple(dataclasses.replace(h, value=substitute(h.value, args)) for h in provider.headers)
        provider = dataclasses.replace(
            provider,
            url=substitute(provider.url, args),
            headers=headers,
            body=substitute(provider.body, args),
            json_path=substitute(provider.json_path, args),
        )
    elif isinstance(provider, PrometheusProvider):
        provider = dataclasses.replace(
            provider, address=substitute(provider.address, args), query=substitute(provider.query, args)
        )
    elif isinstance(provider, JobProvider):  # inside JSON strings, as upstream resolves the Job
        quoted = {name: json.dumps(value)[1:-1] for name, value in args.items()}
        provider = dataclasses.replace(
            provider,
            spec_json=substitute(provider.spec_json, quoted),
            metadata_json=substitute(provider.metadata_json, quoted),
        )
    return dataclasses.replace(
        metric,
        provider=provider,
        success_condition=substitute(metric.success_condition, args),
        failure_condition=substitute(metric.failure_condition, args),
    )


def run_metrics(
    ref: AnalysisRef, templates: Sequence[AnalysisTemplate], args: Mapping[str, str]
) -> tuple[Metric, ...]:
    """Every metric of ``ref``'s templates, in order, its arguments replaced."""
    return tuple(_resolved(m, args) for t in templates_of(ref, templates) for m in t.metrics)
