"""Discovery documents (``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>/<version>``)."""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.resources import RESOURCES, ResourceType, group_versions

__all__ = ["api_group", "api_group_list", "api_resource_list", "api_versions", "version_info"]

SERVER_VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.0+gitdeploy.local"}


def version_info() -> dict[str, Any]:
    return {
        **SERVER_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-01-01T00:00:00Z",
        "goVersion": "go1.22.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


_REVIEWS_GROUP, _REVIEWS_VERSION = "authorization.k8s.io", "v1"
_REVIEWS = {
    "name": "selfsubjectaccessreviews",
    "singularName": "selfsubjectaccessreview",
    "namespaced": False,
    "kind": "SelfSubjectAccessReview",
    "verbs": ["create"],
}
"""Served by :mod:`gitdeploy.localcluster.access`, not stored: what ``kubectl auth can-i`` creates."""


def _groups() -> list[str]:
    seen: list[str] = []
    for resource in RESOURCES:
        if resource.group and resource.group not in seen:
            seen.append(resource.group)
    return [*seen, _REVIEWS_GROUP]


def api_group(group: str) -> dict[str, Any] | None:
    if group not in _groups():
        return None
    version = next((r.version for r in RESOURCES if r.group == group), _REVIEWS_VERSION)
    entry = {"groupVersion": f"{group}/{version}", "version": version}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [entry],
        "preferredVersion": entry,
    }


def api_group_list() -> dict[str, Any]:
    groups = []
    for group in _groups():
        document = api_group(group)
        assert document is not None
        groups.append({k: v for k, v in document.items() if k not in ("kind", "apiVersion")})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _resource_entries(resource: ResourceType) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [
        {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": resource.verbs,
            **({"shortNames": list(resource.short_names)} if resource.short_names else {}),
            **({"categories": list(resource.categories)} if resource.categories else {}),
        }
    ]
    for sub in resource.subresources:
        entry: dict[str, Any] = {
            "name": f"{resource.plural}/{sub}",
            "singularName": "",
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": ["get", "patch", "update"],
        }
        if sub == "scale":
            entry.update(kind="Scale", group="autoscaling", version="v1")
        elif sub == "log":
            entry.update(verbs=["get"])
        entries.append(entry)
    return entries


def api_resource_list(group_version: str) -> dict[str, Any] | None:
    resources = group_versions().get(group_version)
    if group_version == f"{_REVIEWS_GROUP}/{_REVIEWS_VERSION}":
        entries = [_REVIEWS]
    elif resources is None:
        return None
    else:
        entries = [entry for resource in resources for entry in _resource_entries(resource)]
    kind = {"kind": "APIResourceList", "apiVersion": "v1"}
    return {**kind, "groupVersion": group_version, "resources": entries}
