"""A pod template as the API server stores it: git's template with the server's defaults.

A real API server fills in defaults on every write of a ReplicaSet, so the template read back from
the cluster never equals git's: ``restartPolicy: Always``, ``terminationGracePeriodSeconds: 30``,
``dnsPolicy: ClusterFirst``, ``schedulerName: default-scheduler``, each container's
``imagePullPolicy`` (``Always`` for ``:latest`` or an untagged image, else ``IfNotPresent``) and
termination message settings, ``protocol: TCP`` on ports, a probe's thresholds and ``httpGet``
scheme, a ``fieldRef``'s ``apiVersion`` and a volume's ``defaultMode`` (empty ``securityContext``
and ``resources`` too, which normalising drops). gitdeploy never trusts a template read back for
identity (the template hash is git's, carried in a label), but it shows differences between
templates, one of which may come from the cluster: both sides are compared with the defaults
filled in, so a defaulted field is no change and an explicit default equals an absent one.

The table is gitdeploy's own view of the server (not the embedded cluster's code, which must be
able to disagree with it): ``tests/unit/core/test_serverdefaults.py`` holds it to what a real
kube-apiserver returned in ``tests/contract/test_writes.py``.

Resource quantities are compared in the form the server stores them (``cpu: 0.5`` as ``500m``,
``1024Mi`` as ``1Gi``: gitdeploy/quantities.py). Not filled in: what admission adds to a pod
(ServiceAccount, tolerations), which a ReplicaSet's template never carries.
"""

from __future__ import annotations

import json
from typing import Any

from gitdeploy.core.hashing import canonical_template
from gitdeploy.core.models import PodTemplate
from gitdeploy.quantities import canonical_resources

__all__ = ["pull_policy", "with_server_defaults"]

_POD: dict[str, Any] = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
}
_CONTAINER: dict[str, Any] = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
_PROBE: dict[str, Any] = {
    "timeoutSeconds": 1,
    "periodSeconds": 10,
    "successThreshold": 1,
    "failureThreshold": 3,
}
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_MODE_VOLUMES = ("configMap", "secret", "projected", "downwardAPI")


def pull_policy(image: str) -> str:
    """The ``imagePullPolicy`` the API server gives a container that names none.

    >>> [pull_policy(i) for i in ("nginx", "nginx:latest", "nginx:1.25", "r.io:5000/web", "web@sha256:ab")]
    ['Always', 'Always', 'IfNotPresent', 'Always', 'IfNotPresent']
    """
    if "@" in image:
        return "IfNotPresent"
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _fill(given: Any, defaults: dict[str, Any]) -> None:
    if isinstance(given, dict):
        for key, value in defaults.items():
            given.setdefault(key, value)


def _fill_container(container: Any) -> None:
    if not isinstance(container, dict):
        return
    _fill(container, {**_CONTAINER, "imagePullPolicy": pull_policy(str(container.get("image") or ""))})
    for port in container.get("ports") or []:
        _fill(port, {"protocol": "TCP"})
    for key in _PROBES:
        probe = container.get(key)
        _fill(probe, _PROBE)
        if isinstance(probe, dict):
            _fill(probe.get("httpGet"), {"scheme": "HTTP"})
    if "resources" in container:
        container["resources"] = canonical_resources(container["resources"])
    for variable in container.get("env") or []:
        source = variable.get("valueFrom") if isinstance(variable, dict) else None
        if isinstance(source, dict):
            _fill(source.get("fieldRef"), {"apiVersion": "v1"})


def with_server_defaults(template: PodTemplate) -> PodTemplate:
    """``template`` with the API server's defaults filled in where it sets none (for comparing).

    >>> t = PodTemplate('{"spec":{"containers":[{"image":"nginx:1","name":"web",'
    ...                 '"ports":[{"containerPort":80}]}]}}')
    >>> spec = with_server_defaults(t).to_dict()["spec"]
    >>> spec["restartPolicy"], spec["containers"][0]["imagePullPolicy"], spec["containers"][0]["ports"]
    ('Always', 'IfNotPresent', [{'containerPort': 80, 'protocol': 'TCP'}])
    >>> with_server_defaults(with_server_defaults(t)) == with_server_defaults(t)
    True
    """
    body = json.loads(template.canonical_json)
    spec = body.get("spec") if isinstance(body, dict) else None
    if not isinstance(spec, dict):
        return template
    _fill(spec, _POD)
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            _fill_container(container)
    for volume in spec.get("volumes") or []:
        for kind in _MODE_VOLUMES:
            _fill(volume.get(kind) if isinstance(volume, dict) else None, {"defaultMode": 420})
    return canonical_template(body)
