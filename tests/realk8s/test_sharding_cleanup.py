"""Member Leases left behind, on the real control plane as deploy/'s ServiceAccount: the leader of
three ``gitdeploy run --sharding`` replicas deletes the member Lease of one killed by SIGKILL, and
of one paused by SIGSTOP, once each went unrenewed for ten lease durations (deploy/
leader-election.yaml's Role allows it); the paused one, resumed, creates its Lease anew, is a
member again, and rolls out its apps."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from typing import Any

import pytest

from gitdeploy.core.sharding import MEMBER_LABEL, STALE_AFTER, member_lease_name
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, wait_for
from tests.realk8s.manifests import deployment, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")

APPS = 6
LEASE_SECONDS = 2
FAST_LEASE = ["--lease-duration", f"{LEASE_SECONDS}s", "--renew-deadline", "1.5s", "--retry-period", "0.3s"]


def apps(image: str) -> dict[str, str]:
    return {f"apps/app-{i:02}.yaml": deployment(f"app-{i:02}", image, 1) for i in range(APPS)}


def converged(gitdeploy: RunCli, namespace: str, revision: int) -> Callable[[], bool]:
    def check() -> bool:
        done = gitdeploy("status", "-n", namespace, "-o", "json")
        found = json.loads(done.stdout) if done.returncode == 0 else []
        return len(found) == APPS and all(
            (v["revision"], v["sync"], v["health"]) == (revision, "Synced", "Healthy") for v in found
        )

    return check


def identity(run: Run) -> str:
    wait_for("the replica to start", lambda: "sharding: member " in run.log)
    found = re.search(r"sharding: member (\S+) \(lease", run.log)
    assert found is not None, run.log
    return found.group(1)


def member_leases(plane: ControlPlane) -> dict[str, str]:
    """The member Leases of gitdeploy's namespace: name -> holder."""
    leases: Any = plane.get_json("leases", "-n", GITDEPLOY_NAMESPACE, "-l", f"{MEMBER_LABEL}=true")
    return {lease["metadata"]["name"]: lease["spec"].get("holderIdentity", "") for lease in leases["items"]}


def members_seen(run: Run) -> set[str]:
    lines = re.findall(r"members: (.*)$", run.log, re.MULTILINE)
    return set(lines[-1].split(", ")) if lines else set()


def test_the_leader_deletes_a_killed_and_a_paused_replicas_member_leases_and_the_paused_one_rejoins(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace = managed_namespace("clean")
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": settings(namespace)})
    common = ["--sharding", "--repo", git_remote.url, "-n", namespace, "--interval", "1s"]
    common += ["--lease-namespace", GITDEPLOY_NAMESPACE, *FAST_LEASE]
    replicas: dict[str, Run] = {}
    for name in ("a", "b", "c"):
        monkeypatch.setenv("POD_NAME", f"gitdeploy-clean-{name}")  # each its own pod
        run = runs(name, *common)
        replicas[identity(run)] = run
    wait_for(
        "each replica to see three members", lambda: all(len(members_seen(r)) == 3 for r in replicas.values())
    )
    git_remote.commit_and_push("Add the apps", apps("registry.test/web:1"))
    wait_for(f"{APPS} apps at revision 1", converged(gitdeploy, namespace, 1), timeout=120)

    # When one replica is killed (SIGKILL) and another paused (SIGSTOP), neither the leader
    leader = next(i for i, run in replicas.items() if run.leads())
    killed, paused = (i for i in replicas if i != leader)
    replicas[killed].process.send_signal(signal.SIGKILL)
    replicas[killed].process.wait(timeout=30)
    replicas[paused].process.send_signal(signal.SIGSTOP)
    try:
        # Then the leader deletes both member Leases, each after ten durations unrenewed
        gone = {member_lease_name(killed), member_lease_name(paused)}
        wait_for(
            "the two member Leases deleted", lambda: not gone & set(member_leases(control_plane)), timeout=90
        )
        log = replicas[leader].log
        for who in (killed, paused):
            found = re.search(
                rf"deleted the member lease \S+ of {re.escape(who)}: not renewed for (\d+) s", log
            )
            assert found is not None, log
            assert int(found.group(1)) >= STALE_AFTER * LEASE_SECONDS
        assert member_lease_name(leader) in member_leases(control_plane)  # its own: renewed, kept
    finally:
        replicas[paused].process.send_signal(signal.SIGCONT)

    # When the paused one resumes: its renewal writes its Lease anew and it is a member again
    wait_for(
        "the resumed replica's member Lease back",
        lambda: member_leases(control_plane).get(member_lease_name(paused)) == paused,
    )
    # (kube-apiserver creates a Lease on an update when it is gone, as Leases allow; where an
    # update of a gone Lease is a 404 instead, the replica creates it: tests/integration)
    wait_for(
        "both see the two of them",
        lambda: members_seen(replicas[leader]) == members_seen(replicas[paused]) == {leader, paused},
    )
    # Then a commit changing every app rolls out all of them, by the two
    git_remote.commit_and_push("Bump", apps("registry.test/web:2"))
    wait_for(f"{APPS} apps at revision 2", converged(gitdeploy, namespace, 2), timeout=120)
    for who in (leader, paused):
        assert "forbidden" not in replicas[who].log.lower(), replicas[who].log
