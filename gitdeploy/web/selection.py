"""Which apps the apps page shows: filters by namespace, sync and health, counts, and one page."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from gitdeploy.controller.inspect import AppView

PAGE_SIZE = 100


@dataclass(frozen=True)
class AppFilter:
    """The apps page's query: ``?namespace=shop&sync=OutOfSync&health=Degraded&page=2``."""

    namespace: str = ""
    sync: str = ""
    health: str = ""
    page: int = 1

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> AppFilter:
        """The filter of a request's query parameters; a page that is no number is the first.

        >>> AppFilter.from_query({"sync": "Synced", "page": "x"})
        AppFilter(namespace='', sync='Synced', health='', page=1)
        """
        page = query.get("page", "1")
        number = int(page) if page.isdigit() else 1
        return cls(query.get("namespace", ""), query.get("sync", ""), query.get("health", ""), max(number, 1))

    def matches(self, view: AppView) -> bool:
        return (
            (not self.namespace or view.key.namespace == self.namespace)
            and (not self.sync or view.sync == self.sync)
            and (not self.health or view.health == self.health)
        )

    def query(self, page: int | None = None) -> str:
        """The query string of this filter (at ``page``), without empty parameters.

        >>> AppFilter(sync="Synced").query(page=3)
        'sync=Synced&page=3'
        """
        fields = {"namespace": self.namespace, "sync": self.sync, "health": self.health}
        number = self.page if page is None else page
        paging = {"page": number} if number > 1 else {}
        return urlencode({**{k: v for k, v in fields.items() if v}, **paging})


@dataclass(frozen=True)
class AppsPage:
    """One page of the apps that match a filter, with what the filter's menus offer."""

    apps: Sequence[AppView]
    total: int
    """Apps gitdeploy manages, all namespaces."""
    matching: int
    sync_counts: Mapping[str, int]
    """Apps per SYNC state among the matching ones."""
    health_counts: Mapping[str, int]
    namespaces: Sequence[str]
    page: int
    pages: int


def select_apps(views: Sequence[AppView], wanted: AppFilter, page_size: int = PAGE_SIZE) -> AppsPage:
    """The page of ``views`` that ``wanted`` asks for (a page past the end shows the last one)."""
    matching = [v for v in views if wanted.matches(v)]
    pages = max((len(matching) + page_size - 1) // page_size, 1)
    page = min(wanted.page, pages)
    return AppsPage(
        apps=matching[(page - 1) * page_size : page * page_size],
        total=len(views),
        matching=len(matching),
        sync_counts=Counter(v.sync for v in matching),
        health_counts=Counter(v.health for v in matching),
        namespaces=sorted({v.key.namespace for v in views}),
        page=page,
        pages=pages,
    )
