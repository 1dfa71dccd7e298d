"""Just enough of Kubernetes' protobuf encoding to read the one body kubectl sends as protobuf
to a server whose OpenAPI does not say otherwise: ``kubectl auth can-i``'s SelfSubjectAccessReview.

A body is the magic ``k8s\\0`` then a ``runtime.Unknown`` (field 2: the object's own message).
Only length-delimited string and message fields are read; other wire types are skipped.
"""

from __future__ import annotations

from typing import Any

from gitdeploy.localcluster.apierrors import ApiError

__all__ = ["PROTOBUF", "access_review_from_protobuf"]

PROTOBUF = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
_RESOURCE_ATTRIBUTES = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
_NON_RESOURCE_ATTRIBUTES = ("path", "verb")


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


def _fields(data: bytes) -> dict[int, bytes]:
    """The length-delimited fields of one message by number (the last one of each number)."""
    fields: dict[int, bytes] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise ApiError.bad_request("the protobuf body is truncated")
            fields[number], at = data[at : at + length], at + length
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ApiError.bad_request(f"unsupported protobuf wire type {wire}")
    return fields


def _strings(data: bytes, names: tuple[str, ...]) -> dict[str, str]:
    fields = _fields(data)
    return {name: fields[i + 1].decode() for i, name in enumerate(names) if i + 1 in fields}


def access_review_from_protobuf(body: bytes) -> dict[str, Any]:
    """A ``SelfSubjectAccessReview`` sent as protobuf, as the JSON object it stands for."""
    if not body.startswith(_MAGIC):
        raise ApiError.bad_request("the protobuf body does not start with the k8s magic number")
    review = _fields(_fields(body[len(_MAGIC) :]).get(2, b""))
    spec_fields = _fields(review.get(2, b""))
    spec: dict[str, Any] = {}
    if 1 in spec_fields:
        spec["resourceAttributes"] = _strings(spec_fields[1], _RESOURCE_ATTRIBUTES)
    if 2 in spec_fields:
        spec["nonResourceAttributes"] = _strings(spec_fields[2], _NON_RESOURCE_ATTRIBUTES)
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": spec}
