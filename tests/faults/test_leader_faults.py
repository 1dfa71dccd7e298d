"""Two controllers at once: a leader paused past its Lease (SIGSTOP) must not write once resumed.

Two real ``gitdeploy run`` processes share one embedded cluster and one git repo (the fixtures of
tests/e2e/test_leader_election.py). The leader is frozen in the middle of a rollout, a new commit
is pushed, the standby takes over and rolls that commit out; then the old leader is resumed
(SIGCONT) with its stale view in memory: the commit it was rolling out, a Lease it thinks it holds.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.leader import (  # noqa: F401 (cluster and runs are fixtures)
    FAST_LEASE,
    SETTINGS,
    Embedded,
    Run,
    leader_cluster,
    leader_runs,
)
from tests.fixtures.manifests import deployment
from tests.fixtures.waiting import eventually

REPLICAS = 8
WRITES = ("create", "update", "patch", "delete")


def web(image: str) -> str:
    return deployment("web", "shop", image, replicas=REPLICAS)


def versions(embedded: Embedded) -> dict[str, object]:
    """What a write would change: each ReplicaSet's generation, labels and annotations (its
    resourceVersion also moves with the status its pods give it) and each ConfigMap's (the app
    record's) resourceVersion, in shop."""
    sets: list[Any] = client.AppsV1Api(embedded.api).list_namespaced_replica_set("shop").items
    maps: list[Any] = client.CoreV1Api(embedded.api).list_namespaced_config_map("shop").items
    found: dict[str, object] = {}
    for rs in sets:
        meta = rs.metadata
        found[f"ReplicaSet/{meta.name}"] = (meta.generation, meta.labels, meta.annotations)
    for record in maps:
        found[f"ConfigMap/{record.metadata.name}"] = record.metadata.resource_version
    return found


def test_a_leader_resumed_after_its_lease_expired_writes_nothing(
    git_remote: GitRemote,
    cluster: Embedded,
    runs: Callable[..., Run],
) -> None:
    # Given a leader in the middle of rolling out revision 2, and a standby
    git_remote.commit_and_push("v1", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1")})
    repo = ["--repo", git_remote.url, "--interval", "0.5s", *FAST_LEASE]
    first = runs("first", *repo)
    leader = first.identity()
    eventually(lambda: (view := cluster.web()) and view["health"] == "Healthy", "revision 1 deployed")
    second = runs("second", *repo)
    eventually(lambda: f"standby: leader is {leader}" in second.log, "the standby line")
    git_remote.commit_and_push("v2", {"apps/web.yaml": web("nginx:2")})
    eventually(lambda: (view := cluster.web()) and view["revision"] == 2, "revision 2 under way")
    # When the leader is frozen past its Lease, and a v3 is pushed meanwhile
    first.process.send_signal(signal.SIGSTOP)
    git_remote.commit_and_push("v3", {"apps/web.yaml": web("nginx:3")})
    # Then the standby takes over and rolls v3 out
    taken = eventually(lambda: cluster.lease_taken_from(leader), "takeover")
    assert taken.holder == second.identity()
    eventually(
        lambda: (view := cluster.web()) and view["revision"] == 3 and view["health"] == "Healthy", "rev 3"
    )
    before = versions(cluster)
    cluster.stats("DELETE")
    # When the old leader resumes, with v2 and the Lease still in its memory
    first.process.send_signal(signal.SIGCONT)
    eventually(lambda: f"standby: leader is {taken.holder}" in first.log, "the old leader stands by")
    eventually(lambda: cluster.stats().get(("update", "leases"), 0) >= 15, "15 renewals by the new leader")
    # Then it wrote nothing but its try at the Lease: no ReplicaSet, record, pod or event
    stale = [w for w in cluster.writes(leader) if " leases " not in w]
    assert stale == [], stale
    # nor did anyone else, as the app was settled
    writes = {k: n for k, n in cluster.stats().items() if k[0] in WRITES and k[1] != "leases"}
    if writes:  # every write and the new leader's log in the captured output, untruncated
        print(*cluster.writes(), second.log, sep="\n")
    assert writes == {}, cluster.writes()
    assert versions(cluster) == before
    view = cluster.web()
    assert view is not None and (view["revision"], view["health"]) == (3, "Healthy")
    # nor did it call the new leader's changes, which its watches heard, changes by hand
    assert "changed by hand" not in first.log, first.log
    # and it lives on as a standby (no crash, no exit), while the new leader keeps the Lease
    assert first.process.poll() is None
    lease = cluster.lease()
    assert lease is not None and lease.holder == taken.holder


def healthy_at(cluster: Embedded, key: str, revision: int) -> bool:
    view = cluster.view(key)
    return view is not None and (view["revision"], view["health"]) == (revision, "Healthy")


def test_a_new_leader_whose_git_is_behind_waits_for_it_instead_of_rolling_back_or_pruning(
    git_remote: GitRemote, cluster: Embedded, runs: Callable[..., Run], tmp_path: Path
) -> None:
    # Given a leader at v2, which changed web and added api, and a standby (both pruning apps that
    # leave git) that loaded v1 and has not reached git since
    v1 = git_remote.commit_and_push("v1", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1")})
    first = runs("first", "--repo", git_remote.url, "--interval", "0.5s", "--prune", *FAST_LEASE)
    leader = first.identity()
    eventually(lambda: healthy_at(cluster, "shop/web", 1), "revision 1 deployed")
    its_view = tmp_path / "standby-view.git"  # the same repository by another path: a mirror of its own
    its_view.symlink_to(git_remote.bare)
    second = runs("second", "--repo", str(its_view), "--interval", "0.5s", "--prune", *FAST_LEASE)
    eventually(lambda: f"moved: (none) -> {v1[:12]}" in second.log, "the standby at v1")
    its_view.unlink()
    api = deployment("api", "shop", "redis:7", replicas=2)
    git_remote.commit_and_push("v2", {"apps/web.yaml": web("nginx:2"), "apps/api.yaml": api})
    eventually(lambda: healthy_at(cluster, "shop/web", 2) and healthy_at(cluster, "shop/api", 1), "v2")
    cluster.stats("DELETE")

    # When the leader dies and the standby takes over, still unable to reach git
    first.process.kill()
    taken = eventually(lambda: cluster.lease_taken_from(leader), "takeover")
    assert taken.holder == second.identity()
    eventually(lambda: cluster.stats().get(("update", "leases"), 0) >= 15, "15 renewals by the new leader")

    # Then it says it waits for git, and neither rolls web back nor prunes api (not in its v1):
    # nothing but the Lease was written
    assert "[shop/web] waits: its record names commit" in second.log, second.log
    assert "[shop/api] waits: its record names commit" in second.log, second.log
    writes = {k: n for k, n in cluster.stats().items() if k[0] in WRITES and k[1] != "leases"}
    assert writes == {}, cluster.writes()
    assert healthy_at(cluster, "shop/web", 2) and healthy_at(cluster, "shop/api", 1)

    # When git is back, it catches up, and acts again: v3 is rolled out as web's revision 3
    its_view.symlink_to(git_remote.bare)
    git_remote.commit_and_push("v3", {"apps/web.yaml": web("nginx:3")})
    eventually(lambda: healthy_at(cluster, "shop/web", 3), "rev 3")
    assert healthy_at(cluster, "shop/api", 1)
    assert "nginx:1" not in {image for w in cluster.writes() for image in w.split()}
