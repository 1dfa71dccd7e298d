"""OwnerReferencesPermissionEnforcement: who may make an object hold up its owner's deletion.

OpenShift enables this admission plugin (kube-apiserver can, ``--enable-admission-plugins``). On a
create or update that changes an object's owner references (a pod's status aside):

* an update needs ``delete`` on the object itself ("cannot set an ownerRef on a resource you
  can't delete");
* each reference that newly sets ``blockOwnerDeletion: true`` needs ``update`` on the owner's
  ``<resource>/finalizers`` ("cannot set blockOwnerDeletion if an ownerReference refers to a
  resource you can't set finalizers on").

Both refusals are 403 Forbidden, worded as kube-apiserver words them. The embedded cluster applies
it to requests authorised by RBAC (its ServiceAccount token); its admin may do anything.
"""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.access import Access, Request, forbidden
from gitdeploy.localcluster.resources import PODS, RESOURCES, ResourceType

__all__ = ["admit_owner_references"]

_NO_REASON = ": , <nil>"  # the authorizer's reason and error, as %v, %v of an RBAC refusal


def _refs(obj: dict[str, Any] | None) -> list[Any]:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    return list(refs) if isinstance(refs, list) else []


def _blocking(ref: Any) -> bool:
    return isinstance(ref, dict) and ref.get("blockOwnerDeletion") is True


def _newly_blocking(new: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The references of ``new`` that block and did not in ``old`` (by uid)."""
    before = {str(r.get("uid")): r for r in _refs(old) if isinstance(r, dict)}
    return [r for r in _refs(new) if _blocking(r) and not _blocking(before.get(str(r.get("uid"))))]


def _owner_resource(ref: dict[str, Any]) -> ResourceType | None:
    group, _, version = str(ref.get("apiVersion") or "").rpartition("/")
    return next(
        (r for r in RESOURCES if (r.group, r.version, r.kind) == (group, version, ref.get("kind"))), None
    )


def admit_owner_references(
    access: Access | None,
    resource: ResourceType,
    subresource: str,
    new: dict[str, Any],
    old: dict[str, Any] | None,
) -> None:
    """Nothing when ``access`` (None: the admin) may write ``new`` over ``old`` (None: a create)
    as far as its owner references go; else the API server's 403."""
    if access is None or (resource is PODS and subresource == "status"):
        return
    refs = _refs(new)
    if refs == _refs(old) or (old is None and not refs):
        return
    meta = new.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or "") or None, str(meta.get("name") or "")
    request = Request("delete", resource.group, resource.plural, namespace, name)
    if old is not None and access.grant_for(request) is None:
        raise forbidden(
            access.user, request, "cannot set an ownerRef on a resource you can't delete" + _NO_REASON
        )
    for ref in _newly_blocking(new, old):
        owner = _owner_resource(ref)
        if owner is None:
            why = (
                "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for "
                f"APIVersion {ref.get('apiVersion')} Kind {ref.get('kind')}: no matches for kind "
                f'"{ref.get("kind")}" in version "{ref.get("apiVersion")}"'
            )
            raise forbidden(access.user, request, why)
        finalizers = Request(
            "update",
            owner.group,
            f"{owner.plural}/finalizers",
            namespace if owner.namespaced else None,
            str(ref.get("name") or ""),
        )
        if access.grant_for(finalizers) is None:
            why = "cannot set blockOwnerDeletion if an ownerReference refers to a resource"
            raise forbidden(access.user, request, f"{why} you can't set finalizers on{_NO_REASON}")
