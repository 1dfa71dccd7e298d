"""The apps page's filters, counts and pages, on views as ``status`` computes them."""

from __future__ import annotations

from gitdeploy.controller.inspect import AppView
from gitdeploy.core.models import AppKey
from gitdeploy.web.selection import AppFilter, select_apps


def _view(namespace: str, name: str, sync: str = "Synced", health: str = "Healthy") -> AppView:
    return AppView(AppKey(namespace, name), 2, 2, 2, 2, 1, "abc1234", "Complete", sync, health, "", "")


def test_ten_thousand_apps_come_in_pages_of_a_hundred_with_counts_of_the_matching_ones() -> None:
    views = [_view(f"ns{i % 10}", f"app{i:05d}", health="Degraded" if i % 100 == 0 else "Healthy")
             for i in range(10_000)]  # fmt: skip

    first = select_apps(views, AppFilter())
    degraded = select_apps(views, AppFilter(health="Degraded", page=2))
    beyond = select_apps(views, AppFilter(namespace="ns3", page=999))

    assert (len(first.apps), first.pages, first.total, first.matching) == (100, 100, 10_000, 10_000)
    assert dict(first.health_counts) == {"Healthy": 9_900, "Degraded": 100}
    assert first.namespaces == [f"ns{i}" for i in range(10)]
    assert (degraded.matching, degraded.pages, degraded.page, len(degraded.apps)) == (100, 1, 1, 100)
    assert dict(degraded.sync_counts) == {"Synced": 100}
    assert (beyond.matching, beyond.page, beyond.pages) == (1_000, 10, 10)
    assert all(v.key.namespace == "ns3" for v in beyond.apps)


def test_the_query_string_keeps_the_filters_and_drops_the_first_page() -> None:
    wanted = AppFilter.from_query({"namespace": "shop", "sync": "", "health": "Degraded", "page": "3"})

    assert wanted.query() == "namespace=shop&health=Degraded&page=3"
    assert wanted.query(page=1) == "namespace=shop&health=Degraded"
    assert AppFilter.from_query({"page": "-2"}).page == 1
