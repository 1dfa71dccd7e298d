"""``gitdeploy run --sharding`` on the real control plane as deploy/'s ServiceAccount: three
replicas, each named as its own pod, keep their member Leases under deploy/leader-election.yaml's
Role and share the apps; when one is killed (SIGKILL) the survivors claim its apps once its Lease
expired, and roll out the next commit for all of them; `gitdeploy status` says when an app's
owner stopped acting on it. After a force push back to an older commit, every replica follows
the branch. A webhook push delivered to one replica reaches the others through
the head announcement Lease they watch (the Role's ``watch``), and each replica's app gauges
count the apps it holds."""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from gitdeploy.core.observed import APP_LABEL
from gitdeploy.core.sharding import MEMBER_LABEL, SHARD_LABEL, owner_of, shard_of, shards_of
from gitdeploy.server.webhook import github_signature
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.sharding import free_port
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, ControlPlane, audit_events, audit_log_size
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, wait_for
from tests.realk8s.manifests import settings
from tests.realk8s.sharding import (
    FAST_LEASE,
    apps,
    converged,
    fleet,
    identity,
    members_seen,
    selected_shards,
    views,
    writer,
    writers,
)

pytestmark = pytest.mark.usefixtures("isolated_git_config")

APPS = 12
SECRET = b"fan-out-secret-real"


def deliver_push(port: int, repo_url: str, after: str) -> int:
    """POST a signed GitHub push of ``after`` to the replica listening on ``port``."""
    body = json.dumps(
        {"ref": "refs/heads/main", "after": after, "repository": {"clone_url": repo_url}}
    ).encode()
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": after,
        "X-Hub-Signature-256": github_signature(body, SECRET),
        "Content-Type": "application/json",
    }
    return httpx.post(
        f"http://127.0.0.1:{port}/hooks/git", content=body, headers=headers, timeout=10
    ).status_code


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
    identities = fleet(runs, monkeypatch, git_remote, namespace)

    # When a commit adds 12 apps: every app converges, claimed by the replica the hash gives it to
    start = audit_log_size(control_plane)
    git_remote.commit_and_push("Add the apps", apps(APPS, "registry.test/web:1"))
    wait_for(f"{APPS} apps at revision 1", converged(gitdeploy, namespace, 1, APPS), timeout=120)
    owners = {name: owner_of(f"{namespace}/{name}", identities) for name in views(gitdeploy, namespace)}
    claimed = {name: (v["owner"], v["shardEpoch"]) for name, v in views(gitdeploy, namespace).items()}
    assert claimed == {name: (owner, 1) for name, owner in owners.items()}
    assert len(set(owners.values())) >= 2, f"one replica owns all {APPS} apps: {owners}"
    # ... and each app's record and ReplicaSets were written by its owner alone (the audit log)
    assert writers(control_plane, namespace, start) == {name: {owner} for name, owner in owners.items()}
    # ... and each of them carries its app's shard, which a label selector can name
    for kind in ("replicasets", "configmaps"):
        listed: Any = control_plane.get_json(kind, "-n", namespace, "-l", APP_LABEL)
        labels = [item["metadata"]["labels"] for item in listed["items"]]
        assert {label[APP_LABEL] for label in labels} == set(owners), kind
        wrong = [
            label for label in labels if label.get(SHARD_LABEL) != shard_of(f"{namespace}/{label[APP_LABEL]}")
        ]
        assert not wrong, (kind, wrong)
    # ... and each replica's watches of them select its own shards, as kube-apiserver served them
    everyone = frozenset(identities)
    mine = {identity: shards_of(identity, everyone) for identity in identities}
    assert selected_shards(control_plane, namespace, 0) == {
        (identity, kind): mine[identity] for identity in identities for kind in ("replicasets", "configmaps")
    }
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
        and f"claimed by {after[app]} from {victim} (no longer a live member)" in event["message"]
    }
    assert announced == set(its_apps), [event["message"] for event in events["items"]]
    # ... and a commit changing every app rolls out all of them, by the survivors
    git_remote.commit_and_push("Bump", apps(APPS, "registry.test/web:2"))
    wait_for(f"{APPS} apps at revision 2", converged(gitdeploy, namespace, 2, APPS), timeout=120)
    assert moved(), views(gitdeploy, namespace)
    # ... and the survivors' watches followed their new shards (the victim's among them)
    survived = frozenset(survivors)
    watched = selected_shards(control_plane, namespace, killed)
    kinds = ("replicasets", "configmaps")
    assert {(survivor, kind): watched.get((survivor, kind)) for survivor in survivors for kind in kinds} == {
        (survivor, kind): shards_of(survivor, survived) for survivor in survivors for kind in kinds
    }
    # ... each app written since by its owner now alone (the apps that did not move: the same one)
    assert writers(control_plane, namespace, killed) == {name: {after[name]} for name in owners}
    for survivor in survivors:
        log = identities[survivor].log
        assert "forbidden" not in log.lower(), log

    # When the survivors are killed too, Then `gitdeploy status`, reading their member Leases where
    # they keep them, says of every app that its owner stopped acting on it once its Lease expired
    for survivor in survivors:
        identities[survivor].process.send_signal(signal.SIGKILL)
        identities[survivor].process.wait(timeout=30)

    def shown() -> dict[str, str]:
        done = gitdeploy("status", "-n", namespace, "-o", "json", "--lease-namespace", GITDEPLOY_NAMESPACE)
        return (
            {v["key"].split("/", 1)[1]: v["owner"] for v in json.loads(done.stdout)}
            if done.returncode == 0
            else {}
        )

    expired = {name: f"{after[name]} (lease expired)" for name in owners}
    wait_for("every owner shown with its Lease expired", lambda: shown() == expired, timeout=30)


def test_a_push_delivered_to_one_sharded_replica_reaches_the_others_through_the_watched_head_lease(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # Given three replicas as deploy/'s ServiceAccount that never poll git (--interval 1h)
    namespace = managed_namespace("fanout")
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": settings(namespace)})
    secret = tmp_path / "webhook-secret"
    secret.write_bytes(SECRET)
    common = ["--sharding", "--repo", git_remote.url, "-n", namespace, "--interval", "1h"]
    common += ["--lease-namespace", GITDEPLOY_NAMESPACE, *FAST_LEASE, "--webhook-secret-file", str(secret)]
    replicas, ports = [], []
    for name in ("a", "b", "c"):
        monkeypatch.setenv("POD_NAME", f"gitdeploy-{name}")
        ports.append(free_port())
        replicas.append(runs(name, *common, "--listen", f"127.0.0.1:{ports[-1]}"))
    identities = {identity(run): run for run in replicas}
    wait_for("each replica to see three members", lambda: all(members_seen(r) == 3 for r in replicas))
    wait_for("each replica to watch gitdeploy-head", lambda: all("watching lease" in r.log for r in replicas))
    wait_for("each replica to read git", lambda: all("moved: (none) -> " in r.log for r in replicas))
    start = audit_log_size(control_plane)

    # When a commit adds 12 apps and its webhook reaches replica b alone
    sha = git_remote.commit_and_push("Add the apps", apps(APPS, "registry.test/web:1"))
    assert deliver_push(ports[1], git_remote.url, sha) == 200

    # Then every app rolls out, those the other two replicas own too (only the announcement
    # could tell them: nobody polls)
    wait_for(f"{APPS} apps at revision 1", converged(gitdeploy, namespace, 1, APPS), timeout=120)
    owners = {v["owner"] for v in views(gitdeploy, namespace).values()}
    receiver = identity(replicas[1])
    assert owners - {receiver}, f"the receiver owns every app: {owners}"
    for run in (replicas[0], replicas[2]):
        assert f"{receiver} announced {sha[:12]} (push): fetching now" in run.log, run.log
    # ... and each replica counts the apps it holds in /metrics' app gauges (summed: each app once)
    held = Counter(v["owner"] for v in views(gitdeploy, namespace).values())

    def synced(port: int) -> str:
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        return next(
            line
            for line in scraped.splitlines()
            if line.startswith('gitdeploy_apps_sync_state{state="Synced"}')
        )

    expected = [f'gitdeploy_apps_sync_state{{state="Synced"}} {float(held[identity(r)])}' for r in replicas]
    wait_for("each replica to count its own apps", lambda: [synced(port) for port in ports] == expected)
    # ... the announcement is the Lease gitdeploy-head in gitdeploy's namespace
    lease: Any = control_plane.get_json("lease", "gitdeploy-head", "-n", GITDEPLOY_NAMESPACE)
    annotations = lease["metadata"]["annotations"]
    assert (annotations["gitdeploy.io/head-commit"], annotations["gitdeploy.io/head-announced-by"]) == (
        sha,
        receiver,
    )
    # ... watched by name under deploy/leader-election.yaml's Role (its `watch` verb), never refused
    events: list[Any] = audit_events(control_plane)
    watches = [
        event
        for event in events
        if event["verb"] == "watch"
        and (event.get("objectRef") or {}).get("resource") == "leases"
        and "gitdeploy-head" in str(event.get("requestURI"))
    ]
    assert watches and all((w.get("responseStatus") or {}).get("code") == 200 for w in watches), watches
    since_push: list[Any] = audit_events(control_plane, start)
    # (the replicas': `gitdeploy status`, as the same account, may be refused a list of Leases
    # outside gitdeploy's namespace, and shows the owners as the records name them)
    refused = [
        e
        for e in since_push
        if (e.get("responseStatus") or {}).get("code") == 403 and writer(e) in identities
    ]
    assert refused == []
    for run in identities.values():  # (--listen's dashboard may not list cluster-wide: not this test's)
        lines = [line for line in run.log.lower().splitlines() if "forbidden" in line and "lease" in line]
        assert lines == [], lines


def test_sharded_replicas_follow_a_branch_force_pushed_back_to_an_older_commit(
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace = managed_namespace("shardback")
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": settings(namespace)})
    fleet(runs, monkeypatch, git_remote, namespace)
    # Given 12 apps at their second commit
    added = git_remote.commit_and_push("Add the apps", apps(APPS, "registry.test/web:1"))
    wait_for(f"{APPS} apps at revision 1", converged(gitdeploy, namespace, 1, APPS), timeout=120)
    git_remote.commit_and_push("Bump", apps(APPS, "registry.test/web:2"))
    wait_for(f"{APPS} apps at revision 2", converged(gitdeploy, namespace, 2, APPS), timeout=120)

    # When the branch is reset to the commit that added them and force-pushed
    git_remote.reset_hard(added)
    git_remote.push(force=True)

    # Then every replica follows the branch: each app runs that commit's image again, as revision 3
    wait_for(f"{APPS} apps back at revision 3", converged(gitdeploy, namespace, 3, APPS), timeout=120)
    images = {name: v["images"][0]["image"] for name, v in views(gitdeploy, namespace).items()}
    assert images == {f"app-{i:02}": "registry.test/web:1" for i in range(APPS)}
