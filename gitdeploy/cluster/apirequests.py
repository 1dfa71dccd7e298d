"""Count every Kubernetes API request an ``ApiClient`` makes, by verb and status code.

The official client sends each request through its REST client's ``request`` method (with the HTTP
method and the full URL); :func:`observe_api_requests` wraps that one method on one client, so
every call of every API class built on it is seen, and nothing else is touched. The added cost is
one URL split per request (microseconds, against a round trip of a millisecond or more).

The verb is Kubernetes', as in audit logs and RBAC: ``GET`` is ``get``, ``list`` or ``watch``
depending on the path and query, ``POST`` is ``create``, ``PUT`` ``update``, ``PATCH`` ``patch``,
``DELETE`` ``delete`` (``deletecollection`` on a collection). A request that got no answer
(connection refused, timeout, TLS error) has code 0.

>>> kube_verb("GET", "https://k:6443/apis/apps/v1/namespaces/shop/replicasets?labelSelector=a")
'list'
>>> kube_verb("GET", "https://k:6443/api/v1/namespaces/shop/configmaps/gitdeploy.web")
'get'
>>> kube_verb("GET", "https://k:6443/api/v1/pods?watch=true")
'watch'
>>> kube_verb("PATCH", "https://k:6443/apis/apps/v1/namespaces/shop/replicasets/web-x/scale")
'patch'
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

RequestObserver = Callable[[str, int], None]
"""Called with (verb, HTTP status code) once per request; it must be cheap and must not raise."""

_WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def kube_verb(method: str, url: str) -> str:
    """The Kubernetes verb of an HTTP request to the API server."""
    method = method.upper()
    if method in _WRITE_VERBS:
        return _WRITE_VERBS[method]
    parts = urllib.parse.urlsplit(url)
    if method == "GET" and "watch=true" in parts.query.lower():
        return "watch"
    collection = _is_collection(parts.path)
    if method == "DELETE":
        return "deletecollection" if collection else "delete"
    if method == "GET":
        return "list" if collection else "get"
    return method.lower()


def _is_collection(path: str) -> bool:
    """``/api/v1/pods``, ``/apis/apps/v1/namespaces/ns/replicasets``, ``/api/v1/namespaces``: yes."""
    segments = [s for s in path.split("/") if s]
    if segments[:1] == ["api"]:
        rest = segments[2:]  # api, v1
    elif segments[:1] == ["apis"]:
        rest = segments[3:]  # apis, group, version
    else:
        return False
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]  # a namespaced resource: namespaces/<ns>/<resource>[/<name>[/<sub>]]
    return len(rest) == 1


def observe_api_requests(api: Any, observer: RequestObserver) -> None:
    """Call ``observer(verb, code)`` after every request ``api`` (an ``ApiClient``) makes."""
    rest = api.rest_client
    send = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        try:
            response = send(method, url, *args, **kwargs)
        except Exception as problem:  # counted, then re-raised untouched
            observer(kube_verb(method, url), int(getattr(problem, "status", 0) or 0))
            raise
        observer(kube_verb(method, url), int(response.status))
        return response

    rest.request = request
