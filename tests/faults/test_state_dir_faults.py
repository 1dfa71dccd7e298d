"""The state directory's disk full or read-only: a clear error, nothing running disturbed, recovery.

The state directory (the git mirror lives in ``<state>/source/``) is a 2 MiB tmpfs mounted for the
test (root only: skipped where mounting is not allowed). It is filled up, or remounted read-only,
while web runs v1 and v2 is pushed: fetching v2 cannot write, so v2 waits; web keeps running v1;
the app and the log say which path and what to do; the loop keeps going. Freed again, v2 rolls out
without a restart.
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.core.models import AppKey
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import controller_for, run_for, settle, web_sizes
from tests.fixtures.manifests import deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")

WEB = AppKey("shop", "web")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs at ``tmp_path/state``."""
    mount_point = tmp_path / "state"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=False)


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, small_disk: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, Cluster(kube_client, "embedded"), fake_clock, small_disk) as made:
        yield made


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; return it."""
    filler = disk / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(bytes(65536))
                out.flush()
        except OSError as full:
            assert full.errno == errno.ENOSPC, full
    return filler


def remount(disk: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(disk)], check=True)


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_a_full_or_read_only_state_dir_says_so_disturbs_nothing_and_recovers(
    git_remote: GitRemote,
    controller: Controller,
    fake_clock: FakeClock,
    small_disk: Path,
    fault: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    git_remote.commit_and_push("v1", {"apps/web.yaml": deployment("web", "shop", "nginx:1", replicas=4)})
    settle(controller, fake_clock)
    # Given the state dir's disk full (or read-only), when v2 is pushed
    filler = fill(small_disk) if fault == "full" else None
    if fault == "read-only":
        remount(small_disk, "ro")
    git_remote.commit_and_push("v2", {"apps/web.yaml": deployment("web", "shop", "nginx:2", replicas=4)})
    run_for(controller, fake_clock, 60)
    # Then web keeps running v1, and says why v2 waits: the path, the cause, what to do
    assert web_sizes(controller.cluster) == {"nginx:1": 4}
    report = controller.reports[WEB]
    assert report.sync == "SourceUnavailable" and report.health == "Healthy", report
    said = {"full": "No space left on device", "read-only": "Read-only file system"}[fault]
    assert str(small_disk) in report.message and said in report.message, report.message
    assert "GITDEPLOY_STATE_DIR" in report.message, report.message
    assert "Traceback" not in caplog.text
    # When the disk has room (or is writable) again, v2 rolls out without a restart
    if filler is not None:
        filler.unlink()
    else:
        remount(small_disk, "rw")
    run_for(controller, fake_clock, 400)
    assert web_sizes(controller.cluster) == {"nginx:1": 0, "nginx:2": 4}
    assert controller.reports[WEB].sync == "Synced"
