"""The job provider's pure part: a measurement read from its pod's status, the pod built from
the Job's spec, which pod a due measurement wants (the same one pass after pass, and after a
restart), which analysis pods go, and a canary pass with a measurement in flight (not counted,
looked at again in a second, its status saying so)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.analysis.runs import Measurement, StepMeasurement
from gitdeploy.core.analysistemplates import JobProvider, Metric
from gitdeploy.core.canarystate import CANARY_STEP_ANNOTATION
from gitdeploy.core.canarysteps import AnalysisRef, AnalysisStep, SetWeight
from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.observed import ObservedPod
from gitdeploy.core.rollout.analysisjobs import (
    ANALYSIS_ANNOTATION,
    ANALYSIS_ROLE,
    DEFAULT_BACKOFF_LIMIT,
    KEPT_PODS,
    JobSlot,
    build_analysis_pod,
    canary_job_slots,
    job_measurement,
    job_progress,
    runs_analysis_pods,
    stale_analysis_pods,
)
from gitdeploy.core.rollout.canaryanalysis import JOB_POLL_SECONDS, SOON_SECONDS
from tests.fixtures.canarypass import (
    TEMPLATE,
    after,
    canary_app,
    canary_pass,
    canary_rs,
    measurement,
    run_written,
    stable,
)
from tests.fixtures.rolloutpass import T0, make_target, snap

P = AnalysisPhase
NOW = 100.0


def pod(phase: str, **fields: object) -> ObservedPod:
    return ObservedPod("shop", "web-b-analysis-abcdef-1", ANALYSIS_ROLE, phase, 2, created_at=40.0, **fields)  # type: ignore[arg-type]


# (id, pod, phase, started, finished, value)
MEASURED: list[tuple[str, ObservedPod, AnalysisPhase, float, float, str]] = [
    ("pending: in flight", pod("Pending"), P.RUNNING, 40.0, 40.0, "pod web-b-analysis-abcdef-1 Pending"),
    ("running: in flight", pod("Running"), P.RUNNING, 40.0, 40.0, "pod web-b-analysis-abcdef-1 Running"),
    ("unknown: in flight", pod("Unknown"), P.RUNNING, 40.0, 40.0, "pod web-b-analysis-abcdef-1 Unknown"),
    (
        "going while it runs: still in flight",
        pod("Running", deleting=True),
        P.RUNNING,
        40.0,
        40.0,
        "pod web-b-analysis-abcdef-1 Running",
    ),
    ("succeeded", pod("Succeeded", finished_at=55.0, exit_code=0), P.SUCCESSFUL, 40.0, 55.0, "pod Succeeded"),
    (
        "succeeded, no finish time: now",
        pod("Succeeded"),
        P.SUCCESSFUL,
        40.0,
        NOW,
        "pod Succeeded",
    ),
    (
        "failed with an exit code",
        pod("Failed", finished_at=50.0, exit_code=2, reason="Error"),
        P.FAILED,
        40.0,
        50.0,
        "pod web-b-analysis-abcdef-1 Failed (exit code 2, Error)",
    ),
    (
        "stopped at its deadline",
        pod("Failed", finished_at=70.0, exit_code=137, reason="DeadlineExceeded"),
        P.FAILED,
        40.0,
        70.0,
        "pod web-b-analysis-abcdef-1 Failed (exit code 137, DeadlineExceeded)",
    ),
    (
        "failed, nothing known",
        pod("Failed"),
        P.FAILED,
        40.0,
        NOW,
        "pod web-b-analysis-abcdef-1 Failed",
    ),
]


@pytest.mark.parametrize(
    ("observed", "phase", "started", "finished", "value"),
    [c[1:] for c in MEASURED],
    ids=[c[0] for c in MEASURED],
)
def test_a_measurement_is_its_pods_outcome(
    observed: ObservedPod, phase: AnalysisPhase, started: float, finished: float, value: str
) -> None:
    assert job_measurement(observed, NOW) == Measurement(phase, started, finished, value)


def named(name: str, phase: str, *, deleting: bool = False, role: str = ANALYSIS_ROLE) -> ObservedPod:
    return ObservedPod("shop", name, role, phase, 2, deleting=deleting)


FINISHED = [named(f"web-b-analysis-aaaaaa-{n}", "Failed") for n in range(1, KEPT_PODS + 3)]
# (id, pods, wanted, deleted)
STALE: list[tuple[str, list[ObservedPod], list[str], tuple[str, ...]]] = [
    (
        "a running pod its measurement wants stays",
        [named("x-analysis-a-1", "Running")],
        ["x-analysis-a-1"],
        (),
    ),
    (
        "a running pod no measurement wants goes",
        [named("x-analysis-a-1", "Pending")],
        [],
        ("x-analysis-a-1",),
    ),
    ("one already going is left to go", [named("x-analysis-a-1", "Running", deleting=True)], [], ()),
    ("a finished pod stays for its log", [named("x-analysis-a-1", "Succeeded")], [], ()),
    ("hooks and deployers are not analysis pods", [named("x-hook-pre", "Running", role="hook-pre")], [], ()),
    (
        "a retry of a wanted measurement stays",
        [named("x-analysis-a-1-retry2", "Running")],
        ["x-analysis-a-1"],
        (),
    ),
    (
        "a retry of another goes",
        [named("x-analysis-a-2-retry2", "Running")],
        ["x-analysis-a-1"],
        ("x-analysis-a-2-retry2",),
    ),
    (
        "the oldest finished beyond the kept ones go, by number",
        [*reversed(FINISHED), named("web-b-analysis-bbbbbb-1", "Succeeded")],
        [],
        ("web-b-analysis-aaaaaa-1", "web-b-analysis-aaaaaa-2"),
    ),
]


@pytest.mark.parametrize(("pods", "wanted", "deleted"), [c[1:] for c in STALE], ids=[c[0] for c in STALE])
def test_analysis_pods_no_measurement_wants_go(
    pods: list[ObservedPod], wanted: list[str], deleted: tuple[str, ...]
) -> None:
    assert stale_analysis_pods(pods, wanted) == deleted


JOB = {
    "backoffLimit": 2,
    "activeDeadlineSeconds": 300,
    "template": {
        "metadata": {"labels": {"tier": "smoke", TEMPLATE_HASH_LABEL: "b"}, "annotations": {"a": "template"}},
        "spec": {
            "restartPolicy": "OnFailure",
            "initContainers": [{"name": "wait", "image": "busybox"}],
            "containers": [
                {
                    "name": "t",
                    "image": "curl",
                    "securityContext": {"runAsUser": 1000, "capabilities": {"add": ["NET_RAW"]}},
                }
            ],
        },
    },
}


def test_the_pod_is_the_jobs_template_with_the_defaults_of_hook_pods() -> None:
    provider = JobProvider(
        json.dumps(JOB), json.dumps({"labels": {"team": "a"}, "annotations": {"a": "job"}})
    )
    built = build_analysis_pod(
        provider,
        namespace="shop",
        app="web",
        replica_set="web-b",
        owner_uid="uid-b",
        revision=2,
        step=-1,
        run_started=T0,
        metric="smoke",
        index=4,
    )
    spec = built.spec()
    assert built.name.startswith("web-b-analysis-") and built.name.endswith("-4")
    assert (built.role, built.owner_name, built.owner_uid, built.revision) == (
        ANALYSIS_ROLE,
        "web-b",
        "uid-b",
        2,
    )
    assert spec["restartPolicy"] == "OnFailure" and spec["activeDeadlineSeconds"] == 300
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    (init,), (container,) = spec["initContainers"], spec["containers"]
    assert init["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert container["securityContext"] == {
        "runAsUser": 1000,
        "capabilities": {"add": ["NET_RAW"]},
        "allowPrivilegeEscalation": False,
    }
    # the Job's labels and annotations, the template's winning; never the ReplicaSet's own label
    assert json.loads(built.labels_json) == {"team": "a", "tier": "smoke"}
    assert json.loads(built.annotations_json) == {"a": "template", ANALYSIS_ANNOTATION: "2:-1:smoke:4"}


def test_a_deadline_in_the_template_is_kept() -> None:
    job = {
        **JOB,
        "template": {"spec": {"activeDeadlineSeconds": 30, "containers": [{"name": "t", "image": "i"}]}},
    }
    built = build_analysis_pod(
        JobProvider(json.dumps(job)),
        namespace="shop",
        app="web",
        replica_set="web-b",
        owner_uid="u",
        revision=2,
        step=1,
        run_started=T0,
        metric="smoke",
        index=1,
    )
    assert built.spec()["activeDeadlineSeconds"] == 30


SMOKE = Metric("smoke", JobProvider(json.dumps(JOB)))
JOB_APP = canary_app(
    (SetWeight(50), AnalysisStep(AnalysisRef(("success-rate",)))),
    templates=(
        dataclasses.replace(
            TEMPLATE, args=(), metrics=(dataclasses.replace(SMOKE, count=2, interval_seconds=30),)
        ),
    ),
)
AT_ANALYSIS = ((CANARY_STEP_ANNOTATION, "2:1"),)


def test_a_due_job_measurement_wants_the_same_pod_until_it_is_counted() -> None:
    canary = canary_rs(annotations=AT_ANALYSIS)
    first = canary_pass(JOB_APP, stable(), canary, now=T0 + 100.5)
    canary = after(first, canary)
    target, snapshot = make_target(JOB_APP), snap(stable(), canary)

    (slot,) = canary_job_slots(target, snapshot, T0 + 101)
    # the same pod, pass after pass (and after a restart: only the annotations count)
    assert canary_job_slots(target, snapshot, T0 + 150) == (slot,)
    assert (slot.revision, slot.step, slot.metric.name, slot.pod.name[-2:]) == (2, 1, "smoke", "-1")
    # once the pod's measurement is counted, the next one (30 s later) is another pod
    counted = canary_pass(
        JOB_APP,
        stable(),
        canary,
        now=T0 + 110,
        measured=(measurement(P.SUCCESSFUL, T0 + 110, "pod Succeeded", metric="smoke"),),
    )
    canary = after(counted, canary)
    assert canary_job_slots(target, snap(stable(), canary), T0 + 120) == ()
    (second,) = canary_job_slots(target, snap(stable(), canary), T0 + 140)
    assert (
        second.pod.name[-2:] == "-2" and second.pod.name.rsplit("-", 1)[0] == slot.pod.name.rsplit("-", 1)[0]
    )


def test_a_measurement_in_flight_is_not_counted_and_looked_at_again_in_a_second() -> None:
    canary = canary_rs(annotations=AT_ANALYSIS)
    canary = after(canary_pass(JOB_APP, stable(), canary, now=T0 + 100.5), canary)
    running = StepMeasurement(2, 1, "smoke", Measurement(P.RUNNING, T0 + 101, T0 + 101, "pod p Running"))

    step = canary_pass(JOB_APP, stable(), canary, now=T0 + 105, measured=(running,))

    run = run_written(step, canary.name, 1)
    assert run is None or run.result("smoke").count == 0
    assert step.requeue_after == JOB_POLL_SECONDS
    assert "smoke: not measured yet, measuring" in step.message
    # without it in flight, the due measurement is wanted at once
    assert canary_pass(JOB_APP, stable(), canary, now=T0 + 105).requeue_after == SOON_SECONDS


FIRST = "w-analysis-d-1"
SLOT = JobSlot(
    2,
    1,
    SMOKE,
    dataclasses.replace(
        build_analysis_pod(
            JobProvider(json.dumps(JOB)),
            namespace="shop",
            app="web",
            replica_set="w",
            owner_uid="u",
            revision=2,
            step=1,
            run_started=T0,
            metric="smoke",
            index=1,
        ),
        name=FIRST,
    ),
    backoff_limit=2,
)


def attempt(n: int, phase: str, finished: float | None = None) -> ObservedPod:
    name = FIRST if n == 1 else f"{FIRST}-retry{n}"
    return ObservedPod("shop", name, ANALYSIS_ROLE, phase, 2, n, created_at=10.0 * n, finished_at=finished)


# (id, pods, now, phase, value, pod to create)
PROGRESS: list[tuple[str, list[ObservedPod], float, AnalysisPhase, str, str | None]] = [
    ("no pod: the first is created", [], 5.0, P.RUNNING, "starting", FIRST),
    ("the first runs", [attempt(1, "Running")], 15.0, P.RUNNING, f"pod {FIRST} Running", None),
    ("the first succeeded", [attempt(1, "Succeeded", 12.0)], 15.0, P.SUCCESSFUL, "pod Succeeded", None),
    (
        "the first failed: its back-off (10 s) is not over",
        [attempt(1, "Failed", 12.0)],
        21.9,
        P.RUNNING,
        f"pod {FIRST} Failed, retried",
        None,
    ),
    (
        "the first failed: after its back-off, the second",
        [attempt(1, "Failed", 12.0)],
        22.0,
        P.RUNNING,
        f"pod {FIRST} Failed, retried",
        f"{FIRST}-retry2",
    ),
    (
        "the second failed: 20 s back-off",
        [attempt(1, "Failed", 12.0), attempt(2, "Failed", 30.0)],
        49.0,
        P.RUNNING,
        f"pod {FIRST}-retry2 Failed, retried",
        None,
    ),
    (
        "the third created once it is over",
        [attempt(1, "Failed", 12.0), attempt(2, "Failed", 30.0)],
        50.0,
        P.RUNNING,
        f"pod {FIRST}-retry2 Failed, retried",
        f"{FIRST}-retry3",
    ),
    (
        "a retry that succeeds: Successful from the first pod's start",
        [attempt(1, "Failed", 12.0), attempt(2, "Succeeded", 30.0)],
        31.0,
        P.SUCCESSFUL,
        "pod Succeeded",
        None,
    ),
    (
        "backoffLimit 2: the third failure fails it",
        [attempt(3, "Failed", 45.0), attempt(1, "Failed", 12.0), attempt(2, "Failed", 30.0)],
        99.0,
        P.FAILED,
        f"pod {FIRST}-retry3 Failed, 3 pods failed (backoffLimit 2)",
        None,
    ),
    (
        "the failed ones deleted (kept pods): the attempt number still counts",
        [attempt(3, "Failed", 45.0)],
        99.0,
        P.FAILED,
        f"pod {FIRST}-retry3 Failed, 3 pods failed (backoffLimit 2)",
        None,
    ),
    (
        "another measurement's pods are not this one's",
        [ObservedPod("shop", "w-analysis-d-2", ANALYSIS_ROLE, "Failed", 2)],
        5.0,
        P.RUNNING,
        "starting",
        FIRST,
    ),
]


@pytest.mark.parametrize(
    ("pods", "now", "phase", "value", "created"), [c[1:] for c in PROGRESS], ids=[c[0] for c in PROGRESS]
)
def test_a_job_measurement_retries_as_a_job_with_its_backoff_limit(
    pods: list[ObservedPod], now: float, phase: AnalysisPhase, value: str, created: str | None
) -> None:
    measured, wanted = job_progress(SLOT, pods, now)
    assert (measured.phase, measured.value) == (phase, value)
    assert (wanted.name if wanted is not None else None) == created
    if wanted is not None and created is not None:
        assert wanted.attempt == (1 if created == FIRST else int(created.rsplit("retry", 1)[1]))
    if phase is P.SUCCESSFUL:
        assert measured.started_at == 10.0  # the first pod's creation


def test_backoff_limit_is_a_jobs_default_when_unset() -> None:
    canary = canary_rs(annotations=AT_ANALYSIS)
    canary = after(canary_pass(JOB_APP, stable(), canary, now=T0 + 100.5), canary)
    (slot,) = canary_job_slots(make_target(JOB_APP), snap(stable(), canary), T0 + 101)
    assert slot.backoff_limit == 2  # JOB's
    unset = {k: v for k, v in JOB.items() if k != "backoffLimit"}
    app = canary_app(
        (SetWeight(50), AnalysisStep(AnalysisRef(("success-rate",)))),
        templates=(
            dataclasses.replace(
                TEMPLATE, args=(), metrics=(Metric("smoke", JobProvider(json.dumps(unset))),)
            ),
        ),
    )
    (slot,) = canary_job_slots(make_target(app), snap(stable(), canary), T0 + 101)
    assert slot.backoff_limit == DEFAULT_BACKOFF_LIMIT == 6


def test_the_loop_lists_the_pods_of_a_canary_with_a_job_metric_only() -> None:
    assert runs_analysis_pods(JOB_APP)
    assert not runs_analysis_pods(canary_app((SetWeight(50), AnalysisStep(AnalysisRef(("success-rate",))))))
    assert not runs_analysis_pods(
        dataclasses.replace(JOB_APP, strategy=dataclasses.replace(JOB_APP.strategy, canary=None))
    )
