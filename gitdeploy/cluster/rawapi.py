"""The Kubernetes API as plain JSON: lists of every page, watches, and the timeouts of every call.

Lists skip the client's model deserialisation (``_preload_content=False``) and parse the JSON
themselves: building models costs milliseconds per object. Every call has a timeout
(:data:`REQUEST_TIMEOUT`, connect and read), so a stalled connection fails the call as a
:class:`~gitdeploy.errors.TransientError` (the loop retries the app with backoff) instead of hanging
a worker; a watch asks the server to end it after ``timeout_seconds`` and reads for that long plus
the read timeout. Answers are read inside :func:`~gitdeploy.cluster.apierrors.translated` too, so
an answer cut mid-way is a TransientError as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import cached_property
from typing import Any, Final, TypeVar
from urllib.parse import quote

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from gitdeploy.cluster.apierrors import translated
from gitdeploy.errors import AlreadyExistsError, ExpiredError, TransientError

_QUERY_NAMES: Final = {
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
    "_continue": "continue",
    "resource_version": "resourceVersion",
    "timeout_seconds": "timeoutSeconds",
    "allow_watch_bookmarks": "allowWatchBookmarks",
}
"""The generated list methods' keywords → the API's query parameters (others are the same)."""

REQUEST_TIMEOUT: Final = (5.0, 30.0)
"""Seconds to connect, and to wait for each read of an answer, for every API call."""

LIST_PAGE: Final = 500
"""Items asked for per list request (client-go's pager asks for as many): a list of more goes on
with the server's continue token."""

Item = TypeVar("Item")


def _as_is(item: dict[str, Any]) -> dict[str, Any]:
    return item


def discard(response: Any) -> None:
    """Read an answer gitdeploy does not need, so that its connection goes back to the pool
    (an unread ``_preload_content=False`` answer holds it, and the next request opens a new one)."""
    response.read()


def timestamp(value: str | None) -> float:
    if not value:
        return 0.0
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def int_annotation(annotations: Mapping[str, str], key: str) -> int | None:
    try:
        return int(annotations[key])
    except (KeyError, ValueError):
        return None


def labels_of(raw: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = (raw.get("metadata") or {}).get("labels") or {}
    return labels


class RawApi:
    """One cluster's API clients and the call timeouts, with the list and watch requests every part
    of the adapter makes the same way."""

    def __init__(self, api: client.ApiClient, request_timeout: tuple[float, float] = REQUEST_TIMEOUT) -> None:
        self.api = api
        self.timeout = request_timeout
        """``(connect, read)`` seconds of every call (:data:`REQUEST_TIMEOUT`)."""

    # The client's generated API classes, built when first used: importing them (thousands of
    # pydantic-checked methods) is most of the start-up of a command such as `gitdeploy status`,
    # which lists through :meth:`lister` instead. Typed as Any on purpose: gitdeploy calls them
    # with _preload_content=False and reads raw JSON, which their model-typed signatures do not
    # describe.

    @cached_property
    def core(self) -> Any:
        return client.CoreV1Api(self.api)

    @cached_property
    def apps(self) -> Any:
        return client.AppsV1Api(self.api)

    @cached_property
    def leases(self) -> Any:
        return client.CoordinationV1Api(self.api)

    def lister(self, prefix: str, plural: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """``(everywhere, in_namespace)``: list (or watch) requests of ``plural`` under ``prefix``
        (``/api/v1``, ``/apis/apps/v1``), made as the generated ``list_*_for_all_namespaces`` and
        ``list_namespaced_*`` make them (:meth:`ApiClient.param_serialize` and
        :meth:`~ApiClient.call_api`), with the keywords they take, answering as they do with
        ``_preload_content=False``: the HTTP response, unread; an error status raises the
        client's ``ApiException``."""

        def everywhere(**kwargs: Any) -> Any:
            return self._get(f"{prefix}/{plural}", **kwargs)

        def in_namespace(namespace: str, **kwargs: Any) -> Any:
            return self._get(f"{prefix}/namespaces/{quote(namespace, safe='')}/{plural}", **kwargs)

        return everywhere, in_namespace

    def read_namespaced(self, prefix: str, plural: str, namespace: str, name: str) -> Any:
        """One object, read as the generated ``read_namespaced_*`` reads it with
        ``_preload_content=False`` (see :meth:`lister`)."""
        path = f"{prefix}/namespaces/{quote(namespace, safe='')}/{plural}/{quote(name, safe='')}"
        return self._get(path, _request_timeout=self.timeout)

    def _get(
        self, path: str, *, _preload_content: bool = False, _request_timeout: Any = None, **query: Any
    ) -> Any:
        assert not _preload_content, "lister answers are read as raw JSON"
        params = [(_QUERY_NAMES.get(name, name), value) for name, value in query.items() if value is not None]
        request = self.api.param_serialize(
            method="GET",
            resource_path=path,
            query_params=params,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        answer: Any = self.api.call_api(*request, _request_timeout=_request_timeout)
        if not 200 <= answer.status <= 299:
            answer.read()
            raise ApiException.from_response(http_resp=answer, body=None, data=None)
        return answer.response

    def watch_timeout(self, timeout_seconds: int) -> tuple[float, float]:
        """A watch's client timeout: the server ends it after ``timeout_seconds``; a read that
        waits longer than that plus the read timeout means the connection stalled."""
        connect, read = self.timeout
        return connect, timeout_seconds + read

    def list_json(self, call: Callable[..., Any], what: str, **kwargs: Any) -> list[dict[str, Any]]:
        return self.list_converted_at(call, what, _as_is, **kwargs)[0]

    def list_converted_at(
        self, call: Callable[..., Any], what: str, convert: Callable[[dict[str, Any]], Item], **kwargs: Any
    ) -> tuple[list[Item], str]:
        """The items of a list, each ``convert``-ed, and the list's own ``metadata.resourceVersion``:
        the version a watch of the same objects starts from (an item's may be far older).

        Read in pages of :data:`LIST_PAGE` items, each converted before the next is asked for, so
        that only one page of raw JSON is held at a time (a namespace of 2,000 ReplicaSets read in
        one piece held every template twice, as text and parsed)."""
        items: list[Item] = []
        token: str | None = None
        version = ""
        with translated(what):
            while True:
                extra = {"_continue": token} if token else {}
                response = call(
                    _preload_content=False, _request_timeout=self.timeout, limit=LIST_PAGE, **kwargs, **extra
                )
                body = json.loads(response.data)
                del response
                items.extend(convert(item) for item in body.get("items") or [])
                metadata = body.get("metadata") or {}
                del body
                version = version or str(metadata.get("resourceVersion") or "")
                token = metadata.get("continue")
                if not token:
                    return items, version

    def list_selected(
        self,
        everywhere: Callable[..., Any],
        in_namespace: Callable[..., Any],
        what: str,
        namespace: str | None,
        selector: str,
    ) -> list[dict[str, Any]]:
        if namespace is None:
            return self.list_json(everywhere, what, label_selector=selector)
        return self.list_json(
            in_namespace, f"{what} in {namespace}", namespace=namespace, label_selector=selector
        )

    def watch_json(self, call: Callable[..., Any], what: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """``(event type, object as plain JSON)`` of one watch request, read without the client's
        models, until the server ends it; an ``ERROR`` event (``410 Gone``) is a TransientError."""
        with translated(what):
            response = call(watch=True, _preload_content=False, **kwargs)
            try:
                for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                    event = json.loads(line) if line.strip() else {}
                    raw = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        error = ExpiredError if raw.get("code") == 410 else TransientError
                        raise error(f"the {what} ended: {raw.get('message', raw)}")
                    if raw:
                        yield str(event.get("type")), raw
            finally:
                response.release_conn()

    def ensure_namespace(self, namespace: str) -> None:
        try:
            with translated(f"create namespace {namespace}"):
                body = {"metadata": {"name": namespace}}
                discard(
                    self.core.create_namespace(body, _preload_content=False, _request_timeout=self.timeout)
                )
        except AlreadyExistsError:
            pass
