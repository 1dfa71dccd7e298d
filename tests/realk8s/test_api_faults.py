"""API faults on the real control plane, with ``gitdeploy run`` as deploy/'s ServiceAccount.

* **410 Gone.** kube-apiserver restarts (only it; etcd keeps every object) after a write newer than
  the version gitdeploy's record watch holds: the new server's watch cache starts at etcd's revision
  of that moment and ends a watch from an older version with 410 Gone ("too old resource version").
  Counted from the API server's own audit log: one list per 410 per watch, never a loop, and a
  commit pushed afterwards is deployed by the same ``gitdeploy run``.
* **A stalled connection.** gitdeploy reaches the API server through a TCP proxy (TLS passes
  through) that stops forwarding in the middle of a rollout: the calls fail at their timeouts,
  gitdeploy says so, a one-shot ``gitdeploy status`` exits non-zero with a timeout message instead
  of hanging, and once the proxy forwards again the same ``gitdeploy run`` completes the rollout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.core.observed import MANAGED_BY_LABEL, MANAGED_BY_VALUE, RECORD_LABEL
from tests.fixtures.cli import RunCli
from tests.fixtures.faultproxy import FaultProxy
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import (
    GITDEPLOY_NAMESPACE,
    ControlPlane,
    audit_events,
    audit_log_size,
    restart_apiserver,
)
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, at_revision, history, wait_for
from tests.realk8s.manifests import deployment, settings
from tests.realk8s.observed import requests
from tests.realk8s.stallproxy import api_server_address, kubeconfig_through, resume, stall

pytestmark = pytest.mark.usefixtures("isolated_git_config")

RECORDS = f"{RECORD_LABEL}=true"
"""The label selector of the record watch's list (the loop's own lists also name the app)."""
MANAGED = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"


@pytest.fixture
def start_run(tmp_path: Path) -> Iterator[Callable[..., Run]]:
    """``start_run(name, kubeconfig, *args)``: a ``gitdeploy run`` in the background, killed at the end."""
    started: list[Run] = []

    def start(name: str, kubeconfig: Path, *args: str) -> Run:
        run = Run(kubeconfig, tmp_path / f"state-{name}", tmp_path / f"{name}.log", *args)
        started.append(run)
        return run

    yield start
    for run in started:
        if run.process.poll() is None:
            run.process.kill()
        run.process.wait(timeout=30)


def test_a_watch_ended_by_410_gone_relists_once_and_rollouts_go_on(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    gitdeploy_kubeconfig: Path,
    start_run: Callable[..., Run],
) -> None:
    namespace = managed_namespace("gone")
    git_remote.commit_and_push(
        "web 1",
        {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": deployment("web", "registry.test/web:1", 2)},
    )
    # No resync and no Lease: once web is settled, only the watches make requests in its namespace
    run = start_run(
        "gone", gitdeploy_kubeconfig, "--repo", git_remote.url, "-n", namespace, "--interval", "1s",
        "--resync-interval", "1h", "--no-leader-elect",
    )  # fmt: skip
    wait_for("revision 1", at_revision(gitdeploy, namespace, 1), timeout=90)
    wait_for(
        "gitdeploy's record watch",
        lambda: bool(requests(audit_events(control_plane), namespace, "configmaps", "watch")),
    )
    # Given a write after the version the record watch holds (any write: etcd has one revision)
    control_plane.kubectl("create", "configmap", "after-the-watch", "-n", namespace)
    since = audit_log_size(control_plane)

    # When kube-apiserver restarts: the watches break off, and resumed, are told 410 Gone
    restart_apiserver(control_plane)
    wait_for(
        "the record watch to be told 410 Gone", lambda: "too old resource version" in run.log, timeout=120
    )

    def watching_after_the_last_list(resource: str, selector: str) -> Callable[[], bool]:
        def check() -> bool:
            events = audit_events(control_plane, since)
            lists = requests(events, namespace, resource, "list", labelSelector=selector)
            watches = requests(events, namespace, resource, "watch", labelSelector=selector)
            return bool(lists) and any(w["stageTimestamp"] > lists[-1]["stageTimestamp"] for w in watches)

        return check

    wait_for("a record watch after the relist", watching_after_the_last_list("configmaps", RECORDS))
    wait_for("a ReplicaSet watch after its list", watching_after_the_last_list("replicasets", MANAGED))

    # Then each watch listed once, for its one 410 Gone: a watch that broke off resumed from its
    # version (no list), and after the list it watched from the list's version (a relist loop
    # would list again at once, each list followed by a watch told 410 Gone). The ReplicaSet watch
    # resumes from its version as the record watch does (its list fills run's cache of them)
    events = audit_events(control_plane, since)
    gone = [line for line in run.log.splitlines() if "too old resource version" in line]
    counts = {
        "record 410 Gone": len([line for line in gone if "record watch of" in line]),
        "record lists": len(requests(events, namespace, "configmaps", "list", labelSelector=RECORDS)),
        "ReplicaSet 410 Gone": len([line for line in gone if "ReplicaSet watch of" in line]),
        # some lists are refused while the new server's RBAC cache fills: those start no watch
        "ReplicaSet lists answered": len(
            [
                e
                for e in requests(events, namespace, "replicasets", "list", labelSelector=MANAGED)
                if e["responseStatus"]["code"] == 200
            ]
        ),
    }
    assert counts == {
        "record 410 Gone": 1,
        "record lists": 1,
        "ReplicaSet 410 Gone": 1,
        "ReplicaSet lists answered": 1,
    }, (counts, run.log)

    # And a commit pushed after the 410 Gone is deployed by the same gitdeploy run
    git_remote.commit_and_push("web 2", {"apps/web.yaml": deployment("web", "registry.test/web:2", 2)})
    wait_for("revision 2 deployed by the same run", at_revision(gitdeploy, namespace, 2), timeout=90)
    assert run.process.poll() is None, run.log


def test_a_stalled_api_connection_times_out_and_the_rollout_completes_after(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    gitdeploy_kubeconfig: Path,
    start_run: Callable[..., Run],
    tmp_path: Path,
) -> None:
    namespace = managed_namespace("stall")
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}

    def web(image: str) -> str:  # each new pod counts as available 3 s after it is ready
        return deployment("web", image, 4, rolling, minReadySeconds=3)

    git_remote.commit_and_push(
        "web 1", {"gitdeploy.yaml": settings(namespace), "apps/web.yaml": web("registry.test/web:1")}
    )
    with FaultProxy(api_server_address(gitdeploy_kubeconfig)) as proxy:
        through_proxy = kubeconfig_through(proxy, gitdeploy_kubeconfig, tmp_path / "proxied-kubeconfig")
        run = start_run(
            "stall", through_proxy, "--repo", git_remote.url, "-n", namespace, "--interval", "1s",
            "--lease-namespace", GITDEPLOY_NAMESPACE,
        )  # fmt: skip
        wait_for("revision 1", at_revision(gitdeploy, namespace, 1), timeout=90)

        # Given a rollout under way (the new ReplicaSet scaled up, not yet to all 4)
        git_remote.commit_and_push("web 2", {"apps/web.yaml": web("registry.test/web:2")})

        def mid_rollout() -> bool:
            found: Any = control_plane.get_json("replicasets", "-n", namespace)
            new = [
                rs
                for rs in found["items"]
                if rs["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2")
            ]
            return bool(new) and 1 <= new[0]["spec"]["replicas"] < 4

        wait_for("the rollout of revision 2 to be under way", mid_rollout, timeout=90)

        # When the proxy stops answering
        stall(proxy)
        before = run.log
        # Then a one-shot command fails with a timeout instead of hanging (the subprocess timeout
        # is only the test's guard)
        status = gitdeploy("--kubeconfig", str(through_proxy), "status", "-n", namespace, timeout=300)

        # And the rollout's own calls fail at their timeouts (not only the Lease's), and gitdeploy
        # run says so for the app
        def app_call_timed_out() -> bool:
            lines = run.log[len(before) :].splitlines()
            return any(f"[{namespace}/web]" in line and "did not answer in time" in line for line in lines)

        wait_for("gitdeploy run to report a timed-out call of the rollout", app_call_timed_out, timeout=300)
        assert status.returncode != 0, status.stdout
        assert "did not answer in time" in status.stderr, status.stderr

        # When the proxy forwards again
        resume(proxy)
        # Then the same gitdeploy run completes the rollout
        wait_for("revision 2 completed after the stall", at_revision(gitdeploy, namespace, 2), timeout=180)
        assert run.process.poll() is None, run.log
    found: Any = control_plane.get_json("replicasets", "-n", namespace)
    replicas = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
        for rs in found["items"]
    }
    assert replicas == {"registry.test/web:1": 0, "registry.test/web:2": 4}
    outcomes = [(entry["revision"], entry.get("outcome")) for entry in history(gitdeploy, f"{namespace}/web")]
    print(outcomes)
    assert [revision for revision, _ in outcomes] == [1, 2] or [r for r, _ in outcomes] == [2, 1], outcomes
