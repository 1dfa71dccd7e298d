"""Git outages: what was decided from a good commit keeps rolling out; only new commits wait.

The remote is a real bare repository; an outage moves it away (git then cannot read it), recovery
moves it back. A commit pushed during the outage goes to the moved repository, as a push that
reached the git server while gitdeploy could not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.core.history.records import Outcome
from gitdeploy.core.models import AppKey
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import controller_for, run_for, settle, web_record, web_sizes
from tests.fixtures.manifests import deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")

WEB = AppKey("shop", "web")


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, Cluster(kube_client, "embedded"), fake_clock, tmp_path / "state") as made:
        yield made


def test_a_rollout_in_progress_completes_during_an_outage_and_new_commits_wait(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock
) -> None:
    cluster = controller.cluster
    git_remote.commit_and_push("v1", {"apps/web.yaml": deployment("web", "shop", "nginx:1", replicas=10)})
    settle(controller, fake_clock)
    # Given a rollout of v2 that has started: some new pods, most old ones still there
    git_remote.commit_and_push("v2", {"apps/web.yaml": deployment("web", "shop", "nginx:2", replicas=10)})
    controller.poll()
    controller.reconcile_due()
    started = web_sizes(cluster)
    assert 0 < started["nginx:2"] < 10 and started["nginx:1"] > 0
    # When the remote becomes unreachable, and a v3 is pushed where gitdeploy cannot read it
    hidden = git_remote.bare.rename(git_remote.bare.with_name("hidden.git"))
    git_remote.write_files({"apps/web.yaml": deployment("web", "shop", "nginx:3", replicas=10)})
    git_remote.commit_all("v3")
    git_remote.run_git("push", "--quiet", str(hidden), "HEAD:refs/heads/main")
    gaps = run_for(controller, fake_clock, 120)
    # Then v2's rollout completed, v3 is not applied, and the app says its source is unavailable
    assert web_sizes(cluster) == {"nginx:1": 0, "nginx:2": 10}
    assert [(e.revision, e.outcome) for e in web_record(cluster).revisions] == [
        (1, Outcome.COMPLETE),
        (2, Outcome.COMPLETE),
    ]
    report = controller.reports[WEB]
    assert report.sync == "SourceUnavailable" and report.health == "Healthy"
    assert "cannot read" in report.message
    # and the remote was retried with the documented backoff (5 s doubling), not every 4 s
    assert gaps[:4] == [5.0, 10.0, 20.0, 40.0]
    # When the remote is back, v3 rolls out without a restart
    hidden.rename(git_remote.bare)
    run_for(controller, fake_clock, 120 + 80)
    assert web_sizes(cluster) == {"nginx:1": 0, "nginx:2": 0, "nginx:3": 10}
    assert web_record(cluster).revisions[-1].outcome is Outcome.COMPLETE
    assert controller.reports[WEB].sync == "Synced"
