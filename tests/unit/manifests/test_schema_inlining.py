"""Validators with their ``$ref``s inlined report exactly what the schemas with references report."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from gitdeploy.manifests.documents import ManifestFile, parse_documents
from gitdeploy.manifests.schemas import (
    SCHEMA_DIR,
    SCHEMA_FILES,
    _registry,
    describe_violation,
    validator_for,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _with_references(kind: str, data: Any) -> list[tuple[Any, ...]]:
    schema = json.loads((SCHEMA_DIR / SCHEMA_FILES[kind]).read_text(encoding="utf-8"))
    errors = Draft202012Validator(schema, registry=_registry()).iter_errors(data)
    return [describe_violation(e) for e in sorted(errors, key=lambda e: (len(e.absolute_path), str(e.path)))]


def _inlined(kind: str, data: Any) -> list[tuple[Any, ...]]:
    errors = validator_for(kind).iter_errors(data)
    return [describe_violation(e) for e in sorted(errors, key=lambda e: (len(e.absolute_path), str(e.path)))]


def _example_documents() -> list[Any]:
    found = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        documents, _ = parse_documents(ManifestFile(path.name, path.read_bytes()))
        found += [d.data for d in documents if d.data.get("kind") in SCHEMA_FILES]
    return found


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in items:
        found += [(*prefix, key), *_paths(value, (*prefix, key))]
    return found


MUTATIONS = {
    "a string": lambda parent, key: parent.__setitem__(key, "not valid"),
    "a number": lambda parent, key: parent.__setitem__(key, -5),
    "an empty list": lambda parent, key: parent.__setitem__(key, []),
    "removed": lambda parent, key: parent.__delitem__(key),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_every_field_of_the_examples_broken_reports_the_same(mutation: str) -> None:
    documents = _example_documents()
    assert len(documents) >= 5
    compared = 0
    for document in documents:
        for path in _paths(document):
            broken = copy.deepcopy(document)
            parent = broken
            for part in path[:-1]:
                parent = parent[part]
            MUTATIONS[mutation](parent, path[-1])
            expected = _with_references(document["kind"], broken)
            assert _inlined(document["kind"], broken) == expected, (path, mutation)
            compared += bool(expected)
    assert compared > 50
