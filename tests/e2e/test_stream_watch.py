"""Image stream tags moved by ``gitdeploy tag`` reach a running ``gitdeploy run`` at once (issue 21).

Given a DeploymentConfig ``shop/web`` whose automatic ImageChange trigger follows ``shop/web:prod``
(pinned to digest A in git, so no registry is involved), deployed through revisions 1–5 by
``gitdeploy tag`` and ``sync`` (A, X, Y, B, C), and a real ``gitdeploy run`` that looks at the
registries only once an hour (``--image-interval 1h``):

* ``gitdeploy rollback`` goes from revision 5 (C) to 4's template (B): revision 6 runs B;
* ``gitdeploy tag`` D, then at once ``deploy --enable-triggers``: revision 7 runs D, never C;
* ``gitdeploy tag`` E with the triggers on: revision 8 runs E, without waiting for the interval.

The delay from the end of each CLI write (``rollback``, ``deploy --enable-triggers``, ``tag``) to
its revision's ReplicaSet (6, 7, 8) is measured and printed (``pytest -s``) against the issue's
target of under 1 s; nothing asserts on it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.fixtures.cli import RunCli, gitdeploy_executable
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.imagestreams import pinned_image as image
from tests.fixtures.imagestreams import pinned_stream
from tests.fixtures.imagetriggers import web_config
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, tag_prod, web_history
from tests.fixtures.waiting import eventually


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _images(run_cli: RunCli) -> list[tuple[int, str, str]]:
    """(revision, cause, image of container web) of every revision, oldest first."""
    return [(e["revision"], e["cause"], e["images"][0]["image"]) for e in web_history(run_cli)]


def _revision(run_cli: RunCli, number: int, *, complete: bool = True) -> dict[str, Any] | None:
    found = [e for e in web_history(run_cli) if e["revision"] == number]
    if found and (not complete or found[0]["outcome"] == "Complete"):
        return found[0]
    return None


@contextmanager
def replica_set_revisions(tmp_path: Path) -> Iterator[Callable[[], set[str]]]:
    """The revisions of shop's ReplicaSets, read with the official client (no process to start)."""
    api = config.new_client_from_config(str(tmp_path / "state" / "kubeconfig"))  # type: ignore[no-untyped-call]
    apps = client.AppsV1Api(api)

    def revisions() -> set[str]:
        listed: Any = apps.list_namespaced_replica_set("shop")
        return {(rs.metadata.annotations or {}).get("gitdeploy.io/revision", "") for rs in listed.items}

    try:
        yield revisions
    finally:
        api.close()


@contextmanager
def running_loop(git_remote: GitRemote, tmp_path: Path) -> Iterator[None]:
    """A real `gitdeploy run` that polls git hourly and registries hourly; stops cleanly on SIGTERM."""
    env = {**os.environ, "GITDEPLOY_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    command = [gitdeploy_executable(), "run", "--repo", git_remote.url, "--interval", "1h"]
    loop = subprocess.Popen(
        [*command, "--image-interval", "1h", "--no-leader-elect"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield
    finally:
        loop.send_signal(signal.SIGTERM)
        _, stderr = loop.communicate(timeout=30)
    assert loop.returncode == 0, stderr


def test_enable_triggers_after_a_rollback_rolls_out_the_tag_just_moved_not_the_one_rolled_back_from(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    # Given web at revision 5 (C), after A (git), X, Y, B and C moved by hand
    git_remote.commit_and_push(
        "web follows its image stream",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/stream.yaml": pinned_stream(image("A")),
            "apps/web.yaml": web_config(),
        },
    )
    sync_and_wait(run_cli, git_remote)
    for marker in ("X", "Y", "B", "C"):
        tag_prod(run_cli, marker)
        sync_and_wait(run_cli, git_remote)
    assert [(r, i) for r, _, i in _images(run_cli)] == [
        (1, image("A")), (2, image("X")), (3, image("Y")), (4, image("B")), (5, image("C")),
    ]  # fmt: skip

    delays: dict[str, float] = {}
    with running_loop(git_remote, tmp_path), replica_set_revisions(tmp_path) as revisions:

        def written(revision: int, since: float, write: str) -> None:
            """Wait for revision ``revision``'s ReplicaSet; keep the delay since ``write`` ended."""
            eventually(lambda: str(revision) in revisions(), f"revision {revision}'s ReplicaSet is written")
            delays[write] = time.monotonic() - since  # measured, reported, never asserted on

        # When web is rolled back to revision 4 (B) while run runs
        rolled = run_cli("rollback", "web", "-n", "shop", "-m", "C breaks checkout")
        assert rolled.returncode == 0, rolled.stderr
        written(6, time.monotonic(), "gitdeploy rollback")
        eventually(lambda: _revision(run_cli, 6), "revision 6 (the rollback) completes")
        assert _images(run_cli)[-1] == (6, "Rollback", image("B"))

        # When D is tagged, then the triggers are enabled at once
        tag_prod(run_cli, "D")
        resumed = run_cli("deploy", "shop/web", "--enable-triggers")
        assert resumed.returncode == 0, resumed.stderr
        written(7, time.monotonic(), "gitdeploy deploy --enable-triggers")

        # Then revision 7 runs D: never C, the image rolled back from
        eventually(lambda: _revision(run_cli, 7), "revision 7 completes")
        assert _images(run_cli)[6:] == [(7, "ImageChange", image("D"))]

        # When E is tagged with the triggers on, run rolls it out without waiting for --image-interval
        tag_prod(run_cli, "E")
        written(8, time.monotonic(), "gitdeploy tag")
        eventually(lambda: _revision(run_cli, 8), "revision 8 completes")
        assert _images(run_cli)[7:] == [(8, "ImageChange", image("E"))]
    print("\nend of the CLI write -> its revision's ReplicaSet seen (target: under 1 s):")
    for write, delay in delays.items():
        print(f"  {write}: {delay * 1000:.0f} ms")
