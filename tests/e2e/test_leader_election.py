"""Two real ``gitdeploy run`` processes against one embedded cluster and one git repo: one leads, the
other stands by (reads git, writes nothing) and takes over when the leader is killed or exits."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable

import httpx
import pytest

from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.leader import (  # noqa: F401 (cluster and runs are fixtures)
    FAST_LEASE,
    LEASE_NAME,
    LEASE_NAMESPACE,
    SETTINGS,
    Embedded,
    Run,
    leader_cluster,
    leader_runs,
)
from tests.fixtures.manifests import deployment
from tests.fixtures.waiting import eventually


def web(image: str) -> str:
    return deployment("web", "shop", image, replicas=2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def test_the_standby_writes_nothing_and_takes_over_when_the_leader_is_killed(
    git_remote: GitRemote, cluster: Embedded, runs: Callable[..., Run]
) -> None:
    # Given a leader that holds the Lease but manages another namespace, so that nothing it does
    # touches shop/web, and a commit that adds shop/web
    git_remote.commit_and_push("Add web", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    repo = ["--repo", git_remote.url, "--interval", "0.5s", *FAST_LEASE]
    first = runs("first", *repo, "-n", "elsewhere")
    leader = first.identity()

    # When a second run starts for every namespace
    port = free_port()
    second = runs("second", *repo, "--listen", f"127.0.0.1:{port}")

    # Then it stands by: its log names the leader, and it is ready (repo read, Lease decided)
    standby_line = (
        f"standby: leader is {leader} (lease {LEASE_NAMESPACE}/{LEASE_NAME}); taking over if it is not "
        "renewed for 2 s"
    )
    eventually(lambda: standby_line in second.log, "the standby line")
    eventually(lambda: _ready(port), "/readyz of the standby")
    assert "gitdeploy_leader 0.0" in httpx.get(f"http://127.0.0.1:{port}/metrics").text
    cluster.stats("DELETE")
    # ... and while the leader renews the Lease many times over, the standby writes nothing at all
    eventually(lambda: cluster.stats().get(("update", "leases"), 0) >= 15, "15 renewals of the Lease")
    writes = {k: n for k, n in cluster.stats().items() if k[0] in ("create", "update", "patch", "delete")}
    assert writes == {("update", "leases"): writes[("update", "leases")]}, writes
    assert cluster.web() is None and cluster.adapter.list_replica_sets("shop") == []
    assert second.log.count(standby_line) == 1
    assert "became leader" not in second.log

    # When the leader is killed (no release)
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=30)

    # Then the standby takes over (the leader was a process of this machine that no longer runs, so
    # without waiting for the Lease to expire), and deploys
    taken = eventually(lambda: cluster.lease_taken_from(leader), "takeover")
    assert taken.holder == second.identity() and taken.transitions == 1
    assert f"its holder {leader}, process {first.process.pid} of this machine, no longer runs" in second.log
    eventually(
        lambda: (view := cluster.web()) and view["sync"] == "Synced" and view["revision"] == 1, "rev 1"
    )
    git_remote.commit_and_push("Bump web", {"apps/web.yaml": web("nginx:1.26")})
    eventually(
        lambda: (view := cluster.web()) and view["revision"] == 2 and view["health"] == "Healthy", "rev 2"
    )
    assert "gitdeploy_leader 1.0" in httpx.get(f"http://127.0.0.1:{port}/metrics").text
    assert second.stop(signal.SIGTERM) == 0


def test_sigterm_releases_the_lease_so_the_standby_takes_over_before_it_expires(
    git_remote: GitRemote, cluster: Embedded, runs: Callable[..., Run]
) -> None:
    git_remote.commit_and_push("Add web", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": web("nginx:1.25")})
    # A Lease of 10 minutes: a takeover within the test can only come from the release.
    slow = ["--lease-duration", "10m", "--renew-deadline", "5m", "--retry-period", "0.2s"]
    repo = ["--repo", git_remote.url, "--interval", "0.5s", *slow]
    first = runs("first", *repo)
    leader = first.identity()
    eventually(lambda: (view := cluster.web()) and view["health"] == "Healthy", "web deployed")
    second = runs("second", *repo)
    eventually(lambda: f"standby: leader is {leader}" in second.log, "the standby line")

    assert first.stop(signal.SIGTERM) == 0
    assert "released the lease gitdeploy-system/gitdeploy" in first.log

    taken = eventually(lambda: cluster.lease_taken_from(leader), "takeover")
    assert (taken.holder, taken.transitions, taken.duration_seconds) == (second.identity(), 1, 600)
    assert second.stop(signal.SIGTERM) == 0
    released = cluster.lease()
    assert released is not None and (released.holder, released.transitions) == ("", 1)


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200
    except httpx.HTTPError:
        return False


IMAGE_STREAM = """\
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata: {name: web}
spec:
  tags:
  - name: latest
    from: {kind: DockerImage, name: "docker.io/library/nginx@sha256:%s"}
""" % ("a" * 64)


def test_a_standby_does_not_save_image_stream_state(
    git_remote: GitRemote, cluster: Embedded, runs: Callable[..., Run]
) -> None:
    git_remote.commit_and_push(
        "Add a stream", {"gitdeploy.yaml": SETTINGS, "apps/streams.yaml": IMAGE_STREAM}
    )
    repo = ["--repo", git_remote.url, "--interval", "0.5s", *FAST_LEASE]
    leader = runs("first", *repo, "-n", "elsewhere").identity()
    port = free_port()
    second = runs("second", *repo, "--listen", f"127.0.0.1:{port}")
    eventually(lambda: f"standby: leader is {leader}" in second.log, "the standby line")
    eventually(lambda: _ready(port), "/readyz of the standby")
    eventually(lambda: cluster.stats().get(("update", "leases"), 0) >= 15, "15 renewals of the Lease")
    # (both processes create the Lease namespace at start; only the first created the Lease)
    writes = {k for k in cluster.stats() if k[0] in ("create", "update", "patch", "delete")}
    assert writes - {("create", "namespaces"), ("create", "leases")} == {("update", "leases")}
