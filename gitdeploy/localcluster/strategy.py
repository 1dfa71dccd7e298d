"""What a create or an update makes of the object it stores, as the API server's strategies do
(``PrepareForCreate``, ``PrepareForUpdate`` and validation): defaults applied, the metadata the server
owns kept, the generation bumped on spec changes, and what may not be stored refused."""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.defaults import with_defaults
from gitdeploy.localcluster.resources import NAMESPACES, ResourceType
from gitdeploy.localcluster.store import Txn
from gitdeploy.localcluster.validation import validate, validate_update

__all__ = ["prepare_for_create", "prepare_for_update"]


def prepare_for_create(txn: Txn, resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its defaults, as a create may store it: else 422, 400, 404 or 409."""
    obj = with_defaults(resource, obj)
    meta = obj["metadata"]
    name = str(meta.get("name") or "")
    if not name:
        raise ApiError.invalid(
            resource.kind,
            resource.group,
            "",
            [("metadata.name", "Required value: name or generateName is required")],
        )
    if meta.get("resourceVersion"):
        raise ApiError.bad_request("resourceVersion should not be set on objects to be created")
    validate(resource, obj)
    namespace = str(meta.get("namespace") or "")
    if resource.namespaced and not txn.exists(NAMESPACES.key, "", namespace):
        raise ApiError.not_found("namespaces", namespace)
    if txn.exists(resource.key, namespace, name):
        raise ApiError.already_exists(resource.qualified, name)
    return obj


def prepare_for_update(
    resource: ResourceType, current: dict[str, Any], new: dict[str, Any]
) -> dict[str, Any]:
    """``new`` (its metadata a copy) as an update of ``current`` stores it: kind and apiVersion of
    the resource, the current status, the metadata the server owns kept, defaults applied, the
    generation bumped when the spec changed; refused if it changes what may not change."""
    old_meta, new_meta = current["metadata"], new["metadata"]
    new["kind"] = resource.kind
    new["apiVersion"] = resource.api_version
    if resource.has_status:
        if "status" in current:
            new["status"] = current["status"]
        else:
            new.pop("status", None)
    for immutable in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"):
        if immutable in old_meta:
            new_meta[immutable] = old_meta[immutable]
        else:
            new_meta.pop(immutable, None)
    new_meta.pop("managedFields", None)
    new = with_defaults(resource, new)
    if "generation" in old_meta and new.get("spec") != current.get("spec"):
        new["metadata"]["generation"] = int(old_meta["generation"]) + 1
    validate_update(resource, current, new)
    return new
