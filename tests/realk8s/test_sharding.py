"""``gitdeploy run --sharding`` on the real control plane as deploy/'s ServiceAccount: three
replicas, each named as its own pod, keep their member Leases under deploy/leader-election.yaml's
Role and share the apps; when one is killed (SIGKILL) the survivors claim its apps once its Lease
expired, and roll out the next commit for all of them."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from typing import Any

import pytest

from gitdeploy.core.sharding import MEMBER_LABEL, owner_of
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, ControlPlane, audit_events, audit_log_size
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, wait_for
from tests.realk8s.manifests import deployment, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")

APPS = 12
WRITES = {"create", "update", "patch", "delete"}
FAST_LEASE = ["--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "0.3s"]


def apps(image: str) -> dict[str, str]:
    return {f"apps/app-{i:02}.yaml": deployment(f"app-{i:02}", image, 1) for i in range(APPS)}


def views(gitdeploy: RunCli, namespace: str) -> dict[str, dict[str, Any]]:
    """``gitdeploy status -o json`` by app name ({} while it fails)."""
    done = gitdeploy("status", "-n", namespace, "-o", "json")
    found = json.loads(done.stdout) if done.returncode == 0 else []
    return {view["key"].split("/", 1)[1]: view for view in found}


def converged(gitdeploy: RunCli, namespace: str, revision: int) -> Callable[[], bool]:
    def check() -> bool:
        found = views(gitdeploy, namespace)
        return len(found) == APPS and all(
            (v["revision"], v["sync"], v["health"]) == (revision, "Synced", "Healthy") for v in found.values()
        )

    return check


def identity(run: Run) -> str:
    wait_for("the replica to start", lambda: "sharding: member " in run.log)
    found = re.search(r"sharding: member (\S+) \(lease", run.log)
    assert found is not None, run.log
    return found.group(1)


def members_seen(run: Run) -> int:
    """How many members the replica's last ``members:`` line names."""
    lines = re.findall(r"members: (.*)$", run.log, re.MULTILINE)
    return len(lines[-1].split(", ")) if lines else 0


def writers(plane: ControlPlane, namespace: str, start: int) -> dict[str, set[str]]:
    """Per app, the replicas (by the identity in their User-Agent) that wrote its record or its
    ReplicaSets since byte ``start`` of the API server's audit log."""
    found: dict[str, set[str]] = {}
    events: list[Any] = audit_events(plane, start)
    for event in events:
        where = event.get("objectRef") or {}
        name = str(where.get("name", ""))
        if event["verb"] not in WRITES or where.get("namespace") != namespace or not name:
            continue
        if where["resource"] == "configmaps" and name.startswith("gitdeploy."):
            app = name.removeprefix("gitdeploy.")
        elif where["resource"] == "replicasets":
            app = name.rsplit("-", 1)[0]
        else:
            continue
        agent = re.search(r"gitdeploy \((\S+)\)", str(event.get("userAgent", "")))
        found.setdefault(app, set()).add(agent.group(1) if agent else str(event.get("userAgent")))
    return found


def test_three_sharded_replicas_share_the_apps_and_the_survivors_take_a_killed_ones(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace = managed_namespace("shard")
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": settings(namespace)})
    common = ["--sharding", "--repo", git_remote.url, "-n", namespace, "--interval", "1s"]
    common += ["--lease-namespace", GITDEPLOY_NAMESPACE, *FAST_LEASE]
    replicas = []
    for name in ("a", "b", "c"):
        # each its own pod, as deploy/deployment.yaml's: a killed one is noticed by its Lease alone
        monkeypatch.setenv("POD_NAME", f"gitdeploy-{name}")
        replicas.append(runs(name, *common))
    identities = {identity(run): run for run in replicas}
    wait_for("each replica to see three members", lambda: all(members_seen(r) == 3 for r in replicas))

    # When a commit adds 12 apps: every app converges, claimed by the replica the hash gives it to
    start = audit_log_size(control_plane)
    git_remote.commit_and_push("Add the apps", apps("registry.test/web:1"))
    wait_for(f"{APPS} apps at revision 1", converged(gitdeploy, namespace, 1), timeout=120)
    owners = {name: owner_of(f"{namespace}/{name}", identities) for name in views(gitdeploy, namespace)}
    claimed = {name: (v["owner"], v["shardEpoch"]) for name, v in views(gitdeploy, namespace).items()}
    assert claimed == {name: (owner, 1) for name, owner in owners.items()}
    assert len(set(owners.values())) >= 2, f"one replica owns all {APPS} apps: {owners}"
    # ... and each app's record and ReplicaSets were written by its owner alone (the audit log)
    assert writers(control_plane, namespace, start) == {name: {owner} for name, owner in owners.items()}
    # ... each replica's member Lease is in gitdeploy's namespace, made under deploy/'s Role
    leases: Any = control_plane.get_json("leases", "-n", GITDEPLOY_NAMESPACE, "-l", f"{MEMBER_LABEL}=true")
    assert {lease["spec"]["holderIdentity"] for lease in leases["items"]} >= set(identities)

    # When the replica with most apps is killed (SIGKILL: its member Lease stays until it expires)
    victim = max(identities, key=lambda i: sum(owner == i for owner in owners.values()))
    survivors = set(identities) - {victim}
    its_apps = sorted(name for name, owner in owners.items() if owner == victim)
    identities[victim].process.send_signal(signal.SIGKILL)
    identities[victim].process.wait(timeout=30)
    killed = audit_log_size(control_plane)

    # Then the survivor the hash names among the survivors claims each of its apps with the next
    # shard epoch, and says so in an Event on the app's record
    moves = {name: owner_of(f"{namespace}/{name}", survivors) for name in its_apps}
    after = {**owners, **moves}
    expected = {name: (after[name], 2 if name in its_apps else 1) for name in owners}

    def moved() -> bool:
        found = views(gitdeploy, namespace)
        return {name: (v["owner"], v["shardEpoch"]) for name, v in found.items()} == expected

    wait_for(f"the survivors to claim the victim's {len(its_apps)} apps", moved, timeout=60)
    events: Any = control_plane.get_json("events", "-n", namespace, "--field-selector", "reason=ShardClaimed")
    announced = {
        app
        for event in events["items"]
        if (app := event["involvedObject"]["name"].removeprefix("gitdeploy.")) in after
        and f"claimed by {after[app]} from {victim} (its member Lease expired)" in event["message"]
    }
    assert announced == set(its_apps), [event["message"] for event in events["items"]]
    # ... and a commit changing every app rolls out all of them, by the survivors
    git_remote.commit_and_push("Bump", apps("registry.test/web:2"))
    wait_for(f"{APPS} apps at revision 2", converged(gitdeploy, namespace, 2), timeout=120)
    assert moved(), views(gitdeploy, namespace)
    # ... each app written since by its owner now alone (the apps that did not move: the same one)
    assert writers(control_plane, namespace, killed) == {name: {after[name]} for name in owners}
    for survivor in survivors:
        log = identities[survivor].log
        assert "forbidden" not in log.lower(), log
