"""What the providers share: the client, the error, the timeout."""

from __future__ import annotations

from typing import Any

import httpx

from gitdeploy import __version__


class ProviderError(Exception):
    """A measurement that could not be taken (the server did not answer, or not as expected):
    the measurement is an Error."""


def client(timeout_seconds: float) -> httpx.Client:
    return httpx.Client(
        timeout=timeout_seconds, follow_redirects=True, headers={"user-agent": f"gitdeploy/{__version__}"}
    )


def json_answer(response: httpx.Response, what: str) -> Any:
    """The JSON of a 2xx ``response``; :class:`ProviderError` otherwise."""
    if not response.is_success:
        raise ProviderError(f"{what} answered HTTP {response.status_code}: {response.text[:200]}")
    try:
        return response.json()
    except ValueError as problem:
        raise ProviderError(f"{what} answered no JSON: {problem}") from None
