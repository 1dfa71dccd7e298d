"""The ReplicaSet controller's plan and the kubelet's transitions, as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from gitdeploy.localcluster.config import SimulationConfig
from gitdeploy.localcluster.simulation import initial_pod_status, plan_replicaset, pod_timers, pod_transition
from gitdeploy.localcluster.timefmt import format_time, parse_time

T0 = 1_700_000_000.0


def pod(name: str, created: float, ready_since: float | None, phase: str = "Running") -> dict[str, Any]:
    conditions = []
    if ready_since is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": format_time(ready_since)})
    return {
        "metadata": {"name": name, "creationTimestamp": format_time(created), "labels": {"app": "web"}},
        "status": {"phase": phase, "conditions": conditions},
    }


def rs(replicas: int, min_ready: int = 0) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "uid": "u", "generation": 3},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready,
            "template": {"metadata": {"labels": {"app": "web"}}},
        },
    }


@pytest.mark.parametrize(
    ("replicas", "deleted"),
    [
        (4, []),
        (3, ["pending"]),
        (2, ["pending", "unready"]),
        (1, ["pending", "unready", "new-ready"]),
        (0, ["pending", "unready", "new-ready", "old-ready"]),
    ],
)
def test_scale_down_order(replicas: int, deleted: list[str]) -> None:
    pods = [
        pod("old-ready", T0, T0 + 5),
        pod("new-ready", T0 + 10, T0 + 15),
        pod("unready", T0 + 1, None),
        pod("pending", T0 + 2, None, phase="Pending"),
    ]
    plan = plan_replicaset(rs(replicas), pods, T0 + 100)
    assert [p["metadata"]["name"] for p in plan.delete] == deleted


def test_status_and_availability() -> None:
    pods = [
        pod("a", T0, T0 + 5),
        pod("b", T0, T0 + 8),
        pod("c", T0, None),
        pod("done", T0, None, "Succeeded"),
    ]
    plan = plan_replicaset(rs(4, min_ready=10), pods, T0 + 16)
    assert plan.create == 1
    assert plan.status == {
        "replicas": 4,
        "fullyLabeledReplicas": 4,
        "readyReplicas": 2,
        "availableReplicas": 1,
        "observedGeneration": 3,
    }
    assert plan.recheck_at == T0 + 18


def test_zero_counters_are_omitted() -> None:
    assert plan_replicaset(rs(0), [], T0).status == {"replicas": 0, "observedGeneration": 3}


@pytest.mark.parametrize(
    ("image", "restart", "phase", "ready"),
    [
        ("app:1", "Always", "Running", True),
        ("app:missing", "Always", "Pending", False),
        ("app:crash", "Always", "Running", False),
        ("app:unready", "Always", "Running", False),
    ],
)
def test_kubelet_start(image: str, restart: str, phase: str, ready: bool) -> None:
    config = SimulationConfig(
        image_pull_failure=("*:missing",), image_crash=("*:crash",), image_unready=("*:unready",)
    )
    new = {
        "metadata": {"uid": "u"},
        "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": image}]},
    }
    new["status"] = initial_pod_status(new, T0)
    assert pod_timers(new, config, T0) == [(T0 + config.pod_start_seconds, "pod-start")]
    status = pod_transition(new, "pod-start", T0 + 2, config)
    assert status["phase"] == phase
    assert status["containerStatuses"][0]["ready"] is ready


@pytest.mark.parametrize(("image", "phase"), [("hook:1", "Succeeded"), ("hook:crash", "Failed")])
def test_jobs_finish(image: str, phase: str) -> None:
    config = SimulationConfig(pod_start_seconds=2, job_seconds=7, image_crash=("*:crash",))
    job = {
        "metadata": {"uid": "u"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": image}]},
    }
    job["status"] = initial_pod_status(job, T0)
    assert pod_timers(job, config, T0) == [(T0 + 2, "pod-start"), (T0 + 7, "pod-stop")]
    assert pod_transition(job, "pod-stop", T0 + 7, config)["phase"] == phase


@pytest.mark.parametrize(
    ("image", "deadline", "timers", "phase"),
    [
        ("hook:hang", 60, [(T0 + 2, "pod-start"), (T0 + 60, "pod-deadline")], "Failed"),
        ("hook:hang", None, [(T0 + 2, "pod-start")], "Running"),
        ("hook:1", 5, [(T0 + 2, "pod-start"), (T0 + 5, "pod-deadline")], "Failed"),
        ("hook:1", 60, [(T0 + 2, "pod-start"), (T0 + 7, "pod-stop"), (T0 + 60, "pod-deadline")], "Succeeded"),
    ],
)
def test_active_deadline_stops_a_pod_still_running(
    image: str, deadline: int | None, timers: list[tuple[float, str]], phase: str
) -> None:
    config = SimulationConfig(pod_start_seconds=2, job_seconds=7, image_hang=("*:hang",))
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [{"name": "c", "image": image}]}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    job: dict[str, Any] = {"metadata": {"uid": "u"}, "spec": spec}
    job["status"] = initial_pod_status(job, T0)
    assert pod_timers(job, config, T0) == timers
    for due, action in timers:
        job["status"] = pod_transition(job, action, due, config)
    assert job["status"]["phase"] == phase
    if timers[-1][1] == "pod-deadline" and phase == "Failed":
        assert job["status"]["reason"] == "DeadlineExceeded"
        assert job["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


@pytest.mark.parametrize("moment", [T0, T0 + 0.25, T0 + 1.5])
def test_time_round_trip(moment: float) -> None:
    assert parse_time(format_time(moment)) == moment
