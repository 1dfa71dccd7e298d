"""The protobuf bodies kubectl's typed client sends, read as the JSON objects they stand for."""

from __future__ import annotations

import pytest

from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.protowire import access_review_from_protobuf, object_from_protobuf


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def _envelope(kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, b"v1") + _field(2, kind.encode())
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw)


def test_a_configmap_with_labels_data_and_binary_data() -> None:
    meta = _field(1, b"settings") + _field(11, _field(1, b"team") + _field(2, b"web"))
    raw = (
        _field(1, meta)
        + _field(2, _field(1, b"a") + _field(2, b"1"))
        + _field(3, _field(1, b"b") + _field(2, b"\x00"))
    )
    raw += bytes([4 << 3, 1])  # immutable: true
    assert object_from_protobuf("ConfigMap", _envelope("ConfigMap", raw)) == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "settings", "labels": {"team": "web"}},
        "data": {"a": "1"},
        "binaryData": {"b": "AA=="},
        "immutable": True,
    }


def test_an_access_review() -> None:
    attributes = _field(1, b"shop") + _field(2, b"patch") + _field(3, b"apps") + _field(5, b"replicasets")
    raw = _field(2, _field(1, attributes))
    assert access_review_from_protobuf(_envelope("SelfSubjectAccessReview", raw))["spec"] == {
        "resourceAttributes": {
            "namespace": "shop",
            "verb": "patch",
            "group": "apps",
            "resource": "replicasets",
        }
    }


def test_other_kinds_are_unsupported_and_garbage_is_a_bad_request() -> None:
    with pytest.raises(ApiError) as unsupported:
        object_from_protobuf("Pod", _envelope("Pod", _field(1, b"")))
    assert unsupported.value.code == 415
    for garbage in (b"not protobuf", b"k8s\x00\x12\x7f"):
        with pytest.raises(ApiError) as bad:
            object_from_protobuf("ConfigMap", garbage)
        assert bad.value.code == 400
