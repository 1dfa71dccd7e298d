"""Custom (:mod:`gitdeploy.core.rollout.custom`): the deployer pod starts once per revision, is waited
for, and its exit and the new ReplicaSet's availability decide the outcome.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import HookResult, Outcome
from gitdeploy.core.observed import ObservedPod
from gitdeploy.core.rollout import AppPhase, CreatePod, DeletePod, Event, Step, plan_pass
from tests.fixtures.rolloutpass import (
    CUSTOM,
    OK,
    T0,
    V1,
    V2,
    make_app,
    make_target,
    only_create_pod,
    pod,
    rs,
    rs_name,
    snap,
)

# -- Custom ----------------------------------------------------------------------------------------------


def custom_pass(
    new: tuple[int, int, int], deployer: ObservedPod | str | None, now: float = T0 + 10, *, old: int = 3
) -> Step:
    app = make_app(V2, strategy=CUSTOM)
    old_rs = rs(V1, 1, old, max_replicas=3, progressed_at=T0)
    new_rs = rs(V2, 2, *new, phase="Running", max_replicas=3, progressed_at=T0)
    pods: tuple[ObservedPod, ...] = ()
    if isinstance(deployer, str):
        pods = (pod(new_rs, "deployer", deployer, finished_at=T0 + 5, exit_code=0 if deployer == OK else 3),)
    elif deployer is not None:
        pods = (deployer,)
    return plan_pass(make_target(app), snap(old_rs, new_rs, pods=pods), now)


def test_custom_starts_its_deployer() -> None:
    step = custom_pass((0, 0, 0), None)
    create = only_create_pod(step)
    assert (create.spec.name, create.spec.role, create.spec.revision) == (
        f"{rs_name(V2)}-deploy",
        "deployer",
        2,
    )
    container = create.spec.spec()["containers"][0]
    assert (container["image"], container["command"]) == ("org/deployer:1", ["/deploy"])
    assert step.actions == (create,)
    assert step.events == (Event("DeployerStarted", "Running the custom deployer of revision 2"),)
    assert (step.phase, step.message, step.requeue_after) == (
        AppPhase.PROGRESSING,
        "custom deployer started",
        1.0,
    )


def test_custom_replaces_a_deployer_of_an_earlier_revision() -> None:
    app_rs = rs(V2, 2, 0, phase="Running")
    stale = pod(app_rs, "deployer", OK, revision=1)
    step = custom_pass((0, 0, 0), stale)
    assert step.actions[0] == DeletePod(stale.name)
    assert isinstance(step.actions[1], CreatePod)


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_custom_waits_for_its_deployer(phase: str) -> None:
    step = custom_pass((1, 1, 0), phase)
    assert (step.phase, step.message, step.actions, step.record) == (
        AppPhase.PROGRESSING,
        "custom deployer running",
        (),
        None,
    )


def test_custom_deployer_failure_fails_the_revision() -> None:
    step = custom_pass((1, 1, 0), "Failed")
    assert (step.phase, step.message) == (
        AppPhase.FAILED,
        "revision 2 failed: the custom deployer failed with exit code 3",
    )
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None
    assert (failed.outcome, failed.reason) == (Outcome.FAILED, "DeployerFailed")
    assert failed.hooks == (HookResult("deployer", f"{rs_name(V2)}-deploy", "Failed", exit_code=3),)
    assert step.log_pods == (f"{rs_name(V2)}-deploy",)


def test_custom_deployer_success_with_the_replica_set_ready_completes() -> None:
    step = custom_pass((3, 3, 3), OK, old=0)
    assert step.phase == AppPhase.COMPLETE
    assert step.record is not None
    done = step.record.entry(2)
    assert done is not None and done.outcome is Outcome.COMPLETE
    assert done.hooks == (HookResult("deployer", f"{rs_name(V2)}-deploy", "Succeeded", exit_code=0),)


@pytest.mark.parametrize(("new", "elapsed"), [((0, 0, 0), 300.0), ((3, 3, 1), 300.0), ((2, 2, 2), 599.0)])
def test_custom_deployer_success_waits_for_the_replica_set(new: tuple[int, int, int], elapsed: float) -> None:
    step = custom_pass(new, OK, now=T0 + elapsed)
    assert (step.phase, step.message, step.actions) == (
        AppPhase.PROGRESSING,
        "waiting for the deployer's ReplicaSet",
        (),
    )


def test_custom_deployer_success_without_an_available_replica_set_fails_at_the_deadline() -> None:
    step = custom_pass((3, 3, 1), OK, now=T0 + 700)
    assert step.phase == AppPhase.FAILED
    assert step.message == (
        f"revision 2 failed: the custom deployer exited 0 but {rs_name(V2)} has 1/3 available"
    )
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None and failed.reason == "ProgressDeadlineExceeded"
