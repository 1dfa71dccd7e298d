"""A readable, field-level diff of two pod templates, for plans and pull-request comments.

A template is flattened into ``(scope, field) -> value`` pairs and the two flattenings are compared:

* the scope is ``container <name>`` for each container, ``init container <name>`` for each init
  container and ``pod`` for everything else;
* lists of objects are keyed by what identifies an item, not by position: containers, env vars,
  volumes and image pull secrets by ``name``, volume mounts by ``mountPath``, ports by ``name`` (or
  ``containerPort/protocol`` when unnamed); so reordering env vars is no change and adding one env var
  is one line, not a shifted list;
* lists of plain values (``command``, ``args``) are one value, shown as compact JSON;
* ``env`` items with only a ``value`` show the value itself (``env.LOG_LEVEL: debug``).

Worked example: bumping the image and adding one env var of container ``web``::

    before = {"spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}
    after  = {"spec": {"containers": [{"name": "web", "image": "nginx:1.26",
                                       "env": [{"name": "MODE", "value": "fast"}]}]}}

gives ``container web  env.MODE: (none) -> fast`` and ``container web  image: nginx:1.25 -> nginx:1.26``
(see :func:`diff_templates`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gitdeploy.core.models import PodTemplate
from gitdeploy.core.serverdefaults import with_server_defaults

POD_SCOPE = "pod"
SET_MARKER = "(set)"
"""The value shown for a list item that has nothing but its key (an image pull secret)."""

_CONTAINER_LISTS = {"containers": "container", "initContainers": "init container"}
_ITEM_KEYS = ("name", "mountPath", "devicePath")


class FieldChangeType(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True)
class FieldChange:
    """One field that differs: where (``scope``, ``field``) and its value before and after.

    ``before`` is ``None`` when the field is new, ``after`` is ``None`` when it was removed.
    """

    scope: str
    field: str
    before: str | None
    after: str | None

    @property
    def type(self) -> FieldChangeType:
        if self.before is None:
            return FieldChangeType.ADDED
        if self.after is None:
            return FieldChangeType.REMOVED
        return FieldChangeType.CHANGED

    def render(self) -> str:
        """``image: nginx:1.25 -> nginx:1.26``; ``(none)`` stands for a missing side.

        >>> FieldChange("container web", "image", "nginx:1.25", "nginx:1.26").render()
        'image: nginx:1.25 -> nginx:1.26'
        >>> FieldChange("pod", "labels.tier", None, "front").render()
        'labels.tier: (none) -> front'
        """
        return f"{self.field}: {_shown(self.before)} -> {_shown(self.after)}"


def _shown(value: str | None) -> str:
    return "(none)" if value is None else value


def render_value(value: Any) -> str:
    """A flattened leaf as text: strings as they are, everything else as compact JSON.

    >>> render_value("nginx:1.25"), render_value(3), render_value(True), render_value(["sh", "-c"])
    ('nginx:1.25', '3', 'true', '["sh","-c"]')
    """
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _item_key(list_name: str, item: dict[str, Any], index: int) -> tuple[str, dict[str, Any]]:
    """The key of one list item and the item without its key field."""
    if list_name == "ports" and "name" not in item and "containerPort" in item:
        protocol = item.get("protocol", "TCP")
        rest = {k: v for k, v in item.items() if k not in ("containerPort", "protocol")}
        return f"{item['containerPort']}/{protocol}", rest
    for key_field in _ITEM_KEYS:
        if isinstance(item.get(key_field), str):
            return item[key_field], {k: v for k, v in item.items() if k != key_field}
    return f"[{index}]", item


def _keyed(list_name: str, items: list[Any]) -> dict[str, dict[str, Any]] | None:
    """Items keyed by their identity, or ``None`` when the list cannot be keyed that way."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    out: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(items):
        key, rest = _item_key(list_name, item, index)
        if key in out:  # duplicate names: fall back to positions, which always differ
            return {f"[{i}]": dict(item) for i, item in enumerate(items)}
        out[key] = rest
    return out


def _flatten(value: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        if not value:
            out[prefix] = SET_MARKER
            return
        for key in sorted(value):
            _flatten(value[key], f"{prefix}.{key}" if prefix else str(key), out)
        return
    if isinstance(value, list):
        list_name = prefix.rsplit(".", 1)[-1]
        keyed = _keyed(list_name, value)
        if keyed is None:
            out[prefix] = render_value(value)
            return
        for key, rest in keyed.items():
            if set(rest) == {"value"}:
                out[f"{prefix}.{key}"] = render_value(rest["value"])
            else:
                _flatten(rest, f"{prefix}.{key}", out)
        return
    out[prefix] = render_value(value)


def flatten_template(template: PodTemplate) -> dict[tuple[str, str], str]:
    """Every leaf of a template as ``(scope, field) -> value``, containers first, then the pod.

    >>> t = PodTemplate('{"metadata":{"labels":{"app":"web"}},'
    ...                 '"spec":{"containers":[{"image":"nginx:1.25","name":"web"}],"hostNetwork":true}}')
    >>> for (scope, field), value in flatten_template(t).items():
    ...     print(f"{scope} | {field} = {value}")
    container web | image = nginx:1.25
    pod | labels.app = web
    pod | hostNetwork = true
    """
    data = template.to_dict()
    spec = data.get("spec") or {}
    out: dict[tuple[str, str], str] = {}
    for list_name, scope_word in _CONTAINER_LISTS.items():
        for index, container in enumerate(spec.get(list_name) or []):
            if not isinstance(container, dict):
                continue
            name = container.get("name")
            scope = f"{scope_word} {name if isinstance(name, str) else f'[{index}]'}"
            fields: dict[str, str] = {}
            _flatten({k: v for k, v in container.items() if k != "name"}, "", fields)
            out.update({(scope, f): v for f, v in fields.items()})
    pod: dict[str, str] = {}
    meta = data.get("metadata") or {}
    for key in ("labels", "annotations"):
        for label, value in sorted((meta.get(key) or {}).items()):
            pod[f"{key}.{label}"] = render_value(value)
    other_meta = {k: v for k, v in meta.items() if k not in ("labels", "annotations")}
    if other_meta:
        _flatten(other_meta, "metadata", pod)
    _flatten({k: v for k, v in spec.items() if k not in _CONTAINER_LISTS}, "", pod)
    pod.pop("", None)  # an empty spec flattens to one marker with no name
    out.update({(POD_SCOPE, f): v for f, v in pod.items()})
    return out


def diff_templates(before: PodTemplate, after: PodTemplate) -> tuple[FieldChange, ...]:
    """The fields that differ between two templates; empty when they are equal.

    One of them may be read back from the cluster, which stores a template with the API server's
    defaults (:mod:`~gitdeploy.core.serverdefaults`): a field that one side sets and the other
    leaves to the server is compared with the server's default for it (and shown with it). Only
    fields either side sets are shown, so a new container shows its own fields, not its defaults.

    Order: scopes in the order of ``after`` (then scopes only ``before`` has), fields sorted.

    >>> old = PodTemplate('{"spec":{"containers":[{"image":"nginx:1.25","name":"web"}]}}')
    >>> new = PodTemplate('{"spec":{"containers":[{"env":[{"name":"MODE","value":"fast"}],'
    ...                   '"image":"nginx:1.26","name":"web"}]}}')
    >>> for change in diff_templates(old, new):
    ...     print(change.scope, "|", change.render())
    container web | env.MODE: (none) -> fast
    container web | image: nginx:1.25 -> nginx:1.26
    >>> diff_templates(old, old)
    ()
    """
    if before.canonical_json == after.canonical_json:
        return ()
    old, new = flatten_template(before), flatten_template(after)
    old_served, new_served = (
        flatten_template(with_server_defaults(before)),
        flatten_template(with_server_defaults(after)),
    )
    scopes = list(dict.fromkeys([s for s, _ in new] + [s for s, _ in old]))
    changes: list[FieldChange] = []
    for scope in scopes:
        fields = sorted({f for s, f in old if s == scope} | {f for s, f in new if s == scope})
        for name in fields:
            key = (scope, name)
            a, b = old.get(key, old_served.get(key)), new.get(key, new_served.get(key))
            # as the server stores both: a default, or a quantity in other words, is no change
            if a != b and old_served.get(key, a) != new_served.get(key, b):
                changes.append(FieldChange(scope, name, a, b))
    return tuple(changes)


def summarize_changes(changes: tuple[FieldChange, ...], limit: int = 3) -> str:
    """One line for a summary table: the changed images in full, other fields by name.

    >>> summarize_changes((FieldChange("container web", "image", "nginx:1.25", "nginx:1.26"),))
    'web image nginx:1.25 -> nginx:1.26'
    >>> summarize_changes((
    ...     FieldChange("container web", "env.A", None, "1"),
    ...     FieldChange("container web", "env.B", None, "2"),
    ...     FieldChange("pod", "labels.x", None, "y"),
    ...     FieldChange("pod", "hostNetwork", None, "true"),
    ... ))
    'web env.A, web env.B, labels.x and 1 more field(s)'
    """
    images = [c for c in changes if c.field == "image" and c.type is FieldChangeType.CHANGED]
    others = [c for c in changes if c not in images]
    parts = [f"{_short_scope(c.scope)}image {c.before} -> {c.after}" for c in images]
    parts += [f"{_short_scope(c.scope)}{c.field}" for c in others[: max(0, limit - len(parts))]]
    hidden = len(changes) - len(parts)
    text = ", ".join(parts)
    return f"{text} and {hidden} more field(s)" if hidden else text


def _short_scope(scope: str) -> str:
    if scope == POD_SCOPE:
        return ""
    return scope.removeprefix("container ").replace("init container ", "init ") + " "
