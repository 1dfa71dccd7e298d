"""The ``web`` provider: an HTTP request whose JSON answer holds the result (at ``jsonPath``), as
Argo Rollouts' web metric: a non-2xx answer, or one that is not JSON, is an error."""

from __future__ import annotations

from typing import Any

import httpx

from gitdeploy.core.analysis.jsonpath import JsonPathError, pick
from gitdeploy.core.analysistemplates import WebProvider
from gitdeploy.providers.http import ProviderError, client, json_answer

DEFAULT_TIMEOUT_SECONDS = 10
"""Upstream's default ``timeoutSeconds``."""


def measure_web(provider: WebProvider) -> Any:
    """The result of one request: the value at ``jsonPath`` of the JSON answer."""
    headers = {header.key: header.value for header in provider.headers}
    timeout = provider.timeout_seconds or DEFAULT_TIMEOUT_SECONDS
    what = f"{provider.method} {provider.url}"
    try:
        with client(timeout) as http:
            response = http.request(
                provider.method.value, provider.url, headers=headers, content=provider.body or None
            )
    except httpx.HTTPError as problem:
        raise ProviderError(f"{what}: {type(problem).__name__}: {problem}") from None
    answer = json_answer(response, what)
    try:
        return pick(provider.json_path, answer)
    except JsonPathError as problem:
        raise ProviderError(f"{what}: {problem}") from None
