"""The template hash: golden values, and the properties that make it a safe identity."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitdeploy.core.hashing import (
    HASH_LENGTH,
    SAFE_ALPHABET,
    TEMPLATE_HASH_LABEL,
    canonical_template,
    encode_safe,
    template_hash,
)
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import load_files

NGINX: dict[str, Any] = {
    "metadata": {"labels": {"app": "nginx"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2", "ports": [{"containerPort": 80}]}]},
}

# Pinned: changing any of these would roll every app gitdeploy manages.
GOLDEN = [
    ("seed-002-nginx", NGINX, None, "h6dw5vq2dk"),
    (
        "seed-002-nginx-1.16.1",
        {**NGINX, "spec": {"containers": [{**NGINX["spec"]["containers"][0], "image": "nginx:1.16.1"}]}},
        None,
        "kq6tzpv6kz",
    ),
    ("seed-002-nginx-collision-1", NGINX, 1, "g9nmjvfh4l"),
    (
        "minimal",
        {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        None,
        "md4rwfcl6k",
    ),
]


@pytest.mark.parametrize(
    ("template", "collisions", "expected"), [g[1:] for g in GOLDEN], ids=[g[0] for g in GOLDEN]
)
def test_golden_hashes(template: dict[str, Any], collisions: int | None, expected: str) -> None:
    assert template_hash(canonical_template(template), collisions) == expected


def test_hash_is_short_and_dns_safe() -> None:
    value = template_hash(canonical_template(NGINX))
    assert len(value) == HASH_LENGTH
    assert set(value) <= set(SAFE_ALPHABET)


@pytest.mark.parametrize(
    ("number", "expected"), [(0, "bbb"), (1, "bbc"), (26, "bb9"), (27, "bcb"), (28, "bcc")]
)
def test_encode_safe(number: int, expected: str) -> None:
    assert encode_safe(number, 3) == expected


def test_omitempty_fields_and_the_hash_label_do_not_count() -> None:
    noisy = {
        "metadata": {"labels": {"app": "nginx", TEMPLATE_HASH_LABEL: "whatever"}, "annotations": {}},
        "spec": {
            "containers": [
                {"name": "nginx", "image": "nginx:1.14.2", "ports": [{"containerPort": 80}], "env": []}
            ],
            "volumes": None,
        },
    }
    assert template_hash(canonical_template(noisy)) == template_hash(canonical_template(NGINX))


SAME_TEMPLATE_FORMS = {
    "block.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: nginx}}
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
""",
    "reordered.yaml": """\
# keys in another order, quoting and comments
kind: Deployment
apiVersion: "apps/v1"
spec:
  template:
    spec:
      containers:
      - ports: [{containerPort: 80}]   # same port
        image: 'nginx:1.14.2'
        name: "nginx"
    metadata: {labels: {"app": nginx}}
  selector: {matchLabels: {app: nginx}}
  replicas: 7
  strategy: {type: Recreate}
metadata: {name: web, labels: {team: a}}
""",
    "as.json": json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "nginx"}}, "template": NGINX, "paused": True},
        },
        indent=4,
    ),
}


def test_yaml_json_order_comments_quoting_and_outside_fields_do_not_change_the_hash() -> None:
    hashes = set()
    for name, text in SAME_TEMPLATE_FORMS.items():
        result = load_files([ManifestFile(name, text.encode())])
        assert result.diagnostics == (), [d.render() for d in result.diagnostics]
        hashes.add(result.apps[0].template_hash)
    assert hashes == {template_hash(canonical_template(NGINX))}


printable = st.characters(blacklist_categories=("Cc", "Cs"))  # YAML forbids control characters
json_leaf = st.one_of(st.booleans(), st.integers(-(2**40), 2**40), st.text(printable, max_size=8))
json_tree = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4),
        st.dictionaries(st.text(printable, min_size=1, max_size=6), inner, min_size=1, max_size=4),
    ),
    max_leaves=20,
)


def _reorder(value: Any) -> Any:
    """The same value with every mapping's keys in reverse order."""
    if isinstance(value, dict):
        return {k: _reorder(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reorder(v) for v in value]
    return value


@given(st.dictionaries(st.text(min_size=1, max_size=6), json_tree, max_size=5))
def test_key_order_never_changes_the_hash(spec: dict[str, Any]) -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": spec}
    assert template_hash(canonical_template(template)) == template_hash(
        canonical_template(_reorder(template))
    )


@given(st.dictionaries(st.text(printable, min_size=1, max_size=6), json_tree, min_size=1, max_size=5))
def test_yaml_and_json_forms_hash_the_same(spec: dict[str, Any]) -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}], "extra": spec},
            },
        },
    }
    as_json = json.dumps(manifest)
    as_yaml_flow = json.dumps(
        _reorder(manifest), indent=1, ensure_ascii=False
    )  # JSON is YAML too; a reordered, indented form
    result_json = load_files([ManifestFile("a.json", as_json.encode())])
    result_yaml = load_files([ManifestFile("a.yaml", as_yaml_flow.encode())])
    assert result_json.apps and result_yaml.apps
    assert result_json.apps[0].template_hash == result_yaml.apps[0].template_hash


@given(st.text(min_size=1, max_size=20))
def test_any_change_inside_the_template_changes_the_hash(image: str) -> None:
    changed = {**NGINX, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2" + image}]}}
    base = {**NGINX, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2"}]}}
    assert template_hash(canonical_template(changed)) != template_hash(canonical_template(base))


@pytest.mark.parametrize(
    "given",
    [
        {"spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}},
        {
            "spec": {
                "containers": [
                    {"name": "web", "image": "w", "args": [], "env": [{"name": "E", "value": None}]}
                ]
            }
        },
        {"metadata": {"labels": {"app": "web", "gitdeploy.io/template-hash": "bcdfghjklm"}}, "spec": {}},
    ],
    ids=["empty-dir", "empty-list-and-null", "hash-label"],
)
def test_hashing_normalises_but_the_written_template_is_the_one_given(given: dict[str, Any]) -> None:
    template = canonical_template(given)
    normalised = canonical_template(json.loads(template.canonical_json))

    assert template == normalised and template_hash(template) == template_hash(normalised)
    written = template.to_written_dict()
    expected = json.loads(json.dumps(given))
    expected.get("metadata", {}).get("labels", {}).pop("gitdeploy.io/template-hash", None)
    assert written == expected
