"""A pass whose scale meets a ReplicaSet changed since the pass read it (its controller's status,
another writer, a hand): the server refuses the scale, which names the resourceVersion read, and
the loop takes that as news to read, not as a failure (real git, the embedded cluster, a fake
clock)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import ObservedReplicaSet
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import controller_for, settle
from tests.fixtures.manifests import deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")

WEB = AppKey("shop", "web")


class RacedCluster(Cluster):
    """The real adapter; while ``races`` is above 0, another writer annotates a ReplicaSet right
    before each scale of it that names the version its pass read."""

    def __init__(self, api: Any) -> None:
        super().__init__(api, "embedded")
        self.races = 0

    def scale_replica_set(
        self, namespace: str, name: str, *args: Any, version: str = "", **kwargs: Any
    ) -> ObservedReplicaSet:
        if self.races and version:
            self.races -= 1
            self.annotate_replica_set(namespace, name, {"example.com/touched": "by hand"})
        return super().scale_replica_set(namespace, name, *args, version=version, **kwargs)


def test_a_scale_that_meets_a_replica_set_changed_since_its_read_is_done_by_the_next_pass(
    git_remote: GitRemote,
    kube_client: Any,
    fake_clock: FakeClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = RacedCluster(kube_client)
    with controller_for(git_remote, cluster, fake_clock, tmp_path / "state") as controller:
        # Given web at 2 replicas
        git_remote.commit_and_push("web", {"apps/web.yaml": deployment("web", "shop", "nginx:1", 2)})
        settle(controller, fake_clock)
        settled = controller.reports[WEB]

        # When git scales it to 4, and another writer changes its ReplicaSet between the pass's
        # read and its scale
        git_remote.commit_and_push("4 replicas", {"apps/web.yaml": deployment("web", "shop", "nginx:1", 4)})
        assert controller.poll()
        cluster.races = 1
        with caplog.at_level(logging.DEBUG, logger="gitdeploy"):
            passed = controller.reconcile_due()

        # Then the server refused the scale, and the pass is no failure: no report of an error,
        # no warning, the app is due again within a second (or when a watch tells of the change)
        assert cluster.races == 0 and [
            rs.state.replicas for rs in cluster.list_replica_sets("shop", "web")
        ] == [2]
        assert WEB not in [report.key for report in passed]
        assert controller.reports[WEB] == settled
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
        assert "changed since this pass read it" in caplog.text
        assert controller.queue.due[WEB] == pytest.approx(fake_clock.now() + 1.0)

        # and the next pass, reading it anew, scales it
        fake_clock.advance(1.0)
        assert WEB in [report.key for report in controller.reconcile_due()]
        assert [rs.state.replicas for rs in cluster.list_replica_sets("shop", "web")] == [4]
