"""What a settled fleet of ``gitdeploy run --sharding`` replicas costs the API server, against one
``gitdeploy run`` managing the same apps: the embedded cluster counts every request by the
client's User-Agent (``gitdeploy (<identity>)``), verb and resource."""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from collections.abc import Callable

import pytest

from gitdeploy.core.sharding import owner_of
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.leader import SETTINGS, Embedded, Run, leader_cluster  # noqa: F401 (a fixture)
from tests.fixtures.sharding import (
    NAMESPACE,
    Counts,
    apps,
    assert_resync_costs,
    claims,
    converged,
    free_port,
    sharded_runs,  # noqa: F401 (runs is a fixture)
)
from tests.fixtures.waiting import eventually

APPS = 60
RESYNC = 5.0
"""Every app is looked at again this often (5 min by default): the window below holds several."""
WINDOW = 6 * RESYNC + 1
"""Seconds of settled time measured, the same for one replica and for the fleet."""
LEASE = ["--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s"]


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def start(runs: Callable[..., Run], name: str, repo: str, *extra: str) -> tuple[Run, str]:
    args = ["--repo", repo, "--interval", "0.5s", "--resync-interval", f"{RESYNC:g}s", *LEASE]
    run = runs(name, *extra, *args, "--listen", f"127.0.0.1:{free_port()}")
    found = eventually(
        lambda: re.search(r"(?:sharding: member|became leader \(lease \S+, identity) (\S+?)[)\s]", run.log),
        f"{name} starts",
    )
    return run, found.group(1)


def requests_by_agent(cluster: Embedded) -> dict[str, Counts]:
    """Each client's requests since the stats were cleared, by ``(verb, resource)``."""
    found: dict[str, Counts] = {}
    for row in cluster._stats()["byAgent"]:
        agent = re.search(r"gitdeploy \((\S+)\)", row["agent"])
        if agent is not None:
            found.setdefault(agent.group(1), Counter())[(row["verb"], row["resource"])] += row["count"]
    return found


def measure(cluster: Embedded, identities: list[str]) -> dict[str, Counts]:
    cluster.stats("DELETE")
    time.sleep(WINDOW)
    found = requests_by_agent(cluster)
    return {identity: found.get(identity, Counter()) for identity in identities}


MOST_RESYNCS = int(WINDOW // RESYNC) + 1
"""How many resyncs one process makes at most in the window."""


def per_minute(counts: Counts) -> dict[str, float]:
    return {f"{verb} {resource}": round(n * 60 / WINDOW, 1) for (verb, resource), n in sorted(counts.items())}


def test_a_settled_fleet_costs_no_more_api_calls_than_one_replica(
    git_remote: GitRemote, cluster: Embedded, runs: Callable[..., Run]
) -> None:
    git_remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    git_remote.commit_and_push("Add the apps", apps(APPS, "nginx:1.25"))

    # Given the 60 apps settled under one `gitdeploy run`
    solo, solo_identity = start(runs, "solo", git_remote.url)
    eventually(lambda: converged(cluster, APPS, 1), f"{APPS} apps at revision 1", timeout=180)
    time.sleep(RESYNC)
    one = measure(cluster, [solo_identity])
    assert solo.stop(signal.SIGTERM) == 0

    # When three sharded replicas take the same apps over and settle
    fleet = [start(runs, name, git_remote.url, "--sharding") for name in ("a", "b", "c")]
    identities = [identity for _, identity in fleet]
    owners = {f"app-{i:02}": owner_of(f"{NAMESPACE}/app-{i:02}", identities) for i in range(APPS)}
    eventually(
        lambda: {app: c.owner for app, c in claims(cluster).items() if c and not c.released} == owners,
        "each app claimed by its owner among the three",
        timeout=120,
    )
    eventually(lambda: converged(cluster, APPS, 1), f"{APPS} apps settled", timeout=180)
    time.sleep(RESYNC)
    three = measure(cluster, identities)

    report = [f"one replica: {per_minute(one[solo_identity])}"]
    report += [f"replica {identity}: {per_minute(three[identity])}" for identity in identities]
    report += [f"the fleet: {per_minute(sum(three.values(), Counter()))}"]
    print("\nrequests per minute\n" + "\n".join(report))

    # Then, settled, neither wrote anything but Leases
    assert [w for w in cluster.writes() if " leases " not in w] == []
    # ... and at each resync each read its namespace once, the leader its records once more (for
    # orphans): nothing else, so the fleet costs more per replica, not per app
    assert_resync_costs(one[solo_identity], three, MOST_RESYNCS, "\n".join(report))
