"""The field-level pod template diff: table-driven cases, and the docstring examples."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

from gitdeploy.core import templatediff
from gitdeploy.core.hashing import canonical_template
from gitdeploy.core.templatediff import (
    FieldChange,
    FieldChangeType,
    diff_templates,
    summarize_changes,
)


def template(
    *containers: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels or {"app": "web"}},
        "spec": {"containers": list(containers), **spec},
    }


WEB = {"name": "web", "image": "nginx:1.25"}

CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[tuple[str, str, str | None, str | None]]]] = [
    ("same template", template(WEB), template(WEB), []),
    (
        "image bump",
        template(WEB),
        template({**WEB, "image": "nginx:1.26"}),
        [("container web", "image", "nginx:1.25", "nginx:1.26")],
    ),
    (
        "command and args are one value each",
        template({**WEB, "command": ["nginx"], "args": ["-g", "daemon off;"]}),
        template({**WEB, "command": ["nginx"], "args": ["-g", "daemon on;"]}),
        [("container web", "args", '["-g","daemon off;"]', '["-g","daemon on;"]')],
    ),
    (
        "env vars keyed by name: reordering is no change, one new var is one line",
        template({**WEB, "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}),
        template(
            {
                **WEB,
                "env": [
                    {"name": "B", "value": "2"},
                    {"name": "A", "value": "1"},
                    {"name": "C", "value": "3"},
                ],
            }
        ),
        [("container web", "env.C", None, "3")],
    ),
    (
        "env from a secret",
        template(
            {**WEB, "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}]}
        ),
        template(
            {**WEB, "env": [{"name": "PW", "valueFrom": {"secretKeyRef": {"name": "db2", "key": "pw"}}}]}
        ),
        [("container web", "env.PW.valueFrom.secretKeyRef.name", "db", "db2")],
    ),
    (
        "resources",
        template({**WEB, "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}),
        template(
            {**WEB, "resources": {"limits": {"cpu": "200m", "memory": "64Mi"}, "requests": {"cpu": "50m"}}}
        ),
        [
            ("container web", "resources.limits.cpu", "100m", "200m"),
            ("container web", "resources.requests.cpu", None, "50m"),
        ],
    ),
    (
        "probes",
        template({**WEB, "readinessProbe": {"httpGet": {"path": "/", "port": 80}}}),
        template(
            {**WEB, "readinessProbe": {"httpGet": {"path": "/healthz", "port": 80}, "periodSeconds": 5}}
        ),
        [
            ("container web", "readinessProbe.httpGet.path", "/", "/healthz"),
            ("container web", "readinessProbe.periodSeconds", "10", "5"),  # 10: the server's default
        ],
    ),
    (
        "unnamed ports keyed by port and protocol",
        template({**WEB, "ports": [{"containerPort": 80}]}),
        template({**WEB, "ports": [{"containerPort": 8080}]}),
        [
            ("container web", "ports.80/TCP", "(set)", None),
            ("container web", "ports.8080/TCP", None, "(set)"),
        ],
    ),
    (
        "volume mounts keyed by mount path, volumes by name",
        template(
            {**WEB, "volumeMounts": [{"name": "cfg", "mountPath": "/etc/web"}]},
            volumes=[{"name": "cfg", "configMap": {"name": "web-v1"}}],
        ),
        template(
            {**WEB, "volumeMounts": [{"name": "cfg", "mountPath": "/etc/web"}]},
            volumes=[{"name": "cfg", "configMap": {"name": "web-v2"}}],
        ),
        [("pod", "volumes.cfg.configMap.name", "web-v1", "web-v2")],
    ),
    (
        "a container added and one removed",
        template(WEB, {"name": "old", "image": "old:1"}),
        template(WEB, {"name": "sidecar", "image": "envoy:1"}),
        [("container sidecar", "image", None, "envoy:1"), ("container old", "image", "old:1", None)],
    ),
    (
        "init containers have their own scope",
        template(WEB, initContainers=[{"name": "migrate", "image": "m:1"}]),
        template(WEB, initContainers=[{"name": "migrate", "image": "m:2"}]),
        [("init container migrate", "image", "m:1", "m:2")],
    ),
    (
        "pod-level fields and labels",
        template(WEB, serviceAccountName="web"),
        template(WEB, labels={"app": "web", "tier": "front"}, serviceAccountName="web-2"),
        [("pod", "labels.tier", None, "front"), ("pod", "serviceAccountName", "web", "web-2")],
    ),
]


@pytest.mark.parametrize(("name", "before", "after", "expected"), CASES, ids=[c[0] for c in CASES])
def test_diff_templates(
    name: str,
    before: dict[str, Any],
    after: dict[str, Any],
    expected: list[tuple[str, str, str | None, str | None]],
) -> None:
    changes = diff_templates(canonical_template(before), canonical_template(after))
    assert [(c.scope, c.field, c.before, c.after) for c in changes] == expected


def test_change_types_and_rendering() -> None:
    assert FieldChange("pod", "x", None, "1").type is FieldChangeType.ADDED
    assert FieldChange("pod", "x", "1", None).type is FieldChangeType.REMOVED
    assert FieldChange("pod", "x", "1", "2").type is FieldChangeType.CHANGED
    assert FieldChange("pod", "x", "1", None).render() == "x: 1 -> (none)"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ((), ""),
        ((FieldChange("container a", "image", "x:1", "x:2"),), "a image x:1 -> x:2"),
        ((FieldChange("init container m", "image", "m:1", "m:2"),), "init m image m:1 -> m:2"),
        (
            (
                FieldChange("container a", "image", None, "x:1"),
                FieldChange("pod", "hostNetwork", None, "true"),
            ),
            "a image, hostNetwork",
        ),
    ],
)
def test_summarize_changes(changes: tuple[FieldChange, ...], expected: str) -> None:
    assert summarize_changes(changes) == expected


def test_docstring_examples() -> None:
    assert doctest.testmod(templatediff).failed == 0
