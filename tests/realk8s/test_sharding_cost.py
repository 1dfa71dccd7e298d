"""What a settled fleet of ``gitdeploy run --sharding`` replicas costs the real API server, against
one ``gitdeploy run`` managing the same 60 apps, as deploy/'s ServiceAccount: the audit log counts
each request of that account by User-Agent (``gitdeploy (<identity>)``), verb and resource."""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from gitdeploy.core.sharding import owner_of
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.sharding import Counts, assert_resync_costs
from tests.realk8s.controlplane import GITDEPLOY_NAMESPACE, ControlPlane, audit_events, audit_log_size
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, wait_for
from tests.realk8s.manifests import settings
from tests.realk8s.sharding import WRITES, apps, claims, converged, start_replica, writer

pytestmark = pytest.mark.usefixtures("isolated_git_config")

APPS = 60
RESYNC = 5.0
WINDOW = 6 * RESYNC + 1
MOST_RESYNCS = int(WINDOW // RESYNC) + 1
LEASE = ["--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s"]


def started(run: Run) -> str:
    """The identity the replica names itself by (its User-Agent)."""
    pattern = r"(?:sharding: member|became leader \(lease \S+, identity) (\S+?)[)\s]"
    wait_for("the replica to start", lambda: re.search(pattern, run.log) is not None)
    found = re.search(pattern, run.log)
    assert found is not None
    return found.group(1)


def measure(plane: ControlPlane, identities: list[str]) -> tuple[dict[str, Counts], list[Any]]:
    """Each replica's requests in :data:`WINDOW` seconds, and the writes other than Leases."""
    start = audit_log_size(plane)
    time.sleep(WINDOW)
    counts: dict[str, Counts] = {identity: Counter() for identity in identities}
    writes = []
    events: list[Any] = audit_events(plane, start)
    for event in events:
        if event.get("stage") != "ResponseComplete" or writer(event) not in counts:
            continue
        resource = (event.get("objectRef") or {}).get("resource", "")
        counts[writer(event)][(event["verb"], resource)] += 1
        if event["verb"] in WRITES and resource != "leases":
            writes.append((event["verb"], resource, (event.get("objectRef") or {}).get("name")))
    return counts, writes


def test_a_settled_fleet_costs_the_real_api_server_no_more_than_one_replica_per_app(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace = managed_namespace("cost")
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": settings(namespace)})
    git_remote.commit_and_push("Add the apps", apps(APPS, "registry.test/web:1"))
    common = ["--repo", git_remote.url, "-n", namespace, "--interval", "0.5s"]
    common += ["--resync-interval", f"{RESYNC:g}s", "--lease-namespace", GITDEPLOY_NAMESPACE, *LEASE]

    # Given the 60 apps settled under one `gitdeploy run`
    solo = start_replica(runs, monkeypatch, "solo", *common)
    solo_identity = started(solo)
    wait_for(f"{APPS} apps at revision 1", converged(gitdeploy, namespace, 1, APPS), timeout=300)
    time.sleep(RESYNC)
    one, solo_writes = measure(control_plane, [solo_identity])
    solo.process.send_signal(signal.SIGTERM)
    assert solo.process.wait(timeout=60) == 0

    # When three sharded replicas take the same apps over and settle
    fleet = [start_replica(runs, monkeypatch, name, *common, "--sharding") for name in ("a", "b", "c")]
    identities = [started(run) for run in fleet]
    owners = {f"app-{i:02}": owner_of(f"{namespace}/app-{i:02}", identities) for i in range(APPS)}
    wait_for(
        "each app claimed by its owner among the three",
        lambda: {app: owner for app, (owner, _) in claims(gitdeploy, namespace).items()} == owners,
    )
    wait_for(f"{APPS} apps settled", converged(gitdeploy, namespace, 1, APPS), timeout=120)
    time.sleep(RESYNC)
    three, fleet_writes = measure(control_plane, identities)
    report = f"one replica: {dict(one[solo_identity])}\nthe fleet: {[dict(c) for c in three.values()]}"

    # Then, settled, neither wrote anything but Leases
    assert solo_writes == fleet_writes == [], report
    # ... and at each resync each read its namespace once, the leader its records once more (for
    # orphans): nothing else, so the fleet costs more per replica, not per app
    assert_resync_costs(one[solo_identity], three, MOST_RESYNCS, report)
