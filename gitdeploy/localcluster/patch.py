"""The three patch formats of the Kubernetes API, as pure functions on JSON values.

* :func:`merge_patch` — JSON merge patch (RFC 7386, ``application/merge-patch+json``).
* :func:`json_patch` — JSON patch (RFC 6902, ``application/json-patch+json``).
* :func:`strategic_merge_patch` — Kubernetes strategic merge patch
  (``application/strategic-merge-patch+json``) for the fields gitdeploy and kubectl use: lists of
  containers, env, ports, volumes, conditions, owner references... merge by their key; other lists
  are replaced; ``$patch: replace|delete`` and ``$setElementOrder``/``$retainKeys`` are understood.

Inputs are never mutated; every function returns a new value.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ["MERGE_KEYS", "PatchError", "apply_patch", "json_patch", "merge_patch", "strategic_merge_patch"]

JSON = Any

#: List fields merged element by element in a strategic merge patch, with the key that identifies
#: an element. Any other list is replaced as a whole, as Kubernetes does for unknown lists.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "envFrom": "prefix",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "conditions": "type",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "tolerations": "key",
}

#: Lists of scalars that strategic merge patch treats as sets (merged, not replaced).
MERGED_SCALAR_LISTS = frozenset({"finalizers"})


class PatchError(ValueError):
    """The patch is malformed or cannot be applied to the document."""


def merge_patch(target: JSON, patch: JSON) -> JSON:
    """Apply a JSON merge patch: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- JSON patch --------------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError(f"array index {index} out of range")
    return index


def _parent(document: JSON, tokens: list[str]) -> JSON:
    current = document
    for token in tokens[:-1]:
        if isinstance(current, dict):
            if token not in current:
                raise PatchError(f"path segment {token!r} does not exist")
            current = current[token]
        elif isinstance(current, list):
            current = current[_index(current, token, allow_end=False)]
        else:
            raise PatchError(f"cannot descend into a scalar at {token!r}")
    return current


def _get(document: JSON, path: str) -> JSON:
    tokens = _pointer(path)
    if not tokens:
        return document
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise PatchError(f"path {path!r} does not exist")


def _remove(document: JSON, path: str) -> JSON:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} does not exist")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, allow_end=False))
    raise PatchError(f"path {path!r} does not exist")


def _add(document: JSON, path: str, value: JSON) -> JSON:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchError(f"cannot add at {path!r}")
    return document


def _op_add(document: JSON, path: str, operation: dict[str, Any]) -> JSON:
    return _add(document, path, copy.deepcopy(operation["value"]))


def _op_remove(document: JSON, path: str, operation: dict[str, Any]) -> JSON:
    _remove(document, path)
    return document


def _op_replace(document: JSON, path: str, operation: dict[str, Any]) -> JSON:
    _get(document, path)
    if _pointer(path):
        _remove(document, path)
    return _add(document, path, copy.deepcopy(operation["value"]))


def _op_move_or_copy(document: JSON, path: str, operation: dict[str, Any]) -> JSON:
    op, source = operation["op"], operation.get("from")
    if not isinstance(source, str):
        raise PatchError(f"operation {op!r} needs 'from'")
    value = _remove(document, source) if op == "move" else copy.deepcopy(_get(document, source))
    return _add(document, path, value)


def _op_test(document: JSON, path: str, operation: dict[str, Any]) -> JSON:
    if _get(document, path) != operation["value"]:
        raise PatchError(f"test failed at {path!r}")
    return document


_JSON_PATCH_OPERATIONS: dict[str, Callable[[JSON, str, dict[str, Any]], JSON]] = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move_or_copy,
    "copy": _op_move_or_copy,
    "test": _op_test,
}


def json_patch(target: JSON, operations: JSON) -> JSON:
    """Apply a JSON patch (a list of ``add``/``remove``/``replace``/``move``/``copy``/``test`` operations)."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    document = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise PatchError(f"invalid JSON patch operation {operation!r}")
        op = operation["op"]
        apply = _JSON_PATCH_OPERATIONS.get(op)
        if apply is None:
            raise PatchError(f"unknown JSON patch operation {op!r}")
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchError(f"operation {op!r} needs a value")
        document = apply(document, operation["path"], operation)
    return document


# --- strategic merge patch ---------------------------------------------------------------------


def _merge_keyed_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    key = MERGE_KEYS[field]
    result = [copy.deepcopy(item) for item in original]
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"elements of {field!r} must be objects")
        directive = item.get("$patch")
        if directive == "replace":
            kept = [{k: v for k, v in entry.items() if k != "$patch"} for entry in patch]
            return [copy.deepcopy(entry) for entry in kept if entry]
        position = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(key) == item.get(key)
            ),
            None,
        )
        if directive == "delete":
            if position is not None:
                result.pop(position)
            continue
        if position is None:
            result.append(strategic_merge_patch({}, item))
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result


def strategic_merge_patch(target: JSON, patch: JSON) -> JSON:
    """Apply a Kubernetes strategic merge patch for the list fields in :data:`MERGE_KEYS`."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for field, value in patch.items():
        if field.startswith("$setElementOrder/") or field in ("$retainKeys", "$patch"):
            continue
        if field.startswith("$deleteFromPrimitiveList/"):
            name = field.split("/", 1)[1]
            current = result.get(name)
            if isinstance(current, list) and isinstance(value, list):
                result[name] = [item for item in current if item not in value]
            continue
        merged = _merged_field(field, result.get(field), value)
        if merged is None:
            result.pop(field, None)
        else:
            result[field] = merged
    return result


def _merged_field(field: str, current: JSON, value: JSON) -> JSON:
    """The value of one field after a strategic merge patch sets it to ``value`` (None: removed)."""
    if value is None:
        return None
    if isinstance(value, list) and field in MERGE_KEYS:
        return _merge_keyed_list(field, current if isinstance(current, list) else [], value)
    if isinstance(value, list) and field in MERGED_SCALAR_LISTS and isinstance(current, list):
        merged = list(current)
        merged.extend(item for item in value if item not in merged)
        return merged
    if isinstance(value, dict):
        return strategic_merge_patch(current, value)
    return copy.deepcopy(value)


def apply_patch(content_type: str, target: JSON, patch: JSON) -> JSON:
    """Apply ``patch`` according to the request's ``Content-Type``."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/json-patch+json":
        return json_patch(target, patch)
    if kind == "application/merge-patch+json":
        if not isinstance(patch, dict):
            raise PatchError("a merge patch must be an object")
        return merge_patch(target, patch)
    if kind == "application/strategic-merge-patch+json":
        if not isinstance(patch, dict):
            raise PatchError("a strategic merge patch must be an object")
        return strategic_merge_patch(target, patch)
    raise PatchError(f"unsupported patch type {content_type!r}")
