"""The defaults the API server fills in, for the fields gitdeploy and kubectl read.

A real API server defaults a pod's spec (and a ReplicaSet's pod template) when it decodes a write:
``restartPolicy: Always``, ``terminationGracePeriodSeconds: 30`` (how long a deleted pod stays
Terminating), ``dnsPolicy``, ``schedulerName``, ``securityContext: {}``, each container's
``imagePullPolicy`` (``Always`` for ``:latest`` or an untagged image, else ``IfNotPresent``),
termination message settings and ``resources: {}``, ``protocol: TCP`` on ports (``kubectl
describe`` shows ``80/TCP``), resource quantities in their canonical form (gitdeploy/quantities.py),
a probe's thresholds and periods and its ``httpGet`` scheme, a ``fieldRef``'s ``apiVersion`` and a
ConfigMap, Secret, projected or downward API volume's ``defaultMode``. The embedded cluster does the
same before validating, so what a client reads back is what it would read from a real cluster
(``tests/contract/test_writes.py`` compares them). A ReplicaSet's own spec gets no default that
gitdeploy does not write (``replicas`` is always written; ``minReadySeconds`` stays absent).

Functions return new dicts where they add something (a patched object shares the parts it left
unchanged with the stored one, which must not change).
"""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.resources import PODS, REPLICASETS, ResourceType
from gitdeploy.quantities import canonical_resources

__all__ = ["with_defaults"]

_POD_DEFAULTS: dict[str, Any] = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
    "securityContext": {},
}
_CONTAINER_DEFAULTS: dict[str, Any] = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}
_PROBE_DEFAULTS: dict[str, Any] = {
    "timeoutSeconds": 1,
    "periodSeconds": 10,
    "successThreshold": 1,
    "failureThreshold": 3,
}
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_MODE_VOLUMES = ("configMap", "secret", "projected", "downwardAPI")
_DEFAULT_MODE = 420  # 0644


def _pull_policy(image: Any) -> str:
    """``Always`` for an image tagged ``latest`` or not tagged at all (and not by digest)."""
    text = str(image or "")
    if "@" in text:
        return "IfNotPresent"
    last = text.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _probe(probe: Any) -> Any:
    if not isinstance(probe, dict):
        return probe
    done = {**_PROBE_DEFAULTS, **probe}
    get = probe.get("httpGet")
    if isinstance(get, dict) and "scheme" not in get:
        done["httpGet"] = {**get, "scheme": "HTTP"}
    return done


def _env(variable: Any) -> Any:
    source = variable.get("valueFrom") if isinstance(variable, dict) else None
    ref = source.get("fieldRef") if isinstance(source, dict) else None
    if not isinstance(source, dict) or not isinstance(ref, dict) or "apiVersion" in ref:
        return variable
    return {**variable, "valueFrom": {**source, "fieldRef": {"apiVersion": "v1", **ref}}}


def _container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    done = {**_CONTAINER_DEFAULTS, "imagePullPolicy": _pull_policy(container.get("image")), **container}
    ports = container.get("ports")
    if isinstance(ports, list):
        done["ports"] = [{"protocol": "TCP", **p} if isinstance(p, dict) else p for p in ports]
    for key in _PROBES:
        if key in container:
            done[key] = _probe(container[key])
    if isinstance(container.get("env"), list):
        done["env"] = [_env(v) for v in container["env"]]
    if "resources" in container:
        done["resources"] = canonical_resources(container["resources"])
    return done


def _volume(volume: Any) -> Any:
    if not isinstance(volume, dict):
        return volume
    for kind in _MODE_VOLUMES:
        source = volume.get(kind)
        if isinstance(source, dict) and "defaultMode" not in source:
            return {**volume, kind: {**source, "defaultMode": _DEFAULT_MODE}}
    return volume


def _pod_spec(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    done = {**_POD_DEFAULTS, **spec}
    for key in ("initContainers", "containers"):
        if isinstance(spec.get(key), list):
            done[key] = [_container(c) for c in spec[key]]
    if isinstance(spec.get("volumes"), list):
        done["volumes"] = [_volume(v) for v in spec["volumes"]]
    return done


def with_defaults(
    resource: ResourceType, obj: dict[str, Any], stored: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``obj`` with the API server's defaults: a new top-level dict when ``resource`` has any.
    ``stored``: the object ``obj`` replaces; a ReplicaSet's pod template equal to the stored one's
    has its defaults already (a scale, an annotation) and is left as it is."""
    if resource is PODS:
        return {**obj, "spec": _pod_spec(obj.get("spec") or {})}
    if resource is REPLICASETS:
        spec = obj.get("spec")
        template = spec.get("template") if isinstance(spec, dict) else None
        if stored is not None and template == (stored.get("spec") or {}).get("template"):
            return obj
        if isinstance(spec, dict) and isinstance(template, dict):
            template = {**template, "spec": _pod_spec(template.get("spec") or {})}
            return {**obj, "spec": {**spec, "template": template}}
    return obj
