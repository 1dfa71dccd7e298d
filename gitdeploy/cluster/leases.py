"""Leases (coordination.k8s.io/v1), read and written with optimistic concurrency for leader election."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gitdeploy.cluster.apierrors import translated
from gitdeploy.cluster.rawapi import Bookmark, RawApi, discard
from gitdeploy.core.lease import LeaseSpec, ObservedLease, format_micro_time
from gitdeploy.core.timestamps import parse_timestamp
from gitdeploy.errors import NotFoundError


def read_raw_lease(kube: RawApi, namespace: str, name: str, timeout: float | None) -> dict[str, Any] | None:
    """The Lease ``namespace/name`` as the API server sent it, or None when there is none."""
    try:
        with translated(f"read Lease {namespace}/{name}"):
            response = kube.leases.read(namespace, name, timeout)
            raw: dict[str, Any] = json.loads(response.data)
    except NotFoundError:
        return None
    return raw


@dataclass(frozen=True)
class NamedLease:
    """A Lease of a list or a watch, with its name."""

    name: str
    lease: ObservedLease

    @property
    def resource_version(self) -> str:
        return self.lease.resource_version


class Leases:
    """Reading and writing one Lease; ``timeout`` (s) bounds a whole request when given."""

    def __init__(self, kube: RawApi) -> None:
        self.kube = kube

    def read_lease(self, namespace: str, name: str, timeout: float | None = None) -> ObservedLease | None:
        """The Lease ``namespace/name``, or None when there is none yet (``timeout``: the whole
        request, s; else the usual connect and read timeouts)."""
        raw = read_raw_lease(self.kube, namespace, name, timeout)
        return None if raw is None else _to_observed_lease(raw)

    def write_lease(
        self,
        namespace: str,
        name: str,
        spec: LeaseSpec,
        resource_version: str | None,
        timeout: float | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> ObservedLease:
        """Create the Lease (``resource_version`` None) or replace it.

        Optimistic concurrency: a stale ``resource_version`` raises ConflictError, and creating a Lease
        someone else created first raises AlreadyExistsError; either way the other writer won.
        """
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": _lease_spec_body(spec),
        }
        if labels:
            body["metadata"]["labels"] = dict(labels)
        with translated(f"write Lease {namespace}/{name}"):
            if resource_version is None:
                response = self.kube.leases.create(namespace, body, timeout)
            else:
                body["metadata"]["resourceVersion"] = resource_version
                response = self.kube.leases.replace(namespace, name, body, timeout)
            raw = json.loads(response.data)
        return _to_observed_lease(raw)

    def list_leases(
        self, namespace: str, label_selector: str, timeout: float | None = None
    ) -> dict[str, ObservedLease]:
        """The Leases of ``namespace`` that ``label_selector`` selects, by name (one list call)."""
        with translated(f"list Leases in {namespace}"):
            response = self.kube.leases.list(
                namespace, label_selector=label_selector, _request_timeout=timeout or self.kube.timeout
            )
            raw = json.loads(response.data)
        items = raw.get("items") or []
        return {str(item["metadata"]["name"]): _to_observed_lease(item) for item in items}

    def list_leases_at(self, namespace: str, label_selector: str) -> tuple[list[NamedLease], str]:
        """The Leases of ``namespace`` that ``label_selector`` selects, and the list's
        resourceVersion: where :meth:`watch_leases` goes on from."""
        return self.kube.list_converted_at(
            self.kube.leases.list,
            f"list Leases in {namespace}",
            _named_lease,
            namespace=namespace,
            label_selector=label_selector,
        )

    def watch_leases(
        self, namespace: str, label_selector: str, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[tuple[str, NamedLease | Bookmark]]:
        """``(event type, Lease)`` for every change of those Leases after ``resource_version``,
        until the server ends the watch; ``410 Gone`` is an ExpiredError."""
        yield from self.kube.watch_as(
            self.kube.leases.list,
            f"watch of Leases in {namespace}",
            _named_lease,
            namespace=namespace,
            label_selector=label_selector,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            _request_timeout=self.kube.watch_timeout(timeout_seconds),
        )

    def delete_lease(
        self, namespace: str, name: str, resource_version: str, timeout: float | None = None
    ) -> None:
        """Delete the Lease if it is still at ``resource_version`` (else ConflictError); gone: done."""
        body = {"preconditions": {"resourceVersion": resource_version}}
        try:
            with translated(f"delete Lease {namespace}/{name}"):
                discard(self.kube.leases.delete(namespace, name, body, timeout))
        except NotFoundError:
            pass


def _lease_spec_body(spec: LeaseSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "holderIdentity": spec.holder,
        "leaseDurationSeconds": spec.duration_seconds,
        "leaseTransitions": spec.transitions,
    }
    if spec.acquire_time is not None:
        body["acquireTime"] = format_micro_time(spec.acquire_time)
    if spec.renew_time is not None:
        body["renewTime"] = format_micro_time(spec.renew_time)
    return body


def _to_observed_lease(raw: Mapping[str, Any]) -> ObservedLease:
    spec = raw.get("spec") or {}
    return ObservedLease(
        LeaseSpec(
            holder=str(spec.get("holderIdentity") or ""),
            duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=parse_timestamp(spec.get("acquireTime")),
            renew_time=parse_timestamp(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
        ),
        resource_version=str((raw.get("metadata") or {}).get("resourceVersion", "")),
    )


def _named_lease(raw: Mapping[str, Any]) -> NamedLease:
    return NamedLease(str((raw.get("metadata") or {}).get("name", "")), _to_observed_lease(raw))
