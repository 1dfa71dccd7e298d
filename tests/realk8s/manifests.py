"""App manifests for the real control plane: every pod template complies with Pod Security
"restricted" (non-root, no privilege escalation, no capabilities, the runtime's seccomp profile)."""

from __future__ import annotations

import json
from typing import Any

from tests.realk8s.kwok_stages import EXIT_CODE_VAR

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


def rollout(
    app: str, image: str, replicas: int, steps: list[dict[str, Any]], grace: int | None = None
) -> str:
    """An Argo Rollouts ``Rollout`` with a canary of ``steps`` (maxSurge 1, maxUnavailable 0)."""
    canary = {"maxSurge": 1, "maxUnavailable": 0, "steps": steps}
    body: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": app},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": template(app, image, grace),
            "strategy": {"canary": canary},
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


def hook(policy: str, exit_code: str = "0") -> dict[str, Any]:
    env = [{"name": EXIT_CODE_VAR, "value": exit_code}]
    return {
        "failurePolicy": policy,
        "execNewPod": {"containerName": "worker", "command": ["/bin/hook"], "env": env},
    }


def recreate(timeout: int = 60, **hooks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Recreate", "recreateParams": {"timeoutSeconds": timeout, **hooks}}


def worker(version: int, replicas: int, strategy: dict[str, Any], grace: int | None = None) -> dict[str, str]:
    return {
        "apps/worker.yaml": deployment_config(
            "worker", f"registry.test/worker:{version}", replicas, strategy, grace
        )
    }


DIGEST_A, DIGEST_B, DIGEST_C = (f"sha256:{c * 64}" for c in "abc")


def image_stream(digest: str) -> str:
    tags = [{"name": "prod", "from": {"kind": "DockerImage", "name": f"registry.test/web@{digest}"}}]
    body = {"apiVersion": "image.openshift.io/v1", "kind": "ImageStream", "metadata": {"name": "web"},
            "spec": {"tags": tags}}  # fmt: skip
    return json.dumps(body, indent=1) + "\n"


def following_the_stream() -> str:
    change = {
        "automatic": True,
        "containerNames": ["web"],
        "from": {"kind": "ImageStreamTag", "name": "web:prod"},
    }
    triggers = [{"type": "ConfigChange"}, {"type": "ImageChange", "imageChangeParams": change}]
    return deployment_config("web", "web:prod", 2, {"type": "Rolling"}, grace=1, triggers=triggers)
