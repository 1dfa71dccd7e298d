"""The command exists as a console script and as `python -m gitdeploy`, with help on every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gitdeploy import __version__
from tests.fixtures.cli import RunCli


def test_version(run_cli: RunCli) -> None:
    done = run_cli("--version")
    assert done.returncode == 0
    assert __version__ in done.stdout


def test_python_dash_m() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gitdeploy", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0
    assert __version__ in done.stdout


@pytest.mark.parametrize("command", [[], ["validate"], ["cluster"], ["cluster", "up"]])
def test_help_with_examples(run_cli: RunCli, command: list[str]) -> None:
    done = run_cli(*command, "--help")
    assert done.returncode == 0
    assert "Usage: gitdeploy" in done.stdout


def test_unknown_command_is_a_usage_error(run_cli: RunCli) -> None:
    done = run_cli("deploi")
    assert done.returncode == 2
    assert "No such command" in done.stderr
