"""The head announcement of ``run --sharding`` (:mod:`gitdeploy.core.headnews`): one
``coordination.k8s.io/v1`` Lease whose annotations name the announced commit. Read, written with
optimistic concurrency (compare-and-swap on resourceVersion), listed by name and watched by name
(``fieldSelector=metadata.name=<name>``: one watch on one object, as client-go's informers do
for a single object).

The Lease's spec stays empty: nobody holds it, and leader election tools that list Leases see an
unheld one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from gitdeploy.cluster.apierrors import translated
from gitdeploy.cluster.leases import read_raw_lease
from gitdeploy.cluster.rawapi import Bookmark, RawApi
from gitdeploy.core.headnews import HeadAnnouncement, ObservedAnnouncement


class HeadLeases:
    """The announcement Lease ``namespace/name``; ``timeout`` (s) bounds a whole request."""

    def __init__(self, kube: RawApi) -> None:
        self.kube = kube

    def read(self, namespace: str, name: str, timeout: float | None = None) -> ObservedAnnouncement | None:
        """The announcement, or None when the object does not exist yet."""
        raw = read_raw_lease(self.kube, namespace, name, timeout)
        return None if raw is None else _observed(raw)

    def write(
        self,
        namespace: str,
        name: str,
        announcement: HeadAnnouncement,
        resource_version: str | None,
        timeout: float | None = None,
    ) -> ObservedAnnouncement:
        """Create the object (``resource_version`` None) or replace it: a stale version raises
        ConflictError, creating one that exists AlreadyExistsError (another replica wrote first)."""
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "gitdeploy"},
            "annotations": announcement.annotations(),
        }
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {},
        }
        with translated(f"write Lease {namespace}/{name}"):
            if resource_version is None:
                response = self.kube.leases.create(namespace, body, timeout)
            else:
                metadata["resourceVersion"] = resource_version
                response = self.kube.leases.replace(namespace, name, body, timeout)
            raw = json.loads(response.data)
        return _observed(raw)

    def list_at(self, namespace: str, name: str) -> tuple[list[ObservedAnnouncement], str]:
        """The object (none or one) selected by name, and the list's resourceVersion: where
        :meth:`watch` goes on from."""
        return self.kube.list_converted_at(
            self.kube.leases.list,
            f"list Lease {namespace}/{name}",
            _observed,
            namespace=namespace,
            field_selector=f"metadata.name={name}",
        )

    def watch(
        self, namespace: str, name: str, resource_version: str, timeout_seconds: int = 300
    ) -> Iterator[tuple[str, ObservedAnnouncement | Bookmark]]:
        """``(event type, announcement)`` for every change of the object after ``resource_version``
        (from :meth:`list_at`), until the server ends the watch; ``410 Gone`` is an ExpiredError."""
        yield from self.kube.watch_as(
            self.kube.leases.list,
            f"watch of Lease {namespace}/{name}",
            _observed,
            namespace=namespace,
            field_selector=f"metadata.name={name}",
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            _request_timeout=self.kube.watch_timeout(timeout_seconds),
        )


def _observed(raw: Mapping[str, Any]) -> ObservedAnnouncement:
    metadata = raw.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    return ObservedAnnouncement(
        HeadAnnouncement.from_annotations({str(k): str(v) for k, v in annotations.items()}),
        str(metadata.get("resourceVersion", "")),
    )
