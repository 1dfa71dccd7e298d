"""Faults of the app record (``ConfigMap gitdeploy.<app>``) while the app runs: deleted, emptied,
damaged. The real ``gitdeploy`` command against the embedded cluster; the record is changed with
the official client, as ``kubectl`` would.

What must hold: a lost or damaged record costs at most the history, never a pod; one damaged
record never hides the other apps; what can be rebuilt from the ReplicaSets' annotations is.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.watcher import watch_records
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import AppKey
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle
from tests.fixtures.manifests import deployment
from tests.fixtures.waiting import eventually

SETTINGS = "paths: [apps]\ndefaultNamespace: shop\n"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


@pytest.fixture
def api(tmp_path: Path, cluster: None) -> Iterator[Any]:
    """A client of the embedded cluster the CLI started, through its kubeconfig (as kubectl)."""
    api = config.new_client_from_config(str(tmp_path / "state" / "kubeconfig"))  # type: ignore[no-untyped-call]
    try:
        yield api
    finally:
        api.close()


@pytest.fixture
def core(api: Any) -> Any:
    return client.CoreV1Api(api)


def _sync(run_cli: RunCli, git_remote: GitRemote) -> str:
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    return synced.stdout


def _two_revisions_of_web(run_cli: RunCli, git_remote: GitRemote) -> list[str]:
    """web at revision 2 (nginx 1.25 then 1.26), 2 pods; the commits, oldest first."""
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    shas = []
    for tag in ("1.25", "1.26"):
        shas.append(
            git_remote.commit_and_push(
                f"web {tag}", {"apps/web.yaml": deployment("web", "shop", f"nginx:{tag}", 2)}
            )
        )
        _sync(run_cli, git_remote)
    return shas


def _pods(core: Any) -> set[tuple[str, str]]:
    """(name, uid) of every pod of web that runs (not Terminating: old pods stop for a grace period)."""
    listed = core.list_namespaced_pod("shop", label_selector="app=web")
    return {(p.metadata.name, p.metadata.uid) for p in listed.items if p.metadata.deletion_timestamp is None}


def _serving(core: Any, replicas: int) -> set[tuple[str, str]]:
    """:func:`_pods` once there are ``replicas`` of them: a rollout may end (sync --wait returns)
    a moment before the ReplicaSet controller has marked the old pods Terminating."""

    def settled() -> set[tuple[str, str]] | None:
        pods = _pods(core)
        return pods if len(pods) == replicas else None

    return eventually(settled, f"{replicas} pods of web")


def _history(run_cli: RunCli, app: str = "shop/web") -> list[dict[str, Any]]:
    shown = run_cli("history", app, "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    entries: list[dict[str, Any]] = json.loads(shown.stdout)
    return entries


def _views(run_cli: RunCli) -> dict[str, dict[str, Any]]:
    shown = run_cli("status", "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return {v["key"]: v for v in json.loads(shown.stdout)}


def _events(core: Any, reason: str) -> list[Any]:
    return [e for e in core.list_namespaced_event("shop").items if e.reason == reason]


def test_deleting_the_record_keeps_every_pod_and_rebuilds_the_history(
    git_remote: GitRemote, run_cli: RunCli, core: Any
) -> None:
    # Given web at revision 2 with its 2 pods
    shas = _two_revisions_of_web(run_cli, git_remote)
    pods = _serving(core, 2)
    # When someone deletes its record, as `kubectl delete cm gitdeploy.web` does (background)
    core.delete_namespaced_config_map("gitdeploy.web", "shop", propagation_policy="Background")
    # Then no pod went (nothing is owned by the record)
    assert _pods(core) == pods
    # And the next sync rebuilds the record from the ReplicaSets, says so, and touches no pod
    out = _sync(run_cli, git_remote)
    assert "shop/web" in out
    assert _pods(core) == pods
    history = _history(run_cli)
    assert [(h["revision"], h["commit"]["sha"], h["outcome"]) for h in history] == [
        (1, shas[0], "Complete"),
        (2, shas[1], "Complete"),
    ]
    [rebuilt] = _events(core, "RecordRebuilt")
    assert rebuilt.type == "Warning" and "deleted" in rebuilt.message and "revisions 1, 2" in rebuilt.message
    view = _views(run_cli)["shop/web"]
    assert view["sync"] == "Synced" and "rebuilt" in view["message"]
    # And the next commit rolls forward as revision 3; deleting the new record still costs no pod
    git_remote.commit_and_push("web 1.27", {"apps/web.yaml": deployment("web", "shop", "nginx:1.27", 2)})
    _sync(run_cli, git_remote)
    assert [h["revision"] for h in _history(run_cli)] == [1, 2, 3]
    running = _pods(core)
    core.delete_namespaced_config_map("gitdeploy.web", "shop")
    assert _pods(core) == running


def test_an_emptied_record_is_rebuilt_and_said_so_not_rewritten_empty(
    git_remote: GitRemote, run_cli: RunCli, core: Any
) -> None:
    shas = _two_revisions_of_web(run_cli, git_remote)
    pods = _serving(core, 2)
    # When someone empties the record by hand
    core.replace_namespaced_config_map(
        "gitdeploy.web",
        "shop",
        {
            "metadata": {
                "name": "gitdeploy.web",
                "labels": core.read_namespaced_config_map("gitdeploy.web", "shop").metadata.labels,
            },
            "data": {},
        },
    )
    _sync(run_cli, git_remote)
    # Then the revisions come back from the ReplicaSets, with an event and a status that say so
    assert [(h["revision"], h["commit"]["sha"]) for h in _history(run_cli)] == [(1, shas[0]), (2, shas[1])]
    [rebuilt] = _events(core, "RecordRebuilt")
    assert "emptied" in rebuilt.message
    assert "rebuilt" in _views(run_cli)["shop/web"]["message"]
    assert _pods(core) == pods


def test_a_damaged_record_shows_that_app_as_damaged_and_the_others_as_usual(
    git_remote: GitRemote, run_cli: RunCli, api: Any, core: Any
) -> None:
    git_remote.commit_and_push(
        "two apps",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/web.yaml": deployment("web", "shop", "nginx:1.25", 2),
            "apps/api.yaml": deployment("api", "shop", "api:1", 1),
        },
    )
    _sync(run_cli, git_remote)
    pods = _serving(core, 2)
    # When web's record gets bad JSON
    core.patch_namespaced_config_map(
        "gitdeploy.web", "shop", {"data": {"record.json": '{"version": 1, "revisions": ['}}
    )
    damaged = core.read_namespaced_config_map("gitdeploy.web", "shop").data["record.json"]
    # Then `status` lists both: api as usual, web as damaged with what to do
    views = _views(run_cli)
    assert views["shop/api"]["sync"] == "Synced"
    web = views["shop/web"]
    assert web["sync"] == "RecordDamaged"
    assert (
        "gitdeploy.web" in web["message"] and "kubectl edit configmap gitdeploy.web -n shop" in web["message"]
    )
    text = run_cli("status")
    assert text.returncode == 0 and "shop/api" in text.stdout and "RecordDamaged" in text.stdout
    # And while a ReplicaSet an earlier gitdeploy made is still owned by the record, status does
    # not advise deleting it (that would delete the ReplicaSet and its pods)
    uid = core.read_namespaced_config_map("gitdeploy.web", "shop").metadata.uid
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gitdeploy.web", "uid": uid, "controller": True}
    old_way = {"metadata": {"ownerReferences": [owner], "labels": {"app": "web"}}}
    apps: Any = client.AppsV1Api(api)
    for rs in apps.list_namespaced_replica_set("shop", label_selector="gitdeploy.io/app=web").items:
        apps.patch_namespaced_replica_set(rs.metadata.name, "shop", old_way)
    web = _views(run_cli)["shop/web"]
    assert "do not delete it yet" in web["message"] and "kubectl delete" not in web["message"]
    # And a sync rolls api forward, releases web's ReplicaSet, leaves its pods and damaged record
    git_remote.commit_and_push("api 2", {"apps/api.yaml": deployment("api", "shop", "api:2", 1)})
    synced = run_cli("sync", "--repo", git_remote.url, "--wait", "--timeout", "60s")
    assert "RecordDamaged" in synced.stdout, synced.stdout + synced.stderr
    assert _views(run_cli)["shop/api"]["revision"] == 2
    assert _pods(core) == pods
    assert core.read_namespaced_config_map("gitdeploy.web", "shop").data["record.json"] == damaged
    # And then the advice is safe: deleting the record keeps the pods and brings the history back
    assert "kubectl delete configmap gitdeploy.web -n shop" in _views(run_cli)["shop/web"]["message"]
    core.delete_namespaced_config_map("gitdeploy.web", "shop")
    _sync(run_cli, git_remote)
    assert _pods(core) == pods
    assert [h["revision"] for h in _history(run_cli)] == [1]


def test_under_run_a_deleted_record_is_rebuilt_at_once_not_at_the_resync(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> None:
    # Given web deployed by a loop that watches the app records, as `gitdeploy run` does
    git_remote.commit_and_push(
        "web", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web", "shop")}
    )
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        controller = Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)
        settle(controller, fake_clock)
        assert controller.next_due_in() is None
        stop = threading.Event()
        watch_records(controller, stop, lambda: None)
        try:
            # When someone deletes web's record
            time.sleep(0.5)
            client.CoreV1Api(kube_client).delete_namespaced_config_map("gitdeploy.web", "shop")
            deadline = time.monotonic() + 20
            while AppKey("shop", "web") not in controller.due and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
        # Then web is due at once, and its pass rebuilds the record
        assert AppKey("shop", "web") in controller.due
        settle(controller, fake_clock)
    stored = Cluster(kube_client, "embedded").read_app_record("shop", "web")
    assert stored is not None and [e.revision for e in AppRecord.from_json(stored.payload).revisions] == [1]
