"""The OpenAPI v3 documents kubectl asks for (``kubectl apply`` validation, ``kubectl explain``).

They are kube-apiserver's own, cut down by ``scripts/localcluster-openapi`` to the resources the
embedded cluster serves, and kept gzipped in ``openapi/``; read on first request only.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["PREFIX", "document", "index", "unknown_fields"]

_DIR = Path(__file__).parent / "openapi"
PREFIX = "/openapi/v3"


@functools.cache
def _documents() -> dict[str, bytes]:
    """``api/v1``, ``apis/apps/v1``, ... → the document's JSON."""
    found: dict[str, bytes] = {}
    for path in sorted(_DIR.glob("*.json.gz")):
        found[path.name.removesuffix(".json.gz").replace("__", "/")] = gzip.decompress(path.read_bytes())
    return found


@functools.cache
def index() -> dict[str, Any]:
    """``GET /openapi/v3``: each group version's document, by a URL that names its hash."""
    return {
        "paths": {
            name: {"serverRelativeURL": f"{PREFIX}/{name}?hash={hashlib.sha512(body).hexdigest().upper()}"}
            for name, body in _documents().items()
        }
    }


def document(path: str) -> bytes | None:
    """``GET /openapi/v3/<group version>``: its document, or None when there is none."""
    return _documents().get(path.removeprefix(PREFIX).strip("/"))


def _schema_ref(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None and isinstance(schema.get("allOf"), list) and schema["allOf"]:
        ref = schema["allOf"][0].get("$ref")
    return str(ref).rsplit("/", 1)[-1] if ref else None


@functools.cache
def _parsed(name: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(_documents()[name])
    return parsed


def _kind_schema(group: str, version: str, kind: str) -> tuple[dict[str, Any], str] | None:
    """The schema of ``kind`` in its group version's document, and that document's name."""
    name = f"apis/{group}/{version}" if group else f"api/{version}"
    if name not in _documents():
        return None
    for schema in _parsed(name)["components"]["schemas"].values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return schema, name
    return None


def _unknown(value: Any, schema: dict[str, Any], schemas: dict[str, Any], at: str) -> list[str]:
    ref = _schema_ref(schema)
    if ref is not None:
        schema = schemas.get(ref, {})
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [
            found
            for i, item in enumerate(value)
            for found in _unknown(item, schema["items"], schemas, f"{at}[{i}]")
        ]
    if not isinstance(value, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(schema.get("additionalProperties"), dict):
        inner = schema["additionalProperties"]
        return [
            found for key, item in value.items() for found in _unknown(item, inner, schemas, f"{at}.{key}")
        ]
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    found: list[str] = []
    for key, item in value.items():
        path = f"{at}.{key}" if at else key
        if key.startswith("$"):  # a strategic merge patch's directives ($patch, $setElementOrder/...)
            continue
        if key not in properties:
            found.append(path)
        else:
            found.extend(_unknown(item, properties[key], schemas, path))
    return found


def unknown_fields(group: str, version: str, kind: str, obj: Any) -> list[str]:
    """The fields of ``obj`` (or of a merge patch to it) that its kind's schema does not know, as
    ``spec.replicass``; what a request with ``fieldValidation=Strict`` (kubectl's) is refused for."""
    found = _kind_schema(group, version, kind)
    if found is None:
        return []
    schema, name = found
    return _unknown(obj, schema, _parsed(name)["components"]["schemas"], "")
