"""The JSON Schemas of ``schemas/`` (draft 2020-12) and the messages their violations become."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_DIR = Path(__file__).parent / "schemas"
SCHEMA_BASE = "https://gitdeploy.io/schemas/"
SCHEMA_FILES = {
    "Deployment": "deployment.schema.json",
    "DeploymentConfig": "deploymentconfig.schema.json",
    "ImageStream": "imagestream.schema.json",
    "RepoSettings": "settings.schema.json",
    "Rollout": "rollout.schema.json",
    "AnalysisTemplate": "analysistemplate.schema.json",
}
UNSUPPORTED = "x-unsupported"
"""A schema keyword of gitdeploy's: ``{"not": {}, "x-unsupported": why, "description": what to
do instead}`` refuses a field that Argo Rollouts has and gitdeploy cannot honour, saying why."""


@cache
def _registry() -> Registry[Any]:
    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append((SCHEMA_BASE + path.name, Resource.from_contents(contents, DRAFT202012)))
    registry: Registry[Any] = Registry().with_resources(resources)
    return registry


@cache
def _schema_file(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return loaded


def _inline_refs(node: Any, file: str, seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``$ref`` replaced by a copy of what it names (the schemas are not recursive).

    Validating then never looks a reference up; profiled, the lookups were a quarter of validation.
    A ``$ref`` becomes a one-item ``allOf`` (with its sibling keywords kept), which validates and
    reports exactly as the reference did.
    """
    if isinstance(node, list):
        return [_inline_refs(item, file, seen) for item in node]
    if not isinstance(node, dict):
        return node
    inlined = {key: _inline_refs(value, file, seen) for key, value in node.items() if key != "$ref"}
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return inlined
    target_file, _, pointer = ref.partition("#")
    target_file = target_file.removeprefix(SCHEMA_BASE) or file
    if ref in seen or len(seen) > 32:
        raise ValueError(f"recursive $ref {ref} in {file}")
    target: Any = _schema_file(target_file)
    for part in (p for p in pointer.split("/") if p):
        target = target[part.replace("~1", "/").replace("~0", "~")]
    resolved = _inline_refs(target, target_file, (*seen, f"{target_file}#{pointer}"))
    return {**inlined, "allOf": [*inlined.get("allOf", ()), resolved]}


@cache
def validator_for(kind: str) -> Draft202012Validator:
    """A compiled validator for one of the kinds in :data:`SCHEMA_FILES`."""
    schema = _inline_refs(_schema_file(SCHEMA_FILES[kind]), SCHEMA_FILES[kind])
    return Draft202012Validator(schema, registry=_registry())


def suggest(word: str, choices: list[str]) -> str:
    """``did you mean 'x'?`` for a near miss, else an empty string."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    return f"did you mean '{close[0]}'?" if close else ""


def dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null"


def describe_violation(error: ValidationError) -> tuple[tuple[str | int, ...], str, str]:
    """Turn one schema violation into (field path, message, hint) a person can act on."""
    path = tuple(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    description = str(schema.get("description", ""))
    field = dotted(path) or "the document"
    value = error.instance
    expected: Any = error.validator_value
    if error.validator == "required":
        missing = [name for name in expected if not (isinstance(value, dict) and name in value)]
        name = missing[0] if missing else "?"
        sub = schema.get("properties", {}).get(name, {})
        hint = str(sub.get("description", "")) if isinstance(sub, dict) else ""
        return path, f"missing required field '{dotted((*path, name))}'", hint or f"add '{name}'"
    if error.validator == "not" and UNSUPPORTED in schema:
        return path, f"{field} is not supported: {schema[UNSUPPORTED]}", description
    if error.validator == "additionalProperties":
        known = _known_fields(schema)
        extra = sorted(k for k in value if k not in known) if isinstance(value, dict) else []
        name = extra[0] if extra else "?"
        hint = suggest(name, known) or f"known fields here: {', '.join(known)}"
        return (*path, name), f"unknown field '{dotted((*path, name))}'", hint
    if error.validator in ("enum", "const"):
        allowed = [str(v) for v in expected] if error.validator == "enum" else [str(expected)]
        near = suggest(str(value), allowed) if isinstance(value, str) else ""
        hint = near or f"use {' or '.join(allowed)}"
        return path, f"{field} is {json.dumps(value)}; expected {' or '.join(allowed)}", hint
    if error.validator == "type":
        if expected == "integer" and isinstance(value, str) and value.strip().isdigit():
            description = f"write {value.strip()} without quotes"
        return (
            path,
            f"{field} must be {_expected_types(error.validator_value)}, not {_type_name(value)}",
            description,
        )
    if error.validator == "oneOf":
        return path, f"{field} is {json.dumps(value)}, which is not valid", description
    if error.validator in ("minimum", "maximum", "minLength", "maxLength", "minItems", "minProperties"):
        limits = {
            "minimum": f"at least {error.validator_value}",
            "maximum": f"at most {error.validator_value}",
            "minLength": "not empty"
            if error.validator_value == 1
            else f"{error.validator_value}+ characters",
            "maxLength": f"at most {error.validator_value} characters",
            "minItems": f"a list of at least {error.validator_value} item(s)",
            "minProperties": "not empty",
        }
        return path, f"{field} must be {limits[str(error.validator)]}", description
    if error.validator == "pattern":
        return path, f"{field} is {json.dumps(value)}, which is not valid", description
    return path, f"{field}: {error.message}", description


def _known_fields(schema: dict[str, Any]) -> list[str]:
    """The fields a mapping may have, those refused as unsupported left out."""
    properties: dict[str, Any] = schema.get("properties", {})
    return sorted(k for k, v in properties.items() if not (isinstance(v, dict) and UNSUPPORTED in v))


def _expected_types(expected: Any) -> str:
    names = [expected] if isinstance(expected, str) else list(expected)
    words = {
        "integer": "an integer",
        "string": "a string",
        "object": "a mapping",
        "array": "a list",
        "boolean": "true or false",
        "number": "a number",
    }
    return " or ".join(words.get(n, n) for n in names)


def iter_violations(kind: str, data: Any) -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """Every violation of the kind's schema, most specific first, as (path, message, hint); each
    once (a schema may require a field in two places: the manifest misses it once)."""
    errors = sorted(validator_for(kind).iter_errors(data), key=lambda e: (len(e.absolute_path), str(e.path)))
    said: set[tuple[tuple[str | int, ...], str]] = set()
    for error in errors:
        path, message, hint = describe_violation(error)
        if (path, message) in said:
            continue
        said.add((path, message))
        yield path, message, hint or f"the fields and their forms are in schemas/{SCHEMA_FILES[kind]}"
