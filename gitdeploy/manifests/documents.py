"""Parse YAML and JSON files into plain data that remembers where every field was written.

The C-backed parser of ruamel.yaml builds the node graph; this module turns nodes into plain
Python values itself, which is where hostile input is stopped: duplicate keys, custom tags,
alias bombs and cycles, numbers that do not fit in 64 bits, NaN/Infinity, deep nesting (bounded
before the C composer, which recurses on the C stack, ever sees it),
non-UTF-8 bytes and oversized files all become a :class:`~gitdeploy.core.diagnostics.Diagnostic`
pointing at ``file:line:col``, never a crash or a hang.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.tag import Tag

from gitdeploy.core.diagnostics import Diagnostic

MAX_FILE_BYTES = 1024 * 1024
MAX_NODES_PER_BYTE = 20
MIN_NODE_BUDGET = 10_000
MAX_DEPTH = 64
COMPOSE_DEPTH_LIMIT = 1_000
"""Deepest nesting handed to the C composer, which recurses on the C stack once per level (a
60 KB file nested 30,000 levels deep ended the process with a segmentation fault)."""
_LEVEL_INDICATORS = "-:?[{"
"""Every nesting level starts with one of these (a block sequence's ``-``, a block mapping's
``:`` or ``?``, a flow collection's bracket), so text with fewer cannot nest deeper."""
MAX_INT = 2**63 - 1

FieldPath = tuple[str | int, ...]

_YAML_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_YAML_TAG}{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")}

# Memory: keys and string values are interned (sys.intern), so a key or value repeated across
# thousands of manifests ("app", "25%", label values) is one string wherever the parsed apps keep
# it; an interned string is freed with its last user.

# Speed (profiled: ruamel's resolver and tag objects were half of parsing). Implicitly resolved
# nodes share one Tag object per tag, so the builder knows their kind by identity and reads the
# tag text only for the rare explicit tag.
_SHARED_TAGS: dict[str, Tag] = {}
_KIND_OF_SHARED_TAG: dict[int, str] = {}


def _shared_tag(suffix: str) -> Tag:
    tag = _SHARED_TAGS.get(suffix)
    if tag is None:
        tag = _SHARED_TAGS.setdefault(suffix, Tag(suffix=suffix))
        _KIND_OF_SHARED_TAG[id(tag)] = suffix.removeprefix(_YAML_TAG)
    return tag


class _FastResolver(VersionedResolver):
    """ruamel's YAML 1.2 implicit resolution, with its per-scalar version lookup done once.

    The stock resolver asks which YAML version is being parsed three times for every scalar; the
    C parser never reports a ``%YAML`` directive to it, so the answer is fixed per instance.
    """

    _table: dict[Any, list[tuple[str, Any]]] | None = None

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        if kind is not ScalarNode:
            return _MAP_TAG if kind is MappingNode else _SEQ_TAG
        if implicit[0]:
            table = self._table
            if table is None:
                table = self._table = self.versioned_resolver
            for tag, regexp in (*table.get(value[0] if value else "", ()), *table.get(None, ())):
                if regexp.match(value):
                    return _shared_tag(tag)
        return _STR_TAG


_STR_TAG = _shared_tag(f"{_YAML_TAG}str")
_MAP_TAG = _shared_tag(f"{_YAML_TAG}map")
_SEQ_TAG = _shared_tag(f"{_YAML_TAG}seq")
_PER_THREAD = threading.local()


def _yaml() -> YAML:
    """This thread's parser (making one costs as much as parsing a small file)."""
    parser: YAML | None = getattr(_PER_THREAD, "yaml", None)
    if parser is None:
        parser = YAML(typ="safe", pure=False)
        parser.Resolver = _FastResolver
        _PER_THREAD.yaml = parser
    return parser


@contextmanager
def _parsing() -> Iterator[YAML]:
    """This thread's parser (:func:`_yaml`), left holding nothing of what it read. For every call
    ruamel appends a DocInfo to ``doc_infos``, a list that only grows, and keeps the last loader
    (a class of its own, made for that call) and the text until the next call: a parser kept for
    the life of a thread would hold a DocInfo for every file it ever parsed, and a loader frozen
    with the desired state (``gc.freeze``) would stay after it is replaced."""
    parser = _yaml()
    try:
        yield parser
    finally:
        parser.doc_infos.clear()
        for kept in ("_scanner", "_stream"):
            vars(parser).pop(kept, None)


def _tag_of(node: Node) -> str:
    kind = _KIND_OF_SHARED_TAG.get(id(node.ctag))
    return _YAML_TAG + kind if kind is not None else str(node.tag)


@dataclass(frozen=True)
class ManifestFile:
    """A file of the config repo: its path relative to the repo root and its bytes."""

    path: str
    data: bytes


@dataclass
class Document:
    """One YAML/JSON document: plain data plus the 1-based line/column of every field."""

    file: str
    index: int
    line: int
    column: int
    data: Any
    positions: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: FieldPath) -> tuple[int, int]:
        """Where ``path`` was written, or its nearest ancestor that was (a missing field)."""
        for end in range(len(path), 0, -1):
            found = self.positions.get(path[:end])
            if found is not None:
                return found
        return self.line, self.column


class _Invalid(Exception):
    def __init__(self, node: Node | None, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.node = node
        self.message = message
        self.hint = hint


def _at(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    """Turns one document's node graph into plain values, recording field positions."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.positions: dict[FieldPath, tuple[int, int]] = {}

    def build(self, node: Node, path: FieldPath, active: frozenset[int]) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise _Invalid(
                node,
                "the document expands to too many values (a YAML alias bomb?)",
                "write the values out instead of repeating anchors (&) and aliases (*)",
            )
        if len(path) > MAX_DEPTH:
            raise _Invalid(node, f"nested more than {MAX_DEPTH} levels deep", "flatten the document")
        if id(node) in active:
            raise _Invalid(node, "a YAML alias refers to itself", "remove the recursive alias")
        if isinstance(node, ScalarNode):
            return self.build_scalar(node)
        active = active | {id(node)}
        if isinstance(node, SequenceNode):
            self.require_tag(node, _SEQ_TAG)
            out = []
            for i, item in enumerate(node.value):
                self.positions.setdefault((*path, i), _at(item))
                out.append(self.build(item, (*path, i), active))
            return out
        if isinstance(node, MappingNode):
            self.require_tag(node, _MAP_TAG)
            return self.build_mapping(node, path, active)
        raise _Invalid(node, f"unsupported YAML node {type(node).__name__}")

    def build_mapping(self, node: MappingNode, path: FieldPath, active: frozenset[int]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        seen: dict[str, Node] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and _tag_of(key_node) == f"{_YAML_TAG}merge":
                merged.update(self.build_merge(value_node, path, active))
                continue
            if not isinstance(key_node, ScalarNode):
                raise _Invalid(key_node, "a mapping key must be a plain string", "quote the key")
            self.build(key_node, path, active)  # rejects custom tags on keys
            key = sys.intern(str(key_node.value))
            if key in seen:
                first_line, _ = _at(seen[key])
                raise _Invalid(
                    key_node,
                    f"duplicate key '{key}' (first defined on line {first_line})",
                    "remove one of the two; YAML keeps only one and gitdeploy will not guess which",
                )
            seen[key] = key_node
            self.positions[(*path, key)] = _at(key_node)
            result[key] = self.build(value_node, (*path, key), active)
        for key, value in merged.items():
            result.setdefault(key, value)
        return result

    def build_merge(self, node: Node, path: FieldPath, active: frozenset[int]) -> dict[str, Any]:
        sources = node.value if isinstance(node, SequenceNode) else [node]
        merged: dict[str, Any] = {}
        for source in sources:
            value = self.build(source, path, active)
            if not isinstance(value, dict):
                raise _Invalid(source, "a merge key (<<) must name a mapping")
            for key, item in value.items():
                merged.setdefault(key, item)
        return merged

    def require_tag(self, node: Node, expected: Tag) -> None:
        if node.ctag is expected:
            return
        tag = _tag_of(node)
        if tag != str(expected):
            raise _Invalid(node, f"custom YAML tag '{tag}' is not allowed", "remove the tag")

    def build_scalar(self, node: ScalarNode) -> Any:
        text = str(node.value)
        kind = _KIND_OF_SHARED_TAG.get(id(node.ctag))
        if kind is None:
            tag = str(node.tag)
            if tag not in _SCALAR_TAGS:
                raise _Invalid(node, f"custom YAML tag '{tag}' is not allowed", "remove the tag")
            kind = tag[len(_YAML_TAG) :]
        if kind in ("str", "timestamp"):
            return sys.intern(text)
        if kind == "null":
            return None
        if kind == "bool":
            return text.lower() == "true"
        if kind == "int":
            return self.build_int(node, text)
        special = text.lower().lstrip("+-") in (".inf", ".nan")
        number = None if special else float(text.replace("_", ""))
        if number is None or number != number or number in (float("inf"), float("-inf")):
            raise _Invalid(node, f"'{text}' is not a finite number", "use a finite number or quote it")
        return number

    def build_int(self, node: ScalarNode, text: str) -> int:
        cleaned = text.replace("_", "")
        sign = -1 if cleaned.startswith("-") else 1
        digits = cleaned.lstrip("+-")
        if len(digits) > 40:
            raise _Invalid(node, "number too large", f"numbers must fit in 64 bits, at most {MAX_INT}")
        if digits.startswith(("0x", "0X")):
            value = int(digits[2:], 16)
        elif digits.startswith(("0o", "0O")):
            value = int(digits[2:], 8)
        elif len(digits) > 1 and digits.startswith("0"):  # octal, as Kubernetes reads YAML (1.1)
            if not set(digits) <= set("01234567"):
                raise _Invalid(
                    node,
                    f"'{text}' has a leading 0, which makes it octal for Kubernetes, but is not octal",
                    f"write it without the leading 0 ({int(digits, 10)}) or quote it",
                )
            value = int(digits, 8)
        else:
            value = int(digits, 10)
        value *= sign
        if abs(value) > MAX_INT:
            raise _Invalid(node, "number too large", f"numbers must fit in 64 bits, at most {MAX_INT}")
        return value


def _line_of_offset(text: bytes, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count(b"\n") + 1
    return line, offset - (before.rfind(b"\n") + 1) + 1


def _problem(file: str, line: int, column: int, message: str, hint: str = "") -> Diagnostic:
    return Diagnostic(file=file, line=line, column=column, app="", message=message, hint=hint)


def parse_documents(source: ManifestFile) -> tuple[list[Document], list[Diagnostic]]:
    """Every document of a YAML (multi-document) or JSON file, or the reason it cannot be read.

    A file with a syntax error yields no documents at all: a half-read file must never deploy.
    """
    path = source.path
    if len(source.data) > MAX_FILE_BYTES:
        return [], [
            _problem(
                path,
                1,
                1,
                f"file is {len(source.data)} bytes, over the {MAX_FILE_BYTES} byte limit",
                "split it into several files",
            )
        ]
    try:
        text = source.data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line, column = _line_of_offset(source.data, bad.start)
        return [], [_problem(path, line, column, "file is not valid UTF-8", "save it as UTF-8")]
    text = text.removeprefix("\ufeff")
    if path.endswith(".json"):
        try:
            json.loads(text)
        except json.JSONDecodeError as bad:
            return [], [
                _problem(path, bad.lineno, bad.colno, f"invalid JSON: {bad.msg}", "fix the JSON syntax here")
            ]
        except RecursionError:
            return [], [_problem(path, 1, 1, "JSON nested too deeply", "flatten the document")]
        documents, problems = _compose(path, text)
        if problems and problems[0].message.startswith("invalid YAML"):
            # Valid JSON that the YAML parser rejects (surrogate-pair escapes, say): keep the JSON
            # values, checked the same way, with positions at the document only.
            return _json_document(path, text)
        return documents, problems
    return _compose(path, text)


def _json_document(path: str, text: str) -> tuple[list[Document], list[Diagnostic]]:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"duplicate key '{key}'")
            out[key] = value
        return out

    def bounded(digits: str) -> int:
        value = int(digits) if len(digits) <= 40 else MAX_INT + 1
        if abs(value) > MAX_INT:
            raise ValueError("number too large")
        return value

    def no_constants(name: str) -> Any:
        raise ValueError(f"'{name}' is not a finite number")

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_int=bounded, parse_constant=no_constants)
    except ValueError as bad:
        return [], [_problem(path, 1, 1, str(bad), "fix the value")]
    return [Document(path, 0, 1, 1, data)], []


def _too_deep(path: str, text: str) -> Diagnostic | None:
    """Where ``text`` nests deeper than :data:`COMPOSE_DEPTH_LIMIT`, found before composing.

    Counting the level indicators rules out almost every file at once; the others go through
    libyaml's event parser, which keeps its nesting on a heap stack (no recursion), and stops at
    the first level too deep. A syntax error is left for the composer to report: it stops there too.
    """
    if sum(text.count(c) for c in _LEVEL_INDICATORS) <= COMPOSE_DEPTH_LIMIT:
        return None
    depth = 0
    try:
        with _parsing() as parser, closing(parser.parse(text)) as events:
            for event in events:
                if isinstance(event, CollectionStartEvent):
                    depth += 1
                    if depth > COMPOSE_DEPTH_LIMIT:
                        line, column = event.start_mark.line + 1, event.start_mark.column + 1
                        return _problem(
                            path,
                            line,
                            column,
                            f"nested more than {MAX_DEPTH} levels deep",
                            "flatten the document",
                        )
                elif isinstance(event, CollectionEndEvent):
                    depth -= 1
    except YAMLError:
        return None
    return None


def _compose(path: str, text: str) -> tuple[list[Document], list[Diagnostic]]:
    too_deep = _too_deep(path, text)
    if too_deep is not None:
        return [], [too_deep]
    budget = max(MIN_NODE_BUDGET, MAX_NODES_PER_BYTE * len(text))
    documents: list[Document] = []
    try:
        with _parsing() as parser, closing(parser.compose_all(text)) as roots:
            for index, root in enumerate(roots):
                if root is None:
                    continue
                builder = _Builder(budget)
                data = builder.build(root, (), frozenset())
                budget = builder.budget
                if data is None:  # an empty document, as between two '---' lines
                    continue
                line, column = _at(root)
                documents.append(Document(path, index, line, column, data, builder.positions))
    except _Invalid as bad:
        line, column = _at(bad.node) if bad.node is not None else (1, 1)
        return [], [_problem(path, line, column, bad.message, bad.hint)]
    except MarkedYAMLError as bad:
        mark = bad.problem_mark or bad.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        what = " ".join(part for part in (bad.context, bad.problem) if part)
        return [], [_problem(path, line, column, f"invalid YAML: {what}", "fix the YAML syntax here")]
    except YAMLError as bad:
        return [], [_problem(path, 1, 1, f"invalid YAML: {bad}", "fix the YAML syntax")]
    except RecursionError:
        return [], [_problem(path, 1, 1, "YAML nested too deeply", "flatten the document")]
    return documents, []
