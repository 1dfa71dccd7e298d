"""The loop hears of a rollout's pods through a ReplicaSet watch and steps it at once.

The embedded cluster runs on a fake clock whose pods become ready half a second after they start,
sooner than the requeue delay of a watched rollout (5 s), so a pass that comes before that delay
can only come from the watch. The watch itself is real: the official client's watch over HTTP, one
per namespace.
"""

from __future__ import annotations

import threading
import time

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.controller.loop import Controller
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.rswatch import READY_AFTER, eventually, replicas, settle, web

pytestmark = pytest.mark.usefixtures("isolated_git_config")  # git without the machine's configuration


def test_ready_pods_make_the_next_wave_due_before_the_requeue_delay(
    controller: Controller, fake_clock: FakeClock, git_remote: GitRemote, wake: threading.Event
) -> None:
    # Given web running 8 replicas, and the ReplicaSet watch of its namespace up
    settle(controller, fake_clock)
    assert eventually(lambda: "shop" in controller.watched)
    time.sleep(0.5)  # the watch starts from the current resourceVersion

    # When a new image starts a rollout (25%/25%: the first wave of 4 pods at once)
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": web("nginx:1.26")})
    controller.poll()
    controller.reconcile_due()
    assert replicas(controller) == [6, 4]

    # Then the step's own writes wake nothing: the app waits for its requeue delay, a fallback
    # while the watch runs
    time.sleep(0.5)
    assert not wake.is_set()
    assert controller.next_due_in() == pytest.approx(5.0, rel=0.1)  # with the loop's ±10% jitter

    # When the new pods become ready, half a second later
    fake_clock.advance(READY_AFTER + 0.1)

    # Then the watch makes the app due now (its requeue delay has about 4.4 s left) and wakes the loop
    assert eventually(wake.is_set)
    assert controller.next_due_in() == 0.0
    controller.reconcile_due()
    assert replicas(controller) == [2, 8]

    # When the second wave is ready, the last old pods go in the step it wakes
    wake.clear()
    fake_clock.advance(READY_AFTER + 0.1)
    assert eventually(wake.is_set)
    (report,) = controller.reconcile_due()
    assert replicas(controller) == [0, 8]

    # Then that step completes the rollout (pods being deleted no longer count, as in Kubernetes)
    assert (report.phase, report.settled, report.revision) == ("Complete", True, 2)
