"""Merge patch, JSON patch and strategic merge patch, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.localcluster.patch import (
    PatchError,
    apply_patch,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)

POD: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
    "spec": {
        "containers": [
            {"name": "main", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "side:1"},
        ],
        "args": ["one", "two"],
    },
}


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": 1}, {"a": 2}, {"a": 2}),
        ({"a": 1, "b": 2}, {"a": None}, {"b": 2}),
        ({"a": {"x": 1}}, {"a": {"y": 2}}, {"a": {"x": 1, "y": 2}}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
        ({"a": 1}, {"b": {"c": None}}, {"a": 1, "b": {}}),
        ([1], {"a": 1}, {"a": 1}),
    ],
)
def test_merge_patch(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        ([{"op": "add", "path": "/b", "value": 2}], {"a": [1, 2], "b": 2}),
        ([{"op": "add", "path": "/a/-", "value": 3}], {"a": [1, 2, 3]}),
        ([{"op": "add", "path": "/a/0", "value": 0}], {"a": [0, 1, 2]}),
        ([{"op": "remove", "path": "/a/1"}], {"a": [1]}),
        ([{"op": "replace", "path": "/a", "value": "x"}], {"a": "x"}),
        ([{"op": "move", "from": "/a", "path": "/b"}], {"b": [1, 2]}),
        ([{"op": "copy", "from": "/a/0", "path": "/c"}], {"a": [1, 2], "c": 1}),
        ([{"op": "test", "path": "/a/1", "value": 2}], {"a": [1, 2]}),
        ([{"op": "add", "path": "/k~1v", "value": 1}], {"a": [1, 2], "k/v": 1}),
    ],
)
def test_json_patch(operations: list[dict[str, Any]], expected: Any) -> None:
    target = {"a": [1, 2]}
    assert json_patch(target, operations) == expected
    assert target == {"a": [1, 2]}


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "test", "path": "/a/0", "value": 9}],
        [{"op": "add", "path": "/a/9", "value": 1}],
        [{"op": "unknown", "path": "/a"}],
        [{"op": "add", "path": "a", "value": 1}],
        {"op": "add"},
    ],
)
def test_json_patch_errors(operations: Any) -> None:
    with pytest.raises(PatchError):
        json_patch({"a": [1, 2]}, operations)


@pytest.mark.parametrize(
    ("patch", "check"),
    [
        (
            {"spec": {"containers": [{"name": "main", "image": "app:2"}]}},
            lambda r: (
                [(c["name"], c["image"]) for c in r["spec"]["containers"]]
                == [("main", "app:2"), ("side", "side:1")]
            ),
        ),
        (
            {"spec": {"containers": [{"name": "main", "env": [{"name": "B", "value": "2"}]}]}},
            lambda r: (
                r["spec"]["containers"][0]["env"]
                == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
            ),
        ),
        (
            {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}},
            lambda r: [c["name"] for c in r["spec"]["containers"]] == ["main"],
        ),
        (
            {"spec": {"containers": [{"name": "new", "image": "n:1"}, {"$patch": "replace"}]}},
            lambda r: r["spec"]["containers"] == [{"name": "new", "image": "n:1"}],
        ),
        ({"spec": {"args": ["three"]}}, lambda r: r["spec"]["args"] == ["three"]),
        (
            {"metadata": {"labels": {"a": None, "c": "3"}}},
            lambda r: r["metadata"]["labels"] == {"b": "2", "c": "3"},
        ),
        ({"metadata": {"finalizers": ["y"]}}, lambda r: r["metadata"]["finalizers"] == ["x", "y"]),
        (
            {"$setElementOrder/containers": [{"name": "main"}], "metadata": {"name": "p"}},
            lambda r: r == POD,
        ),
        ({"spec": {"$patch": "replace", "args": []}}, lambda r: r["spec"] == {"args": []}),
    ],
)
def test_strategic_merge_patch(patch: dict[str, Any], check: Any) -> None:
    assert check(strategic_merge_patch(POD, patch))


def test_apply_patch_by_content_type() -> None:
    assert apply_patch("application/merge-patch+json", {"a": [1]}, {"a": [2]}) == {"a": [2]}
    assert apply_patch("application/strategic-merge-patch+json; charset=utf-8", {"a": 1}, {"b": 2}) == {
        "a": 1,
        "b": 2,
    }
    assert apply_patch("application/json-patch+json", {"a": 1}, [{"op": "remove", "path": "/a"}]) == {}
    with pytest.raises(PatchError):
        apply_patch("application/apply-patch+yaml", {}, {})
