"""Hostile and malformed input: every case becomes a diagnostic at the right place, never a crash."""

from __future__ import annotations

import pytest

from gitdeploy.manifests.documents import MAX_FILE_BYTES, ManifestFile, parse_documents

HOSTILE = [
    # (id, file name, content, expected line, message fragment)
    ("yaml-syntax", "a.yaml", b"a: [1,\nb: 2\n", 3, "invalid YAML"),
    ("json-missing-comma", "a.json", b'{\n  "a": 1\n  "b": 2\n}\n', 3, "invalid JSON: Expecting ','"),
    ("json-trailing-garbage", "a.json", b'{"a": 1}\n}\n', 2, "invalid JSON"),
    (
        "duplicate-key",
        "a.yaml",
        b"metadata:\n  name: a\n  name: b\n",
        3,
        "duplicate key 'name' (first defined on line 2)",
    ),
    ("duplicate-key-json", "a.json", b'{"a": 1,\n "a": 2}', 2, "duplicate key 'a'"),
    ("custom-tag", "a.yaml", b"a: !!python/object:os.system ls\n", 1, "custom YAML tag"),
    ("custom-local-tag", "a.yaml", b"a: !secret x\n", 1, "custom YAML tag '!secret'"),
    ("custom-tag-on-map", "a.yaml", b"a: !thing {b: 1}\n", 1, "custom YAML tag"),
    ("binary-tag", "a.yaml", b"a: !!binary aGVsbG8=\n", 1, "custom YAML tag"),
    (
        "alias-bomb",
        "a.yaml",
        b"a: &a [x, x, x, x, x, x, x, x, x]\n"
        b"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
        b"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
        b"f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
        0,
        "too many values",
    ),
    ("recursive-alias", "a.yaml", b"a: &a [*a]\n", 1, "refers to itself"),
    ("undefined-alias", "a.yaml", b"a: *nope\n", 1, "invalid YAML"),
    ("huge-int", "a.yaml", b"spec:\n  replicas: 99999999999999999999\n", 2, "number too large"),
    ("huge-int-digits", "a.yaml", b"n: " + b"9" * 5000 + b"\n", 1, "number too large"),
    ("huge-int-json", "a.json", b'{"replicas":\n 1' + b"0" * 30 + b"}", 2, "number too large"),
    ("nan", "a.yaml", b"a: .nan\n", 1, "not a finite number"),
    ("inf", "a.yaml", b"a: -.inf\n", 1, "not a finite number"),
    ("leading-zero-not-octal", "a.yaml", b"a: 1\nmode: 0789\n", 2, "leading 0"),
    ("non-utf8", "a.yaml", b"a: 1\nb: caf\xe9\n", 2, "not valid UTF-8"),
    ("too-deep", "a.yaml", b"a: " + b"[" * 200 + b"]" * 200 + b"\n", 0, "nested"),
    ("too-deep-json", "a.json", b"[" * 100000 + b"]" * 100000, 1, "nested too deeply"),
    # Deep enough to overflow the C composer's stack (a segmentation fault) if it ever saw them
    ("deep-flow", "a.yaml", b"a: " + b"[" * 30000 + b"]" * 30000 + b"\n", 1, "nested more than"),
    ("deep-block-sequence", "a.yaml", b"- " * 30000 + b"x\n", 1, "nested more than"),
    ("deep-indentation", "a.yaml", b"".join(b" " * i + b"k:\n" for i in range(1100)), 0, "nested more than"),
    ("complex-key", "a.yaml", b"? [a, b]\n: 1\n", 1, "mapping key must be a plain string"),
    ("oversized", "a.yaml", b"a: " + b"x" * (MAX_FILE_BYTES + 1), 1, "over the"),
]


@pytest.mark.parametrize(
    ("name", "content", "line", "fragment"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE]
)
def test_hostile_input_is_a_diagnostic(name: str, content: bytes, line: int, fragment: str) -> None:
    documents, problems = parse_documents(ManifestFile(name, content))
    assert documents == []
    assert len(problems) == 1
    assert fragment in problems[0].message
    assert problems[0].file == name
    if line:
        assert problems[0].line == line


WELL_FORMED = [
    ("yaml-1.2-booleans", b"a: yes\nb: true\nc: off\n", {"a": "yes", "b": True, "c": "off"}),
    ("numbers", b"a: 0x1f\nb: 0o17\nc: 1.5\nd: -3\n", {"a": 31, "b": 15, "c": 1.5, "d": -3}),
    # As kubectl reads them (Kubernetes decodes YAML 1.1 numbers): 0644 is octal, a file mode
    ("leading-zero-octal", b"a: 0644\nb: 0400\nc: 0\nd: -010\n", {"a": 420, "b": 256, "c": 0, "d": -8}),
    ("leading-dot-float", b"a: .5\nb: -.25\nc: 1e3\n", {"a": 0.5, "b": -0.25, "c": 1000.0}),
    ("null-forms", b"a: ~\nb:\nc: null\n", {"a": None, "b": None, "c": None}),
    ("timestamp-stays-text", b"a: 2001-12-14\n", {"a": "2001-12-14"}),
    (
        "merge-key",
        b"base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n",
        {"base": {"x": 1, "y": 2}, "c": {"x": 1, "y": 3}},
    ),
    ("small-alias", b"a: &a [1]\nb: *a\n", {"a": [1], "b": [1]}),
    ("bom", b"\xef\xbb\xbfa: 1\n", {"a": 1}),
    ("numeric-key-is-text", b"1: a\n", {"1": "a"}),
]


@pytest.mark.parametrize(
    ("content", "expected"), [c[1:] for c in WELL_FORMED], ids=[c[0] for c in WELL_FORMED]
)
def test_well_formed_values(content: bytes, expected: object) -> None:
    documents, problems = parse_documents(ManifestFile("a.yaml", content))
    assert problems == []
    assert documents[0].data == expected


def test_multi_document_yaml_keeps_each_documents_line_and_field_positions() -> None:
    content = b"# comment\na: 1\n---\nb:\n  c: [x, y]\n---\n---\nd: 2\n"
    documents, problems = parse_documents(ManifestFile("m.yaml", content))
    assert problems == []
    assert [d.data for d in documents] == [{"a": 1}, {"b": {"c": ["x", "y"]}}, {"d": 2}]
    assert [d.line for d in documents] == [2, 4, 8]
    assert documents[1].positions[("b", "c")] == (5, 3)
    assert documents[1].positions[("b", "c", 1)] == (5, 10)
    # a missing field points at its nearest written ancestor
    assert documents[1].position(("b", "c", "nope", "deeper")) == (5, 3)
