"""gitdeploy's ServiceAccount under deploy/'s RBAC: the same yes and no, in the same words, on both servers.

The embedded side reads its rules from deploy/ (tests/fixtures/rbac.py), the real side applies
deploy/rbac.yaml with kubectl; each refusal's whole Status (code, reason, message, details) is
compared with what kube-apiserver answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as kubernetes_client

from tests.fixtures.contract import Side, configmap, replicaset

client: Any = kubernetes_client
USER = "system:serviceaccount:gitdeploy:gitdeploy"


@pytest.fixture
def gitdeploy(side: Side) -> Iterator[Any]:
    api = side.gitdeploy_api()
    try:
        # RBAC of a new RoleBinding reaches a real API server's authorizer within moments
        side.wait_for(
            "the Role to apply",
            lambda: _allowed(lambda: client.CoreV1Api(api).list_namespaced_pod(side.namespace)),
        )
        yield api
    finally:
        api.close()


def _allowed(request: Callable[[], Any]) -> bool:
    try:
        request()
    except client.ApiException as refused:
        if refused.status == 403:
            return False
        raise
    return True


def _refusal(request: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(client.ApiException) as refused:
        request()
    status: dict[str, Any] = json.loads(refused.value.body)
    assert refused.value.status == status["code"] == 403
    return {key: status.get(key) for key in ("reason", "message", "details")}


def _forbidden(verb: str, resource: str, group: str, scope: str, name: str = "") -> dict[str, Any]:
    plural = resource.partition("/")[0]
    qualified = f"{plural}.{group}" if group else plural
    subject = f'{qualified} "{name}"' if name else qualified
    details = {key: value for key, value in {"name": name, "group": group, "kind": plural}.items() if value}
    return {
        "reason": "Forbidden",
        "message": f'{subject} is forbidden: User "{USER}" cannot {verb} resource "{resource}" '
        f'in API group "{group}" {scope}',
        "details": details,
    }


def test_the_role_allows_gitdeploys_writes(side: Side, gitdeploy: Any) -> None:
    apps, core = client.AppsV1Api(gitdeploy), client.CoreV1Api(gitdeploy)
    apps.create_namespaced_replica_set(side.namespace, replicaset("web", replicas=0))
    apps.patch_namespaced_replica_set("web", side.namespace, {"spec": {"replicas": 1}})
    core.create_namespaced_config_map(side.namespace, configmap("gitdeploy.web"))
    core.replace_namespaced_config_map(
        "gitdeploy.web", side.namespace, configmap("gitdeploy.web", {"k": "2"})
    )
    apps.delete_namespaced_replica_set("web", side.namespace)
    assert side.core.read_namespaced_config_map("gitdeploy.web", side.namespace).data == {"k": "2"}


def test_what_the_role_does_not_grant_is_forbidden_in_the_api_servers_words(
    side: Side, gitdeploy: Any
) -> None:
    apps, core, ns = client.AppsV1Api(gitdeploy), client.CoreV1Api(gitdeploy), side.namespace
    rbac = client.RbacAuthorizationV1Api(gitdeploy)
    here = f'in the namespace "{ns}"'
    side.apps.create_namespaced_replica_set(ns, replicaset("web", replicas=0))
    cases: list[tuple[Callable[[], Any], dict[str, Any]]] = [
        # a verb the Role does not give: deleting its own namespace, patching a pod
        (lambda: core.delete_namespace(ns), _forbidden("delete", "namespaces", "", here, ns)),
        (lambda: core.patch_namespaced_pod("p", ns, {}), _forbidden("patch", "pods", "", here, "p")),
        # the cluster scope: a ClusterRole, every namespace's ReplicaSets
        (
            lambda: rbac.create_cluster_role({"metadata": {"name": "gitdeploy-more"}, "rules": []}),
            _forbidden("create", "clusterroles", "rbac.authorization.k8s.io", "at the cluster scope"),
        ),
        (
            lambda: apps.list_replica_set_for_all_namespaces(),
            _forbidden("list", "replicasets", "apps", "at the cluster scope"),
        ),
        # a resource, and a subresource, the Role does not name, in its own namespace
        (lambda: core.list_namespaced_secret(ns), _forbidden("list", "secrets", "", here)),
        (
            lambda: apps.read_namespaced_replica_set_scale("web", ns),
            _forbidden("get", "replicasets/scale", "apps", here, "web"),
        ),
        # another namespace
        (
            lambda: core.list_namespaced_pod("default"),
            _forbidden("list", "pods", "", 'in the namespace "default"'),
        ),
    ]
    for request, expected in cases:
        assert _refusal(request) == expected
    # And nothing refused was done
    assert side.core.read_namespace(ns).status.phase == "Active"


@pytest.mark.parametrize(
    ("attributes", "allowed"),
    [
        ({"verb": "patch", "group": "apps", "resource": "replicasets"}, True),
        ({"verb": "get", "resource": "pods", "subresource": "log"}, True),
        ({"verb": "update", "group": "apps", "resource": "replicasets", "subresource": "finalizers"}, True),
        ({"verb": "update", "group": "apps", "resource": "replicasets", "subresource": "scale"}, False),
        ({"verb": "delete", "resource": "namespaces"}, False),
        ({"verb": "get", "resource": "secrets"}, False),
    ],
    ids=["patch-rs", "pods-log", "rs-finalizers", "rs-scale", "delete-namespace", "secrets"],
)
def test_can_i_answers_as_the_role(
    side: Side, gitdeploy: Any, attributes: dict[str, str], allowed: bool
) -> None:
    review = {"spec": {"resourceAttributes": {"namespace": side.namespace, **attributes}}}
    answer = client.AuthorizationV1Api(gitdeploy).create_self_subject_access_review(review)
    assert answer.status.allowed is allowed
    if allowed:
        assert answer.status.reason == (
            f'RBAC: allowed by RoleBinding "gitdeploy/{side.namespace}" of Role "gitdeploy" '
            'to ServiceAccount "gitdeploy/gitdeploy"'
        )


def _owned(name: str, owner: Any, kind: str, *, blocking: bool) -> dict[str, Any]:
    ref = {
        "apiVersion": owner.api_version,
        "kind": kind,
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
    }
    return configmap(name, ownerReferences=[{**ref, "blockOwnerDeletion": blocking}])


def test_block_owner_deletion_needs_the_owners_finalizers(side: Side, gitdeploy: Any) -> None:
    """OwnerReferencesPermissionEnforcement: an owner reference with ``blockOwnerDeletion`` set
    needs ``update`` on the owner's ``finalizers``: the Role grants it for ReplicaSets (hook pods
    are owned so), not for ConfigMaps."""
    core, ns = client.CoreV1Api(gitdeploy), side.namespace
    rs = side.apps.create_namespaced_replica_set(ns, replicaset("web", replicas=0))
    record = side.core.create_namespaced_config_map(ns, configmap("record"))
    # Given the Role: a blocking reference to a ReplicaSet, a plain one to a ConfigMap, are allowed
    core.create_namespaced_config_map(ns, _owned("of-rs", rs, "ReplicaSet", blocking=True))
    plain = core.create_namespaced_config_map(ns, _owned("of-cm", record, "ConfigMap", blocking=False))
    # When a blocking reference to a ConfigMap is created, or set on an update
    refused = (
        "cannot set blockOwnerDeletion if an ownerReference refers to a resource"
        " you can't set finalizers on: , <nil>"
    )
    expected = {"reason": "Forbidden"}
    blocking = _owned("blocking", record, "ConfigMap", blocking=True)
    assert _refusal(lambda: core.create_namespaced_config_map(ns, blocking)) == {
        **expected,
        "message": f'configmaps "blocking" is forbidden: {refused}',
        "details": {"name": "blocking", "kind": "configmaps"},
    }
    update = _owned("of-cm", record, "ConfigMap", blocking=True)
    update["metadata"]["resourceVersion"] = plain.metadata.resource_version
    assert _refusal(lambda: core.replace_namespaced_config_map("of-cm", ns, update)) == {
        **expected,
        "message": f'configmaps "of-cm" is forbidden: {refused}',
        "details": {"name": "of-cm", "kind": "configmaps"},
    }
    # Then nothing refused was written; the admin may set it
    assert [
        r.block_owner_deletion
        for r in side.core.read_namespaced_config_map("of-cm", ns).metadata.owner_references
    ] == [False]
    side.core.create_namespaced_config_map(ns, blocking)
