"""Hand changes to gitdeploy's ReplicaSets (issue 21, item 2), through the real CLI on the embedded
cluster: ``status`` tells them as the cluster shows them, and ``gitdeploy run`` undoes them at once
(its ReplicaSet watch), not at the resync, with an event naming what it undid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.drift import (
    deploy_web,
    drift_events,
    run_on_watches,
    state_apis,
    web_view,
)
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.waiting import eventually


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _scale_by_hand(tmp_path: Path, replicas: int) -> str:
    """``kubectl scale rs web-… --replicas=N``: the ReplicaSet of shop/web that runs pods."""
    with state_apis(tmp_path) as (apps, _):
        found: Any = apps.list_namespaced_replica_set("shop", label_selector="gitdeploy.io/app=web")
        [running] = [rs for rs in found.items if rs.spec.replicas]
        name: str = running.metadata.name
        apps.patch_namespaced_replica_set_scale(name, "shop", {"spec": {"replicas": replicas}})
    return name


def _spec_replicas(tmp_path: Path, name: str) -> int:
    with state_apis(tmp_path) as (apps, _):
        found: Any = apps.read_namespaced_replica_set(name, "shop")
        return int(found.spec.replicas)


def test_status_tells_a_hand_scaled_replica_set_as_the_cluster_shows_it(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    deploy_web(git_remote, run_cli)
    assert (web_view(run_cli)["sync"], web_view(run_cli)["health"]) == ("Synced", "Healthy")

    name = _scale_by_hand(tmp_path, 0)
    view = eventually(lambda: (v := web_view(run_cli))["ready"] == 0 and v, "the pods to go")
    assert (view["ready"], view["replicas"]) == (0, 2)
    assert (view["sync"], view["health"]) == ("OutOfSync", "Degraded")
    assert f"{name} was scaled to 0 by hand (gitdeploy set 2)" in view["message"]

    done = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _spec_replicas(tmp_path, name) == 2
    assert drift_events(tmp_path) == [f"{name} was scaled to 0 by hand; scaled back to 2"]
    view = web_view(run_cli)
    assert (view["ready"], view["sync"], view["health"]) == (2, "Synced", "Healthy")


def test_run_undoes_a_hand_scale_at_once_and_says_so(
    git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    deploy_web(git_remote, run_cli)
    with run_on_watches(git_remote, tmp_path):
        name = _scale_by_hand(tmp_path, 0)
        eventually(lambda: drift_events(tmp_path), "a DriftCorrected event", 30)
        assert _spec_replicas(tmp_path, name) == 2
        assert drift_events(tmp_path) == [f"{name} was scaled to 0 by hand; scaled back to 2"]
        view = eventually(lambda: (v := web_view(run_cli))["ready"] == 2 and v, "the pods back", 30)
        assert (view["sync"], view["health"]) == ("Synced", "Healthy")


@pytest.mark.parametrize("label", ["app.kubernetes.io/managed-by", "gitdeploy.io/app"])
def test_run_puts_back_a_replica_sets_label_removed_by_hand_at_once(
    label: str, git_remote: GitRemote, run_cli: RunCli, cluster: None, tmp_path: Path
) -> None:
    deploy_web(git_remote, run_cli)
    with run_on_watches(git_remote, tmp_path):
        # When `kubectl label rs web-… LABEL-` (without managed-by, the ReplicaSet leaves run's
        # selector watch, which is told DELETED, as kube-apiserver tells it)
        with state_apis(tmp_path) as (apps, _):
            found: Any = apps.list_namespaced_replica_set("shop", label_selector="gitdeploy.io/app=web")
            [running] = [rs for rs in found.items if rs.spec.replicas]
            name: str = running.metadata.name
            apps.patch_namespaced_replica_set(name, "shop", {"metadata": {"labels": {label: None}}})
        # Then run puts the label back at once (its resync is an hour away) and says so
        [event] = eventually(lambda: drift_events(tmp_path), "a DriftCorrected event", 30)
        assert event.startswith(f"{name}: its labels were changed by hand ({label}"), event
        with state_apis(tmp_path) as (apps, _):
            relabelled: Any = apps.read_namespaced_replica_set(name, "shop")
            assert label in relabelled.metadata.labels and relabelled.spec.replicas == 2
