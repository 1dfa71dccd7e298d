"""What the real-control-plane tests of ``gitdeploy run --sharding`` share: the replicas as
deploy/'s ServiceAccount, each named as its own pod, what ``gitdeploy status`` says of the apps,
and who wrote what by the API server's audit log (each replica names itself in its User-Agent)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, ControlPlane, audit_events
from tests.realk8s.gitdeploy_cli import Run, wait_for
from tests.realk8s.manifests import deployment

WRITES = {"create", "update", "patch", "delete"}
FAST_LEASE = ["--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "0.3s"]


def apps(count: int, image: str, replicas: int = 1, **spec: Any) -> dict[str, str]:
    return {f"apps/app-{i:02}.yaml": deployment(f"app-{i:02}", image, replicas, **spec) for i in range(count)}


def views(gitdeploy: RunCli, namespace: str) -> dict[str, dict[str, Any]]:
    """``gitdeploy status -o json`` by app name ({} while it fails)."""
    done = gitdeploy("status", "-n", namespace, "-o", "json")
    found = json.loads(done.stdout) if done.returncode == 0 else []
    return {view["key"].split("/", 1)[1]: view for view in found}


def converged(gitdeploy: RunCli, namespace: str, revision: int, count: int) -> Callable[[], bool]:
    def check() -> bool:
        found = views(gitdeploy, namespace)
        return len(found) == count and all(
            (v["revision"], v["sync"], v["health"]) == (revision, "Synced", "Healthy") for v in found.values()
        )

    return check


def claims(gitdeploy: RunCli, namespace: str) -> dict[str, tuple[str, int]]:
    """Each app's owner and shard epoch, as ``gitdeploy status`` shows them."""
    return {name: (v["owner"], v["shardEpoch"]) for name, v in views(gitdeploy, namespace).items()}


def identity(run: Run) -> str:
    wait_for("the replica to start", lambda: "sharding: member " in run.log)
    found = re.search(r"sharding: member (\S+) \(lease", run.log)
    assert found is not None, run.log
    return found.group(1)


def members_seen(run: Run) -> int:
    """How many members the replica's last ``members:`` line names."""
    lines = re.findall(r"members: (.*)$", run.log, re.MULTILINE)
    return len(lines[-1].split(", ")) if lines else 0


def start_replica(runs: Callable[..., Run], monkeypatch: pytest.MonkeyPatch, name: str, *args: str) -> Run:
    """``gitdeploy run`` with ``args`` as pod ``gitdeploy-<name>``, as deploy/deployment.yaml's
    pods are: a killed one is noticed by its Lease alone."""
    monkeypatch.setenv("POD_NAME", f"gitdeploy-{name}")
    return runs(name, *args)


def fleet(
    runs: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
    git_remote: GitRemote,
    namespace: str,
    *extra: str,
) -> dict[str, Run]:
    """Three sharded replicas of ``namespace`` that see each other, by identity."""
    args = sharded_args(git_remote, namespace, *extra)
    replicas = [start_replica(runs, monkeypatch, name, *args) for name in ("a", "b", "c")]
    wait_for("each replica to see three members", lambda: all(members_seen(r) == 3 for r in replicas))
    return {identity(run): run for run in replicas}


def sharded_args(git_remote: GitRemote, namespace: str, *extra: str) -> list[str]:
    return [
        "--sharding", "--repo", git_remote.url, "-n", namespace, "--interval", "1s",
        "--lease-namespace", GITDEPLOY_NAMESPACE, *FAST_LEASE, *extra,
    ]  # fmt: skip


def app_written(event: dict[str, Any], namespace: str) -> str | None:
    """The app whose record or ReplicaSet the audit ``event`` wrote (None: another write, or a read)."""
    where = event.get("objectRef") or {}
    name = str(where.get("name", ""))
    if event["verb"] not in WRITES or where.get("namespace") != namespace or not name:
        return None
    if where["resource"] == "configmaps" and name.startswith("gitdeploy."):
        return name.removeprefix("gitdeploy.")
    if where["resource"] == "replicasets":
        return name.rsplit("-", 1)[0]
    return None


def writer(event: dict[str, Any]) -> str:
    """The replica that made the audit ``event`` (the identity in its User-Agent)."""
    agent = re.search(r"gitdeploy \((\S+)\)", str(event.get("userAgent", "")))
    return agent.group(1) if agent else str(event.get("userAgent"))


def writers(plane: ControlPlane, namespace: str, start: int) -> dict[str, set[str]]:
    """Per app, the replicas that wrote its record or its ReplicaSets since byte ``start`` of the
    API server's audit log."""
    found: dict[str, set[str]] = {}
    events: list[Any] = audit_events(plane, start)
    for event in events:
        app = app_written(event, namespace)
        if app is not None:
            found.setdefault(app, set()).add(writer(event))
    return found


def selected_shards(plane: ControlPlane, namespace: str, start: int) -> dict[tuple[str, str], frozenset[str]]:
    """The shards each replica's last watch of each kind in ``namespace`` selected, since byte
    ``start`` of the audit log, by (replica, resource): ``gitdeploy.io/shard in (...)`` in the
    request's ``labelSelector``. Last by when the request came (a watch superseded by one of
    other shards is logged once more when it ends, after the new one began)."""
    found: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}
    events: list[Any] = audit_events(plane, start)
    for event in events:
        where = event.get("objectRef") or {}
        if event.get("verb") != "watch" or where.get("namespace") != namespace:
            continue
        selector = " ".join(parse_qs(urlsplit(event["requestURI"]).query).get("labelSelector", []))
        named = re.search(r"gitdeploy\.io/shard in \(([^)]*)\)", selector)
        key, came = (writer(event), where.get("resource", "")), event["requestReceivedTimestamp"]
        if named is not None and came >= found.get(key, ("", frozenset()))[0]:
            found[key] = came, frozenset(named.group(1).split(","))
    return {key: shards for key, (_, shards) in found.items()}
