"""gitdeploy's view of the API server's defaults is what a real kube-apiserver returned."""

from __future__ import annotations

import json

from gitdeploy.core.hashing import canonical_template
from gitdeploy.core.serverdefaults import with_server_defaults
from gitdeploy.core.templatediff import diff_templates
from tests.fixtures.serverdefaults import DEFAULTED_TEMPLATE, TEMPLATE


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
