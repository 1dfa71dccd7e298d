"""ImageChange triggers end to end: a real registry (docker-registry), a real git repo, the loop on the
embedded cluster with a fake clock."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import AppReport, Controller
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import AppKey
from gitdeploy.images.streams import histories_from_json
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.imagetriggers import (
    INTERVAL,
    SETTINGS,
    WEB,
    controller_for,
    record_of,
    settle,
    stream,
    web_config,
)
from tests.fixtures.manifests import deployment
from tests.fixtures.registry import RunningRegistry

OTHER = AppKey("shop", "other")


def other(image: str) -> str:
    return deployment("other", "shop", image, replicas=1)


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    return Cluster(kube_client, "embedded")


@pytest.fixture
def repo(git_remote: GitRemote, registry: RunningRegistry, tmp_path: Path) -> Iterator[ConfigRepo]:
    git_remote.commit_and_push(
        "Web follows its image stream",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/stream.yaml": stream(registry.host),
            "apps/web.yaml": web_config(),
            "apps/other.yaml": other("nginx:1.25"),
        },
    )
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as config:
        yield config


def next_image_check(controller: Controller, clock: FakeClock) -> dict[AppKey, AppReport]:
    """Let the image interval pass, then settle."""
    clock.advance(INTERVAL + 1)
    return settle(controller, clock)


def running_images(adapter: Cluster, app: str = "web") -> set[str]:
    """Images of the app's ReplicaSets that have replicas."""
    return {
        c.image
        for rs in adapter.list_replica_sets("shop", app)
        if rs.state.replicas and rs.template is not None
        for c in rs.template.containers
    }


def test_a_new_digest_on_the_tracked_tag_rolls_out_with_cause_image_change(
    repo: ConfigRepo, adapter: Cluster, fake_clock: FakeClock, registry: RunningRegistry
) -> None:
    # Given web runs the digest its tag had at the first deploy
    first = registry.push_image("shop/web", "prod", marker="one")
    controller = controller_for(repo, adapter, fake_clock)
    reports = settle(controller, fake_clock)
    assert reports[WEB].sync == "Synced", reports[WEB]
    pinned_first = f"{registry.host}/shop/web@{first}"
    assert running_images(adapter) == {pinned_first}
    assert [(e.revision, e.cause) for e in record_of(adapter).revisions] == [(1, "ConfigChange")]

    # When a new image is pushed on the tag and the image interval passes
    second = registry.push_image("shop/web", "prod", marker="two")
    reports = next_image_check(controller, fake_clock)

    # Then revision 2 rolls it out, caused by the image change, with the digest in the pod template
    pinned_second = f"{registry.host}/shop/web@{second}"
    assert reports[WEB].sync == "Synced"
    revisions = record_of(adapter).revisions
    assert [(e.revision, e.cause) for e in revisions] == [(1, "ConfigChange"), (2, "ImageChange")]
    assert revisions[-1].images == (("web", pinned_second),)
    assert running_images(adapter) == {pinned_second}
    # and the tag's history in the cluster has both digests, newest first
    state = adapter.read_stream_state("shop", "web")
    assert state is not None
    (history,) = histories_from_json(state.payload)
    assert [e.digest for e in history.events] == [second, first]

    # When gitdeploy restarts (a new controller, the same cluster)
    restarted = controller_for(repo, adapter, fake_clock)
    settle(restarted, fake_clock)
    next_image_check(restarted, fake_clock)

    # Then nothing is rolled out again
    assert [e.revision for e in record_of(adapter).revisions] == [1, 2]


def test_suspended_triggers_hold_the_running_image_until_cleared(
    repo: ConfigRepo, adapter: Cluster, fake_clock: FakeClock, registry: RunningRegistry
) -> None:
    # Given web runs the first digest and its triggers are suspended in the app record
    first = registry.push_image("shop/web", "prod", marker="one")
    controller = controller_for(repo, adapter, fake_clock)
    settle(controller, fake_clock)
    stored = adapter.read_app_record("shop", "web")
    assert stored is not None
    suspended = dataclasses.replace(AppRecord.from_json(stored.payload), triggers_suspended=True)
    adapter.write_app_record("shop", "web", suspended.to_json(), stored.resource_version)

    # When a new digest is pushed and the image interval passes
    second = registry.push_image("shop/web", "prod", marker="two")
    next_image_check(controller, fake_clock)

    # Then nothing rolls out
    assert running_images(adapter) == {f"{registry.host}/shop/web@{first}"}
    assert len(record_of(adapter).revisions) == 1

    # When the suspension is cleared (and the app is looked at again, at the latest at the resync)
    stored = adapter.read_app_record("shop", "web")
    assert stored is not None
    cleared = dataclasses.replace(AppRecord.from_json(stored.payload), triggers_suspended=False)
    adapter.write_app_record("shop", "web", cleared.to_json(), stored.resource_version)
    fake_clock.advance(controller.resync_seconds)
    settle(controller, fake_clock)

    # Then the newest digest rolls out as an image change
    assert running_images(adapter) == {f"{registry.host}/shop/web@{second}"}
    assert [e.cause for e in record_of(adapter).revisions] == ["ConfigChange", "ImageChange"]


def test_a_registry_outage_keeps_the_app_running_and_says_why(
    git_remote: GitRemote,
    repo: ConfigRepo,
    adapter: Cluster,
    fake_clock: FakeClock,
    registry: RunningRegistry,
) -> None:
    # Given web runs the tag's digest
    first = registry.push_image("shop/web", "prod", marker="one")
    controller = controller_for(repo, adapter, fake_clock)
    settle(controller, fake_clock)

    # When the registry goes away and the image interval passes
    registry.stop()
    reports = next_image_check(controller, fake_clock)

    # Then web keeps running its image, and its status says why its tag is not followed
    assert running_images(adapter) == {f"{registry.host}/shop/web@{first}"}
    assert reports[WEB].health == "Healthy"
    assert f"shop/web:prod: registry {registry.host}" in reports[WEB].message, reports[WEB]
    status = record_of(adapter).status
    assert status is not None and "image trigger problem" in status.message, status
    assert "image trigger problem" not in reports[OTHER].message

    # And another app still deploys normally
    git_remote.commit_and_push("Bump other", {"apps/other.yaml": other("nginx:1.26")})
    reports = settle(controller, fake_clock)
    assert reports[OTHER].sync == "Synced" and running_images(adapter, "other") == {"nginx:1.26"}
    assert len(record_of(adapter).revisions) == 1


def test_an_app_waits_for_the_first_image_of_its_tag(
    repo: ConfigRepo, adapter: Cluster, fake_clock: FakeClock, registry: RunningRegistry
) -> None:
    # Given the tag has no image in the registry yet
    controller = controller_for(repo, adapter, fake_clock)
    reports = settle(controller, fake_clock)

    # Then web waits, saying for which tag, and runs nothing
    assert "waiting for a first image on image stream tag shop/web:prod" in reports[WEB].message
    assert running_images(adapter) == set()
    assert reports[OTHER].sync == "Synced"

    # When the image is pushed and the interval passes, it deploys
    first = registry.push_image("shop/web", "prod", marker="one")
    reports = next_image_check(controller, fake_clock)
    assert reports[WEB].sync == "Synced", reports[WEB]
    assert running_images(adapter) == {f"{registry.host}/shop/web@{first}"}
