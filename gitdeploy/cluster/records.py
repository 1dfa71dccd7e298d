"""What gitdeploy stores in the cluster as JSON ConfigMaps: app records and image stream states.

An app record (label ``gitdeploy.io/record``, key ``record.json``) is what the rollout engine keeps
about an app's revisions; an image stream's state (label ``gitdeploy.io/imagestream``, key
``tags.json``) is :mod:`gitdeploy.images`'s, which keeps the payload's format. Both are written with
optimistic concurrency: a stale ``resourceVersion`` is a ConflictError.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterator, Mapping
from typing import Any

from gitdeploy.cluster.apierrors import translated
from gitdeploy.cluster.rawapi import Bookmark, RawApi, discard, keep_apps
from gitdeploy.core.observed import (
    APP_LABEL,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    RECORD_LABEL,
    StoredRecord,
    record_name,
)
from gitdeploy.core.sharding import SHARD_LABEL, shard_of, shard_selector
from gitdeploy.errors import NotFoundError

RECORD_KEY = "record.json"
IMAGESTREAM_LABEL = "gitdeploy.io/imagestream"
"""Label of an image stream's state ConfigMap; its value is the stream's name."""
STREAM_STATE_KEY = "tags.json"
_RECORDS = f"{RECORD_LABEL}=true"
"""The selector of every app record."""


def stream_state_name(stream: str) -> str:
    """The ConfigMap that holds an image stream's tag histories."""
    return f"gitdeploy-imagestream-{stream}"


def _record(raw: Mapping[str, Any], label: str = APP_LABEL, key: str = RECORD_KEY) -> StoredRecord:
    """A stored JSON ConfigMap: an app record, or (``label``/``key`` of streams) an image stream state."""
    meta = raw.get("metadata") or {}
    return StoredRecord(
        namespace=str(meta.get("namespace", "")),
        app=str((meta.get("labels") or {}).get(label, "")),
        body=str((raw.get("data") or {}).get(key, "{}")),
        resource_version=str(meta.get("resourceVersion", "")),
        uid=str(meta.get("uid", "")),
    )


def _stream_state(raw: Mapping[str, Any]) -> StoredRecord:
    return _record(raw, IMAGESTREAM_LABEL, STREAM_STATE_KEY)


class _ConfigMaps:
    """Reading and writing one JSON ConfigMap by name."""

    def __init__(self, kube: RawApi) -> None:
        self.kube = kube

    def read_config_map(self, namespace: str, name: str, what: str) -> dict[str, Any] | None:
        try:
            with translated(what):
                response = self.kube.config_maps.read(namespace, name)
                loaded: dict[str, Any] = json.loads(response.data)
        except NotFoundError:
            return None
        return loaded

    def write_config_map(
        self,
        namespace: str,
        name: str,
        labels: Mapping[str, str],
        data: Mapping[str, str],
        resource_version: str | None,
        what: str,
    ) -> dict[str, Any]:
        """Create (``resource_version`` None) or replace a ConfigMap; a stale version → ConflictError."""
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
        body: dict[str, Any] = {"metadata": meta, "data": dict(data)}
        with translated(what):
            if resource_version is None:
                response = self.kube.config_maps.create(namespace, body)
            else:
                meta["resourceVersion"] = resource_version
                response = self.kube.config_maps.replace(namespace, name, body)
            written: dict[str, Any] = json.loads(response.data)
        return written


class AppRecords(_ConfigMaps):
    """The app records: list (and watch from the list), read, write, delete."""

    def list_app_records(
        self,
        namespace: str | None = None,
        app: str | None = None,
        *,
        of_apps: Container[str] | None = None,
        shards: frozenset[str] | None = None,
    ) -> list[StoredRecord]:
        """Every app record (or ``app``'s), in one namespace (or all), in one list call; or (read
        from the whole list, page by page) only those of ``of_apps``; of the apps of ``shards``
        only, when given (selected by the server)."""
        selector = shard_selector(_RECORDS + (f",{APP_LABEL}={app}" if app else ""), shards)
        return self.kube.list_selected_as(
            self.kube.config_maps, "list app records", namespace, selector, _record, keep_apps(of_apps)
        )

    def list_app_records_at(
        self, namespace: str | None, shards: frozenset[str] | None = None
    ) -> tuple[list[StoredRecord], str]:
        """The app records in ``namespace`` (None: every namespace; of the apps of ``shards`` only,
        when given) and the list's resourceVersion, from one list (read page by page): where
        :meth:`watch_app_records` goes on from."""
        selector = shard_selector(_RECORDS, shards)
        if namespace is None:
            return self.kube.list_converted_at(
                self.kube.config_maps.list_everywhere, "list app records", _record, label_selector=selector
            )
        return self.kube.list_converted_at(
            self.kube.config_maps.list,
            f"list app records in {namespace}",
            _record,
            namespace=namespace,
            label_selector=selector,
        )

    def watch_app_records(
        self,
        namespace: str | None = None,
        resource_version: str = "",
        timeout_seconds: int = 300,
        shards: frozenset[str] | None = None,
    ) -> Iterator[tuple[str, StoredRecord | Bookmark]]:
        """``(event type, record)`` for every change of an app record (of the apps of ``shards``
        only, when given), until the server ends the watch (after ``timeout_seconds``). Without
        ``resource_version`` it starts with every record as ``ADDED``. A ``410 Gone`` surfaces as
        :class:`ExpiredError`: list again (:meth:`list_app_records_at`) and watch from the list's
        resourceVersion."""
        kwargs: dict[str, Any] = {
            "label_selector": shard_selector(_RECORDS, shards),
            "timeout_seconds": timeout_seconds,
            "_request_timeout": self.kube.watch_timeout(timeout_seconds),
        }
        if resource_version:
            kwargs["resource_version"] = resource_version
        call: Callable[..., Any] = self.kube.config_maps.list_everywhere
        if namespace is not None:
            call, kwargs["namespace"] = self.kube.config_maps.list, namespace
        yield from self.kube.watch_as(call, "watch of app records", _record, **kwargs)

    def label_shards(self, namespace: str) -> int:
        """Label the app records of ``namespace`` written without their app's shard label with
        it (:meth:`~gitdeploy.cluster.rawapi.RawApi.label_shards`); how many."""
        return self.kube.label_shards(self.kube.config_maps, namespace, _RECORDS, "app record")

    def read_app_record(self, namespace: str, app: str) -> StoredRecord | None:
        raw = self.read_config_map(namespace, record_name(app), f"read the record of {namespace}/{app}")
        return _record(raw) if raw is not None else None

    def write_app_record(
        self, namespace: str, app: str, payload: str, resource_version: str | None
    ) -> StoredRecord:
        """Create the record (``resource_version`` None) or replace it; a stale version → ConflictError."""
        labels = {
            RECORD_LABEL: "true",
            APP_LABEL: app,
            MANAGED_BY_LABEL: MANAGED_BY_VALUE,
            SHARD_LABEL: shard_of(f"{namespace}/{app}"),
        }
        what = f"write the record of {namespace}/{app}"
        raw = self.write_config_map(
            namespace, record_name(app), labels, {RECORD_KEY: payload}, resource_version, what
        )
        return _record(raw)

    def delete_app_record(self, namespace: str, app: str, *, version: str = "") -> None:
        """Delete the record (it owns nothing: prune deletes the app's ReplicaSets first); at
        ``version``, the resourceVersion read, when given (a ConflictError if it changed since)."""
        body = {"preconditions": {"resourceVersion": version}} if version else None
        try:
            with translated(f"delete the record of {namespace}/{app}"):
                name = record_name(app)
                discard(self.kube.config_maps.delete(namespace, name, body, propagation_policy="Background"))
        except NotFoundError:
            pass


class StreamStates(_ConfigMaps):
    """The image stream states (a record's ``app`` is the stream): list, watch, read, write."""

    def list_stream_states(self, namespace: str | None = None) -> list[StoredRecord]:
        """Every image stream state, in one namespace (or all), in one list call (``app`` is the stream)."""
        raw = self.kube.list_selected(
            self.kube.config_maps,
            "list image stream states",
            namespace,
            IMAGESTREAM_LABEL,
        )
        return [_stream_state(item) for item in raw]

    def list_stream_states_at(self, namespace: str) -> tuple[list[StoredRecord], str]:
        """The image stream states in ``namespace`` and the list's resourceVersion, in one list
        call: where :meth:`watch_stream_states` goes on from."""
        return self.kube.list_converted_at(
            self.kube.config_maps.list,
            f"list image stream states in {namespace}",
            _stream_state,
            namespace=namespace,
            label_selector=IMAGESTREAM_LABEL,
        )

    def watch_stream_states(
        self, namespace: str, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[tuple[str, StoredRecord | Bookmark]]:
        """``(event type, stream state)`` for every change of an image stream state in ``namespace``
        after ``resource_version`` (from :meth:`list_stream_states_at`), until the server ends the watch; a
        ``410 Gone`` is an :class:`ExpiredError` (list again)."""
        yield from self.kube.watch_as(
            self.kube.config_maps.list,
            f"watch of image stream states in {namespace}",
            _stream_state,
            namespace=namespace,
            label_selector=IMAGESTREAM_LABEL,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            _request_timeout=self.kube.watch_timeout(timeout_seconds),
        )

    def read_stream_state(self, namespace: str, stream: str) -> StoredRecord | None:
        what = f"read the state of image stream {namespace}/{stream}"
        raw = self.read_config_map(namespace, stream_state_name(stream), what)
        return _stream_state(raw) if raw is not None else None

    def write_stream_state(
        self, namespace: str, stream: str, payload: str, resource_version: str | None
    ) -> StoredRecord:
        """Create (``resource_version`` None) or replace a stream's state; a stale version →
        ConflictError. The first write creates the namespace when it is missing."""
        labels = {IMAGESTREAM_LABEL: stream, MANAGED_BY_LABEL: MANAGED_BY_VALUE}
        what = f"write the state of image stream {namespace}/{stream}"
        name = stream_state_name(stream)
        data = {STREAM_STATE_KEY: payload}
        try:
            raw = self.write_config_map(namespace, name, labels, data, resource_version, what)
        except NotFoundError:
            if resource_version is not None:
                raise
            self.kube.ensure_namespace(namespace)
            raw = self.write_config_map(namespace, name, labels, data, resource_version, what)
        return _stream_state(raw)
