"""The apps snapshot: the first visitor waits for the first listing, later ones never wait for one."""

from __future__ import annotations

import threading

import pytest

from gitdeploy.controller.inspect import AppView
from gitdeploy.core.models import AppKey
from gitdeploy.errors import TransientError
from gitdeploy.web.snapshot import AppSnapshot


def _view(name: str) -> AppView:
    return AppView(AppKey("shop", name), 1, 1, 1, 1, 1, "abc1234", "Complete", "Synced", "Healthy", "", "")


def test_a_stale_snapshot_is_served_while_the_next_listing_runs() -> None:
    listings: list[list[AppView]] = [[_view("web")], [_view("web"), _view("api")]]
    second_started, release = threading.Event(), threading.Event()

    def read() -> list[AppView]:
        if len(listings) == 1:
            second_started.set()
            assert release.wait(30)
        return listings.pop(0)

    snapshot = AppSnapshot(read, max_age=0.0)
    assert [v.key.name for v in snapshot.views()] == ["web"]  # the first call waits for the listing

    shown = snapshot.views()  # stale at once (max_age 0): a second listing starts, and blocks
    assert second_started.wait(30)
    assert [v.key.name for v in shown] == ["web"]
    assert [v.key.name for v in snapshot.views()] == ["web"], "served without waiting for the listing"
    release.set()


def test_the_first_listings_problem_reaches_the_caller() -> None:
    def read() -> list[AppView]:
        raise TransientError("the cluster answers 503", hint="try again")

    with pytest.raises(TransientError, match="503"):
        AppSnapshot(read, max_age=1.0).views()
