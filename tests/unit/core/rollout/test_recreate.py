"""Recreate (:mod:`gitdeploy.core.rollout.recreate`), pass by pass: every old pod gone before the mid
hook and the first new pod; a DeploymentConfig of several replicas starts one first.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import HookResult
from gitdeploy.core.models import AppKind
from gitdeploy.core.rollout import AppPhase, Event, plan_pass
from tests.fixtures.rolloutpass import (
    OK,
    RECREATE,
    T0,
    V1,
    V2,
    dc_recreate,
    describe,
    make_app,
    make_target,
    named,
    only_create_pod,
    pod,
    recreate_pass,
    rs,
    rs_name,
    scaled,
    snap,
)

RECREATE_STORY: list[tuple[str, tuple[int, int], tuple[int, int, int], dict[str, str], str]] = [
    ("pre hook starts", (3, 3), (0, 0, 0), {}, "create hook-pre"),
    ("pre hook runs", (3, 3), (0, 0, 0), {"pre": "Running"}, "wait"),
    ("old scaled to 0", (3, 3), (0, 0, 0), {"pre": OK}, "scale old 0"),
    ("old pods stopping", (0, 2), (0, 0, 0), {"pre": OK}, "wait"),
    ("mid hook starts", (0, 0), (0, 0, 0), {"pre": OK}, "create hook-mid"),
    ("mid hook runs", (0, 0), (0, 0, 0), {"pre": OK, "mid": "Pending"}, "wait"),
    ("first replica", (0, 0), (0, 0, 0), {"pre": OK, "mid": OK}, "scale new 1"),
    ("first replica not ready", (0, 0), (1, 1, 0), {"pre": OK, "mid": OK}, "wait"),
    ("then all", (0, 0), (1, 1, 1), {"pre": OK, "mid": OK}, "scale new 3"),
    ("all not available yet", (0, 0), (3, 3, 2), {"pre": OK, "mid": OK}, "wait"),
    ("post hook starts", (0, 0), (3, 3, 3), {"pre": OK, "mid": OK}, "create hook-post"),
    ("post hook runs", (0, 0), (3, 3, 3), {"pre": OK, "mid": OK, "post": "Running"}, "wait"),
    ("complete", (0, 0), (3, 3, 3), {"pre": OK, "mid": OK, "post": OK}, "complete"),
    (
        "complete after a failed post hook",
        (0, 0),
        (3, 3, 3),
        {"pre": OK, "mid": OK, "post": "Failed"},
        "complete",
    ),
]


@pytest.mark.parametrize(("old", "new", "hooks", "expected"), named(RECREATE_STORY))
def test_recreate_ordering_for_a_deployment_config(
    old: tuple[int, int], new: tuple[int, int, int], hooks: dict[str, str], expected: str
) -> None:
    step = recreate_pass(dc_recreate(), old, new, hooks)
    assert describe(step) == expected
    if expected != "complete":
        assert (step.phase, step.record, step.requeue_after) == (AppPhase.PROGRESSING, None, 1.0)


def test_recreate_of_a_deployment_scales_straight_to_full_size() -> None:
    app = dc_recreate(kind=AppKind.DEPLOYMENT)
    assert describe(recreate_pass(app, (0, 0), (0, 0, 0), {"pre": OK, "mid": OK})) == "scale new 3"


def test_recreate_of_a_single_replica_deployment_config_has_no_first_replica_step() -> None:
    app = dc_recreate(replicas=1)
    step = recreate_pass(app, (0, 0), (0, 0, 0), {"pre": OK, "mid": OK})
    assert describe(step) == "scale new 1"
    assert describe(recreate_pass(app, (0, 0), (1, 1, 1), {"pre": OK, "mid": OK})) == "create hook-post"


def test_recreate_without_a_mid_hook_goes_from_old_down_to_new_up() -> None:
    app = dc_recreate(mid=None)
    assert describe(recreate_pass(app, (0, 0), (0, 0, 0), {"pre": OK})) == "scale new 1"


def test_recreate_events_and_hook_pod() -> None:
    step = recreate_pass(dc_recreate(), (3, 3), (0, 0, 0), {}, now=T0 + 10)
    create = only_create_pod(step)
    assert (create.spec.name, create.spec.role, create.spec.revision, create.spec.attempt) == (
        f"{rs_name(V2)}-hook-pre",
        "hook-pre",
        2,
        1,
    )
    assert (create.spec.first_attempt_at, create.spec.owner_name, create.spec.owner_uid) == (
        T0 + 10,
        rs_name(V2),
        f"uid-{rs_name(V2)}",
    )
    assert create.spec.spec()["containers"][0]["command"] == ["/bin/pre"]
    assert step.events == (Event("HookStarted", "Running pre hook of revision 2 (attempt 1)"),)
    assert step.message == "revision 2: pre hook running"
    down = recreate_pass(dc_recreate(), (3, 3), (0, 0, 0), {"pre": OK}, now=T0 + 20)
    assert down.actions == (scaled(rs_name(V1), 0, 3, 3, T0 + 20),)
    assert down.events == (Event("ScalingReplicaSet", f"Scaled down replica set {rs_name(V1)} to 0"),)


def test_recreate_completion_records_every_hook() -> None:
    step = recreate_pass(dc_recreate(), (0, 0), (3, 3, 3), {"pre": OK, "mid": OK, "post": "Failed"})
    assert step.record is not None
    done = step.record.entry(2)
    assert done is not None
    name = rs_name(V2)
    assert sorted(done.hooks, key=lambda h: h.phase) == [
        HookResult("mid", f"{name}-hook-mid", "Succeeded"),
        HookResult("post", f"{name}-hook-post", "Ignored"),
        HookResult("pre", f"{name}-hook-pre", "Succeeded"),
    ]
    assert sorted(step.log_pods) == [f"{name}-hook-mid", f"{name}-hook-post", f"{name}-hook-pre"]
    assert step.events == (Event("RolloutComplete", "Revision 2 is complete"),)


def test_the_first_replica_that_never_gets_ready_fails_at_the_deadline() -> None:
    app = dc_recreate()
    old_rs = rs(V1, 1, 0, max_replicas=3, progressed_at=T0)
    new_rs = rs(V2, 2, 1, 1, 0, phase="Running", max_replicas=3, progressed_at=T0)
    pods = tuple(pod(new_rs, f"hook-{p}", OK, finished_at=T0) for p in ("pre", "mid"))
    ok = plan_pass(make_target(app), snap(old_rs, new_rs, pods=pods), T0 + 600)
    assert (ok.phase, ok.message) == (AppPhase.PROGRESSING, "waiting for the first replica")
    late = plan_pass(make_target(app), snap(old_rs, new_rs, pods=pods), T0 + 601)
    assert late.phase == AppPhase.FAILED
    assert late.message == "revision 2 failed: the first replica did not become ready in time"


def test_recreate_of_an_app_without_replicas_keeps_the_live_count() -> None:
    app = make_app(V2, replicas=None, strategy=RECREATE)
    # the old revision ran 4 pods (an autoscaler's count) and was scaled down by this rollout
    old_rs = rs(V1, 1, 0, desired=4, max_replicas=4)
    new_rs = rs(V2, 2, 0, phase="Running", desired=4, max_replicas=4)
    step = plan_pass(make_target(app), snap(old_rs, new_rs), T0)
    assert step.actions == (scaled(new_rs.name, 4, 4, 4, T0),)
