"""Who may do what: RBAC for one ServiceAccount, the one decision behind a 403 and ``kubectl auth can-i``.

The cluster's own token is its admin: everything is allowed. Its ServiceAccount token is
authorised by :class:`Access`: the rules of the Roles and ClusterRoles that RoleBindings and
ClusterRoleBindings grant to that account, built by :meth:`Access.from_objects` from the RBAC
objects themselves (tests hand it deploy/'s YAML, parsed, per managed namespace, so the embedded
cluster enforces exactly what ``deploy/`` ships). A rule matches by verb, API group, resource
(``replicasets``, or a subresource such as ``pods/log`` or ``replicasets/finalizers``) and, when it
lists them, resource names; ``*`` matches anything, as in Kubernetes. A RoleBinding grants in its
own namespace only. A refusal is the API server's 403, word for word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitdeploy.localcluster.apierrors import ApiError

__all__ = [
    "ACCESS_REVIEW_PATH",
    "Access",
    "PolicyRule",
    "Request",
    "authorise",
    "request_info",
    "review_access",
]

ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
_DISCOVERY_PATHS = ("/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz")
"""What every authenticated user may GET (the ``system:discovery`` and ``system:public-info-viewer``
ClusterRoles)."""


@dataclass(frozen=True)
class Request:
    """What is asked: ``verb`` on ``resource`` (``pods/log`` for a subresource) of ``group``, in
    ``namespace`` (None at the cluster scope), of the object ``name`` when the path names one."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    name: str | None = None


_WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_info(method: str, path: str, watch: bool) -> Request | None:
    """What a resource request asks, read from its path as kube-apiserver does before it knows
    whether the resource is served (so an unserved one is 403 before 404); None for other paths.
    A namespace's own path is in that namespace: ``/api/v1/namespaces/shop`` is in "shop"."""
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 3 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = rest[1] if rest[0] == "namespaces" and len(rest) > 1 else None
    if namespace is not None and len(rest) > 2:
        rest = rest[2:]
    name = rest[1] if len(rest) > 1 else None
    resource = "/".join(rest[0:3:2])
    if method == "GET":
        verb = "get" if name else "watch" if watch else "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _WRITE_VERBS.get(method, method.lower())
    return Request(verb, group, resource, namespace, name)


@dataclass(frozen=True)
class PolicyRule:
    """One rule of a Role or ClusterRole."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, rule: Mapping[str, Any]) -> PolicyRule:
        def strings(key: str) -> frozenset[str]:
            return frozenset(str(v) for v in rule.get(key) or ())

        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"))

    def allows(self, request: Request) -> bool:
        def has(values: frozenset[str], value: str) -> bool:
            return "*" in values or value in values

        main, _, sub = request.resource.partition("/")
        resource_ok = has(self.resources, request.resource) or (bool(sub) and f"{main}/*" in self.resources)
        names_ok = not self.resource_names or request.name in self.resource_names
        return (
            has(self.verbs, request.verb) and has(self.api_groups, request.group) and resource_ok and names_ok
        )


@dataclass(frozen=True)
class Grant:
    """One binding of the account: ``role`` (``Role "gitdeploy"``) by ``binding`` (``RoleBinding
    "gitdeploy/shop"``), in ``namespace`` only, or everywhere when None (a ClusterRoleBinding)."""

    binding: str
    role: str
    namespace: str | None
    rules: tuple[PolicyRule, ...]

    def allows(self, request: Request) -> bool:
        in_scope = self.namespace is None or request.namespace == self.namespace
        return in_scope and any(rule.allows(request) for rule in self.rules)


@dataclass(frozen=True)
class Access:
    """The RBAC of ServiceAccount ``namespace/name``: what its bindings grant it."""

    namespace: str
    name: str
    grants: tuple[Grant, ...]

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]], namespace: str, name: str) -> Access:
        """The account's access from RBAC objects as ``kubectl apply`` would send them (Role,
        ClusterRole, RoleBinding, ClusterRoleBinding; anything else is ignored). A binding of a
        role that is not among them grants nothing, as on a real cluster."""
        listed = [o for o in objects if isinstance(o, Mapping)]
        roles = {
            (str(o.get("kind")), _meta(o, "namespace"), _meta(o, "name")): o
            for o in listed
            if o.get("kind") in ("Role", "ClusterRole")
        }
        grants: list[Grant] = []
        for binding in listed:
            kind = binding.get("kind")
            if kind not in ("RoleBinding", "ClusterRoleBinding") or not _binds(binding, namespace, name):
                continue
            scope = _meta(binding, "namespace") if kind == "RoleBinding" else None
            ref = binding.get("roleRef") or {}
            role_kind, role_name = str(ref.get("kind", "")), str(ref.get("name", ""))
            role = roles.get((role_kind, scope if role_kind == "Role" else None, role_name))
            if role is None:
                continue
            binding_name = _meta(binding, "name") or ""
            grants.append(
                Grant(
                    f'{kind} "{binding_name}/{scope}"' if scope else f'{kind} "{binding_name}"',
                    f'{role_kind} "{role_name}"',
                    scope,
                    tuple(PolicyRule.from_json(r) for r in role.get("rules") or () if isinstance(r, Mapping)),
                )
            )
        return cls(namespace, name, tuple(grants))

    def grant_for(self, request: Request) -> Grant | None:
        return next((grant for grant in self.grants if grant.allows(request)), None)


def _meta(obj: Mapping[str, Any], key: str) -> str | None:
    value = (obj.get("metadata") or {}).get(key)
    return str(value) if value is not None else None


def _binds(binding: Mapping[str, Any], namespace: str, name: str) -> bool:
    return any(
        isinstance(s, Mapping)
        and s.get("kind") == "ServiceAccount"
        and s.get("name") == name
        and s.get("namespace", _meta(binding, "namespace")) == namespace
        for s in binding.get("subjects") or ()
    )


def authorise(access: Access | None, request: Request) -> None:
    """Nothing when ``access`` (None: the admin) allows ``request``, else the API server's 403."""
    if access is None or access.grant_for(request) is not None:
        return
    raise forbidden(access.user, request)


def forbidden(user: str, request: Request, why: str = "") -> ApiError:
    """A 403 as kube-apiserver words it: ``replicasets.apps "web" is forbidden: User "..." cannot
    delete resource "replicasets" in API group "apps" in the namespace "shop"``."""
    plural = request.resource.partition("/")[0]
    qualified = f"{plural}.{request.group}" if request.group else plural
    subject = f'{qualified} "{request.name}"' if request.name else qualified
    scope = f'in the namespace "{request.namespace}"' if request.namespace else "at the cluster scope"
    reason = why or (
        f'User "{user}" cannot {request.verb} resource "{request.resource}" '
        f'in API group "{request.group}" {scope}'
    )
    details = {"name": request.name, "group": request.group, "kind": plural}
    details = {key: value for key, value in details.items() if value}  # as the API omits empty ones
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {reason}", details=details)


def review_access(access: Access | None, body: Any) -> dict[str, Any]:
    """The answer to a ``SelfSubjectAccessReview`` (what ``kubectl auth can-i`` creates)."""
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise ApiError.bad_request("a SelfSubjectAccessReview needs a spec")
    spec = body["spec"]
    attributes, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    status: dict[str, Any]
    if isinstance(attributes, dict):
        status = _review_resource(access, attributes)
    elif isinstance(non_resource, dict):
        path = str(non_resource.get("path") or "")
        discovery = non_resource.get("verb") == "get" and path.startswith(_DISCOVERY_PATHS)
        status = {"allowed": access is None or discovery}
    else:
        raise ApiError.bad_request(
            "a SelfSubjectAccessReview needs resourceAttributes or nonResourceAttributes"
        )
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def _review_resource(access: Access | None, attributes: dict[str, Any]) -> dict[str, Any]:
    if access is None:
        return {"allowed": True, "reason": "the embedded cluster's admin may do anything"}
    group, plural = str(attributes.get("group") or ""), str(attributes.get("resource") or "")
    subresource = str(attributes.get("subresource") or "")
    request = Request(
        str(attributes.get("verb") or ""),
        group,
        f"{plural}/{subresource}" if subresource else plural,
        str(attributes.get("namespace") or "") or None,
        str(attributes.get("name") or "") or None,
    )
    grant = access.grant_for(request)
    if grant is None:
        return {"allowed": False}
    account = f'ServiceAccount "{access.namespace}/{access.name}"'
    return {"allowed": True, "reason": f"RBAC: allowed by {grant.binding} of {grant.role} to {account}"}
