"""Scaling without a new revision: a replicas-only change, a stuck rollout scaled proportionally,
and the effective replica count of an app.

Each test builds what the cluster would hold (ReplicaSets with gitdeploy's annotations, hook and
deployer pods, the app record) with tests/fixtures/rolloutpass.py, calls :func:`plan_pass` once and
checks the exact step.
"""

from __future__ import annotations

import pytest

from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import RollingParams, Strategy, StrategyType
from gitdeploy.core.rollout import AppPhase, CreateReplicaSet, Event, effective_replicas, plan_pass
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from tests.fixtures.rolloutpass import (
    T0,
    V1,
    V2,
    entry,
    make_app,
    make_target,
    rs,
    scaled,
    scaling_events,
    snap,
)

# -- scaling -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replicas", "to", "max_replicas", "direction"),
    [(5, 5, 7, "up"), (2, 2, 3, "down"), (10, 10, 13, "up"), (0, 0, 0, "down")],
)
def test_a_replicas_only_change_scales_without_a_new_revision(
    replicas: int, to: int, max_replicas: int, direction: str
) -> None:
    current = rs(V1, 1, 3)
    record = AppRecord(revisions=(entry(V1, 1),))
    step = plan_pass(make_target(make_app(V1, replicas=replicas)), snap(current, record=record), T0 + 5)
    assert step.actions == (scaled(current.name, to, replicas, max_replicas, T0 + 5),)
    assert step.events == (
        Event("ScalingReplicaSet", f"Scaled {direction} replica set {current.name} to {to}"),
    )
    assert (step.phase, step.revision, step.record, step.requeue_after) == (AppPhase.COMPLETE, 1, None, 1.0)


def test_scaling_a_stuck_rollout_from_10_to_15_grows_old_to_11_and_new_to_7() -> None:
    # 10 replicas, maxSurge 3, maxUnavailable 2: old 8, new 5 (none available); scaled to 15
    strategy = Strategy(StrategyType.ROLLING_UPDATE, rolling=RollingParams(max_surge=3, max_unavailable=2))
    old = rs(V1, 1, 8, desired=10, max_replicas=13)
    new = rs(V2, 2, 5, 5, 0, phase="Running", desired=10, max_replicas=13)
    app = make_app(V2, replicas=15, strategy=strategy)
    now = T0 + 20
    step = plan_pass(make_target(app), snap(old, new, record=AppRecord(revisions=(entry(V1, 1),))), now)
    assert step.actions == (scaled(old.name, 11, 15, 18, now), scaled(new.name, 7, 15, 18, now))
    assert scaling_events(step) == [
        f"Scaled up replica set {old.name} to 11; Scaled up replica set {new.name} to 7",
    ]
    assert (step.phase, step.revision, step.record) == (AppPhase.PROGRESSING, 2, None)
    assert not any(isinstance(a, CreateReplicaSet) for a in step.actions)


@pytest.mark.parametrize(
    ("declared", "states", "expected"),
    [
        (4, [], 4),
        (0, [ReplicaSetState("a", "a", 1, 1.0, replicas=5)], 0),
        (None, [], 1),
        (None, [ReplicaSetState("a", "a", 1, 1.0, replicas=5, desired_replicas_annotation=3)], 5),
        (None, [ReplicaSetState("a", "a", 1, 1.0, replicas=0, desired_replicas_annotation=3)], 3),
        (
            None,
            [
                ReplicaSetState("a", "a", 1, 1.0, replicas=3, desired_replicas_annotation=4),
                ReplicaSetState("b", "b", 2, 2.0, replicas=2, desired_replicas_annotation=6),
            ],
            6,
        ),
        (
            None,
            [ReplicaSetState("a", "a", 1, 1.0, replicas=3), ReplicaSetState("b", "b", 2, 2.0, replicas=2)],
            5,
        ),
    ],
    ids=[
        "declared",
        "declared zero",
        "nothing runs",
        "one active: its size",
        "none active: the size it was last scaled for",
        "several active: largest annotation",
        "several active, no annotation: sum",
    ],
)
def test_effective_replicas(declared: int | None, states: list[ReplicaSetState], expected: int) -> None:
    new = states[-1] if states else None
    assert effective_replicas(declared, new, states[:-1]) == expected
