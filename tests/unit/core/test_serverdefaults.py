"""gitdeploy's view of the API server's defaults is what a real kube-apiserver returned."""

from __future__ import annotations

import json

from gitdeploy.core.hashing import canonical_template
from gitdeploy.core.serverdefaults import with_server_defaults
from gitdeploy.core.templatediff import diff_templates
from tests.fixtures.serverdefaults import DEFAULTED_TEMPLATE, TEMPLATE, quantity_containers


def test_the_defaults_are_the_real_servers() -> None:
    filled = with_server_defaults(canonical_template({"spec": TEMPLATE}))
    assert filled == canonical_template({"spec": DEFAULTED_TEMPLATE})


def test_a_defaulted_template_is_no_change_from_git() -> None:
    assert (
        diff_templates(
            canonical_template({"spec": TEMPLATE}), canonical_template({"spec": DEFAULTED_TEMPLATE})
        )
        == ()
    )


def test_a_changed_default_is_a_change() -> None:
    changed = json.loads(json.dumps(DEFAULTED_TEMPLATE))
    changed["containers"][1]["imagePullPolicy"] = "Always"
    changed["terminationGracePeriodSeconds"] = 5
    changes = diff_templates(canonical_template({"spec": TEMPLATE}), canonical_template({"spec": changed}))
    assert [(c.scope, c.field, c.before, c.after) for c in changes] == [
        ("container side", "imagePullPolicy", "IfNotPresent", "Always"),
        ("pod", "terminationGracePeriodSeconds", "30", "5"),
    ]


def test_quantities_compare_as_the_real_server_stores_them() -> None:
    given = canonical_template({"spec": {"containers": quantity_containers(0)}})
    stored = canonical_template({"spec": {"containers": quantity_containers(1)}})
    assert with_server_defaults(given) == with_server_defaults(stored)
    assert diff_templates(given, stored) == ()


def test_a_quantity_written_as_a_yaml_number_is_no_change_from_the_stored_text() -> None:
    container = {
        "name": "web",
        "image": "nginx:1",
        "resources": {"requests": {"cpu": 0.5, "memory": 2000.0}},
    }
    stored = {**container, "resources": {"requests": {"cpu": "500m", "memory": "2k"}}}
    assert (
        diff_templates(
            canonical_template({"spec": {"containers": [container]}}),
            canonical_template({"spec": {"containers": [stored]}}),
        )
        == ()
    )


def test_a_changed_quantity_is_a_change() -> None:
    before = canonical_template({"spec": {"containers": quantity_containers(1)}})
    changed = quantity_containers(1)
    changed[0]["resources"]["requests"]["cpu"] = "1"
    (change,) = diff_templates(before, canonical_template({"spec": {"containers": changed}}))
    assert (change.field, change.before, change.after) == ("resources.requests.cpu", "500m", "1")
