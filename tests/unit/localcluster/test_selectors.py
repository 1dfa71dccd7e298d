"""Label and field selectors: parsing and matching, table-driven."""

from __future__ import annotations

import pytest

from gitdeploy.localcluster.selectors import (
    SelectorError,
    label_selector_from_object,
    label_selector_to_string,
    matches_fields,
    matches_labels,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "example.com/team": "a"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=api", False),
        ("app!=api", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web, api)", True),
        ("app in (api)", False),
        ("app notin (api,db)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("example.com/team=a", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("app in (web,api),!missing,tier", True),
        ("app=", False),
    ],
)
def test_label_selector_matching(selector: str, matches: bool) -> None:
    assert matches_labels(parse_label_selector(selector), LABELS) is matches


@pytest.mark.parametrize("selector", ["app in (web", "app)", "a b", "app=we b", "=web", "app,,tier", "!"])
def test_label_selector_errors(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(selector)


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("metadata.name=web-1", True),
        ("metadata.name==web-1", True),
        ("metadata.name!=web-1", False),
        ("metadata.namespace=team", True),
        ("status.phase=Running", True),
        ("status.phase=Running,metadata.name!=web-2", True),
        ("spec.nodeName=", True),
    ],
)
def test_field_selector_matching(selector: str, matches: bool) -> None:
    obj = {"metadata": {"name": "web-1", "namespace": "team"}, "status": {"phase": "Running"}}
    assert matches_fields(parse_field_selector(selector), obj) is matches


def test_field_selector_error() -> None:
    with pytest.raises(SelectorError):
        parse_field_selector("metadata.name")


@pytest.mark.parametrize(
    ("selector", "text"),
    [
        ({"matchLabels": {"app": "web"}}, "app=web"),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}, "tier in (a,b)"),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, "tier notin (a)"),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, "tier"),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, "!tier"),
    ],
)
def test_label_selector_objects_round_trip(selector: dict[str, object], text: str) -> None:
    requirements = label_selector_from_object(selector)
    assert label_selector_to_string(requirements) == text
    assert parse_label_selector(text) == requirements
