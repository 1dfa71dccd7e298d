"""Just enough of Kubernetes' protobuf encoding to read what kubectl's typed client sends as
protobuf (client-go never retries those as JSON): ``kubectl auth can-i``'s SelfSubjectAccessReview,
and the Namespace and ConfigMap of ``kubectl create namespace|configmap``.

A body is the magic ``k8s\\0`` then a ``runtime.Unknown`` (field 2: the object's own message).
Field numbers are those of k8s.io/api's generated.proto; fields not listed here are dropped.
"""

from __future__ import annotations

import base64
from typing import Any

from gitdeploy.localcluster.apierrors import ApiError

__all__ = ["PROTOBUF", "access_review_from_protobuf", "object_from_protobuf"]

PROTOBUF = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
_RESOURCE_ATTRIBUTES = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
_NON_RESOURCE_ATTRIBUTES = ("path", "verb")
_META_STRINGS = {1: "name", 2: "generateName", 3: "namespace"}
_META_MAPS = {11: "labels", 12: "annotations"}

Fields = dict[int, list[Any]]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise ApiError.bad_request("the protobuf body is truncated")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> Fields:
    """Every field of one message by number, in order: varints as ints, length-delimited as bytes."""
    fields: Fields = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise ApiError.bad_request("the protobuf body is truncated")
            value, at = data[at : at + length], at + length
        elif wire in (1, 5):
            value, at = None, at + (8 if wire == 1 else 4)
        else:
            raise ApiError.bad_request(f"unsupported protobuf wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def _last(fields: Fields, number: int) -> Any:
    return fields[number][-1] if number in fields else None


def _strings(data: bytes, names: tuple[str, ...]) -> dict[str, str]:
    fields = _fields(data)
    return {name: bytes(fields[i + 1][-1]).decode() for i, name in enumerate(names) if i + 1 in fields}


def _map(entries: list[Any], text: bool = True) -> dict[str, str]:
    result: dict[str, str] = {}
    for entry in entries:
        fields = _fields(entry)
        key, value = bytes(_last(fields, 1) or b""), bytes(_last(fields, 2) or b"")
        result[key.decode()] = value.decode() if text else base64.b64encode(value).decode()
    return result


def _object_meta(data: bytes) -> dict[str, Any]:
    fields = _fields(data)
    meta: dict[str, Any] = {
        name: bytes(fields[n][-1]).decode() for n, name in _META_STRINGS.items() if n in fields
    }
    meta.update({name: _map(fields[n]) for n, name in _META_MAPS.items() if n in fields})
    return meta


def _unknown_raw(body: bytes) -> tuple[str, bytes]:
    """The kind and the object's own message inside a ``k8s\\0`` + ``runtime.Unknown`` body."""
    if not body.startswith(_MAGIC):
        raise ApiError.bad_request("the protobuf body does not start with the k8s magic number")
    unknown = _fields(body[len(_MAGIC) :])
    type_meta = _fields(_last(unknown, 1) or b"")
    return bytes(_last(type_meta, 2) or b"").decode(), bytes(_last(unknown, 2) or b"")


def access_review_from_protobuf(body: bytes) -> dict[str, Any]:
    """A ``SelfSubjectAccessReview`` sent as protobuf, as the JSON object it stands for."""
    review = _fields(_unknown_raw(body)[1])
    spec_fields = _fields(_last(review, 2) or b"")
    spec: dict[str, Any] = {}
    if 1 in spec_fields:
        spec["resourceAttributes"] = _strings(spec_fields[1][-1], _RESOURCE_ATTRIBUTES)
    if 2 in spec_fields:
        spec["nonResourceAttributes"] = _strings(spec_fields[2][-1], _NON_RESOURCE_ATTRIBUTES)
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": spec}


def object_from_protobuf(kind: str, body: bytes) -> dict[str, Any]:
    """A Namespace or ConfigMap sent as protobuf, as JSON; 415 for any other kind, as a server
    that cannot decode a media type answers."""
    sent_kind, raw = _unknown_raw(body)
    if kind not in ("Namespace", "ConfigMap") or sent_kind not in ("", kind):
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the embedded cluster reads a {kind} as JSON only, not as {PROTOBUF}",
        )
    fields = _fields(raw)
    obj: dict[str, Any] = {
        "kind": kind,
        "apiVersion": "v1",
        "metadata": _object_meta(_last(fields, 1) or b""),
    }
    if kind == "Namespace" and 2 in fields:
        finalizers = _fields(fields[2][-1]).get(1, [])
        obj["spec"] = {"finalizers": [bytes(f).decode() for f in finalizers]}
    if kind == "ConfigMap":
        if 2 in fields:
            obj["data"] = _map(fields[2])
        if 3 in fields:
            obj["binaryData"] = _map(fields[3], text=False)
        if 4 in fields:
            obj["immutable"] = bool(fields[4][-1])
    return obj
