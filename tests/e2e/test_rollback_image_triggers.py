"""Image triggers and rollback through the real ``gitdeploy`` command, against a real registry.

Given an image stream tag ``shop/web:prod`` that follows ``<registry>/shop/web:prod`` (scheduled
import) and a DeploymentConfig ``shop/web`` whose automatic ImageChange trigger names its ``web``
container, in a real git repo, on the embedded cluster:

* push digest A, sync: revision 1 runs ``shop/web@A``;
* push digest B, sync: revision 2, cause ImageChange, runs ``shop/web@B``;
* ``gitdeploy rollback web -n shop``, sync: revision 3 runs ``shop/web@A`` and the app is Pinned;
* push digest C, sync: no new revision (still 3, still A), the triggers are suspended;
* ``gitdeploy deploy shop/web --enable-triggers``, sync: revision 4 runs ``shop/web@C``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.imagetriggers import stream, web_config
from tests.fixtures.registry import RunningRegistry
from tests.fixtures.shopweb import SETTINGS, web_history, web_status


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _sync(
    run_cli: RunCli, git_remote: GitRemote, registry: RunningRegistry
) -> subprocess.CompletedProcess[str]:
    done = run_cli(
        "sync",
        "--repo",
        git_remote.url,
        "--insecure-registry",
        registry.host,
        "--wait",
        "--timeout",
        "60s",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _revisions(run_cli: RunCli) -> list[tuple[int, str, list[dict[str, Any]]]]:
    return [(e["revision"], e["cause"], e["images"]) for e in web_history(run_cli)]


def _pod_template_images(tmp_path: Path, replica_set: str) -> list[str]:
    """The container images in a ReplicaSet's pod template, read with the official client."""
    api = config.new_client_from_config(str(tmp_path / "state" / "kubeconfig"))  # type: ignore[no-untyped-call]
    try:
        found: Any = client.AppsV1Api(api).read_namespaced_replica_set(replica_set, "shop")
    finally:
        api.close()
    return [c.image for c in found.spec.template.spec.containers]


def _web(image: str) -> list[dict[str, Any]]:
    return [{"container": "web", "image": image}]


def test_rollback_suspends_image_triggers_until_they_are_enabled_again(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, registry: RunningRegistry, tmp_path: Path
) -> None:
    # Given web follows <registry>/shop/web:prod and runs digest A
    digest_a = registry.push_image("shop/web", "prod", marker="A")
    git_remote.commit_and_push(
        "web follows its image stream",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/stream.yaml": stream(registry.host),
            "apps/web.yaml": web_config(),
        },
    )
    _sync(run_cli, git_remote, registry)
    image_a, repo = f"{registry.host}/shop/web@{digest_a}", f"{registry.host}/shop/web"
    assert _revisions(run_cli) == [(1, "ConfigChange", _web(image_a))]

    # When digest B is pushed on the tag, then synced
    digest_b = registry.push_image("shop/web", "prod", marker="B")
    _sync(run_cli, git_remote, registry)
    # Then revision 2 rolls out B as an image change
    assert _revisions(run_cli)[-1] == (2, "ImageChange", _web(f"{repo}@{digest_b}"))
    assert _pod_template_images(tmp_path, web_history(run_cli)[-1]["replicaSet"]) == [f"{repo}@{digest_b}"]

    # When web is rolled back, then synced
    rolled = run_cli("rollback", "web", "-n", "shop", "-m", "B breaks checkout")
    assert rolled.returncode == 0, rolled.stderr
    _sync(run_cli, git_remote, registry)
    # Then revision 3 runs A again and the app is pinned
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["cause"], last["images"]) == (3, "Rollback", _web(image_a))
    assert _pod_template_images(tmp_path, last["replicaSet"]) == [image_a]
    assert web_status(run_cli)["sync"] == "Pinned"

    # When digest C is pushed on the tag, then synced
    digest_c = registry.push_image("shop/web", "prod", marker="C")
    _sync(run_cli, git_remote, registry)
    # Then nothing rolls out: the rollback suspended the image trigger
    assert [r[0] for r in _revisions(run_cli)] == [1, 2, 3]
    assert _revisions(run_cli)[-1][2] == _web(image_a)
    assert web_status(run_cli)["sync"] == "Pinned"

    # When the triggers are enabled again, then synced
    resumed = run_cli("deploy", "shop/web", "--enable-triggers")
    assert resumed.returncode == 0, resumed.stderr
    _sync(run_cli, git_remote, registry)
    # Then the newest digest, C, rolls out as revision 4
    last = web_history(run_cli)[-1]
    assert (last["revision"], last["images"]) == (4, _web(f"{repo}@{digest_c}"))
    assert _pod_template_images(tmp_path, last["replicaSet"]) == [f"{repo}@{digest_c}"]
    assert web_status(run_cli)["sync"] == "Synced"
