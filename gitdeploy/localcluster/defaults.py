"""The defaults the API server fills in, for the fields gitdeploy and kubectl read.

A real API server defaults a pod's spec (and a ReplicaSet's pod template) when it decodes a write:
``restartPolicy: Always``, ``terminationGracePeriodSeconds: 30`` (how long a deleted pod stays
Terminating), ``dnsPolicy``, ``schedulerName``, each container's ``imagePullPolicy`` (``Always``
for ``:latest`` or an untagged image, else ``IfNotPresent``), termination message settings, and
``protocol: TCP`` on ports (``kubectl describe`` shows ``80/TCP``). The embedded cluster does the
same before validating, so what a client reads back is what it would read from a real cluster.

Functions return new dicts where they add something (a patched object shares the parts it left
unchanged with the stored one, which must not change).
"""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.resources import PODS, REPLICASETS, ResourceType

__all__ = ["with_defaults"]

_POD_DEFAULTS: dict[str, Any] = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
}
_CONTAINER_DEFAULTS: dict[str, Any] = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


def _pull_policy(image: Any) -> str:
    """``Always`` for an image tagged ``latest`` or not tagged at all (and not by digest)."""
    text = str(image or "")
    if "@" in text:
        return "IfNotPresent"
    last = text.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    done = {**_CONTAINER_DEFAULTS, "imagePullPolicy": _pull_policy(container.get("image")), **container}
    ports = container.get("ports")
    if isinstance(ports, list):
        done["ports"] = [{"protocol": "TCP", **p} if isinstance(p, dict) else p for p in ports]
    return done


def _pod_spec(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    done = {**_POD_DEFAULTS, **spec}
    for key in ("initContainers", "containers"):
        if isinstance(spec.get(key), list):
            done[key] = [_container(c) for c in spec[key]]
    return done


def with_defaults(resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the API server's defaults: a new top-level dict when ``resource`` has any."""
    if resource is PODS:
        return {**obj, "spec": _pod_spec(obj.get("spec") or {})}
    if resource is REPLICASETS:
        spec = obj.get("spec")
        template = spec.get("template") if isinstance(spec, dict) else None
        if isinstance(spec, dict) and isinstance(template, dict):
            template = {**template, "spec": _pod_spec(template.get("spec") or {})}
            return {**obj, "spec": {**spec, "template": template}}
    return obj
