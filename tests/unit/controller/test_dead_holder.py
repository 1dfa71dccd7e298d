"""The "dead holder" rule both Lease users share (gitdeploy.controller.leader.holder_is_gone): a
holder of this machine whose process no longer runs is gone at once; any other holder only once
its Lease expired. ``process_runs`` is checked against real processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gitdeploy.controller.leader import holder_is_gone, new_identity, process_runs

HERE = "web-0_1a2b3c4d.40_bb"
RUNNING, DEAD = 7, 8


def runs(pid: int) -> bool:
    """Processes of this test's imaginary machine: 7 runs, 8 does not (nor any other)."""
    return pid == RUNNING


@pytest.mark.parametrize(
    ("holder", "gone"),
    [
        pytest.param(f"web-0_1a2b3c4d.{RUNNING}_aa", False, id="of this machine, runs: not gone"),
        pytest.param(f"web-0_1a2b3c4d.{DEAD}_aa", True, id="of this machine, no longer runs: gone"),
        pytest.param(HERE, False, id="this process itself"),
        pytest.param("", False, id="nobody holds it"),
        pytest.param(f"web-1_1a2b3c4d.{DEAD}_aa", False, id="another pod: only its expiry tells"),
        pytest.param(f"web-0_99999999.{DEAD}_aa", False, id="before a reboot: cannot tell"),
        pytest.param("a_1", False, id="an older gitdeploy's identity"),
    ],
)
def test_holder_is_gone(holder: str, gone: bool) -> None:
    assert holder_is_gone(holder, HERE, runs) is gone


def test_process_runs_on_real_processes() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert process_runs(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not process_runs(child.pid)  # reaped: gone
    assert not process_runs(os.getpid())  # a holder with this pid was an earlier process


def test_a_holder_of_this_machine_is_gone_once_its_process_ended() -> None:
    mine = new_identity()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    holder = mine.rsplit("_", 1)[0].rpartition(".")[0] + f".{child.pid}_cc"
    try:
        assert not holder_is_gone(holder, mine)
    finally:
        child.kill()
        child.wait()
    assert holder_is_gone(holder, mine)
