"""Starting the record watch is no news: the records as they are make no app due (real git,
embedded cluster, the real watch over HTTP).

Found by MEMORY while measuring ``gitdeploy run`` on 10,000 apps: the watch starts with every
record as ``ADDED``, :meth:`Controller.notice` takes each for a change made elsewhere, and every
app gets a second full pass right after the first (24 namespace lists instead of 12).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.watcher import watch_records
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import record_name
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle
from tests.fixtures.manifests import deployment

WEB, API = AppKey("shop", "web"), AppKey("shop", "api")


pytestmark = pytest.mark.usefixtures("isolated_git_config")  # git without the machine's configuration


def test_the_records_a_watch_starts_with_make_no_app_due(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> None:
    # Given two apps deployed, and a restarted gitdeploy that passed over them (writing nothing)
    files = {f"apps/{k.name}.yaml": deployment(k.name, k.namespace) for k in (WEB, API)}
    git_remote.commit_and_push("apps", files)
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        settle(Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2), fake_clock)
        controller = Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)
        settle(controller, fake_clock)
        assert controller.next_due_in() is None
        # When its record watch starts, and then someone else changes api's record
        stop = threading.Event()
        watch_records(controller, stop, lambda: None)
        try:
            time.sleep(0.5)
            client.CoreV1Api(kube_client).patch_namespaced_config_map(
                record_name(API.name), API.namespace, {"metadata": {"annotations": {"touched": "yes"}}}
            )
            deadline = time.monotonic() + 20
            while API not in controller.due and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)  # events the watch had before api's change are handled by now
        finally:
            stop.set()
    # Then api is due (its record changed), web is not (the watch only started)
    assert API in controller.due
    assert WEB not in controller.due
