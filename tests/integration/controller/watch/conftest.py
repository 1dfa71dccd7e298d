"""The ReplicaSet-watch tests' setup: pods ready half a second after they start (sooner than a
watched rollout's requeue delay), a controller of shop/web (8 replicas, revision 1 committed),
and ``wake``, the loop's wake-up that the namespace's ReplicaSet watch sets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.watcher import watch_rollouts
from gitdeploy.localcluster import SimulationConfig
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.rswatch import READY_AFTER, SETTINGS, web


@pytest.fixture
def simulation_config() -> SimulationConfig:
    return SimulationConfig(pod_start_seconds=READY_AFTER)


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("web 1.25", {"apps/web.yaml": web("nginx:1.25")})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        yield Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)


@pytest.fixture
def wake(controller: Controller) -> Iterator[threading.Event]:
    """The loop's wake-up, set by the ReplicaSet watch (running until the test ends)."""
    stop, woken = threading.Event(), threading.Event()
    watch_rollouts(controller, stop, woken.set)
    yield woken
    stop.set()
