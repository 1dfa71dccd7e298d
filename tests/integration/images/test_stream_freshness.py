"""A rollout never starts from an image stream state older than the stored one (issue 21, item 1).

The loop keeps the stream tags' images in memory; ``run`` watches the stream states so a tag moved
by ``gitdeploy tag`` reaches it at once, but a watch event may still be on its way when the app's
own pass comes (``tag D && deploy --enable-triggers`` in a script). These tests run the loop with no
watch at all, on a fake clock, so the stream state it holds in memory is always stale: whatever rolls
out comes from the state as stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.cli.run_cmd import publish_app_states
from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller import rollback as control
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.streamwatch import follow_streams_once
from gitdeploy.core.history import control as decide
from gitdeploy.core.observed import StoredRecord
from gitdeploy.images.streams import TagEvent, TagHistory, histories_from_json, histories_to_json
from gitdeploy.server.metrics import Metrics
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.imagestreams import pinned_image as image
from tests.fixtures.imagestreams import pinned_stream
from tests.fixtures.imagetriggers import SETTINGS, WEB, controller_for, record_of, settle, web_config
from tests.integration.server.scrape import parse, total


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    return Cluster(kube_client, "embedded")


@pytest.fixture
def repo(git_remote: GitRemote, tmp_path: Path) -> Iterator[ConfigRepo]:
    git_remote.commit_and_push(
        "web follows its image stream",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/stream.yaml": pinned_stream(image("A")),
            "apps/web.yaml": web_config(),
        },
    )
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as config:
        yield config


def move_tag(adapter: Cluster, marker: str, now: float) -> StoredRecord:
    """What ``gitdeploy tag IMAGE shop/web:prod`` writes."""
    stored = adapter.read_stream_state("shop", "web")
    assert stored is not None
    (history,) = histories_from_json(stored.payload)
    moved = history.move_by_hand(TagEvent(image(marker).partition("@")[2], image(marker), now))
    return adapter.write_stream_state("shop", "web", histories_to_json((moved,)), stored.resource_version)


def images_by_revision(adapter: Cluster) -> list[tuple[int, str, str]]:
    return [(e.revision, e.cause, e.images[0][1]) for e in record_of(adapter).revisions]


def enable_triggers(adapter: Cluster, controller: Controller) -> None:
    """What ``gitdeploy deploy shop/web --enable-triggers`` writes; the record watch makes the app due."""
    state = control.read_app(adapter, WEB)
    control.write_record(adapter, state, decide.enable_triggers(state.record))
    stored = adapter.read_app_record("shop", "web")
    assert stored is not None and controller.notice(WEB, stored.resource_version)


def test_enable_triggers_rolls_out_the_stored_tag_even_before_the_stream_watch_brings_it(
    repo: ConfigRepo, adapter: Cluster, fake_clock: FakeClock
) -> None:
    # Given web ran A, then C (a tag moved and seen by the loop), then was rolled back to A
    controller = controller_for(repo, adapter, fake_clock)
    settle(controller, fake_clock)
    move_tag(adapter, "C", fake_clock.now())
    controller.notice_stream(stored_state(adapter))  # what the stream watch hands in
    settle(controller, fake_clock)
    plan = control.plan_rollback(
        adapter, WEB, to_revision=1, to_commit=None, message="C breaks", by="t@x", now=fake_clock.now(),
        load_app=None,
    )  # fmt: skip
    control.write_record(adapter, plan.state, plan.record)
    controller.mark_due()
    settle(controller, fake_clock)
    assert images_by_revision(adapter) == [
        (1, "ConfigChange", image("A")),
        (2, "ImageChange", image("C")),
        (3, "Rollback", image("A")),
    ]

    # (and the loop's report and the metrics say the triggers are suspended)
    metrics = Metrics(version="test", process_collectors=False)
    publish_app_states(controller, metrics)
    assert total(parse(metrics.render().decode()), "gitdeploy_apps_image_triggers_suspended") == 1
    assert "image triggers suspended (" in controller.reports[WEB].message

    # When D is tagged and the triggers are enabled before any watch event about D arrives
    move_tag(adapter, "D", fake_clock.now())
    enable_triggers(adapter, controller)
    settle(controller, fake_clock)
    publish_app_states(controller, metrics)
    assert total(parse(metrics.render().decode()), "gitdeploy_apps_image_triggers_suspended") == 0

    # Then revision 4 runs D, the tag as stored, not C, the image the loop last knew
    assert images_by_revision(adapter)[3:] == [(4, "ImageChange", image("D"))]


def stored_state(adapter: Cluster) -> StoredRecord:
    state = adapter.read_stream_state("shop", "web")
    assert state is not None
    return state


def test_a_moved_tag_handed_in_by_the_watch_rolls_out_at_the_next_pass_and_own_writes_wake_nothing(
    repo: ConfigRepo, adapter: Cluster, fake_clock: FakeClock
) -> None:
    # Given web runs A, and the loop knows the stream state it wrote
    controller = controller_for(repo, adapter, fake_clock)
    settle(controller, fake_clock)
    seen: list[StoredRecord] = []
    version = follow_streams_once(adapter, "shop", "", seen.append, timeout_seconds=1)
    assert [controller.notice_stream(state) for state in seen] == [False]  # its own write: no news

    # When D is tagged, and one watch of the namespace runs from where it was
    move_tag(adapter, "D", fake_clock.now())
    seen.clear()
    follow_streams_once(adapter, "shop", version, seen.append, timeout_seconds=1)

    # Then the watch saw the move, the loop takes it as news, and its passes roll D out
    assert [controller.notice_stream(state) for state in seen] == [True]
    assert [r.key for r in controller.reconcile_due()] == [WEB]  # at once: no clock advanced
    settle(controller, fake_clock)
    assert images_by_revision(adapter)[1:] == [(2, "ImageChange", image("D"))]


def test_a_stream_state_unknown_to_git_is_no_news(
    repo: ConfigRepo, adapter: Cluster, fake_clock: FakeClock
) -> None:
    controller = controller_for(repo, adapter, fake_clock)
    settle(controller, fake_clock)
    other = adapter.write_stream_state("shop", "other", histories_to_json((TagHistory("prod"),)), None)
    assert controller.notice_stream(other) is False
