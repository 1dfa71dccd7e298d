"""The ``prometheus`` provider: an instant query of Prometheus' HTTP API (``/api/v1/query``), its
answer read as Argo Rollouts reads it: a scalar is a number, a vector the list of its samples'
values (``result[0]`` in a condition), any other type an error."""

from __future__ import annotations

import httpx

from gitdeploy.core.analysistemplates import PrometheusProvider
from gitdeploy.providers.http import ProviderError, client, json_answer

DEFAULT_TIMEOUT_SECONDS = 30


def measure_prometheus(provider: PrometheusProvider) -> float | list[float]:
    """The result of ``provider``'s query at Prometheus' present time (as upstream: a query is
    of the present, whatever the caller's clock)."""
    url = provider.address.rstrip("/") + "/api/v1/query"
    timeout = provider.timeout_seconds or DEFAULT_TIMEOUT_SECONDS
    what = f"Prometheus at {provider.address}"
    try:
        with client(timeout) as http:
            response = http.get(url, params={"query": provider.query})
    except httpx.HTTPError as problem:
        raise ProviderError(f"{what}: {type(problem).__name__}: {problem}") from None
    if response.status_code in (400, 422):  # a bad query: Prometheus says why
        body = response.json() if "json" in response.headers.get("content-type", "") else {}
        raise ProviderError(f"{what} refused the query: {body.get('error', response.text[:200])}")
    answer = json_answer(response, what)
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, dict):
        raise ProviderError(f"{what} answered without data: {str(answer)[:200]}")
    kind, result = data.get("resultType"), data.get("result")
    try:
        if kind == "scalar":
            return float(result[1])  # type: ignore[index]
        if kind == "vector":
            return [float(sample["value"][1]) for sample in result]  # type: ignore[union-attr]
    except (TypeError, KeyError, IndexError, ValueError) as problem:
        raise ProviderError(f"{what} answered a {kind} gitdeploy cannot read: {problem}") from None
    raise ProviderError(f"{what} answered a {kind}: only scalar and vector results are supported")
