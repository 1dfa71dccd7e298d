"""The hook gate (:mod:`gitdeploy.core.rollout.hookgate`): a failed Abort hook fails the revision, an
Ignore hook lets it go on, a Retry hook runs again after its backoff, an earlier revision's hook
pod is replaced, and a hook that never finishes fails at the deadline.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import HookResult, Outcome
from gitdeploy.core.models import FailurePolicy, Hook, RecreateParams, Strategy, StrategyType
from gitdeploy.core.observed import PHASE_ANNOTATION
from gitdeploy.core.rollout import AppPhase, CreatePod, DeletePod, Event, PatchReplicaSet, plan_pass
from tests.fixtures.rolloutpass import (
    HOOK_PRE,
    OK,
    T0,
    V1,
    V2,
    dc_recreate,
    describe,
    make_app,
    make_target,
    pod,
    recreate_pass,
    rs,
    rs_name,
    snap,
)


def test_a_failed_abort_hook_fails_the_revision() -> None:
    step = recreate_pass(dc_recreate(), (0, 0), (0, 0, 0), {"pre": OK, "mid": "Failed"})
    assert step.phase == AppPhase.FAILED
    assert step.message == "revision 2 failed: the mid hook failed (Abort policy)"
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None
    assert (failed.outcome, failed.reason, failed.message) == (
        Outcome.FAILED,
        "HookFailed",
        "the mid hook failed (Abort policy)",
    )
    assert step.actions == (PatchReplicaSet(rs_name(V2), None, ((PHASE_ANNOTATION, "Failed"),)),)
    assert step.events == (
        Event("HookFailed", "Revision 2 failed: the mid hook failed (Abort policy)", warning=True),
    )


def test_a_failed_ignore_hook_lets_the_rollout_go_on() -> None:
    params = RecreateParams(pre=Hook(FailurePolicy.IGNORE, "web", ("/bin/pre",)))
    app = make_app(V2, strategy=Strategy(StrategyType.RECREATE, recreate=params))
    step = recreate_pass(app, (3, 3), (0, 0, 0), {"pre": "Failed"})
    assert describe(step) == "scale old 0"


def test_a_retry_hook_waits_its_backoff_then_runs_again() -> None:
    params = RecreateParams(mid=Hook(FailurePolicy.RETRY, "web", ("/bin/mid",)))
    app = make_app(V2, strategy=Strategy(StrategyType.RECREATE, recreate=params))
    old_rs = rs(V1, 1, 0, max_replicas=3)
    new_rs = rs(V2, 2, 0, phase="Running", max_replicas=3)
    failed = pod(new_rs, "hook-mid", "Failed", attempt=2, first_attempt_at=T0, finished_at=T0 + 30)
    waiting = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(failed,)), T0 + 33)
    # attempt 2 failed at T0+30: the third may start 10 s later
    assert (waiting.actions, waiting.requeue_after, waiting.phase) == ((), 7.0, AppPhase.PROGRESSING)
    again = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(failed,)), T0 + 40)
    assert again.actions[0] == DeletePod(failed.name)
    create = again.actions[1]
    assert isinstance(create, CreatePod)
    assert (create.spec.name, create.spec.attempt, create.spec.first_attempt_at) == (failed.name, 3, T0)
    assert again.events == (Event("HookStarted", "Running mid hook of revision 2 (attempt 3)"),)
    # past the deadline (600 s from the first attempt) the hook fails the revision
    late = pod(new_rs, "hook-mid", "Failed", attempt=5, first_attempt_at=T0, finished_at=T0 + 590)
    gave_up = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(late,)), T0 + 591)
    assert gave_up.phase == AppPhase.FAILED
    assert gave_up.record is not None
    failed_entry = gave_up.record.entry(2)
    assert failed_entry is not None and failed_entry.reason == "HookFailed"
    assert failed_entry.hooks == (HookResult("mid", late.name, "Failed", attempts=5),)


def test_a_hook_pod_of_an_earlier_revision_is_replaced() -> None:
    params = RecreateParams(pre=HOOK_PRE)
    app = make_app(V1, strategy=Strategy(StrategyType.RECREATE, recreate=params))
    # revision 3 reuses the ReplicaSet of revision 1, which still owns revision 1's pre hook pod
    reused = rs(V1, 3, 0, phase="Running", history="1", max_replicas=3)
    leftover = pod(reused, "hook-pre", "Succeeded", revision=1)
    step = plan_pass(make_target(app), snap(reused, rs(V2, 2, 3, max_replicas=3), pods=(leftover,)), T0)
    assert step.actions[0] == DeletePod(leftover.name)
    create = step.actions[1]
    assert isinstance(create, CreatePod) and (create.spec.revision, create.spec.attempt) == (3, 1)


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_a_hook_that_never_finishes_fails_the_revision_at_the_deadline(phase: str) -> None:
    app = make_app(
        V2, deadline=60, strategy=Strategy(StrategyType.RECREATE, recreate=RecreateParams(pre=HOOK_PRE))
    )
    old_rs = rs(V1, 1, 3, max_replicas=3)
    new_rs = rs(V2, 2, 0, phase="Running", max_replicas=3, started_at=T0, progressed_at=T0)
    hung = pod(new_rs, "hook-pre", phase, created_at=T0, first_attempt_at=T0)
    step = plan_pass(make_target(app), snap(old_rs, new_rs, pods=(hung,)), T0 + 3600)
    assert step.phase == AppPhase.FAILED
    assert step.record is not None
    failed = step.record.entry(2)
    assert failed is not None and failed.outcome is Outcome.FAILED
