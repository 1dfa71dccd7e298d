"""The Kubernetes API as plain JSON: lists of every page, watches, and the timeouts of every call.

Lists skip the client's model deserialisation (``_preload_content=False``) and parse the JSON
themselves: building models costs milliseconds per object. Every call has a timeout
(:data:`REQUEST_TIMEOUT`, connect and read), so a stalled connection fails the call as a
:class:`~gitdeploy.errors.TransientError` (the loop retries the app with backoff) instead of hanging
a worker; a watch asks the server to end it after ``timeout_seconds`` and reads for that long plus
the read timeout. Answers are read inside :func:`~gitdeploy.cluster.apierrors.translated` too, so
an answer cut mid-way is a TransientError as well.

Every watch asks for bookmarks (``allowWatchBookmarks``, as client-go's reflector does): the
server then tells a watch of a quiet namespace how far the resource's versions went (about every
minute, and before it ends the watch), so the next watch resumes from a version the server still
keeps. Without them, a watch resumed from its namespace's last change fails with 410 Gone once the
other namespaces made more changes than the server keeps, and the namespace is listed again
(KEP-956).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar
from urllib.parse import quote

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from gitdeploy.cluster.apierrors import translated
from gitdeploy.cluster.writecheck import check_writes
from gitdeploy.core.observed import APP_LABEL
from gitdeploy.core.sharding import SHARD_LABEL, shard_of
from gitdeploy.errors import AlreadyExistsError, ExpiredError, NotFoundError, TransientError


def _query_name(keyword: str) -> str:
    """A generated method's keyword as the API's query parameter: ``label_selector`` →
    ``labelSelector``, ``_continue`` → ``continue``.

    >>> [_query_name(k) for k in ("limit", "_continue", "allow_watch_bookmarks")]
    ['limit', 'continue', 'allowWatchBookmarks']
    """
    first, *rest = keyword.lstrip("_").split("_")
    return first + "".join(word.capitalize() for word in rest)


REQUEST_TIMEOUT: Final = (5.0, 30.0)
"""Seconds to connect, and to wait for each read of an answer, for every API call."""

LIST_PAGE: Final = 500
"""Items asked for per list request (client-go's pager asks for as many): a list of more goes on
with the server's continue token."""

Item = TypeVar("Item")

BOOKMARK: Final = "BOOKMARK"


@dataclass(frozen=True, slots=True)
class Bookmark:
    """A watch's ``BOOKMARK`` event: nothing changed that it selects up to ``resource_version``."""

    resource_version: str


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


def keep_apps(apps: Container[str] | None) -> Callable[[Mapping[str, Any]], bool] | None:
    """A list's ``keep`` (:meth:`RawApi.list_converted_at`) for the objects of ``apps``, by their
    app label; None (keep all) without ``apps``."""
    if apps is None:
        return None
    return lambda raw: labels_of(raw).get(APP_LABEL) in apps


class RawApi:
    """One cluster's API clients and the call timeouts, with the list and watch requests every part
    of the adapter makes the same way."""

    def __init__(self, api: client.ApiClient, request_timeout: tuple[float, float] = REQUEST_TIMEOUT) -> None:
        self.api = api
        check_writes(api)  # the loop's fence, checked again right before each write leaves
        self.timeout = request_timeout
        """``(connect, read)`` seconds of every call (:data:`REQUEST_TIMEOUT`)."""
        self.config_maps = Resource(self, "/api/v1", "configmaps")
        self.pods = Resource(self, "/api/v1", "pods")
        self.events = Resource(self, "/api/v1", "events")
        self.replica_sets = Resource(self, "/apis/apps/v1", "replicasets")
        self.leases = Resource(self, "/apis/coordination.k8s.io/v1", "leases")

    def get(
        self, path: str, *, _preload_content: bool = False, _request_timeout: Any = None, **query: Any
    ) -> Any:
        """A GET (a list, or with ``watch=True`` a watch) with the generated list methods' keywords,
        answering as they do with ``_preload_content=False`` (which it insists on)."""
        assert not _preload_content, "answers are read as raw JSON"
        return self.request("GET", path, timeout=_request_timeout, **query)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str | None = None,
        timeout: Any = None,
        **query: Any,
    ) -> Any:
        """One API call, made as the generated API classes make it (:meth:`ApiClient.param_serialize`
        and :meth:`~ApiClient.call_api`, the bearer token, JSON both ways): the HTTP response,
        unread, as they answer with ``_preload_content=False``; an error status raises the
        client's ``ApiException``. ``query`` takes the generated methods' keywords
        (``label_selector``, ``propagation_policy``, ...); ``timeout``: the client's, by default
        :attr:`timeout`."""
        params = [(_query_name(name), value) for name, value in query.items() if value is not None]
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        request = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        answer: Any = self.api.call_api(*request, _request_timeout=timeout or self.timeout)
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
        self,
        call: Callable[..., Any],
        what: str,
        convert: Callable[[dict[str, Any]], Item],
        keep: Callable[[dict[str, Any]], bool] | None = None,
        **kwargs: Any,
    ) -> tuple[list[Item], str]:
        """The items of a list (those ``keep`` says yes to: all without it), each ``convert``-ed,
        and the list's own ``metadata.resourceVersion``: the version a watch of the same objects
        starts from (an item's may be far older).

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
                items.extend(convert(item) for item in body.get("items") or [] if keep is None or keep(item))
                metadata = body.get("metadata") or {}
                del body
                version = version or str(metadata.get("resourceVersion") or "")
                token = metadata.get("continue")
                if not token:
                    return items, version

    def list_selected(
        self, resource: Resource, what: str, namespace: str | None, selector: str
    ) -> list[dict[str, Any]]:
        return self.list_selected_as(resource, what, namespace, selector, _as_is)

    def list_selected_as(
        self,
        resource: Resource,
        what: str,
        namespace: str | None,
        selector: str,
        convert: Callable[[dict[str, Any]], Item],
        keep: Callable[[dict[str, Any]], bool] | None = None,
    ) -> list[Item]:
        """The objects of ``resource`` that ``selector`` selects in ``namespace`` (None: every
        namespace) and ``keep`` keeps, each ``convert``-ed page by page (see
        :meth:`list_converted_at`)."""
        if namespace is None:
            return self.list_converted_at(
                resource.list_everywhere, what, convert, keep, label_selector=selector
            )[0]
        where = f"{what} in {namespace}"
        return self.list_converted_at(
            resource.list, where, convert, keep, namespace=namespace, label_selector=selector
        )[0]

    def label_shards(self, resource: Resource, namespace: str, selector: str, what: str) -> int:
        """Label each object of ``resource`` in ``namespace`` that ``selector`` selects and that
        has no shard label (made by a gitdeploy before it had one) with its app's shard, one
        merge patch each, so that the watches of ``run --sharding`` replicas, which select their
        shards, see it; how many (``what`` names the objects in errors)."""
        unlabelled = self.list_selected_as(
            resource,
            f"list {what} in {namespace} without {SHARD_LABEL}",
            namespace,
            f"{selector},!{SHARD_LABEL}",
            lambda raw: (str(raw["metadata"]["name"]), labels_of(raw).get(APP_LABEL, "")),
        )
        labelled = 0
        for name, app in unlabelled:
            patch = {"metadata": {"labels": {SHARD_LABEL: shard_of(f"{namespace}/{app}")}}}
            try:
                with translated(f"label {what} {namespace}/{name} with its shard"):
                    discard(resource.patch(namespace, name, patch))
                labelled += 1
            except NotFoundError:  # deleted meanwhile
                continue
        return labelled

    def watch_as(
        self, call: Callable[..., Any], what: str, convert: Callable[[dict[str, Any]], Item], **kwargs: Any
    ) -> Iterator[tuple[str, Item | Bookmark]]:
        """``(event type, object)`` of one watch request, each object ``convert``-ed from plain JSON
        (no client models), until the server ends it; a ``BOOKMARK`` event is a :class:`Bookmark`.
        An ``ERROR`` event (``410 Gone``) is a TransientError."""
        with translated(what):
            response = call(watch=True, allow_watch_bookmarks=True, _preload_content=False, **kwargs)
            try:
                for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                    event = json.loads(line) if line.strip() else {}
                    raw = event.get("object") or {}
                    kind = str(event.get("type"))
                    if kind == "ERROR":
                        error = ExpiredError if raw.get("code") == 410 else TransientError
                        raise error(f"the {what} ended: {raw.get('message', raw)}")
                    if kind == BOOKMARK:
                        yield kind, Bookmark(str((raw.get("metadata") or {}).get("resourceVersion") or ""))
                    elif raw:
                        yield kind, convert(raw)
            finally:
                response.release_conn()

    def ensure_namespace(self, namespace: str) -> None:
        try:
            with translated(f"create namespace {namespace}"):
                body = {"metadata": {"name": namespace}}
                discard(self.request("POST", "/api/v1/namespaces", body=body))
        except AlreadyExistsError:
            pass


@dataclass(frozen=True)
class Resource:
    """The namespaced objects of one kind (``plural`` under ``prefix``, e.g. ``/apis/apps/v1``
    ``replicasets``) and the calls gitdeploy makes on them, each answering the HTTP response,
    unread (see :meth:`RawApi.request`). ``timeout``: the whole call's, else the API's usual
    :attr:`RawApi.timeout`."""

    kube: RawApi
    prefix: str
    plural: str

    def path(self, namespace: str, name: str = "") -> str:
        collection = f"{self.prefix}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{collection}/{quote(name, safe='')}" if name else collection

    def list_everywhere(self, **kwargs: Any) -> Any:
        """A list (or, with ``watch=True``, a watch) of every namespace's, with the generated
        ``list_*_for_all_namespaces`` keywords (see :meth:`RawApi.lister`)."""
        return self.kube.get(f"{self.prefix}/{self.plural}", **kwargs)

    def list(self, namespace: str, **kwargs: Any) -> Any:
        """A list (or watch) of ``namespace``'s, as the generated ``list_namespaced_*``."""
        return self.kube.get(self.path(namespace), **kwargs)

    def read(
        self, namespace: str, name: str, timeout: Any = None, subresource: str = "", **query: Any
    ) -> Any:
        path = self.path(namespace, name) + (f"/{subresource}" if subresource else "")
        return self.kube.request("GET", path, timeout=timeout, **query)

    def create(self, namespace: str, body: Any, timeout: Any = None) -> Any:
        return self.kube.request("POST", self.path(namespace), body=body, timeout=timeout)

    def replace(self, namespace: str, name: str, body: Any, timeout: Any = None) -> Any:
        return self.kube.request("PUT", self.path(namespace, name), body=body, timeout=timeout)

    def patch(
        self, namespace: str, name: str, body: Any, content_type: str = "application/merge-patch+json"
    ) -> Any:
        return self.kube.request("PATCH", self.path(namespace, name), body=body, content_type=content_type)

    def delete(self, namespace: str, name: str, body: Any = None, timeout: Any = None, **query: Any) -> Any:
        return self.kube.request("DELETE", self.path(namespace, name), body=body, timeout=timeout, **query)
