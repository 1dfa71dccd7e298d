"""The only code that talks to the Kubernetes API (DESIGN.md, layer ``cluster``): :class:`Cluster`.

:class:`Cluster` is the one object the rest of gitdeploy holds; each of its verbs is done by the
part of :mod:`gitdeploy.cluster` that owns that kind of object:

* :mod:`~gitdeploy.cluster.replicasets` — the ReplicaSets of an app's revisions (and their pods);
* :mod:`~gitdeploy.cluster.pods` — hook and deployer pods, their logs, the census of an app's pods;
* :mod:`~gitdeploy.cluster.records` — app records and image stream states (JSON ConfigMaps);
* :mod:`~gitdeploy.cluster.events` and :mod:`~gitdeploy.cluster.leases`;
* :mod:`~gitdeploy.cluster.rawapi` — lists, watches, namespaces and the timeout of every call;
* :mod:`~gitdeploy.cluster.apierrors` — every API or network error as a :mod:`gitdeploy.errors` error.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping
from typing import Any

from kubernetes import client

from gitdeploy.cluster.events import Events
from gitdeploy.cluster.headleases import HeadLeases
from gitdeploy.cluster.leases import Leases
from gitdeploy.cluster.pods import HookPods
from gitdeploy.cluster.rawapi import REQUEST_TIMEOUT, Bookmark, RawApi
from gitdeploy.cluster.records import AppRecords, StreamStates
from gitdeploy.cluster.replicasets import ReplicaSets
from gitdeploy.core.history.records import MAX_LOG_BYTES
from gitdeploy.core.lease import LeaseSpec, ObservedLease
from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import (
    ObservedPod,
    ObservedReplicaSet,
    PodCensus,
    PodSpec,
    ReplicaSetSpec,
    StoredRecord,
)
from gitdeploy.core.podstates import PodState
from gitdeploy.core.rollout.labeldrift import NamedReplicaSet
from gitdeploy.core.rollout.templatedrift import TemplatePod


class Cluster:
    """gitdeploy's verbs on one cluster: snapshot, create/scale/annotate/delete, pods, events, records.

    Each verb hands over to its part (see the module's docstring), whose method of the same name
    documents it."""

    def __init__(
        self,
        api: client.ApiClient,
        description: str = "",
        *,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
    ) -> None:
        self.api = api
        self.description = description
        self.timeout = request_timeout
        """``(connect, read)`` seconds of every call (:data:`~gitdeploy.cluster.rawapi.REQUEST_TIMEOUT`)."""
        kube = RawApi(api, request_timeout)
        self.kube = kube
        self.replica_sets = ReplicaSets(kube)
        self.pods = HookPods(kube)
        self.records = AppRecords(kube)
        self.streams = StreamStates(kube)
        self.events = Events(kube)
        self.leases = Leases(kube)
        self.head_leases = HeadLeases(kube)
        """The head announcement of ``run --sharding`` (:mod:`gitdeploy.cluster.headleases`)."""

    def name_client(self, identity: str) -> None:
        """Send ``identity`` in every request's User-Agent (``gitdeploy (identity)``): audit logs, and
        the embedded cluster's log of writes, then tell which replica wrote what."""
        self.api.user_agent = f"gitdeploy ({identity})"

    # -- ReplicaSets (replicasets.py) ---------------------------------------------------------------

    def list_replica_sets(
        self, namespace: str | None = None, app: str | None = None, *, of_apps: Container[str] | None = None
    ) -> list[ObservedReplicaSet]:
        return self.replica_sets.list_replica_sets(namespace, app, of_apps=of_apps)

    def list_replica_sets_at(
        self, namespace: str, shards: frozenset[str] | None = None
    ) -> tuple[list[ObservedReplicaSet], str]:
        return self.replica_sets.list_replica_sets_at(namespace, shards)

    def watch_replica_sets(
        self,
        namespace: str,
        timeout_seconds: int = 300,
        resource_version: str = "",
        shards: frozenset[str] | None = None,
    ) -> Iterator[tuple[str, ObservedReplicaSet | Bookmark]]:
        return self.replica_sets.watch_replica_sets(namespace, timeout_seconds, resource_version, shards)

    def label_replica_set_shards(self, namespace: str) -> int:
        return self.replica_sets.label_shards(namespace)

    def create_replica_set(self, spec: ReplicaSetSpec) -> ObservedReplicaSet:
        return self.replica_sets.create_replica_set(spec)

    def scale_replica_set(
        self,
        namespace: str,
        name: str,
        replicas: int | None,
        annotations: Mapping[str, str] | None = None,
        *,
        version: str = "",
    ) -> ObservedReplicaSet:
        return self.replica_sets.scale_replica_set(namespace, name, replicas, annotations, version=version)

    def restore_replica_set_template(
        self, namespace: str, name: str, app: str, template_hash: str, template: PodTemplate
    ) -> ObservedReplicaSet:
        return self.replica_sets.restore_replica_set_template(namespace, name, app, template_hash, template)

    def read_replica_set(
        self, namespace: str, name: str
    ) -> tuple[NamedReplicaSet, ObservedReplicaSet] | None:
        return self.replica_sets.read_replica_set(namespace, name)

    def relabel_replica_set(self, namespace: str, name: str, labels: Mapping[str, str]) -> ObservedReplicaSet:
        return self.replica_sets.relabel_replica_set(namespace, name, labels)

    def annotate_replica_set(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> ObservedReplicaSet:
        return self.replica_sets.annotate_replica_set(namespace, name, annotations)

    def list_replica_set_pods(self, namespace: str, app: str, template_hash: str) -> list[TemplatePod]:
        return self.replica_sets.list_replica_set_pods(namespace, app, template_hash)

    def release_replica_set(self, namespace: str, name: str) -> None:
        self.replica_sets.release_replica_set(namespace, name)

    def delete_replica_set(self, namespace: str, name: str, *, version: str = "", uid: str = "") -> None:
        self.replica_sets.delete_replica_set(namespace, name, version=version, uid=uid)

    # -- hook and deployer pods (pods.py) -------------------------------------------------------------

    def list_app_pods(self, namespace: str | None = None, app: str | None = None) -> list[ObservedPod]:
        return self.pods.list_app_pods(namespace, app)

    def list_pods_with_census(
        self, namespace: str, app: str | None = None
    ) -> tuple[list[ObservedPod], dict[str, PodCensus]]:
        return self.pods.list_pods_with_census(namespace, app)

    def list_pod_states(self, namespace: str, app: str, template_hash: str) -> list[PodState]:
        return self.pods.list_pod_states(namespace, app, template_hash)

    def create_pod(self, spec: PodSpec) -> ObservedPod:
        return self.pods.create_pod(spec)

    def delete_pod(self, namespace: str, name: str) -> None:
        self.pods.delete_pod(namespace, name)

    def read_pod_log(self, namespace: str, name: str, tail_lines: int = MAX_LOG_BYTES) -> str:
        return self.pods.read_pod_log(namespace, name, tail_lines)

    def tail_pod_log(self, namespace: str, name: str, tail_lines: int, window_bytes: int) -> str:
        return self.pods.tail_pod_log(namespace, name, tail_lines, window_bytes)

    # -- app records and image stream states (records.py) -------------------------------------------

    def list_app_records(
        self,
        namespace: str | None = None,
        app: str | None = None,
        *,
        of_apps: Container[str] | None = None,
        shards: frozenset[str] | None = None,
    ) -> list[StoredRecord]:
        return self.records.list_app_records(namespace, app, of_apps=of_apps, shards=shards)

    def list_app_records_at(
        self, namespace: str | None, shards: frozenset[str] | None = None
    ) -> tuple[list[StoredRecord], str]:
        return self.records.list_app_records_at(namespace, shards)

    def watch_app_records(
        self,
        namespace: str | None = None,
        resource_version: str = "",
        timeout_seconds: int = 300,
        shards: frozenset[str] | None = None,
    ) -> Iterator[tuple[str, StoredRecord | Bookmark]]:
        return self.records.watch_app_records(namespace, resource_version, timeout_seconds, shards)

    def read_app_record(self, namespace: str, app: str) -> StoredRecord | None:
        return self.records.read_app_record(namespace, app)

    def label_record_shards(self, namespace: str) -> int:
        return self.records.label_shards(namespace)

    def write_app_record(
        self, namespace: str, app: str, payload: str, resource_version: str | None
    ) -> StoredRecord:
        return self.records.write_app_record(namespace, app, payload, resource_version)

    def delete_app_record(self, namespace: str, app: str, *, version: str = "") -> None:
        self.records.delete_app_record(namespace, app, version=version)

    def list_stream_states(self, namespace: str | None = None) -> list[StoredRecord]:
        return self.streams.list_stream_states(namespace)

    def list_stream_states_at(self, namespace: str) -> tuple[list[StoredRecord], str]:
        return self.streams.list_stream_states_at(namespace)

    def watch_stream_states(
        self, namespace: str, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[tuple[str, StoredRecord | Bookmark]]:
        return self.streams.watch_stream_states(namespace, resource_version, timeout_seconds)

    def read_stream_state(self, namespace: str, stream: str) -> StoredRecord | None:
        return self.streams.read_stream_state(namespace, stream)

    def write_stream_state(
        self, namespace: str, stream: str, payload: str, resource_version: str | None
    ) -> StoredRecord:
        return self.streams.write_stream_state(namespace, stream, payload, resource_version)

    # -- namespaces, events, leases (rawapi.py, events.py, leases.py) ---------------------------------

    def ensure_namespace(self, namespace: str) -> None:
        self.kube.ensure_namespace(namespace)

    def record_event(
        self,
        namespace: str,
        involved: tuple[str, str, str],
        reason: str,
        message: str,
        *,
        warning: bool = False,
        now: float,
    ) -> None:
        self.events.record_event(namespace, involved, reason, message, warning=warning, now=now)

    def list_events(self, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
        return self.events.list_events(namespace, name)

    def read_lease(self, namespace: str, name: str, timeout: float | None = None) -> ObservedLease | None:
        return self.leases.read_lease(namespace, name, timeout)

    def write_lease(
        self,
        namespace: str,
        name: str,
        spec: LeaseSpec,
        resource_version: str | None,
        timeout: float | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> ObservedLease:
        return self.leases.write_lease(namespace, name, spec, resource_version, timeout, labels)

    def list_leases(
        self, namespace: str, label_selector: str, timeout: float | None = None
    ) -> dict[str, ObservedLease]:
        return self.leases.list_leases(namespace, label_selector, timeout)

    def delete_lease(
        self, namespace: str, name: str, resource_version: str, timeout: float | None = None
    ) -> None:
        self.leases.delete_lease(namespace, name, resource_version, timeout)
