"""What the API server refuses, and the writes gitdeploy makes: the same answers on both servers.

Each refusal is a row: the request, then the answer a real kube-apiserver (v1.37) gives it: HTTP
status, reason, and each cause's field and reason (``FieldValueInvalid``, ``FieldValueTooLong``...).
The messages themselves are not compared (the embedded cluster words most of them alike).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as kubernetes_client

from tests.fixtures.contract import Side, configmap, event, lease, owner, replicaset

MIB = 1024 * 1024
client: Any = kubernetes_client


def change_selector(side: Side) -> None:
    side.apps.create_namespaced_replica_set(side.namespace, replicaset("web", replicas=0))
    labels = {"app": "web", "track": "other"}
    side.apps.patch_namespaced_replica_set(
        "web",
        side.namespace,
        {"spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}}}},
    )


def patch_template(template_spec: dict[str, Any]) -> Callable[[Side], Any]:
    """A valid ReplicaSet scaled (its template as stored), then its template patched: an update
    checks the template it changes (the checks skipped for a template as stored are not)."""

    def request(side: Side) -> Any:
        side.apps.create_namespaced_replica_set(side.namespace, replicaset("web", replicas=0))
        side.apps.patch_namespaced_replica_set_scale("web", side.namespace, {"spec": {"replicas": 1}})
        body = {"spec": {"template": {"spec": template_spec}}}
        return side.apps.patch_namespaced_replica_set("web", side.namespace, body)

    return request


@dataclass(frozen=True)
class Refusal:
    request: Callable[[Side], Any]
    status: int
    reason: str
    causes: frozenset[tuple[str, str]]
    words: str
    """What the Status message says, in part (the API server's wording of the rule)."""


def refusal(
    request: Callable[[Side], Any], status: int, reason: str, words: str, *causes: tuple[str, str]
) -> Refusal:
    """``causes``: (field, cause reason) pairs."""
    return Refusal(request, status, reason, frozenset(causes), words)


def invalid(
    request: Callable[[Side], Any], field: str, words: str, cause: str = "FieldValueInvalid"
) -> Refusal:
    return refusal(request, 422, "Invalid", words, (field, cause))


def create_cm(body: dict[str, Any]) -> Callable[[Side], Any]:
    return lambda side: side.core.create_namespaced_config_map(side.namespace, body)


def create_rs(body: dict[str, Any]) -> Callable[[Side], Any]:
    return lambda side: side.apps.create_namespaced_replica_set(side.namespace, body)


REFUSALS: dict[str, Refusal] = {
    "configmap over 1 MiB of data": invalid(
        create_cm(configmap(data={"big": "x" * (3 * MIB // 2)})),
        "[]",
        "[]: Too long: may not be more than 1048576 bytes",
        "FieldValueTooLong",
    ),
    "configmap of 3 MiB": refusal(
        create_cm(configmap(data={"big": "x" * (3 * MIB)})),
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    ),
    "300 KiB of annotations": invalid(
        create_cm(configmap(annotations={"note": "x" * (300 * 1024)})),
        "metadata.annotations",
        "Too long: may not be more than 262144 bytes",
        "FieldValueTooLong",
    ),
    "annotation key not a qualified name": invalid(
        create_cm(configmap(annotations={"not a/qualified/name": "x"})),
        "metadata.annotations",
        'Invalid value: "not a/qualified/name": a valid label key must consist of',
    ),
    "owner reference without a name": invalid(
        create_cm(configmap(ownerReferences=[owner(name="")])),
        "metadata.ownerReferences[0].name",
        "Required value: must not be empty",
        "FieldValueRequired",
    ),
    "owner reference without a uid": invalid(
        create_cm(configmap(ownerReferences=[owner(uid="")])),
        "metadata.ownerReferences[0].uid",
        "Required value: must not be empty",
        "FieldValueRequired",
    ),
    "two controlling owner references": invalid(
        create_cm(
            configmap(
                ownerReferences=[
                    owner("a", "0b6f1a3e-1111-4e8e-9a52-2f7c0c0b3d0a", controller=True),
                    owner("b", "0b6f1a3e-1111-4e8e-9a52-2f7c0c0b3d0b", controller=True),
                ]
            )
        ),
        "metadata.ownerReferences",
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/a and ConfigMap/b",
    ),
    "replicaset template with restartPolicy Never": invalid(
        create_rs(replicaset(restartPolicy="Never")),
        "spec.template.spec.restartPolicy",
        'Unsupported value: "Never": supported values: "Always"',
        "FieldValueNotSupported",
    ),
    "replicaset template given restartPolicy Never by a patch": invalid(
        patch_template({"restartPolicy": "Never"}),
        "spec.template.spec.restartPolicy",
        'Unsupported value: "Never": supported values: "Always"',
        "FieldValueNotSupported",
    ),
    "replicaset template with activeDeadlineSeconds": invalid(
        create_rs(replicaset(activeDeadlineSeconds=30)),
        "spec.template.spec.activeDeadlineSeconds",
        "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
        "FieldValueForbidden",
    ),
    "replicaset container named Bad_Name": invalid(
        create_rs(replicaset(containers=[{"name": "Bad_Name", "image": "nginx:1"}])),
        "spec.template.spec.containers[0].name",
        'Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of',
    ),
    "replicaset selector changed by a patch": invalid(
        change_selector,
        "spec.selector",
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","track":"other"}}: field is immutable',
    ),
    "event about an object in another namespace": invalid(
        lambda side: side.core.create_namespaced_event(side.namespace, event(side.namespace, "elsewhere")),
        "involvedObject.namespace",
        'Invalid value: "elsewhere": does not match event.namespace',
    ),
    "lease of 0 seconds": invalid(
        lambda side: side.coordination.create_namespaced_lease(side.namespace, lease(0)),
        "spec.leaseDurationSeconds",
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
    ),
}


def answer(problem: Any) -> tuple[int, str, frozenset[tuple[str, str]], str]:
    """Status code, reason, the causes' (field, reason) pairs and the message of an ApiException."""
    try:
        body = json.loads(problem.body or "")
    except (TypeError, ValueError):
        return problem.status, str(problem.reason), frozenset(), str(problem.body)
    causes = (body.get("details") or {}).get("causes") or []
    fields = frozenset((str(c.get("field")), str(c.get("reason"))) for c in causes)
    return problem.status, str(body.get("reason")), fields, str(body.get("message"))


EMBEDDED_LENIENT: set[str] = set()
"""Cases the embedded cluster does not answer as the real API server yet."""


@pytest.mark.parametrize("case", list(REFUSALS), ids=list(REFUSALS))
def test_the_api_server_refuses(side: Side, case: str, request: pytest.FixtureRequest) -> None:
    expected = REFUSALS[case]
    if side.name == "embedded" and case in EMBEDDED_LENIENT:
        request.applymarker(pytest.mark.xfail(strict=True, reason="the embedded cluster is lenient"))
    with pytest.raises(client.ApiException) as refused:
        expected.request(side)
    status, reason, causes, message = answer(refused.value)
    assert (status, reason, causes) == (expected.status, expected.reason, expected.causes), message
    assert expected.words in message
