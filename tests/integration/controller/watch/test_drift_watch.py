"""The loop hears of a hand change to a settled app's ReplicaSet through the ReplicaSet watch and
undoes it in the pass it wakes, with an event naming what it undid (issue 21, item 2).

The fake clock never reaches the resync: a pass that comes can only come from the watch.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from kubernetes import client

from gitdeploy.clock import FakeClock
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.rollouts import forget_replica_sets
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.errors import GitdeployError
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.rswatch import eventually, replicas, settle, web


def _drift_events(kube_client: Any) -> list[str]:
    found: Any = client.CoreV1Api(kube_client).list_namespaced_event("shop")
    return [str(e.message) for e in found.items if e.reason == "DriftCorrected"]


def _settled_and_watched(controller: Controller, fake_clock: FakeClock) -> str:
    """Settle web, wait for the ReplicaSet watch of its namespace; the name of its ReplicaSet."""
    settle(controller, fake_clock)
    assert eventually(lambda: "shop" in controller.watched)
    time.sleep(0.5)  # the watch starts from the current resourceVersion
    [name] = [rs.name for rs in controller.cluster.list_replica_sets("shop", "web")]
    return name


def test_a_hand_scale_wakes_the_app_and_its_pass_scales_back(
    controller: Controller, fake_clock: FakeClock, wake: threading.Event, kube_client: Any
) -> None:
    # Given web settled at 8 replicas, and the ReplicaSet watch of its namespace up
    name = _settled_and_watched(controller, fake_clock)
    assert controller.next_due_in() is None

    # When someone runs `kubectl scale rs web-… --replicas=2` (through the scale subresource)
    client.AppsV1Api(kube_client).patch_namespaced_replica_set_scale(name, "shop", {"spec": {"replicas": 2}})

    # Then the watch makes the app due now, and its pass scales it back and says so
    assert eventually(wake.is_set)
    assert controller.next_due_in() == 0.0
    controller.reconcile_due()
    assert replicas(controller) == [8]
    assert _drift_events(kube_client) == [f"{name} was scaled to 2 by hand; scaled back to 8"]

    # And once its pods are back it is settled again, undone once
    settle(controller, fake_clock)
    assert controller.next_due_in() is None
    assert len(_drift_events(kube_client)) == 1


def test_a_hand_scale_is_one_hand_change_though_its_status_follows(
    controller: Controller,
    fake_clock: FakeClock,
    wake: threading.Event,
    caplog: pytest.LogCaptureFixture,
    kube_client: Any,
) -> None:
    # Given web settled at 8 replicas, and the ReplicaSet watch of its namespace up
    name = _settled_and_watched(controller, fake_clock)
    apps = client.AppsV1Api(kube_client)
    caplog.set_level(logging.INFO, logger="gitdeploy")

    # When someone scales it to 2 by hand, and the ReplicaSet's status then catches up with it
    apps.patch_namespaced_replica_set_scale(name, "shop", {"spec": {"replicas": 2}})
    apps.patch_namespaced_replica_set_status(name, "shop", {"status": {"replicas": 2}})

    # Then the watch hears two changes of one spec: one hand change, logged once
    def changed_by_hand() -> list[str]:
        return [r.getMessage() for r in caplog.records if "changed by hand" in r.getMessage()]

    assert eventually(lambda: controller.cluster.list_replica_sets("shop", "web")[0].state.replicas == 2)
    assert eventually(lambda: len(changed_by_hand()) >= 1)
    time.sleep(1.0)  # the status's news comes right after the spec's
    said = f"[shop/web] ReplicaSet {name} changed by hand (MODIFIED); passing over the app now"
    assert changed_by_hand() == [said]
    assert wake.is_set()


def test_news_of_the_loops_own_writes_heard_late_is_never_a_hand_change(
    controller: Controller, fake_clock: FakeClock, git_remote: GitRemote, kube_client: Any
) -> None:
    # Given web settled at 8 replicas, and every change to its ReplicaSets recorded from a watch
    settle(controller, fake_clock)
    heard: list[tuple[str, ObservedReplicaSet]] = []
    stop = threading.Event()

    def listen() -> None:
        try:
            for kind, rs in controller.cluster.watch_replica_sets("shop", timeout_seconds=30):
                if isinstance(rs, ObservedReplicaSet):  # not a bookmark
                    heard.append((kind, rs))
                if stop.is_set():
                    return
        except GitdeployError:  # the cluster stops when the test ends
            return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    time.sleep(0.5)  # the watch starts from the current resourceVersion

    # When a new image rolls out through several scales of both ReplicaSets
    git_remote.commit_and_push("web 1.26", {"apps/web.yaml": web("nginx:1.26")})
    settle(controller, fake_clock)
    assert replicas(controller) == [0, 8]
    assert eventually(lambda: len({rs.state.replicas for _, rs in heard}) >= 3)
    stop.set()

    # Then news of those scales, heard after the loop made later ones (as a busy watch delivers
    # it), is never taken for a hand change: the loop's own writes are not drift
    assert [
        (kind, rs.name, rs.state.replicas) for kind, rs in heard if controller.notice_drift(kind, rs)
    ] == []
    assert _drift_events(kube_client) == []


def test_a_process_that_no_longer_leads_takes_no_change_for_a_hand_change(
    controller: Controller,
    fake_clock: FakeClock,
    wake: threading.Event,
    caplog: pytest.LogCaptureFixture,
    kube_client: Any,
) -> None:
    # Given web settled at 8 replicas by this process, which then lost the leader Lease
    name = _settled_and_watched(controller, fake_clock)
    controller.runner.leading = lambda: False
    caplog.set_level(logging.INFO, logger="gitdeploy")
    wake.clear()

    # When the ReplicaSet is scaled (by the new leader, as far as this process can tell)
    client.AppsV1Api(kube_client).patch_namespaced_replica_set_scale(name, "shop", {"spec": {"replicas": 2}})
    assert eventually(lambda: controller.cluster.list_replica_sets("shop", "web")[0].state.replicas == 2)
    time.sleep(1.0)  # the watch's news of it

    # Then it says nothing was changed by hand, and makes no pass due
    assert [r.getMessage() for r in caplog.records if "changed by hand" in r.getMessage()] == []
    assert controller.next_due_in() is None
    assert not wake.is_set()


def test_a_leader_change_forgets_what_the_runner_knew_of_the_replica_sets(
    controller: Controller, fake_clock: FakeClock, kube_client: Any
) -> None:
    # Given web settled at 8 replicas by this process
    settle(controller, fake_clock)
    [rs] = controller.cluster.list_replica_sets("shop", "web")

    # When the Lease changes hands, and the other leader scaled the ReplicaSet meanwhile
    forget_replica_sets(controller.runner)
    apps = client.AppsV1Api(kube_client)
    apps.patch_namespaced_replica_set_scale(rs.name, "shop", {"spec": {"replicas": 2}})
    [scaled] = controller.cluster.list_replica_sets("shop", "web")

    # Then news of that scale is not a hand change (the next pass learns the ReplicaSet again)
    assert not controller.notice_drift("MODIFIED", scaled)
    assert controller.runner.replicas_known == {}
