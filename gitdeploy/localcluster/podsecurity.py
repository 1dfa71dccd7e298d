"""Pod Security admission, level ``restricted``, for namespaces that enforce it.

A namespace labelled ``pod-security.kubernetes.io/enforce: restricted`` refuses a pod that does not
comply with 403 Forbidden and the message a real API server gives (``violates PodSecurity
"restricted:latest": ...``), so gitdeploy's hook and deployer pods, and its reading of such an
answer, are tested as on a real cluster. The checks are the ones of the restricted profile that a
pod built from an ordinary template can break: privilege escalation, capabilities, running as
root, the seccomp profile, privileged containers and host namespaces. Pods the simulated
ReplicaSet controller creates are not checked (a real one would record ``FailedCreate``).
"""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.apierrors import ApiError

__all__ = ["ENFORCE_LABEL", "admit_pod", "restricted_violations"]

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
_ALLOWED_CAPABILITIES = {"NET_BIND_SERVICE"}
_SECCOMP_TYPES = ("RuntimeDefault", "Localhost")


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or [] if isinstance(c, dict)]


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _container_violations(containers: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    privileged = [c["name"] for c in containers if (c.get("securityContext") or {}).get("privileged")]
    if privileged:
        found.append(
            f"privileged (containers {_quoted(privileged)} must not set securityContext.privileged=true)"
        )
    escalating = [
        str(c.get("name"))
        for c in containers
        if (c.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False
    ]
    if escalating:
        found.append(
            f"allowPrivilegeEscalation != false (containers {_quoted(escalating)} must set "
            "securityContext.allowPrivilegeEscalation=false)"
        )
    unrestricted = []
    for container in containers:
        capabilities = (container.get("securityContext") or {}).get("capabilities") or {}
        added = set(capabilities.get("add") or []) - _ALLOWED_CAPABILITIES
        if "ALL" not in (capabilities.get("drop") or []) or added:
            unrestricted.append(str(container.get("name")))
    if unrestricted:
        found.append(
            f"unrestricted capabilities (containers {_quoted(unrestricted)} must set "
            'securityContext.capabilities.drop=["ALL"])'
        )
    return found


def _inherited(pod: dict[str, Any], container: dict[str, Any], key: str) -> Any:
    """A security setting of the container, else of the pod."""
    own = (container.get("securityContext") or {}).get(key)
    return own if own is not None else (pod.get("securityContext") or {}).get(key)


def restricted_violations(spec: dict[str, Any]) -> list[str]:
    """What a pod ``spec`` breaks of the restricted profile, in the API server's words."""
    containers = _containers(spec)
    found = [
        f"host namespaces ({field}=true)"
        for field in ("hostNetwork", "hostPID", "hostIPC")
        if spec.get(field)
    ]
    found += _container_violations(containers)
    as_root = [str(c.get("name")) for c in containers if _inherited(spec, c, "runAsNonRoot") is not True]
    if as_root:
        found.append(
            f"runAsNonRoot != true (pod or containers {_quoted(as_root)} must set "
            "securityContext.runAsNonRoot=true)"
        )
    if any(_inherited(spec, c, "runAsUser") == 0 for c in containers):
        found.append("runAsUser=0 (pod and containers must not set runAsUser=0)")
    no_seccomp = [
        str(c.get("name"))
        for c in containers
        if (_inherited(spec, c, "seccompProfile") or {}).get("type") not in _SECCOMP_TYPES
    ]
    if no_seccomp:
        found.append(
            f"seccompProfile (pod or containers {_quoted(no_seccomp)} must set "
            'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
        )
    return found


def admit_pod(namespace: dict[str, Any] | None, pod: dict[str, Any]) -> None:
    """Raise 403 Forbidden when ``namespace`` enforces ``restricted`` and ``pod`` breaks it."""
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(ENFORCE_LABEL) != "restricted":
        return
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    found = restricted_violations(spec)
    if found:
        name = (pod.get("metadata") or {}).get("name") or ""
        raise ApiError(
            403,
            "Forbidden",
            f'pods "{name}" is forbidden: violates PodSecurity "restricted:latest": {", ".join(found)}',
            details={"name": name, "kind": "pods"},
        )
