"""Label and field selectors, as the Kubernetes API understands them.

Pure functions only: parse a selector string once into a list of requirements, then match it
against many objects. Supported label forms: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
``k notin (a,b)``, ``k`` (exists) and ``!k`` (does not exist). Field selectors support ``=``,
``==`` and ``!=`` on any dotted path of the object (``metadata.name``, ``status.phase``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FieldRequirement",
    "LabelRequirement",
    "SelectorError",
    "field_value",
    "label_selector_from_object",
    "label_selector_to_string",
    "matches_fields",
    "matches_labels",
    "parse_field_selector",
    "parse_label_selector",
]

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET_FORM = re.compile(r"^(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


class SelectorError(ValueError):
    """The selector string cannot be parsed."""


@dataclass(frozen=True)
class LabelRequirement:
    """One term of a label selector. ``op`` is one of ``=``, ``!=``, ``in``, ``notin``, ``exists``, ``!``."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        # "!=" and "notin" also match objects without the label, as in Kubernetes.
        return not present or value not in self.values


@dataclass(frozen=True)
class FieldRequirement:
    """One term of a field selector: ``path`` compared (``=`` or ``!=``) with ``value`` as a string."""

    path: str
    op: str
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        equal = field_value(obj, self.path) == self.value
        return equal if self.op == "=" else not equal


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced parenthesis in {text!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise SelectorError(f"unbalanced parenthesis in {text!r}")
    parts.append("".join(current))
    return parts


def _check_key(key: str) -> str:
    if not _KEY.match(key) or len(key) > 317:
        raise SelectorError(f"invalid label key {key!r}")
    return key


def _check_value(value: str) -> str:
    if not _VALUE.match(value) or len(value) > 63:
        raise SelectorError(f"invalid label value {value!r}")
    return value


def _parse_term(term: str) -> LabelRequirement:
    if term.startswith("!"):
        return LabelRequirement(_check_key(term[1:].strip()), "!")
    set_form = _SET_FORM.match(term)
    if set_form:
        values = tuple(_check_value(v.strip()) for v in set_form.group("values").split(","))
        return LabelRequirement(_check_key(set_form.group("key")), set_form.group("op"), values)
    for token, op in (("!=", "!="), ("==", "="), ("=", "=")):
        if token in term:
            key, _, value = term.partition(token)
            return LabelRequirement(_check_key(key.strip()), op, (_check_value(value.strip()),))
    return LabelRequirement(_check_key(term), "exists")


def parse_label_selector(text: str | None) -> list[LabelRequirement]:
    """Parse a ``labelSelector`` query value; an empty or missing selector matches everything."""
    if text is None or not text.strip():
        return []
    requirements = []
    for raw in _split_top_level(text):
        term = raw.strip()
        if not term:
            raise SelectorError(f"empty term in label selector {text!r}")
        requirements.append(_parse_term(term))
    return requirements


def matches_labels(requirements: list[LabelRequirement], labels: Mapping[str, str] | None) -> bool:
    """True when every requirement holds for ``labels``."""
    present = labels or {}
    return all(requirement.matches(present) for requirement in requirements)


def parse_field_selector(text: str | None) -> list[FieldRequirement]:
    """Parse a ``fieldSelector`` query value (``a.b=c``, ``a.b==c``, ``a.b!=c``, comma separated)."""
    if text is None or not text.strip():
        return []
    requirements = []
    for raw in text.split(","):
        term = raw.strip()
        requirements.append(_parse_field_term(term))
    return requirements


def _parse_field_term(term: str) -> FieldRequirement:
    for token, op in (("!=", "!="), ("==", "="), ("=", "=")):
        if token in term:
            path, _, value = term.partition(token)
            if path.strip():
                return FieldRequirement(path.strip(), op, value.strip())
            break
    raise SelectorError(f"invalid field selector term {term!r}")


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The value at a dotted path, as the string a field selector compares with ("" when absent)."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return ""
        current = current[part]
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def matches_fields(requirements: list[FieldRequirement], obj: Mapping[str, Any]) -> bool:
    """True when every field requirement holds for ``obj``."""
    return all(requirement.matches(obj) for requirement in requirements)


_EXPRESSION_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def label_selector_from_object(selector: Mapping[str, Any] | None) -> list[LabelRequirement]:
    """Requirements of a ``LabelSelector`` object (``matchLabels`` and ``matchExpressions``)."""
    if not selector:
        return []
    requirements = [
        LabelRequirement(key, "=", (str(value),))
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    for expression in selector.get("matchExpressions") or []:
        operator = expression.get("operator")
        if operator not in _EXPRESSION_OPS:
            raise SelectorError(f"unknown matchExpressions operator {operator!r}")
        values = tuple(str(v) for v in expression.get("values") or [])
        requirements.append(
            LabelRequirement(str(expression.get("key", "")), _EXPRESSION_OPS[operator], values)
        )
    return requirements


def label_selector_to_string(requirements: list[LabelRequirement]) -> str:
    """The canonical string form, e.g. for ``Scale.status.selector``."""
    terms = []
    for requirement in requirements:
        if requirement.op in ("=", "!="):
            terms.append(f"{requirement.key}{requirement.op}{requirement.values[0]}")
        elif requirement.op in ("in", "notin"):
            terms.append(f"{requirement.key} {requirement.op} ({','.join(requirement.values)})")
        elif requirement.op == "exists":
            terms.append(requirement.key)
        else:
            terms.append(f"!{requirement.key}")
    return ",".join(terms)
