"""One measurement of a metric: its provider asked, its conditions evaluated.

Whatever goes wrong (no answer, an answer not as expected, a condition that cannot be evaluated)
is a measurement in phase Error with the reason as its message, as upstream: never an exception.
"""

from __future__ import annotations

from collections.abc import Callable

from gitdeploy.core.analysis.conditions import ConditionError, assess_measurement
from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import Measurement
from gitdeploy.core.analysis.values import render
from gitdeploy.core.analysistemplates import Metric, PrometheusProvider, WebProvider
from gitdeploy.providers.http import ProviderError
from gitdeploy.providers.prometheus import measure_prometheus
from gitdeploy.providers.web import measure_web


def measure(metric: Metric, clock: Callable[[], float]) -> Measurement:
    """Measure ``metric`` now (its provider's arguments already substituted)."""
    started = clock()
    provider = metric.provider
    try:
        if isinstance(provider, WebProvider):
            result = measure_web(provider)
        elif isinstance(provider, PrometheusProvider):
            result = measure_prometheus(provider)
        else:  # the manifests layer refuses the job provider today
            raise ProviderError(f"the {provider.kind} provider is not supported")
    except ProviderError as problem:
        return Measurement(AnalysisPhase.ERROR, started, clock(), message=str(problem))
    value = render(result)
    try:
        phase = assess_measurement(metric.success_condition, metric.failure_condition, result)
    except ConditionError as problem:
        return Measurement(AnalysisPhase.ERROR, started, clock(), value, str(problem))
    return Measurement(phase, started, clock(), value)
