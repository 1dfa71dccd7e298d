"""A listed ReplicaSet's template: kept as parsed JSON, written as canonical JSON when first read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.scaling.replicasets import ReplicaSetState

STATE = ReplicaSetState("web-abc", "abc", 1, 0.0, 3)


@pytest.mark.parametrize(
    ("listed", "canonical"),
    [
        ({}, "{}"),
        ({"spec": {"b": 1, "a": 2}, "metadata": {}}, '{"metadata":{},"spec":{"a":2,"b":1}}'),
        (
            {"metadata": {"labels": {"z": "1", "app": "web", "gitdeploy.io/template-hash": "abc"}}},
            '{"metadata":{"labels":{"app":"web","gitdeploy.io/template-hash":"abc","z":"1"}}}',
        ),
        (
            {"spec": {"containers": [{"name": "web", "env": [{"value": "1", "name": "A"}], "image": "x"}]}},
            '{"spec":{"containers":[{"env":[{"name":"A","value":"1"}],"image":"x","name":"web"}]}}',
        ),
        (
            {"spec": {"replicas": 3, "paused": False, "deadline": None, "ratio": 0.5, "args": ["b", "a"]}},
            '{"spec":{"args":["b","a"],"deadline":null,"paused":false,"ratio":0.5,"replicas":3}}',
        ),
        (
            {"metadata": {"annotations": {"note": "café ✓"}}},
            '{"metadata":{"annotations":{"note":"caf\\u00e9 \\u2713"}}}',
        ),
    ],
)
def test_a_listed_template_is_written_as_canonical_json(listed: dict[str, Any], canonical: str) -> None:
    rs = ObservedReplicaSet("shop", "web", STATE, template=listed)
    assert rs.template == PodTemplate(canonical)
    assert rs.template is rs.template  # written once


def test_templates_given_or_missing_stay_as_they_are() -> None:
    given = PodTemplate('{"spec":{}}')
    assert ObservedReplicaSet("shop", "web", STATE, template=given).template is given
    assert ObservedReplicaSet("shop", "web", STATE).template is None
    assert ObservedReplicaSet("shop", "web", STATE, template=None).template is None


def test_the_template_does_not_take_part_in_equality() -> None:
    listed = ObservedReplicaSet("shop", "web", STATE, template={"spec": {"a": 1}})
    other = ObservedReplicaSet("shop", "web", STATE, template=PodTemplate('{"spec":{"a":2}}'))
    assert listed == other
    assert hash(listed) == hash(other)
    assert ObservedReplicaSet("shop", "web", STATE) == listed


def test_a_replica_set_holds_no_instance_dict_and_stays_frozen() -> None:
    # MEMORY: every replica's watch cache holds tens of thousands of them
    rs = ObservedReplicaSet("shop", "web", STATE, template={"spec": {"a": 1}})
    assert not hasattr(rs, "__dict__") and not hasattr(rs.state, "__dict__")
    with pytest.raises(AttributeError):
        rs.template = None  # type: ignore[misc]
    with pytest.raises(AttributeError):
        rs.app = "api"  # type: ignore[misc]
    assert replace(rs, app="api").template == PodTemplate('{"spec":{"a":1}}')
