"""The API server's writes of resources: create, update, patch, delete and deletecollection, with
strict field validation, the owner references a ServiceAccount may set, dry runs and the write gate."""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Any

from gitdeploy.localcluster.fieldvalidation import refuse_unknown_fields
from gitdeploy.localcluster.httpwire import HttpWire
from gitdeploy.localcluster.ownerrefs import admit_owner_references
from gitdeploy.localcluster.protowire import PROTOBUF, object_from_protobuf
from gitdeploy.localcluster.routing import Route
from gitdeploy.localcluster.store import dumps
from gitdeploy.localcluster.watch import Query

if TYPE_CHECKING:
    from gitdeploy.localcluster.server import LocalCluster

__all__ = ["ApiWrites"]


class ApiWrites(HttpWire):
    """The writes, answered on the wire of :class:`HttpWire`."""

    def _write_through_gate(
        self, cluster: LocalCluster, verb: str, route: Route, query: dict[str, str]
    ) -> None:
        """Apply a write (or only check it: ``dryRun``) once the write gate lets it pass, and answer."""
        namespace = route.namespace or ""
        label = f"{verb} {route.resource_label} {namespace}/{route.name or ''}"
        body = self._read_write_body(route)  # before the gate: a dropped write leaves no bytes unread
        options = body if verb.startswith("delete") and isinstance(body, dict) else {}
        dry = query.get("dryRun") == "All" or "All" in (options.get("dryRun") or ())
        dry_run = cluster.store.dry_run() if dry else contextlib.nullcontext()
        with cluster.write_gate.passage(label, route.namespace), dry_run:
            code, answer = self._write(cluster, verb, route, query, body)
        self._send_json(code, answer)

    def _read_write_body(self, route: Route) -> Any:
        """A write's body: JSON, or protobuf for the few kinds kubectl's typed client sends so."""
        if self.fields.get("content-type", "").startswith(PROTOBUF):
            return object_from_protobuf(route.resource.kind, self._read_raw())
        return self._read_body()

    def _write(
        self, cluster: LocalCluster, verb: str, route: Route, query: dict[str, str], body: Any
    ) -> tuple[int, Any]:
        """Apply a create, update, patch, delete or deletecollection: the status code and body."""
        registry, namespace = cluster.registry, route.namespace or ""
        strict = query.get("fieldValidation") == "Strict" and not route.subresource
        if strict and verb in ("create", "update", "patch"):
            refuse_unknown_fields(route.resource, verb, self.fields.get("content-type", ""), body)
        access, subresource = self._access, route.subresource or ""
        admit = (
            None
            if access is None
            else functools.partial(admit_owner_references, access, route.resource, subresource)
        )
        if verb == "create":
            return 201, registry.create(route.resource, namespace, body, admit)
        if verb == "update":
            return 200, registry.replace(
                route.resource, namespace, str(route.name), body, route.subresource, admit
            )
        if verb == "patch":
            content_type = self.fields.get("content-type", "")
            return 200, registry.patch(
                route.resource, namespace, str(route.name), content_type, body, route.subresource, admit
            )
        if verb == "delete":
            options = dict(body) if isinstance(body, dict) else {}
            if str(query.get("gracePeriodSeconds", "")).isdigit():
                options["gracePeriodSeconds"] = int(str(query["gracePeriodSeconds"]))
            deleted = registry.delete(
                route.resource,
                namespace,
                str(route.name),
                options,
                query.get("propagationPolicy"),
            )
            return 200, deleted
        selection = Query.parse(query.get("labelSelector"), query.get("fieldSelector"))
        removed = registry.delete_collection(
            route.resource,
            route.namespace,
            lambda obj: selection.matches_row(dumps(obj["metadata"].get("labels") or {}), dumps(obj)),
        )
        items = {"kind": f"{route.resource.kind}List", "apiVersion": route.resource.api_version}
        return 200, {**items, "metadata": {}, "items": removed}
