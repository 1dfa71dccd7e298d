"""Validation of the objects written to the embedded cluster: the real API server's rules and words.

Every rule is one a real kube-apiserver enforces, answered as it answers it: 422 ``Invalid`` with
one cause per broken rule, each naming the field as the API server does (``metadata.ownerReferences[0].uid``,
``spec.template.spec.restartPolicy``, ``[]`` for a ConfigMap's whole data) and worded as it is,
``Required value: ...``, ``Invalid value: ...``, ``Too long: ...`` (the cause's reason follows from
the wording, see :meth:`ApiError.invalid`). tests/contract holds both servers to the same answers.

Only cheap checks on the written object: no lookups, nothing that grows with the cluster.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.resources import (
    CONFIGMAPS,
    CORE_EVENTS,
    LEASES,
    NAMESPACES,
    PODS,
    REPLICASETS,
    ResourceType,
)
from gitdeploy.localcluster.selectors import SelectorError, label_selector_from_object, matches_labels

__all__ = ["MAX_ANNOTATIONS_BYTES", "MAX_CONFIGMAP_BYTES", "validate", "validate_update"]

Causes = list[tuple[str, str]]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
MAX_ANNOTATIONS_BYTES = 256 * 1024
"""The API server's limit on the total size of an object's annotations (keys and values)."""
MAX_CONFIGMAP_BYTES = 1024 * 1024
"""The API server's limit on a ConfigMap's ``data`` and ``binaryData`` (keys and values)."""
_QUALIFIED_NAME_MESSAGE = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
    "and '/' (e.g. 'example.com/MyName')"
)
_DNS_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def _go_json(value: Any) -> str:
    """A value as the API server prints it in a message (compact JSON)."""
    return json.dumps(value, separators=(",", ":"))


def _is_qualified_name(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        return False
    return bool(_LABEL_NAME.match(name)) and len(name) <= 63


def _validate_labels(labels: Any, causes: Causes) -> None:
    if labels is None:
        return
    if not isinstance(labels, dict):
        causes.append(("metadata.labels", "must be a map of strings"))
        return
    for key, value in labels.items():
        if not _is_qualified_name(str(key)):
            causes.append(("metadata.labels", f"Invalid value: {_go_json(key)}: {_QUALIFIED_NAME_MESSAGE}"))
        if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
            causes.append(("metadata.labels", f"Invalid value: {_go_json(value)}: invalid label value"))


def _validate_annotations(annotations: Any, causes: Causes) -> None:
    if annotations is None:
        return
    if not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values()):
        causes.append(("metadata.annotations", "must be a map of strings"))
        return
    for key in annotations:
        if not _is_qualified_name(str(key)):
            causes.append(
                ("metadata.annotations", f"Invalid value: {_go_json(key)}: {_QUALIFIED_NAME_MESSAGE}")
            )
    if _byte_size(annotations) > MAX_ANNOTATIONS_BYTES:
        causes.append(
            ("metadata.annotations", f"Too long: may not be more than {MAX_ANNOTATIONS_BYTES} bytes")
        )


_OWNER_REFERENCE_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
"""The fields of an owner reference in the order the API server prints them."""


def _validate_owner_references(refs: Any, causes: Causes) -> None:
    """``ValidateOwnerReferences``: each names apiVersion, kind, name and uid; one controller at most."""
    if refs is None:
        return
    if not isinstance(refs, list) or not all(isinstance(ref, dict) for ref in refs):
        causes.append(("metadata.ownerReferences", "must be a list of owner references"))
        return
    for index, ref in enumerate(refs):
        field = f"metadata.ownerReferences[{index}]"
        for required in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(required):
                causes.append((f"{field}.{required}", "Required value: must not be empty"))
    controllers = [ref for ref in refs if ref.get("controller") is True]
    if len(controllers) > 1:
        owners = " and ".join(f"{ref.get('kind')}/{ref.get('name')}" for ref in controllers)
        in_go_order = [{key: ref[key] for key in _OWNER_REFERENCE_FIELDS if key in ref} for ref in refs]
        causes.append(
            (
                "metadata.ownerReferences",
                f"Invalid value: {_go_json(in_go_order)}: Only one reference can have Controller set "
                f'to true. Found "true" in references for {owners}',
            )
        )


def _validate_containers(containers: Any, field: str, causes: Causes) -> None:
    if not isinstance(containers, list) or not containers:
        causes.append((field, "Required value: at least one container"))
        return
    for index, container in enumerate(containers):
        if not isinstance(container, dict) or not container.get("name"):
            causes.append((f"{field}[{index}].name", "Required value"))
            continue
        name = str(container["name"])
        if not _LABEL.match(name) or len(name) > 63:
            causes.append(
                (f"{field}[{index}].name", f"Invalid value: {_go_json(name)}: {_DNS_LABEL_MESSAGE}")
            )
        if not container.get("image"):
            causes.append((f"{field}[{index}].image", "Required value"))


def _byte_size(entries: Any, *, binary: bool = False) -> int:
    """Bytes of a map of strings as the API server counts them: each key plus each value
    (``binaryData`` values are base64 in JSON: their decoded size)."""
    if not isinstance(entries, dict):
        return 0
    total = 0
    for key, value in entries.items():
        total += len(str(key).encode("utf-8"))
        text = str(value)
        total += len(text) * 3 // 4 - text.count("=") if binary else len(text.encode("utf-8"))
    return total


def _validate_configmap(obj: dict[str, Any], causes: Causes) -> None:
    data = _byte_size(obj.get("data")) + _byte_size(obj.get("binaryData"), binary=True)
    if data > MAX_CONFIGMAP_BYTES:
        causes.append(("[]", f"Too long: may not be more than {MAX_CONFIGMAP_BYTES} bytes"))


def _validate_replicaset(spec: dict[str, Any], causes: Causes, *, template_as_stored: bool) -> None:
    replicas = spec.get("replicas", 1)
    if replicas is not None and (not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0):
        causes.append(("spec.replicas", f"Invalid value: {replicas!r}: must be greater than or equal to 0"))
    if not template_as_stored:
        _validate_pod_template(spec, causes)
    min_ready = spec.get("minReadySeconds", 0)
    if not isinstance(min_ready, int) or min_ready < 0:
        causes.append(("spec.minReadySeconds", "must be greater than or equal to 0"))


def _validate_pod_template(spec: dict[str, Any], causes: Causes) -> None:
    """A ReplicaSet's selector and pod template."""
    template = spec.get("template") or {}
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    try:
        requirements = label_selector_from_object(spec.get("selector"))
    except SelectorError as problem:
        causes.append(("spec.selector", str(problem)))
        requirements = []
    if not requirements:
        causes.append(("spec.selector", "Required value"))
    elif not matches_labels(requirements, template_labels):
        causes.append(
            ("spec.template.metadata.labels", "Invalid value: `selector` does not match template `labels`")
        )
    pod_spec = template.get("spec") or {}
    _validate_containers(pod_spec.get("containers"), "spec.template.spec.containers", causes)
    restart = pod_spec.get("restartPolicy")
    if restart is not None and restart != "Always":
        causes.append(
            (
                "spec.template.spec.restartPolicy",
                f'Unsupported value: {_go_json(restart)}: supported values: "Always"',
            )
        )
    if pod_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            (
                "spec.template.spec.activeDeadlineSeconds",
                "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
            )
        )


def _validate_event(obj: dict[str, Any], causes: Causes) -> None:
    involved = obj.get("involvedObject") if isinstance(obj.get("involvedObject"), dict) else {}
    assert isinstance(involved, dict)
    namespace = involved.get("namespace")
    if namespace and namespace != (obj.get("metadata") or {}).get("namespace"):
        causes.append(
            (
                "involvedObject.namespace",
                f"Invalid value: {_go_json(namespace)}: does not match event.namespace",
            )
        )


def _validate_lease(spec: dict[str, Any], causes: Causes) -> None:
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        causes.append(
            ("spec.leaseDurationSeconds", f"Invalid value: {_go_json(duration)}: must be greater than 0")
        )


def validate(resource: ResourceType, obj: dict[str, Any], *, template_as_stored: bool = False) -> None:
    """Raise a 422 ``Invalid`` error when ``obj`` breaks the rules the API server enforces for it.
    ``template_as_stored``: a ReplicaSet's selector and pod template are those of the stored
    object it replaces, which passed these rules when written: they are not checked again."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    causes: Causes = []
    pattern = _LABEL if resource is NAMESPACES else _SUBDOMAIN
    limit = 63 if resource is NAMESPACES else 253
    if not pattern.match(name) or len(name) > limit:
        causes.append(("metadata.name", f"Invalid value: {name!r}: must be a lowercase RFC 1123 name"))
    _validate_labels(meta.get("labels"), causes)
    _validate_annotations(meta.get("annotations"), causes)
    _validate_owner_references(meta.get("ownerReferences"), causes)
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if resource is CONFIGMAPS:
        _validate_configmap(obj, causes)
    elif resource is PODS:
        _validate_containers(spec.get("containers"), "spec.containers", causes)
    elif resource is REPLICASETS:
        _validate_replicaset(spec, causes, template_as_stored=template_as_stored)
    elif resource is CORE_EVENTS:
        _validate_event(obj, causes)
    elif resource is LEASES:
        _validate_lease(spec, causes)
    if causes:
        raise ApiError.invalid(resource.kind, resource.group, name, causes)


def validate_update(resource: ResourceType, current: dict[str, Any], new: dict[str, Any]) -> None:
    """The rules of an update beyond those of the new object: what is immutable stays (apps/v1
    ReplicaSets keep their ``spec.selector``). A ReplicaSet update that leaves the selector and
    pod template as stored (a scale, an annotation) has them checked no more."""
    if resource is not REPLICASETS:
        validate(resource, new)
        return
    spec, stored = new.get("spec") or {}, current.get("spec") or {}
    selector = spec.get("selector")
    as_stored = selector == stored.get("selector") and spec.get("template") == stored.get("template")
    validate(resource, new, template_as_stored=as_stored)
    if selector != stored.get("selector"):
        name = str(current["metadata"]["name"])
        causes = [("spec.selector", f"Invalid value: {_go_json(selector)}: field is immutable")]
        raise ApiError.invalid(resource.kind, resource.group, name, causes)
