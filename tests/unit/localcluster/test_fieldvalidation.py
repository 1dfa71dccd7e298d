"""Strict field validation against the served OpenAPI schemas, and the API server's wording."""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.fieldvalidation import refuse_unknown_fields, unknown_fields
from gitdeploy.localcluster.resources import CONFIGMAPS, REPLICASETS

STRATEGIC = "application/strategic-merge-patch+json"


def _rs(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "labels": {"any.key/x": "v"}, "annotations": {"a": "b"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "spec": {"containers": [{"name": "web", "image": "x", "ports": [{"containerPort": 80}]}]}
            },
            **spec,
        },
    }


def test_known_fields_maps_and_patch_directives_pass() -> None:
    assert unknown_fields("apps", "v1", "ReplicaSet", _rs()) == []
    patch = {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "web"}]}}}}
    assert unknown_fields("apps", "v1", "ReplicaSet", patch) == []
    assert unknown_fields("", "v1", "ConfigMap", {"data": {"any-key": "v"}, "immutable": True}) == []


def test_unknown_fields_are_named_by_path() -> None:
    body = _rs(replicass=3)
    body["spec"]["template"]["spec"]["containers"][0]["imagee"] = "y"
    assert unknown_fields("apps", "v1", "ReplicaSet", body) == [
        "spec.template.spec.containers[0].imagee",
        "spec.replicass",
    ]


def test_a_create_is_a_bad_request_and_a_patch_invalid() -> None:
    with pytest.raises(ApiError) as created:
        refuse_unknown_fields(
            CONFIGMAPS, "create", "application/json", {"metadata": {"name": "c"}, "dta": {}}
        )
    assert created.value.code == 400
    assert created.value.message == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "dta"'
    )
    with pytest.raises(ApiError) as patched:
        refuse_unknown_fields(
            REPLICASETS, "patch", STRATEGIC, {"spec": {"replicas": 1000000, "x": [True, None]}}
        )
    assert patched.value.code == 422
    cause = patched.value.details["causes"][0]
    assert cause["field"] == "patch"
    assert cause["message"] == (
        'Invalid value: "map[spec:map[replicas:1e+06 x:[true <nil>]]]": '
        'strict decoding error: unknown field "spec.x"'
    )
    refuse_unknown_fields(REPLICASETS, "patch", "application/json-patch+json", [{"op": "add", "path": "/x"}])
