"""``run``'s passes take the due apps a slice at a time, what something asked for first: a commit
that comes while a replica passes over all of its apps (a resync) waits for one slice, not for
the whole resync (real git, embedded cluster)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.reconcile import Result
from gitdeploy.controller.scheduler import Scheduler
from gitdeploy.controller.workers import PassHooks
from gitdeploy.core.models import AppKey
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle
from tests.fixtures.manifests import deployment

NAMESPACES = ["ns-a", "ns-b", "ns-c"]
APPS = [AppKey(ns, f"app{i}") for ns in NAMESPACES for i in range(4)]
SLICE = 4
"""A namespace's apps: a slice of the resync takes one namespace."""

pytestmark = pytest.mark.usefixtures("isolated_git_config")


def files(image: str, *only: AppKey) -> dict[str, str]:
    return {f"apps/{k.namespace}/{k.name}.yaml": deployment(k.name, k.namespace, image) for k in only or APPS}


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    git_remote.commit_and_push("apps", {"gitdeploy.yaml": "paths: [apps]\n", **files("nginx:1")})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        controller = Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)
        settle(controller, fake_clock)
        yield controller


def test_a_commit_during_a_resync_waits_for_one_slice(
    controller: Controller, git_remote: GitRemote, fake_clock: FakeClock
) -> None:
    listed: Counter[str] = Counter()
    scheduler = Scheduler(controller, PassHooks(before_list=lambda ns, _due: listed.update([ns])))
    # Given every app due for the periodic resync, and the resync's first slice passed
    controller.queue.resync_soon(fake_clock.now(), force=True)
    first = scheduler.pass_once(size=SLICE)
    assert {r.key for r in first} == {k for k in APPS if k.namespace == "ns-a"}
    assert controller.queue.cut_short
    # When a commit changes an app of the last namespace
    bumped = AppKey("ns-c", "app2")
    git_remote.commit_and_push("bump", files("nginx:2", bumped))
    assert controller.poll()
    # Then the next pass takes it alone, ahead of the resync's routine apps
    (second,) = scheduler.pass_once(size=SLICE)
    assert second.key == bumped and second.phase == "Progressing"
    # And the resync goes on to its end, each namespace listed once for it
    third = scheduler.pass_once(size=SLICE)
    assert {r.key for r in third} == {k for k in APPS if k.namespace == "ns-b"}
    fourth = scheduler.pass_once(size=SLICE)
    assert {r.key for r in fourth} == {k for k in APPS if k.namespace == "ns-c"} - {bumped}
    assert not controller.queue.cut_short
    assert listed == Counter(NAMESPACES)
    settle(controller, fake_clock)
    assert controller.reports[bumped].revision == 2 and controller.reports[bumped].sync == "Synced"


def test_a_push_cuts_a_slice_of_the_resync_short(
    controller: Controller, git_remote: GitRemote, fake_clock: FakeClock
) -> None:
    pushed: list[str] = []

    def step(key: AppKey, reconcile: Callable[[], Result]) -> Result:
        pushed.append("head")  # a push comes while the slice's first steps run
        time.sleep(0.2)
        return reconcile()

    # Given every app due for the periodic resync
    controller.queue.resync_soon(fake_clock.now(), force=True)
    # When a push comes during the resync's first slice (one namespace, 2 workers)
    first = Scheduler(controller, PassHooks(around_step=step)).pass_once(size=SLICE, cut=lambda: bool(pushed))
    # Then the steps under way end, and the slice's other apps are due again at once, as routine
    ns_a = {k for k in APPS if k.namespace == "ns-a"}
    done = {r.key for r in first}
    assert len(done) == 2 and done < ns_a
    assert all(controller.queue.due[k] <= fake_clock.now() for k in ns_a - done)
    assert ns_a - done <= controller.queue.routine and controller.queue.cut_short
    # When the push's commit is polled, the app it changes is passed over first
    bumped = AppKey("ns-c", "app2")
    git_remote.commit_and_push("bump", files("nginx:2", bumped))
    assert controller.poll()
    scheduler = Scheduler(controller)
    (second,) = scheduler.pass_once(size=SLICE, cut=lambda: False)
    assert second.key == bumped and second.phase == "Progressing"
    # Then the resync goes on over every other app, the cut slice's rest included, even with a
    # push waiting all the time: the slice after a cut one is not cut
    rest: list[AppKey] = []
    for _ in range(2 * len(NAMESPACES)):
        rest += [r.key for r in scheduler.pass_once(size=SLICE, cut=lambda: True)]
    assert sorted(rest) == sorted(set(APPS) - done - {bumped}) and not controller.queue.cut_short


def test_a_pass_without_a_size_takes_everything_due(controller: Controller, fake_clock: FakeClock) -> None:
    controller.mark_due()
    assert len(Scheduler(controller).pass_once()) == len(APPS)
    assert not controller.queue.cut_short and not controller.due
