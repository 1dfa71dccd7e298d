"""The apps snapshot: nobody waits for a listing (before the first one is done there are no views
yet), and a source that says nothing changed is not read again."""

from __future__ import annotations

import threading

import pytest

from gitdeploy.controller.inspect import AppView
from gitdeploy.core.models import AppKey
from gitdeploy.errors import TransientError
from gitdeploy.web.appsource import Stamp
from gitdeploy.web.snapshot import AppSnapshot
from tests.fixtures.waiting import eventually


def _view(name: str) -> AppView:
    return AppView(AppKey("shop", name), 1, 1, 1, 1, 1, "abc1234", "Complete", "Synced", "Healthy", "", "")


class _Source:
    """Answers ``listings`` in turn, each read once ``release`` is set; stamped with ``stamped``."""

    def __init__(self, *listings: list[AppView]) -> None:
        self.listings = list(listings)
        self.reads = 0
        self.release = threading.Event()
        self.release.set()
        self.stamped: Stamp | None = None

    def read(self) -> list[AppView]:
        self.reads += 1
        assert self.release.wait(30)
        if isinstance(self.listings[0], Exception):
            raise self.listings[0]
        return self.listings.pop(0) if len(self.listings) > 1 else self.listings[0]

    def stamp(self) -> Stamp | None:
        return self.stamped


def _names(snapshot: AppSnapshot) -> list[str] | None:
    views = snapshot.views()
    return None if views is None else [v.key.name for v in views]


def test_before_the_first_listing_is_done_there_are_no_views_and_nobody_waits() -> None:
    source = _Source([_view("web")])
    source.release.clear()
    snapshot = AppSnapshot(source, max_age=1.0)
    snapshot.prime()
    assert snapshot.views() is None and snapshot.listing(), "the first listing blocks: no views yet"
    source.release.set()
    assert eventually(lambda: _names(snapshot), "the first listing") == ["web"]
    assert not snapshot.listing()


def test_a_stale_snapshot_is_served_while_the_next_listing_runs() -> None:
    source = _Source([_view("web")], [_view("web"), _view("api")])
    source.stamped = (1, ("shop",))  # unchanged: read once
    snapshot = AppSnapshot(source, max_age=0.0)
    assert eventually(lambda: _names(snapshot), "the first listing") == ["web"]

    source.release.clear()
    source.stamped = None
    assert _names(snapshot) == ["web"]  # stale at once (max_age 0): a second listing starts, and blocks
    eventually(lambda: source.reads == 2, "the second listing")
    assert _names(snapshot) == ["web"], "served without waiting for the listing"
    source.release.set()
    assert eventually(lambda: _names(snapshot) == ["web", "api"], "the second listing's apps")


def test_the_first_listings_problem_reaches_the_caller() -> None:
    source = _Source([])
    source.listings = [TransientError("the cluster answers 503", hint="try again")]  # type: ignore[list-item]
    snapshot = AppSnapshot(source, max_age=1.0)
    snapshot.prime()

    def raised() -> bool:
        try:
            snapshot.views()
        except TransientError as problem:
            assert "503" in problem.message
            return True
        return False

    assert eventually(raised, "the first listing's problem")


@pytest.mark.parametrize("changed", [False, True])
def test_a_source_whose_stamp_did_not_move_is_not_read_again(changed: bool) -> None:
    source = _Source([_view("web")], [_view("web"), _view("api")])
    source.stamped = (1, ("shop",))
    snapshot = AppSnapshot(source, max_age=0.0)
    assert eventually(lambda: _names(snapshot), "the first listing") == ["web"]
    if changed:
        source.stamped = (2, ("shop",))  # the watches saw a change
    for _ in range(5):
        snapshot.views()
    if changed:
        assert eventually(lambda: _names(snapshot) == ["web", "api"], "the apps read again")
    else:
        assert source.reads == 1 and _names(snapshot) == ["web"]


def test_a_source_without_a_stamp_is_read_at_every_interval() -> None:
    source = _Source([_view("web")], [_view("web"), _view("api")])
    snapshot = AppSnapshot(source, max_age=0.0)
    assert eventually(lambda: _names(snapshot), "the first listing") == ["web"]
    assert eventually(lambda: _names(snapshot) == ["web", "api"], "the apps listed again")
    assert source.reads >= 2
