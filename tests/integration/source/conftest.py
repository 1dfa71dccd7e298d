"""Shared setup for the source layer's integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.manifests import render_app


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """Every test here runs git without the machine's user or system configuration."""


@pytest.fixture
def many_apps_remote(git_remote: GitRemote) -> GitRemote:
    """A remote whose main holds 20 apps under apps/ plus a README."""
    files: dict[str, str | bytes] = {f"apps/app{i:02d}.yaml": render_app(f"app{i:02d}") for i in range(20)}
    files["README.md"] = "# config\n"
    git_remote.commit_and_push("Add 20 apps", files)
    return git_remote


@pytest.fixture
def config_repo(many_apps_remote: GitRemote, state_dir: Path) -> Iterator[ConfigRepo]:
    repo = ConfigRepo(many_apps_remote.url, ref="main", state_dir=state_dir)
    yield repo
    repo.close()
