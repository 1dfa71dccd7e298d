"""Image triggers through the real ``gitdeploy`` command: the examples deploy their image stream's
digest, and ``gitdeploy tag`` (from a real registry, and from another stream tag) rolls an app out."""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

import pytest

from tests.fixtures.cli import EXAMPLES, RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.registry import RunningRegistry


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def history(run_cli: RunCli, app: str) -> list[dict[str, Any]]:
    done = run_cli("history", app, "-o", "json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    revisions = body["revisions"] if isinstance(body, dict) else body
    assert isinstance(revisions, list)
    return revisions


def images_of(revision: dict[str, Any]) -> list[str]:
    return [i["image"] if isinstance(i, dict) else i[1] for i in revision["images"]]


def test_examples_deploy_the_stream_digest_and_gitdeploy_tag_rolls_out_a_new_one(
    run_cli: RunCli, cluster: None, git_remote: GitRemote, registry: RunningRegistry
) -> None:
    # Given the examples in a git repo, deployed
    shutil.copytree(EXAMPLES, git_remote.work, dirs_exist_ok=True)
    git_remote.commit_all("Examples")
    git_remote.push()
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "2m")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    stream_text = (EXAMPLES / "apps" / "imagestreams.yaml").read_text()
    (git_image,) = re.findall(r"^\s+name: (\S+@sha256:[0-9a-f]{64})$", stream_text, re.MULTILINE)
    (first,) = history(run_cli, "demo/frontend")
    assert images_of(first) == [git_image]

    # When the tag is moved by hand to an image in a registry, then synced
    pushed = registry.push_image("openshift/origin-ruby-sample", "v2", marker="v2")
    source = f"{registry.host}/openshift/origin-ruby-sample:v2"
    moved = run_cli("tag", source, "demo/origin-ruby-sample:latest")
    assert moved.returncode == 0, moved.stderr
    assert f"-> {registry.host}/openshift/origin-ruby-sample@{pushed}" in moved.stdout
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "2m")
    assert synced.returncode == 0, synced.stdout + synced.stderr

    # Then frontend rolled out the new digest as an image change; the other apps did not move
    revisions = history(run_cli, "demo/frontend")
    assert [r["cause"] for r in revisions] == ["ConfigChange", "ImageChange"]
    assert images_of(revisions[-1]) == [f"{registry.host}/openshift/origin-ruby-sample@{pushed}"]
    assert len(history(run_cli, "demo/api")) == 1

    # And a second sync (a restart) changes nothing; the hand-set tag holds against git's digest
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "2m")
    assert synced.returncode == 0 and len(history(run_cli, "demo/frontend")) == 2


def test_gitdeploy_tag_refuses_bad_input_in_one_line(run_cli: RunCli, cluster: None) -> None:
    bad_target = run_cli("tag", "nginx@sha256:" + "a" * 64, "demo/no-tag-here")
    assert bad_target.returncode == 1 and "is not an image stream tag" in bad_target.stderr
    assert "Traceback" not in bad_target.stderr
    missing = run_cli("tag", "--source", "istag", "demo/nope:latest", "demo/web:prod")
    assert missing.returncode == 1 and "has no image in the cluster" in missing.stderr
