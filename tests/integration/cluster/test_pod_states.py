"""The pods of a ReplicaSet read as :class:`PodState` (the JSON the API answers → why a pod is not
ready): waiting reasons, exit codes of the current or last termination, and an unschedulable pod."""

from __future__ import annotations

from gitdeploy.cluster.pods import to_pod_state
from gitdeploy.core.podstates import ContainerState, PodState


def test_a_pod_the_scheduler_cannot_place() -> None:
    raw = {
        "metadata": {"name": "web-1"},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 Insufficient cpu."},
            ],
        },
    }  # fmt: skip
    assert to_pod_state(raw) == PodState(
        "web-1", unschedulable="0/3 nodes are available: 3 Insufficient cpu."
    )


def test_containers_waiting_and_crashed() -> None:
    raw = {
        "metadata": {"name": "web-2"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}],
            "initContainerStatuses": [
                {"name": "init", "image": "busybox", "ready": True,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            ],
            "containerStatuses": [
                {"name": "web", "image": "app:2", "ready": False,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
                {"name": "proxy", "image": "envoy:1", "ready": False,
                 "state": {"waiting": {"reason": "ImagePullBackOff"}}},
            ],
        },
    }  # fmt: skip
    assert to_pod_state(raw) == PodState(
        "web-2",
        containers=(
            ContainerState("init", "busybox", exit_code=0, ready=True),
            ContainerState("web", "app:2", waiting="CrashLoopBackOff", exit_code=137),
            ContainerState("proxy", "envoy:1", waiting="ImagePullBackOff"),
        ),
    )


def test_a_ready_pod() -> None:
    raw = {"metadata": {"name": "web-3"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert to_pod_state(raw) == PodState("web-3", ready=True)
