"""Argo Rollouts' ``AnalysisTemplate`` as typed, immutable values: the arguments it takes and
the metrics it measures, each with its provider (a job, a web request or a Prometheus query).

The conditions (``successCondition``, ``failureCondition``) are kept as written: evaluating
them belongs to the analysis runner. Durations are whole seconds; ``None`` stands for upstream's
default (a metric without ``interval`` is measured once; without ``count``, with an interval, it
is measured until the rollout no longer needs it).

>>> metric = Metric("success-rate", PrometheusProvider("http://prometheus:9090", "up"),
...                 interval_seconds=60, success_condition="result[0] >= 0.95")
>>> metric.provider.kind, metric.failure_limit, metric.count
(<ProviderKind.PROMETHEUS: 'prometheus'>, 0, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gitdeploy.core.models import AppKey, Location


class ProviderKind(StrEnum):
    JOB = "job"
    WEB = "web"
    PROMETHEUS = "prometheus"


class WebMethod(StrEnum):
    GET = "GET"
    POST = "POST"
    PUT = "PUT"


@dataclass(frozen=True, slots=True)
class TemplateArg:
    """An argument a template takes, with its default value if it has one."""

    name: str
    default: str | None = None


@dataclass(frozen=True, slots=True)
class JobProvider:
    """A Kubernetes Job (its ``spec``, and the labels and annotations of its ``metadata``, as
    canonical JSON): the measurement succeeds when the Job succeeds, fails when it fails."""

    spec_json: str
    metadata_json: str = "{}"
    kind: ProviderKind = ProviderKind.JOB


@dataclass(frozen=True, slots=True)
class WebHeader:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class WebProvider:
    """An HTTP request; ``json_path`` picks the result out of the JSON answer."""

    url: str
    method: WebMethod = WebMethod.GET
    headers: tuple[WebHeader, ...] = ()
    body: str = ""
    json_path: str = ""
    timeout_seconds: int | None = None
    kind: ProviderKind = ProviderKind.WEB


@dataclass(frozen=True, slots=True)
class PrometheusProvider:
    """A PromQL query against the server at ``address``."""

    address: str
    query: str
    timeout_seconds: int | None = None
    kind: ProviderKind = ProviderKind.PROMETHEUS


Provider = JobProvider | WebProvider | PrometheusProvider


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric: what to measure, how often, and what makes it pass or fail."""

    name: str
    provider: Provider
    interval_seconds: int | None = None
    initial_delay_seconds: int = 0
    count: int | None = None
    success_condition: str = ""
    failure_condition: str = ""
    failure_limit: int = 0
    inconclusive_limit: int = 0
    consecutive_error_limit: int = 4
    """Errors in a row past which the metric is an Error (upstream's default: 4)."""


@dataclass(frozen=True, slots=True)
class AnalysisTemplate:
    """A namespaced ``AnalysisTemplate`` of the config repo."""

    key: AppKey
    location: Location
    args: tuple[TemplateArg, ...] = ()
    metrics: tuple[Metric, ...] = ()
