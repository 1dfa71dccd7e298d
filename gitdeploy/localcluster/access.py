"""Who may do what: the one decision behind both a request's 403 and ``kubectl auth can-i``.

Without ``role_namespaces`` the bearer token is the cluster's admin: everything is allowed. With
them, every request is gitdeploy's ServiceAccount with the Role of ``deploy/rbac.yaml`` bound in
those namespaces only: anything at the cluster scope or in another namespace is forbidden (the
Role's verbs are not checked). A SelfSubjectAccessReview answers by the same rule.
"""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.resources import RESOURCES

__all__ = ["ACCESS_REVIEW_PATH", "ROLE_SUBJECT", "authorise", "review_access"]

ROLE_SUBJECT = "system:serviceaccount:gitdeploy:gitdeploy"
ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


def allowed(role_namespaces: frozenset[str] | None, namespaced: bool, namespace: str | None) -> bool:
    """Whether a request on a resource (``namespaced`` or not) in ``namespace`` is allowed."""
    return role_namespaces is None or (namespaced and namespace in role_namespaces)


def authorise(
    role_namespaces: frozenset[str] | None,
    verb: str,
    resource_label: str,
    group: str,
    namespaced: bool,
    namespace: str | None,
) -> None:
    """403 Forbidden, in the API server's words, for a request outside the namespaces a Role binds."""
    if allowed(role_namespaces, namespaced, namespace):
        return
    scope = "at the cluster scope" if namespace is None else f'in the namespace "{namespace}"'
    raise ApiError(
        403,
        "Forbidden",
        f'{resource_label} is forbidden: User "{ROLE_SUBJECT}" cannot {verb} resource "{resource_label}" '
        f'in API group "{group}" {scope}',
        details={"kind": resource_label.split("/")[0]},
    )


def review_access(role_namespaces: frozenset[str] | None, body: Any) -> dict[str, Any]:
    """The answer to a ``SelfSubjectAccessReview`` (what ``kubectl auth can-i`` creates)."""
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise ApiError.bad_request("a SelfSubjectAccessReview needs a spec")
    spec = body["spec"]
    attributes = spec.get("resourceAttributes")
    if isinstance(attributes, dict):
        group, plural = str(attributes.get("group") or ""), str(attributes.get("resource") or "")
        served = next((r for r in RESOURCES if r.group == group and r.plural == plural), None)
        namespace = str(attributes.get("namespace") or "") or None
        if role_namespaces is None:
            verdict = True
        else:
            verdict = served is not None and allowed(role_namespaces, served.namespaced, namespace)
    elif isinstance(spec.get("nonResourceAttributes"), dict):
        verdict = role_namespaces is None
    else:
        raise ApiError.bad_request(
            "a SelfSubjectAccessReview needs resourceAttributes or nonResourceAttributes"
        )
    status: dict[str, Any] = {"allowed": verdict}
    if verdict and role_namespaces is None:
        status["reason"] = "the embedded cluster's admin may do anything"
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }
