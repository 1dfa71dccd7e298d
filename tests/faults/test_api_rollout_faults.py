"""API faults during whole rollouts of several apps: nothing disturbed, nothing lost, all converge.

Three apps run 4 replicas each; two of them roll out a new image while the API server, reached
through a :class:`~tests.fixtures.faultproxy.FaultProxy`, is slow (a second per request), answers
409 Conflict to every write, cuts its answers mid-response, or has every connection (the watches
of ``gitdeploy run`` included) cut every three passes (three fake seconds). The controller is
driven by the one Scheduler (poll, then a pass over what is due every fake second), the record
and ReplicaSet watches on their threads.

After every pass, read straight from the cluster (not through the proxy): no app runs more
ReplicaSet replicas than its rollout allows (4 + maxSurge 1) nor fewer available pods than it
allows (4 - maxUnavailable 1), and the app that is not rolling out keeps its 4 replicas. Once the
fault ends, every app converges without a restart and its revision log has every rollout, Complete.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.scheduler import Scheduler
from gitdeploy.controller.watcher import watch_records, watch_rollouts
from gitdeploy.core.history.records import AppRecord, Outcome
from gitdeploy.core.models import AppKey
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import controller_for
from tests.fixtures.manifests import deployment
from tests.fixtures.waiting import returns

pytestmark = pytest.mark.usefixtures("isolated_git_config", "proxied")

REPLICAS, SURGE, UNAVAILABLE = 4, 1, 1
"""Each app's size and its rollout bounds (the Deployment defaults, 25 % of 4, rounded)."""
ROLLING = ("web", "api")
STILL = "worker"
CUT_EVERY_PASSES = 3
PHASES: list[tuple[str, dict[str, Any], int]] = [
    ("slow", {"fault": Fault.SLOW, "delay": 1.0}, 4),
    ("409 on writes", {"fault": Fault.ANSWER, "status": 409, "writes_only": True}, 8),
    ("close mid-response", {"fault": Fault.CLOSE}, 6),
    ("watch cut", {"fault": Fault.PASS}, 12),
]
"""(name, the proxy's setting, passes made under the fault)."""


@pytest.fixture
def controller(
    git_remote: GitRemote, proxied: Cluster, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, proxied, fake_clock, tmp_path / "state") as made:
        yield made


@pytest.fixture
def watches(controller: Controller) -> Iterator[threading.Event]:
    """The record and ReplicaSet watches of ``gitdeploy run``, through the proxy; set = a notice."""
    stop, noticed = threading.Event(), threading.Event()
    watch_records(controller, stop, noticed.set)
    watch_rollouts(controller, stop, noticed.set)
    yield noticed
    stop.set()


def apps(version: int) -> dict[str, str]:
    files = {f"apps/{name}.yaml": deployment(name, "shop", f"nginx:{version}", REPLICAS) for name in ROLLING}
    return {**files, f"apps/{STILL}.yaml": deployment(STILL, "shop", "nginx:1", REPLICAS)}


class Bounds:
    """Checks, straight from the cluster, that no app is disturbed; counts the checks made."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.checks = 0

    def __call__(self) -> None:
        self.checks += 1
        for name in (*ROLLING, STILL):
            sets = self.cluster.list_replica_sets("shop", name)
            replicas = sum(rs.state.replicas for rs in sets)
            available = sum(rs.state.available for rs in sets)
            sizes = {rs.name: (rs.state.replicas, rs.state.available) for rs in sets}
            assert replicas <= REPLICAS + SURGE, f"{name} scaled past its surge: {sizes}"
            assert available >= REPLICAS - UNAVAILABLE, f"{name} below its availability: {sizes}"
            if name == STILL:
                assert [rs.state.replicas for rs in sets] == [REPLICAS], f"{STILL} was touched: {sizes}"


def drive(
    controller: Controller,
    clock: FakeClock,
    check: Callable[[], None],
    passes: int | None = None,
    before: Callable[[int], None] = lambda _: None,
) -> None:
    """What ``run`` does, a fake second at a time (:meth:`Scheduler.settle`): ``before(n)``, pass
    over due apps, then ``check``; ``passes`` of them, or (None) until no app is due (at most 600)."""
    made = itertools.count(1)

    def advance(seconds: float) -> None:  # between two passes
        check()
        clock.advance(seconds)
        n = next(made)
        if passes is None or n < passes:
            before(n)

    before(0)
    scheduler = Scheduler(controller)
    settled = returns(lambda: scheduler.settle(advance, limit=passes or 600, shortest=1.0, longest=1.0))
    if settled is not None:
        check()  # after the last pass, which no advance followed
    assert passes is not None or settled is not None, f"not settled: {controller.reports}"


class WatchCutter:
    """Every ``every`` passes, once the ReplicaSet watch is back (it restarts a second after a
    failure), cut every connection; counts the cuts that ended at least one connection."""

    def __init__(self, proxy: FaultProxy, controller: Controller, every: int) -> None:
        self.proxy, self.controller, self.every = proxy, controller, every
        self.cuts = 0

    def __call__(self, n: int) -> None:
        if n % self.every:
            return
        watching = threading.Event()
        for _ in range(100):  # the watch thread's restart, in real time: at most 10 s
            if "shop" in self.controller.watched:
                break
            watching.wait(0.1)
        self.cuts += self.proxy.cut() > 0


def revisions(cluster: Cluster, name: str) -> list[tuple[int, Outcome]]:
    stored = cluster.read_app_record("shop", name)
    assert stored is not None
    return [(e.revision, e.outcome) for e in AppRecord.from_json(stored.payload).revisions]


def images(cluster: Cluster, name: str) -> dict[str, int]:
    found = {}
    for rs in cluster.list_replica_sets("shop", name):
        assert rs.template is not None
        found[rs.template.containers[0].image] = rs.state.replicas
    return found


def test_rollouts_of_several_apps_go_through_api_faults_undisturbed_and_converge(
    git_remote: GitRemote,
    controller: Controller,
    watches: threading.Event,
    api_fault_proxy: FaultProxy,
    kube_client: Any,
    fake_clock: FakeClock,
) -> None:
    direct = Cluster(kube_client, "embedded, directly")
    within_bounds = Bounds(direct)
    git_remote.commit_and_push("v1", apps(1))
    drive(controller, fake_clock, lambda: None)
    within_bounds()
    for version, (name, setting, passes) in enumerate(PHASES, start=2):
        # Given a commit that rolls web and api out to a new image
        git_remote.commit_and_push(f"v{version}", apps(version))
        # When the API has this fault for a while, and the loop goes on
        api_fault_proxy.set(**setting)
        cutter = WatchCutter(api_fault_proxy, controller, CUT_EVERY_PASSES) if name == "watch cut" else None
        drive(controller, fake_clock, within_bounds, passes, before=cutter or (lambda _: None))
        # Then the fault was met
        fault = setting["fault"]
        assert api_fault_proxy.requests[fault] > 0, name
        if fault is Fault.ANSWER:
            assert api_fault_proxy.answered[409] > 0, name
        if cutter is not None:
            assert cutter.cuts == passes // CUT_EVERY_PASSES, name
        # When it ends, the loop converges with no restart, within bounds all along
        api_fault_proxy.set(Fault.PASS)
        drive(controller, fake_clock, within_bounds)
        for app in ROLLING:
            assert images(direct, app) == {f"nginx:{v}": 0 for v in range(1, version)} | {
                f"nginx:{version}": REPLICAS
            }, (name, app)
            assert revisions(direct, app) == [(r, Outcome.COMPLETE) for r in range(1, version + 1)], name
            report = controller.reports[AppKey("shop", app)]
            assert (report.sync, report.health) == ("Synced", "Healthy"), (name, report)
        assert revisions(direct, STILL) == [(1, Outcome.COMPLETE)]
    assert within_bounds.checks > sum(passes for _, _, passes in PHASES)
