"""The Kubernetes verb of an API request, as the API-request metric labels it (table-driven)."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from gitdeploy import quantities
from gitdeploy.cluster import apirequests
from gitdeploy.cluster.apirequests import kube_verb

HOST = "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/apis/apps/v1/namespaces/shop/replicasets?labelSelector=x&limit=5000", "list"),
        ("GET", "/apis/apps/v1/replicasets", "list"),
        ("GET", "/api/v1/namespaces", "list"),
        ("GET", "/api/v1/namespaces/shop", "get"),
        ("GET", "/api/v1/namespaces/shop/configmaps/gitdeploy.web", "get"),
        ("GET", "/api/v1/namespaces/shop/pods/web-x-1/log?tailLines=40", "get"),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/gitdeploy/leases/gitdeploy", "get"),
        ("GET", "/api/v1/namespaces/shop/pods?watch=true&resourceVersion=10", "watch"),
        ("GET", "/api/v1/pods?watch=True", "watch"),
        ("POST", "/apis/apps/v1/namespaces/shop/replicasets", "create"),
        ("post", "/api/v1/namespaces", "create"),
        ("PUT", "/api/v1/namespaces/shop/configmaps/gitdeploy.web", "update"),
        ("PATCH", "/apis/apps/v1/namespaces/shop/replicasets/web-x", "patch"),
        ("DELETE", "/apis/apps/v1/namespaces/shop/replicasets/web-x", "delete"),
        ("DELETE", "/api/v1/namespaces/shop/pods", "deletecollection"),
        ("GET", "/version", "get"),
        ("HEAD", "/api/v1/namespaces/shop/pods/x", "head"),
    ],
)
def test_kube_verb(method: str, path: str, verb: str) -> None:
    assert kube_verb(method, HOST + path) == verb


@pytest.mark.parametrize("module", [apirequests, quantities], ids=lambda m: m.__name__)
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
