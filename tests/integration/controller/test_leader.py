"""Leader election (controller/leader.py) against the embedded cluster over HTTP, on a fake clock.

Two electors share one Lease; each ``step()`` is one try (what the background thread does every
retry period), so the scenarios control exactly who tries when.
"""

from __future__ import annotations

import logging
import subprocess
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.leader import LeaderElector, default_lease_namespace, new_identity, process_runs
from gitdeploy.controller.rollouts import RolloutRunner, choose_target
from gitdeploy.core.lease import LeaseSpec, LeaseTimings, Role, same_machine_pid
from gitdeploy.errors import AlreadyExistsError, ConflictError, StaleReadError, TransientError
from gitdeploy.localcluster import LocalCluster
from tests.fixtures.cluster import api_client_for
from tests.fixtures.manifests import deployment
from tests.fixtures.rollouts import commit, load_app

NAMESPACE, NAME = "gitdeploy-system", "gitdeploy"
TIMINGS = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=2)
STANDBY_A = (
    "standby: leader is a_1 (lease gitdeploy-system/gitdeploy); taking over if it is not renewed for 15 s"
)


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    cluster = Cluster(kube_client, "embedded")
    cluster.ensure_namespace(NAMESPACE)
    return cluster


class Elector:
    """An elector and the roles it reported through ``on_change``."""

    def __init__(self, adapter: Cluster, identity: str, clock: FakeClock) -> None:
        self.changes: list[Role] = []
        self.elector = LeaderElector(
            adapter, NAMESPACE, NAME, identity, clock, TIMINGS, on_change=self.changes.append
        )


def lease(adapter: Cluster) -> LeaseSpec:
    observed = adapter.read_lease(NAMESPACE, NAME)
    assert observed is not None
    return observed.spec


def test_first_acquires_second_stands_by_and_takes_over_when_renewals_stop(
    adapter: Cluster, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gitdeploy")
    a, b = Elector(adapter, "a_1", fake_clock), Elector(adapter, "b_2", fake_clock)
    assert not a.elector.decided and not a.elector.is_leader()

    # Given a leads and b stands by
    a.elector.step()
    b.elector.step()
    assert (a.elector.is_leader(), b.elector.is_leader(), b.elector.leader) == (True, False, "a_1")
    assert (a.changes, b.changes) == ([Role.LEADER], [Role.STANDBY])
    assert b.elector.decided
    held = lease(adapter)
    assert (held.holder, held.duration_seconds, held.transitions) == ("a_1", 15, 0)
    assert held.acquire_time == held.renew_time == fake_clock.now()
    assert STANDBY_A in caplog.messages

    # while a renews every retry period, b keeps standing by
    for _ in range(10):
        fake_clock.advance(2)
        a.elector.step()
        b.elector.step()
    assert (a.elector.is_leader(), b.elector.is_leader()) == (True, False)
    assert lease(adapter).renew_time == fake_clock.now()
    assert lease(adapter).acquire_time == held.acquire_time
    assert caplog.messages.count(STANDBY_A) == 1

    # When a stops renewing (killed): b waits a whole lease duration from the last renewal it saw
    fake_clock.advance(14.9)
    b.elector.step()
    assert not b.elector.is_leader()
    assert not a.elector.is_leader()  # its renew deadline (10 s) passed: it must not act any more
    fake_clock.advance(0.1)
    b.elector.step()

    # Then b leads, with one more transition, and a learns it lost at its next try
    assert b.elector.is_leader() and b.changes == [Role.STANDBY, Role.LEADER]
    taken = lease(adapter)
    assert (taken.holder, taken.transitions, taken.acquire_time) == ("b_2", 1, fake_clock.now())
    a.elector.step()
    assert (a.elector.is_leader(), a.elector.leader, a.changes) == (False, "b_2", [Role.LEADER, Role.STANDBY])
    assert any(
        m.startswith("became leader (lease gitdeploy-system/gitdeploy, identity b_2") for m in caplog.messages
    )
    assert "lost the lease gitdeploy-system/gitdeploy to b_2: stop acting after the step in progress" in (
        caplog.messages
    )


def test_release_lets_the_standby_take_over_at_its_next_try(adapter: Cluster, fake_clock: FakeClock) -> None:
    a, b = Elector(adapter, "a_1", fake_clock), Elector(adapter, "b_2", fake_clock)
    a.elector.step()
    b.elector.step()

    assert a.elector.release()
    released = lease(adapter)
    assert (released.holder, released.duration_seconds, released.transitions) == ("", 1, 0)
    assert not a.elector.is_leader() and a.changes == [Role.LEADER, Role.STANDBY]

    fake_clock.advance(0.5)  # far less than the 15 s the Lease was held for
    b.elector.step()
    assert b.elector.is_leader()
    assert (lease(adapter).holder, lease(adapter).transitions) == ("b_2", 1)
    assert not a.elector.release()  # a no longer holds it: nothing to give up
    assert lease(adapter).holder == "b_2"


def test_a_leader_that_cannot_renew_stops_at_the_renew_deadline(
    adapter: Cluster, embedded_cluster: LocalCluster, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    a = Elector(adapter, "a_1", fake_clock)
    a.elector.step()
    assert a.elector.is_leader()

    # When the API becomes unreachable for a
    embedded_cluster.stop()
    fake_clock.advance(9)
    a.elector.step()
    assert a.elector.is_leader()  # 9 s without renewal: still within the deadline
    fake_clock.advance(1)
    a.elector.step()

    # Then it stops acting, well before the 15 s after which another process may take over
    assert not a.elector.is_leader() and a.changes == [Role.LEADER, Role.STANDBY]
    assert any("cannot reach the Kubernetes API" in m for m in caplog.messages)
    assert any(
        m.startswith("lost the lease gitdeploy-system/gitdeploy: not renewed for 10.0 s")
        for m in caplog.messages
    )


def test_is_leader_turns_false_at_the_renew_deadline_without_any_try(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    """A try that hangs must not keep a leader acting: ``is_leader`` looks at the clock itself."""
    a = Elector(adapter, "a_1", fake_clock)
    a.elector.step()
    fake_clock.advance(9.9)
    assert a.elector.is_leader()
    fake_clock.advance(0.1)
    assert not a.elector.is_leader()


def leading_runner_at_v1(adapter: Cluster, fake_clock: FakeClock) -> tuple[Elector, RolloutRunner]:
    """A leader, and its runner asking it before every write, with shop/web at v1 (4 replicas)."""
    a = Elector(adapter, "a_1", fake_clock)
    runner = RolloutRunner(adapter, fake_clock)
    runner.leading = a.elector.is_leader
    a.elector.step()
    adapter.ensure_namespace("shop")
    for _ in range(2):  # the app record, then its first ReplicaSet
        runner.reconcile(load_app(deployment("web", "shop", "nginx:1", replicas=4)), commit("v1"))
    return a, runner


def test_a_leader_paused_in_the_middle_of_a_pass_writes_nothing_more_of_it(
    adapter: Cluster, embedded_cluster: LocalCluster, fake_clock: FakeClock
) -> None:
    """The runner asks the elector before every write, not only before each pass."""
    a, runner = leading_runner_at_v1(adapter, fake_clock)
    changed = load_app(deployment("web", "shop", "nginx:2", replicas=4))

    # When the leader is frozen past its renew deadline between reading and writing (no renewal)
    fake_clock.advance(TIMINGS.renew_deadline)
    embedded_cluster.stats.reset()

    # Then its next step writes nothing, and says why
    with pytest.raises(TransientError, match="no longer holds the leader Lease"):
        runner.reconcile(changed, commit("v2", 2))
    assert embedded_cluster.stats.to_json()["writes"] == []

    # and once it renewed, the same step goes through
    a.elector.step()
    runner.reconcile(changed, commit("v2", 2))
    written = [(w["verb"], w["resource"]) for w in embedded_cluster.stats.to_json()["writes"]]
    assert ("create", "replicasets") in written


def test_a_leader_paused_between_its_check_and_the_send_sends_nothing(
    adapter: Cluster, embedded_cluster: LocalCluster, fake_clock: FakeClock
) -> None:
    """The runner's check passes, then the process is paused past its renew deadline before the
    request leaves: the check made again in the HTTP connection, right before the send, stops it."""
    a, runner = leading_runner_at_v1(adapter, fake_clock)
    asked: list[bool] = []

    def paused_after_asked() -> bool:
        asked.append(a.elector.is_leader())
        fake_clock.advance(TIMINGS.renew_deadline)  # the pause falls right after the answer
        return asked[-1]

    runner.leading = paused_after_asked
    embedded_cluster.stats.reset()

    # When the next step's first write passes the runner's check and the process is then paused
    with pytest.raises(TransientError, match="no longer holds the leader Lease"):
        runner.reconcile(load_app(deployment("web", "shop", "nginx:2", replicas=4)), commit("v2", 2))

    # Then the check in the connection found the Lease lapsed, and nothing reached the server
    assert asked == [True, False]
    assert embedded_cluster.stats.to_json()["writes"] == []


def test_a_scale_sent_late_is_refused_by_a_replica_set_changed_since_its_pass_read_it(
    adapter: Cluster, embedded_cluster: LocalCluster, fake_clock: FakeClock
) -> None:
    """What the check in the connection cannot stop (a pause after it, before the send) meets a
    ReplicaSet that the next writer changed meanwhile: a scale names the resourceVersion its pass
    read, as the Deployment controller's Update does."""
    _, runner = leading_runner_at_v1(adapter, fake_clock)
    scaled = load_app(deployment("web", "shop", "nginx:1", replicas=6))
    [rs] = adapter.list_replica_sets("shop", "web")

    # When a pass reads the app to scale it from 4 to 6, and another writer (the next leader, a
    # hand) scales its ReplicaSet to 5 before the pass's scale is sent
    snapshot, stored = runner.read_snapshot(scaled.key)
    adapter.scale_replica_set("shop", rs.name, 5)
    embedded_cluster.stats.reset()

    # Then the server refuses the pass's scale, and the step ends there: the other's 5 stand
    with pytest.raises(StaleReadError, match=f"ReplicaSet {rs.name} changed since this pass read it"):
        runner.run_step(choose_target(scaled, commit("v1", 1), snapshot), snapshot, stored)
    written = embedded_cluster.stats.to_json()["writes"]
    assert [w["code"] for w in written if w["resource"] == "replicasets"] == [409]
    assert [r.state.replicas for r in adapter.list_replica_sets("shop", "web")] == [5]

    # and the next pass, reading it anew, scales it
    runner.reconcile(scaled, commit("v1", 1))
    assert [r.state.replicas for r in adapter.list_replica_sets("shop", "web")] == [6]


def test_a_restarted_standby_waits_a_whole_lease_duration_from_when_it_first_saw_the_lease(
    adapter: Cluster, fake_clock: FakeClock
) -> None:
    """Expiry is judged on this process's clock from when it saw the Lease, never from renewTime."""
    a = Elector(adapter, "a_1", fake_clock)
    a.elector.step()
    fake_clock.advance(60)  # a's renewTime is a minute old, but b has only just seen the Lease
    b = Elector(adapter, "b_2", fake_clock)
    b.elector.step()
    assert not b.elector.is_leader()
    fake_clock.advance(15)
    b.elector.step()
    assert b.elector.is_leader()


def test_lease_writes_use_optimistic_concurrency(adapter: Cluster) -> None:
    spec = LeaseSpec("a_1", 15, 1.0, 1.0, 0)
    created = adapter.write_lease(NAMESPACE, NAME, spec, None)
    with pytest.raises(AlreadyExistsError):
        adapter.write_lease(NAMESPACE, NAME, spec, None)
    updated = adapter.write_lease(
        NAMESPACE, NAME, LeaseSpec("b_2", 15, 2.0, 2.0, 1), created.resource_version
    )
    with pytest.raises(ConflictError):  # a stale resourceVersion: someone else wrote in between
        adapter.write_lease(NAMESPACE, NAME, LeaseSpec("c_3", 15, 3.0, 3.0, 2), created.resource_version)
    assert adapter.read_lease(NAMESPACE, NAME) == updated
    assert updated.spec == LeaseSpec("b_2", 15, 2.0, 2.0, 1)


def test_the_lease_is_what_kubectl_shows(adapter: Cluster, kube_client: Any, fake_clock: FakeClock) -> None:
    """The official client's typed model reads the Lease gitdeploy wrote (MicroTime and all)."""
    from kubernetes import client

    Elector(adapter, "a_1", fake_clock).elector.step()
    typed: Any = client.CoordinationV1Api(kube_client).read_namespaced_lease(NAME, NAMESPACE)
    assert typed.spec.holder_identity == "a_1"
    assert typed.spec.lease_duration_seconds == 15
    assert typed.spec.renew_time.timestamp() == fake_clock.now()


def test_a_missing_lease_namespace_is_reported_with_what_to_do(
    kube_client: Any, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    elector = LeaderElector(Cluster(kube_client), "nowhere", NAME, "a_1", fake_clock, TIMINGS)
    elector.step()
    elector.step()
    assert not elector.decided
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "nowhere" in warning and "--lease-namespace" in warning


@pytest.mark.parametrize(
    ("in_cluster", "content", "expected"),
    [
        (True, "apps-system\n", "apps-system"),
        (True, None, "gitdeploy-system"),
        (False, "x", "gitdeploy-system"),
    ],
)
def test_default_lease_namespace(tmp_path: Any, in_cluster: bool, content: str | None, expected: str) -> None:
    path = tmp_path / "namespace"
    if content is not None:
        path.write_text(content)
    assert default_lease_namespace(in_cluster, path) == expected


def test_electors_on_separate_clients_agree(
    embedded_cluster: LocalCluster, adapter: Cluster, fake_clock: FakeClock
) -> None:
    """Two processes do not share a client: each elector here has its own connection."""
    other = api_client_for(embedded_cluster)
    try:
        a = Elector(adapter, "a_1", fake_clock)
        b = Elector(Cluster(other), "b_2", fake_clock)
        for _ in range(3):
            b.elector.step()
            a.elector.step()
            fake_clock.advance(2)
        assert [e.elector.is_leader() for e in (a, b)] == [False, True]
    finally:
        other.close()


def _holder_with_pid(pid: int) -> str:
    """An identity of this machine (as ``new_identity`` writes it) for process ``pid``."""
    machine = new_identity().rsplit("_", 1)[0]
    return f"{machine.rpartition('.')[0]}.{pid}_earlier"


@pytest.mark.parametrize("runs", [False, True], ids=["its process ended", "its process runs"])
def test_a_lease_held_by_a_process_of_this_machine_is_taken_over_only_when_that_process_ended(
    runs: bool, adapter: Cluster, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gitdeploy")
    # Given the Lease was renewed just now by a process of this machine (kill -9, then run again)
    process = subprocess.Popen(["sleep", "60"])
    if not runs:
        process.kill()
        process.wait()
    try:
        holder = _holder_with_pid(process.pid)
        renewed = LeaseSpec(holder, 60, fake_clock.now(), fake_clock.now(), 0)  # 60 s: not ours (15)
        adapter.write_lease(NAMESPACE, NAME, renewed, None)
        # When a new run of this machine tries, and tries again
        restarted = Elector(adapter, new_identity(), fake_clock)
        restarted.elector.step()
        first = restarted.elector.is_leader()
        fake_clock.advance(TIMINGS.retry_period)
        restarted.elector.step()
        second = restarted.elector.is_leader()
    finally:
        process.kill()
        process.wait()
    # Then it takes over at once when that process no longer runs, and waits while it does
    assert (first, second) == (not runs, not runs)
    what = "still runs; standing by" if runs else "no longer runs; taking it over"
    told = f"lease {NAMESPACE}/{NAME}: its holder {holder}, process {process.pid} of this machine, {what}"
    assert told in caplog.messages


def test_a_lease_held_elsewhere_or_by_this_process_id_before_a_restart() -> None:
    identity = new_identity()
    pid = int(identity.rsplit("_", 1)[0].rpartition(".")[2])
    # a holder with this process's own id was an earlier process (a restarted container's pid 1)
    assert same_machine_pid(_holder_with_pid(pid), identity) == pid and not process_runs(pid)
    # another host, or a machine booted since, cannot be judged: the Lease must expire first
    assert same_machine_pid(f"elsewhere_{identity.split('_')[-2]}_x", identity) is None
