"""Lists by the ``gitdeploy.io/app`` label: answered from the store's app index, with the same
results as any other selector (other terms, namespaces, paging), also on a database made before
the index existed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from gitdeploy.clock import FakeClock
from gitdeploy.localcluster import LocalCluster
from gitdeploy.localcluster.resources import find_resource
from gitdeploy.localcluster.store import Store
from tests.fixtures.cluster import api_client_for

APP = "gitdeploy.io/app"
OBJECTS = {
    # (namespace, name): labels
    ("shop", "web-a"): {APP: "web", "tier": "front"},
    ("shop", "web-b"): {APP: "web", "tier": "back"},
    ("shop", "web-c"): {APP: "web"},
    ("shop", "webshop"): {APP: "webshop"},
    ("shop", "plain"): {"tier": "front"},
    ("blog", "web-a"): {APP: "web"},
}


@pytest.fixture
def core(kube_client: Any) -> Any:
    api: Any = client.CoreV1Api(kube_client)
    for namespace in ("shop", "blog"):
        api.create_namespace({"metadata": {"name": namespace}})
    for (namespace, name), labels in OBJECTS.items():
        api.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": labels}})
    return api


@pytest.mark.parametrize(
    ("namespace", "selector", "expected"),
    [
        ("shop", f"{APP}=web", ["web-a", "web-b", "web-c"]),
        ("shop", f"{APP}==web", ["web-a", "web-b", "web-c"]),
        ("shop", f"{APP} in (web)", ["web-a", "web-b", "web-c"]),
        ("shop", f"{APP}=web,tier=front", ["web-a"]),
        ("shop", f"tier,{APP}=web", ["web-a", "web-b"]),
        ("shop", f"{APP}=webshop", ["webshop"]),
        ("shop", f"{APP}=nothing", []),
        ("blog", f"{APP}=web", ["web-a"]),
        (None, f"{APP}=web", ["blog/web-a", "shop/web-a", "shop/web-b", "shop/web-c"]),
        ("shop", f"{APP} in (web,webshop)", ["web-a", "web-b", "web-c", "webshop"]),
        ("shop", f"{APP}!=web", ["plain", "webshop"]),
    ],
)
def test_lists_by_app_label(core: Any, namespace: str | None, selector: str, expected: list[str]) -> None:
    if namespace is None:
        items = core.list_config_map_for_all_namespaces(label_selector=selector).items
        found = [f"{cm.metadata.namespace}/{cm.metadata.name}" for cm in items]
    else:
        items = core.list_namespaced_config_map(namespace, label_selector=selector).items
        found = [cm.metadata.name for cm in items]
    assert found == expected


def test_lists_by_app_label_page_with_continue_tokens(core: Any) -> None:
    names: list[str] = []
    token = None
    while True:
        page = core.list_namespaced_config_map("shop", label_selector=f"{APP}=web", limit=2, _continue=token)
        names += [cm.metadata.name for cm in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == ["web-a", "web-b", "web-c"]


def test_relabelled_and_deleted_objects_leave_the_app_list(core: Any) -> None:
    core.patch_namespaced_config_map("web-b", "shop", {"metadata": {"labels": {APP: "other"}}})
    core.delete_namespaced_config_map("web-c", "shop")
    found = core.list_namespaced_config_map("shop", label_selector=f"{APP}=web").items
    assert [cm.metadata.name for cm in found] == ["web-a"]


def test_a_database_from_before_the_index_gets_it(tmp_path: Path, fake_clock: FakeClock) -> None:
    with LocalCluster(tmp_path, clock=fake_clock) as cluster:
        api = api_client_for(cluster)
        core: Any = client.CoreV1Api(api)
        core.create_namespaced_config_map("default", {"metadata": {"name": "web", "labels": {APP: "web"}}})
        api.close()
    with sqlite3.connect(tmp_path / "cluster.db") as db:
        db.execute("DROP INDEX objects_app")
    Store(tmp_path / "cluster.db").close()
    with sqlite3.connect(tmp_path / "cluster.db") as db:
        indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "objects_app" in indexes
    store = Store(tmp_path / "cluster.db")
    try:
        with store.read() as txn:
            configmaps = find_resource("", "v1", "configmaps")
            assert configmaps is not None
            rows = txn.list_raw(configmaps.key, "default", app="web")
    finally:
        store.close()
    assert [row[1] for row in rows] == ["web"]
