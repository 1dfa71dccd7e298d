"""``fieldValidation=Strict`` (what ``kubectl apply`` sends): a write naming a field its kind's
OpenAPI schema does not have is refused, in kube-apiserver's words."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from gitdeploy.localcluster import openapidocs
from gitdeploy.localcluster.apierrors import ApiError
from gitdeploy.localcluster.resources import ResourceType

__all__ = ["refuse_unknown_fields", "unknown_fields"]


def _schema_ref(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None and isinstance(schema.get("allOf"), list) and schema["allOf"]:
        ref = schema["allOf"][0].get("$ref")
    return str(ref).rsplit("/", 1)[-1] if ref else None


def _kind_schema(group: str, version: str, kind: str) -> tuple[dict[str, Any], str] | None:
    """The schema of ``kind`` in its group version's document, and that document's name."""
    name = f"apis/{group}/{version}" if group else f"api/{version}"
    document = openapidocs.parsed(name)
    if document is None:
        return None
    for schema in document["components"]["schemas"].values():
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
    document = openapidocs.parsed(name)
    assert document is not None
    return _unknown(obj, schema, document["components"]["schemas"], "")


def _go_float(value: float) -> str:
    """A float64 as Go's ``%v`` prints it: shortest digits, ``1e+06`` from an exponent of 6 on."""
    if value == 0:
        return "0"
    shortest = Decimal(repr(value)).normalize()
    exponent = shortest.adjusted()
    if -4 <= exponent < 6:
        return f"{shortest:f}"
    sign = "-" if shortest < 0 else ""
    digits = "".join(str(d) for d in shortest.as_tuple().digits)
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _go_value(value: Any) -> str:
    """``value`` (decoded JSON) as Go's ``%+v`` prints the ``map[string]interface{}`` it decodes to."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{_go_value(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, int | float):
        return _go_float(float(value))
    return str(value)


def refuse_unknown_fields(resource: ResourceType, verb: str, content_type: str, body: Any) -> None:
    """400 for a create or update, 422 for a merge or strategic merge patch (JSON patches are not
    checked), with the API server's ``strict decoding error: unknown field "..."``."""
    if "json-patch" in content_type:
        return
    unknown = unknown_fields(resource.group, resource.version, resource.kind, body)
    if not unknown:
        return
    error = "strict decoding error: " + ", ".join(f'unknown field "{field}"' for field in unknown)
    if verb != "patch":
        raise ApiError.bad_request(
            f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}: {error}'
        )
    shown = _go_value(body) if "strategic" in content_type else json.dumps(body, separators=(",", ":"))
    raise ApiError.invalid(
        "", "", "", [("patch", f"Invalid value: {json.dumps(shown, ensure_ascii=False)}: {error}")]
    )
