"""Pushes and polls shared by real ``gitdeploy run --sharding`` replicas (one embedded cluster, one
git repo served over HTTPS by ``git http-backend``, which counts who asked what).

* A signed webhook delivered to ONE replica rolls out the apps every replica owns, with
  ``--interval 1h``: no replica polls, so only the head announcement can make the others fetch;
  and each replica talks to git exactly once per new commit (one ``git fetch``, one pack).
* Without webhooks, the leader alone polls git at ``--interval``; the others hear of its new head
  through the announcement (one fetch each) and poll only every ten intervals.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from gitdeploy.core.headnews import FOLLOWER_POLL_FACTOR, Announced, HeadAnnouncement
from gitdeploy.server.webhook import github_signature
from tests.fixtures.githttp import GitHttpServer, git_http_server  # noqa: F401 (git_http is a fixture)
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.leader import (  # noqa: F401 (cluster is a fixture)
    FAST_LEASE,
    LEASE_NAMESPACE,
    SETTINGS,
    Embedded,
    Run,
    leader_cluster,
)
from tests.fixtures.sharding import (
    Replica,
    apps,
    claims,
    converged,
    free_port,
    sharded_runs,  # noqa: F401 (runs is a fixture)
)
from tests.fixtures.waiting import eventually

APPS = 60
SECRET = b"fan-out-secret-7d1e"


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def start(
    runs: Callable[..., Run], name: str, git_http: GitHttpServer, secret: Path, interval: str
) -> Replica:
    port = free_port()
    args = ["--sharding", "--repo", git_http.url, "--interval", interval, "--listen", f"127.0.0.1:{port}"]
    args += ["--webhook-secret-file", str(secret), *FAST_LEASE]
    run = runs(name, *args, env=git_http.client_env(name))
    found = eventually(lambda: re.search(r"sharding: member (\S+) \(lease", run.log), f"{name} starts")
    return Replica(run, port, found.group(1))


def fleet(
    runs: Callable[..., Run], git_http: GitHttpServer, tmp_path: Path, interval: str
) -> dict[str, Replica]:
    """Three replicas named a, b, c that see each other, a leader among them, and each watching
    the head announcement."""
    git_http.remote.commit_and_push("Settings", {"gitdeploy.yaml": SETTINGS})
    secret = tmp_path / "webhook-secret"
    secret.write_bytes(SECRET)
    replicas = {name: start(runs, name, git_http, secret, interval) for name in "abc"}
    started = [r.run for r in replicas.values()]
    eventually(lambda: all(r.members_seen() == 3 for r in replicas.values()), "three members each")
    eventually(lambda: all("watching lease" in run.log for run in started), "each watches the announcement")
    eventually(lambda: all("moved: (none) -> " in run.log for run in started), "each read the repo")
    return replicas


def leader_of(cluster: Embedded, replicas: dict[str, Replica]) -> str:
    """The name of the replica that holds the leader Lease."""
    holder = eventually(lambda: (lease := cluster.lease()) and lease.holder, "a leader")
    return next(name for name, r in replicas.items() if r.identity == holder)


def announcement(cluster: Embedded) -> HeadAnnouncement | None:
    observed = cluster.adapter.head_leases.read(LEASE_NAMESPACE, "gitdeploy-head")
    return observed.announcement if observed is not None else None


def deliver_push(replica: Replica, repo_url: str, after: str) -> int:
    body = json.dumps(
        {"ref": "refs/heads/main", "after": after, "repository": {"clone_url": repo_url}}
    ).encode()
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": after,
        "X-Hub-Signature-256": github_signature(body, SECRET),
        "Content-Type": "application/json",
    }
    answer = httpx.post(
        f"http://127.0.0.1:{replica.port}/hooks/git", content=body, headers=headers, timeout=10
    )
    return answer.status_code


def since(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {name: now.get(name, 0) - before.get(name, 0) for name in "abc"}


def test_a_push_delivered_to_one_replica_rolls_out_the_apps_of_every_replica(
    git_remote: GitRemote,
    git_http: GitHttpServer,
    cluster: Embedded,
    runs: Callable[..., Run],
    tmp_path: Path,
) -> None:
    # Given three replicas that never poll (--interval 1h), each with apps of its own to come
    replicas = fleet(runs, git_http, tmp_path, "1h")
    leader = leader_of(cluster, replicas)
    receiver = next(name for name in "abc" if name != leader)  # a replica that does not lead
    contacts, fetches = git_http.counts()

    # When 60 apps are pushed and the webhook reaches one replica only
    sha = git_remote.commit_and_push("Add the apps", apps(APPS, "nginx:1.25"))
    assert deliver_push(replicas[receiver], git_http.url, sha) == 200

    # Then every app rolls out, those of the two replicas that got no webhook too
    eventually(lambda: converged(cluster, APPS, 1), f"{APPS} apps at revision 1", timeout=180)
    owners = {c.owner for c in claims(cluster).values() if c is not None}
    assert owners == {r.identity for r in replicas.values()}, "each replica owns apps"
    # ... the announcement names the commit, from the push the receiver got
    news = announcement(cluster)
    assert news is not None and (news.sha, news.by, news.source) == (
        sha,
        replicas[receiver].identity,
        Announced.PUSH,
    )
    # ... and each replica talked to git once for it: one fetch that brought the pack, no poll
    now_contacts, now_fetches = git_http.counts()
    assert since(now_fetches, fetches) == {"a": 1, "b": 1, "c": 1}
    assert since(now_contacts, contacts) == {"a": 1, "b": 1, "c": 1}
    for name, replica in replicas.items():
        if name != receiver:
            assert f"announced {sha[:12]} (push): fetching now" in replica.run.log, name

    # When the next push reaches the leader
    contacts, fetches = now_contacts, now_fetches
    bump = git_remote.commit_and_push("Bump", apps(APPS, "nginx:1.26"))
    assert deliver_push(replicas[leader], git_http.url, bump) == 200

    # Then again every app rolls out, and each replica fetched once more
    eventually(lambda: converged(cluster, APPS, 2), f"{APPS} apps at revision 2", timeout=180)
    now_contacts, now_fetches = git_http.counts()
    assert since(now_fetches, fetches) == {"a": 1, "b": 1, "c": 1}
    assert since(now_contacts, contacts) == {"a": 1, "b": 1, "c": 1}


def test_only_the_leader_polls_git_at_the_interval_and_the_others_fetch_what_it_found(
    git_remote: GitRemote,
    git_http: GitHttpServer,
    cluster: Embedded,
    runs: Callable[..., Run],
    tmp_path: Path,
) -> None:
    # Given three replicas polling every 0.3 s, and no webhook
    replicas = fleet(runs, git_http, tmp_path, "0.3s")
    leader = leader_of(cluster, replicas)
    contacts, fetches = git_http.counts()
    began = time.monotonic()

    # When a commit adds the apps
    sha = git_remote.commit_and_push("Add the apps", apps(APPS, "nginx:1.25"))

    # Then the leader's poll finds it and announces it, and every app rolls out
    eventually(lambda: converged(cluster, APPS, 1), f"{APPS} apps at revision 1", timeout=180)
    news = announcement(cluster)
    assert news is not None and (news.sha, news.source) == (sha, Announced.POLL)
    # ... by then, and while the leader polls on, each replica fetched the commit once
    eventually(lambda: since(git_http.counts()[0], contacts)[leader] >= 40, "40 polls by the leader")
    now_contacts, now_fetches = git_http.counts()
    elapsed = time.monotonic() - began
    assert since(now_fetches, fetches) == {"a": 1, "b": 1, "c": 1}
    # ... and the others polled at most every 3 s (ten intervals), not every 0.3 s: at most one
    # ls-remote per 3 s elapsed, plus the first, plus the fetch the announcement asked for (a
    # loaded machine only makes polls rarer)
    assert leader_of(cluster, replicas) == leader, "the leader changed during the test"
    polled = since(now_contacts, contacts)
    bound = elapsed / (FOLLOWER_POLL_FACTOR * 0.3) + 2
    for name in "abc":
        if name != leader:
            assert polled[name] <= bound, (polled, elapsed)
