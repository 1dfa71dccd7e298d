"""A pass over many namespaces holds what it listed of two of them at most, and still passes over
every app (real git, embedded cluster, a fake clock)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.reconcile import Result
from gitdeploy.controller.scheduler import Scheduler
from gitdeploy.controller.workers import PassHooks
from gitdeploy.core.models import AppKey
from gitdeploy.localcluster import LocalCluster
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle
from tests.fixtures.manifests import deployment

NAMESPACES = [f"team{i}" for i in range(5)]
APPS = [AppKey(namespace, f"app{i}") for namespace in NAMESPACES for i in range(4)]


pytestmark = pytest.mark.usefixtures("isolated_git_config")  # git without the machine's configuration


class Pace:
    """Pass hooks that slow each step down (as on a busy machine) and note, at each namespace
    list, the namespaces whose steps are still to finish."""

    def __init__(self) -> None:
        self.unfinished: Counter[str] = Counter()
        self.unfinished_at_list: dict[str, set[str]] = {}
        self._guard = threading.Lock()
        self.hooks = PassHooks(before_list=self.before_list, around_step=self.around_step)

    def before_list(self, namespace: str, members: int) -> None:
        with self._guard:
            self.unfinished_at_list[namespace] = {ns for ns, steps in self.unfinished.items() if steps}
            self.unfinished[namespace] += members

    def around_step(self, key: AppKey, step: Callable[[], Result]) -> Result:
        time.sleep(0.02)
        try:
            return step()
        finally:
            with self._guard:
                self.unfinished[key.namespace] -= 1


def test_a_pass_lists_a_namespace_once_all_but_the_last_listed_are_done(
    git_remote: GitRemote,
    kube_client: Any,
    embedded_cluster: LocalCluster,
    fake_clock: FakeClock,
    tmp_path: Path,
) -> None:
    # Given 20 apps in 5 namespaces, deployed
    files = {f"apps/{key.namespace}/{key.name}.yaml": deployment(key.name, key.namespace) for key in APPS}
    git_remote.commit_and_push("apps", files)
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        controller = Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)
        pace = Pace()
        synced = {
            key: report.sync for key, report in settle(controller, fake_clock, hooks=pace.hooks).items()
        }
        assert synced == dict.fromkeys(APPS, "Synced")

        # When a pass goes over every app
        controller.mark_due()
        embedded_cluster.stats.reset()
        reports = Scheduler(controller, pace.hooks).pass_once()

    # Then every app is passed over, each namespace listed once
    assert sorted(report.key for report in reports) == sorted(APPS)
    assert embedded_cluster.stats.count("list", "replicasets") == len(NAMESPACES)
    # And when a namespace was listed, at most the one listed before it still had steps to run
    assert list(pace.unfinished_at_list) == NAMESPACES
    assert all(len(earlier) <= 1 for earlier in pace.unfinished_at_list.values())
