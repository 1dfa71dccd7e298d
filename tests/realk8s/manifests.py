"""App manifests for the real control plane: every pod template complies with Pod Security
"restricted" (non-root, no privilege escalation, no capabilities, the runtime's seccomp profile)."""

from __future__ import annotations

import json
from typing import Any

RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def settings(namespace: str, **more: Any) -> str:
    """gitdeploy.yaml: apps under apps/, deployed to ``namespace``."""
    return json.dumps({"paths": ["apps"], "defaultNamespace": namespace, **more}) + "\n"


def container(name: str, image: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "image": image, "securityContext": RESTRICTED_CONTAINER, **more}


def template(app: str, image: str, grace: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"securityContext": RESTRICTED_POD, "containers": [container(app, image)]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def deployment(
    app: str,
    image: str,
    replicas: int,
    strategy: dict[str, Any] | None = None,
    grace: int | None = None,
    **spec: Any,
) -> str:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": template(app, image, grace),
            **({"strategy": strategy} if strategy else {}),
            **spec,
        },
    }
    return json.dumps(body, indent=1) + "\n"


def deployment_config(
    app: str, image: str, replicas: int, strategy: dict[str, Any], grace: int | None = None, **spec: Any
) -> str:
    body: dict[str, Any] = {
        "apiVersion": "apps.openshift.io/v1",
        "kind": "DeploymentConfig",
        "metadata": {"name": app},
        "spec": {
            "replicas": replicas,
            "selector": {"app": app},
            "template": template(app, image, grace),
            "strategy": strategy,
            "triggers": [{"type": "ConfigChange"}],
            **spec,
        },
    }
    return json.dumps(body, indent=1) + "\n"
