"""What the desired state of many apps shares instead of copying, and that nothing else changes.

10,000 apps are kept in memory by ``gitdeploy run``: repeated names and values are one string
each, an app's manifest and template are held compressed, and the manifest does not hold its
largest part, the pod template, a second time.
"""

from __future__ import annotations

import dataclasses
import doctest
import json

import pytest
import yaml

from gitdeploy.controller.rollouts import manifest_digest
from gitdeploy.core import models
from gitdeploy.core.hashing import canonical_template
from gitdeploy.core.models import TEMPLATE_MARK, PodTemplate
from gitdeploy.core.packedjson import unpack
from gitdeploy.manifests.documents import ManifestFile, parse_documents
from tests.fixtures.rollouts import load_app


def _deployment(name: str, template_spec: str = "", labels: str = "") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {{team: shop}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata:
      labels: {{app: {name}, tier: api{labels}}}
    spec:
      containers:
        - name: main
          image: registry.example.com/{name}:1.0{template_spec}
"""


MANIFESTS = [
    # (id, manifest, whether the manifest writes its template as gitdeploy normalises it)
    ("plain", _deployment("web"), True),
    ("empty-env", _deployment("web", "\n          env: []"), False),
    ("empty-mapping", _deployment("web", "\n          resources: {}"), False),
    ("hash-label", _deployment("web", labels=", gitdeploy.io/template-hash: abc"), False),
    ("unicode", _deployment("web", '\n          args: ["--greeting=grüß dich"]'), True),
]


@pytest.mark.parametrize(("manifest", "shared"), [m[1:] for m in MANIFESTS], ids=[m[0] for m in MANIFESTS])
def test_manifest_json_is_the_whole_manifest_as_canonical_json(manifest: str, shared: bool) -> None:
    app = load_app(manifest)
    expected = json.dumps(yaml.safe_load(manifest), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert app.manifest_json == expected
    around = unpack(app.manifest_packed[0])
    assert (TEMPLATE_MARK in around and app.template.canonical_json not in around) is shared
    if shared:
        assert app.manifest_packed[1] is app.template.packed_json  # held once
    assert sum(map(len, app.manifest_packed)) < len(expected.encode()) / 2


def test_an_apps_template_is_held_compressed_and_reads_and_compares_as_text() -> None:
    app = load_app(_deployment("web"))
    text = app.template.canonical_json
    as_text = PodTemplate(text)
    assert app.template == as_text and as_text == app.template and hash(app.template) == hash(as_text)
    assert app.template.packed() is app.template and as_text.packed() == app.template
    held = [getattr(app.template, slot) for slot in PodTemplate.__slots__]  # what stays in memory
    assert text not in held and sum(map(len, held)) < len(text.encode())
    assert app.template != PodTemplate(text.replace("1.0", "1.1")).packed()
    with pytest.raises(AttributeError, match="immutable"):
        app.template.canonical_json = "{}"  # type: ignore[misc]


def test_a_new_template_leaves_the_manifest_and_its_digest_as_git_has_them() -> None:
    app = load_app(_deployment("web"))
    resolved = canonical_template({"spec": {"containers": [{"name": "main", "image": "web@sha256:0f"}]}})
    moved = dataclasses.replace(app, template=resolved, replicas=5)
    assert moved.manifest_json == app.manifest_json
    assert manifest_digest(moved) == manifest_digest(app)
    assert moved != app and dataclasses.replace(moved, template=app.template, replicas=2) == app


def test_apps_from_the_same_text_are_equal_and_hash_alike() -> None:
    first, second = load_app(_deployment("web")), load_app(_deployment("web"))
    assert first == second and hash(first.key) == hash(second.key)
    assert first.manifest_json == second.manifest_json
    assert load_app(_deployment("api")) != first


def test_repeated_keys_and_values_are_one_string_across_files() -> None:
    parsed = [
        parse_documents(ManifestFile(f"apps/{name}.yaml", _deployment(name).encode()))
        for name in ("web", "api")
    ]
    (web,), (api,) = (documents for documents, problems in parsed if not problems)
    web_meta, api_meta = web.data["metadata"], api.data["metadata"]
    web_key = next(k for k in web_meta if k == "labels")
    api_key = next(k for k in api_meta if k == "labels")
    assert web_key is api_key
    assert web_meta["labels"]["team"] is api_meta["labels"]["team"]
    assert web.data == yaml.safe_load(_deployment("web"))


def test_template_labels_and_containers_read_from_separate_templates_share_strings() -> None:
    web, api = load_app(_deployment("web")), load_app(_deployment("api"))
    assert web.template.labels["tier"] is api.template.labels["tier"]
    assert web.template.containers[0].name is api.template.containers[0].name
    assert web.template.labels == {"app": "web", "tier": "api"}


def test_worked_examples_in_the_models_docstrings() -> None:
    result = doctest.testmod(models)
    assert result.attempted > 0 and result.failed == 0
