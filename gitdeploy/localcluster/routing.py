"""Where an API request goes: the resource, namespace, name and subresource of its path, and its verb."""

from __future__ import annotations

from dataclasses import dataclass

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.resources import ResourceType, find_resource

__all__ = ["Route", "parse_route", "request_verb"]


@dataclass(frozen=True)
class Route:
    """A parsed API path."""

    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str

    @property
    def resource_label(self) -> str:
        """``replicasets`` or ``replicasets/scale``, as counted in the request stats."""
        return f"{self.resource.plural}/{self.subresource}" if self.subresource else self.resource.plural


def parse_route(path: str) -> Route | None:
    """Parse ``/api/v1/...`` or ``/apis/<group>/<version>/...`` into a :class:`Route`; None if not one."""
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        inner = find_resource(group, version, rest[2])
        if inner is not None and inner.namespaced:
            namespace, rest = rest[1], rest[2:]
    resource = find_resource(group, version, rest[0])
    if resource is None or len(rest) > 3:
        return None
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in resource.subresources:
        return None
    if resource.namespaced and name is not None and namespace is None:
        return None
    return Route(resource, namespace, name, subresource)


def request_verb(method: str, route: Route, query: dict[str, str]) -> str:
    """The API verb of ``method`` on ``route`` (``get``, ``list``, ``watch``, ``create``, ``update``,
    ``patch``, ``delete``, ``deletecollection``), as RBAC and the request stats name it; 405 if none."""
    if method == "GET":
        if route.name is None:
            return "watch" if query.get("watch") in ("1", "true", "True") else "list"
        return "get"
    if route.subresource == "log":
        raise ApiError(405, "MethodNotAllowed", "the log subresource is read-only")
    if method == "POST" and route.name is None:
        return "create"
    if method == "PUT" and route.name is not None:
        return "update"
    if method == "PATCH" and route.name is not None:
        return "patch"
    if method == "DELETE":
        return "delete" if route.name is not None else "deletecollection"
    raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on this path")
