"""Git faults beyond an outage (tests/faults/test_git_outage.py): a slow remote, a force-push, a
deleted and re-created branch, a corrupt packfile in gitdeploy's mirror.

Each test starts the same way: web (10 replicas) runs v1 and has started rolling out v2. Then the
source goes bad, and what held is checked the same way: the rollout of v2 completes while the
source is bad, nothing newer is applied meanwhile, and once the source is good again the newest
commit rolls out without a restart, every revision recorded. (tests/integration/source covers the
source layer alone: a force-push reported and its old commit kept, a deleted branch's error.)
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.core.history.records import Outcome
from gitdeploy.core.models import AppKey
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import SETTINGS, controller_for, run_for, settle, web_record, web_sizes
from tests.fixtures.manifests import deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")

WEB = AppKey("shop", "web")


def web(version: int) -> dict[str, str]:
    return {"apps/web.yaml": deployment("web", "shop", f"nginx:{version}", replicas=10)}


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, Cluster(kube_client, "embedded"), fake_clock, tmp_path / "state") as made:
        yield made


def start_v2(remote: GitRemote, controller: Controller, clock: FakeClock) -> None:
    """v1 runs; the rollout of v2 has started (some new pods, most old ones still there)."""
    remote.commit_and_push("v1", web(1))
    settle(controller, clock)
    remote.commit_and_push("v2", web(2))
    controller.poll()
    controller.reconcile_due()
    started = web_sizes(controller.cluster)
    assert 0 < started["nginx:2"] < 10 and started["nginx:1"] > 0, started


def assert_v2_done_and_nothing_newer(controller: Controller) -> None:
    assert web_sizes(controller.cluster) == {"nginx:1": 0, "nginx:2": 10}
    outcomes = [(e.revision, e.outcome) for e in web_record(controller.cluster).revisions]
    assert outcomes == [(1, Outcome.COMPLETE), (2, Outcome.COMPLETE)]
    assert controller.reports[WEB].health == "Healthy"


def assert_v3_rolled_out(controller: Controller) -> None:
    assert web_sizes(controller.cluster) == {"nginx:1": 0, "nginx:2": 0, "nginx:3": 10}
    outcomes = [(e.revision, e.outcome) for e in web_record(controller.cluster).revisions]
    assert outcomes == [(1, Outcome.COMPLETE), (2, Outcome.COMPLETE), (3, Outcome.COMPLETE)]
    assert controller.reports[WEB].sync == "Synced"


def test_a_force_push_during_a_rollout_keeps_every_revision_and_its_commit(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock
) -> None:
    start_v2(git_remote, controller, fake_clock)
    v2 = git_remote.head_sha()
    # When main is force-pushed to a history without v2 (v1, then v3), during v2's rollout
    git_remote.reset_hard("HEAD~1")
    git_remote.write_files(web(3))
    git_remote.commit_all("v3, v2 rewritten away")
    git_remote.push(force=True)
    run_for(controller, fake_clock, 200)
    # Then v3 rolled out as the newest commit; revision 2 stays in the log with its commit,
    # which the mirror still holds (a rollback to it can rebuild its template from git)
    assert web_sizes(controller.cluster) == {"nginx:1": 0, "nginx:2": 0, "nginx:3": 10}
    revisions = web_record(controller.cluster).revisions
    assert [e.revision for e in revisions] == [1, 2, 3] and revisions[-1].outcome is Outcome.COMPLETE
    assert revisions[1].commit.sha == v2 and controller.repo.commit(v2).sha == v2


def test_a_deleted_branch_stops_new_commits_not_the_rollout_and_its_return_resumes(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock
) -> None:
    start_v2(git_remote, controller, fake_clock)
    # When the branch is deleted on the remote (which the remote allows)
    git_remote.run_git("config", "receive.denyDeleteCurrent", "ignore", cwd=git_remote.bare)
    git_remote.delete_remote_branch("main")
    run_for(controller, fake_clock, 120)
    # Then v2's rollout completed, and the app says the source is bad
    assert_v2_done_and_nothing_newer(controller)
    report = controller.reports[WEB]
    assert report.sync == "SourceUnavailable" and "main" in report.message, report.message
    # When the branch is re-created with a v3, it rolls out without a restart
    git_remote.commit_and_push("v3", web(3))
    run_for(controller, fake_clock, 320)
    assert_v3_rolled_out(controller)


def test_a_corrupt_packfile_in_the_mirror_stops_new_commits_and_is_repaired_without_a_restart(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock
) -> None:
    start_v2(git_remote, controller, fake_clock)
    # When every packfile of gitdeploy's mirror is damaged (a disk error), and v3 is pushed
    mirror = controller.repo.mirror_path
    packs = list((mirror / "objects" / "pack").glob("*.pack"))
    assert packs, "the mirror keeps its objects in packs"
    for pack in packs:
        data = bytearray(pack.read_bytes())
        data[12:] = bytes(len(data) - 12)  # the header stays, every object is zeroes
        os.chmod(pack, 0o644)
        pack.write_bytes(bytes(data))
    damaged = subprocess.run(["git", "-C", str(mirror), "fsck"], capture_output=True, check=False)
    assert damaged.returncode != 0, "git itself finds the mirror damaged"
    git_remote.commit_and_push("v3", web(3))
    v1 = git_remote.head_sha("HEAD~2")
    run_for(controller, fake_clock, 200)
    # Then v3 rolled out (it replaced v2's rollout), and the mirror reads every commit again
    assert web_sizes(controller.cluster) == {"nginx:1": 0, "nginx:2": 0, "nginx:3": 10}
    outcomes = [(e.revision, e.outcome) for e in web_record(controller.cluster).revisions]
    assert outcomes == [(1, Outcome.COMPLETE), (2, Outcome.CANCELLED), (3, Outcome.COMPLETE)]
    assert [f.path for f in controller.repo.files_at(v1)] == ["apps/web.yaml", "gitdeploy.yaml"]


SLOW_SSH = """#!/bin/sh
# A slow network to the git server: wait, then run the git command ssh was asked to run, here.
sleep "$(cat {delay_file})"
shift
exec sh -c "$*"
"""


def test_a_remote_slower_than_the_network_timeout_is_retried_and_the_rollout_goes_on(
    git_remote: GitRemote,
    kube_client: Any,
    fake_clock: FakeClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the remote over ssh, through a network that takes as long as delay_file says
    delay_file = tmp_path / "delay"
    delay_file.write_text("0")
    ssh = tmp_path / "slow-ssh"
    ssh.write_text(SLOW_SSH.format(delay_file=delay_file))
    ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    monkeypatch.setenv("GIT_SSH_VARIANT", "simple")
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    url = f"ssh://git.example{git_remote.bare}"
    with ConfigRepo(url, state_dir=tmp_path / "state", network_timeout=2.0) as repo:
        controller = Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)
        start_v2(git_remote, controller, fake_clock)
        # When every git call takes longer than the network timeout, and v3 is pushed
        delay_file.write_text("5")
        git_remote.commit_and_push("v3", web(3))
        run_for(controller, fake_clock, 60)
        # Then v2's rollout completed and v3 waits; the app says the source did not answer
        assert_v2_done_and_nothing_newer(controller)
        report = controller.reports[WEB]
        assert report.sync == "SourceUnavailable", report
        # When the network is fast again, v3 rolls out without a restart
        delay_file.write_text("0")
        run_for(controller, fake_clock, 400)
        assert_v3_rolled_out(controller)
