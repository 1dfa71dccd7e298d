"""The writes of whole rollouts, step by step: one write per ReplicaSet per step, creation included.

Each case starts from a Complete old revision, plans a step with :func:`plan_pass`, applies its
writes one by one to a model of the cluster (a scale creates or removes pods at once; new pods
are not available yet), checks the rollout bounds after every write, then lets every pod become
available before the next step. The tables give each step's writes in order; the step that
scales the last old pods away while every new pod is available also completes the revision.
"""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import App, AppKind, RollingParams, Strategy, StrategyType
from gitdeploy.core.observed import PHASE_ANNOTATION, ObservedReplicaSet
from gitdeploy.core.rollout import AppPhase, CreateReplicaSet, PatchReplicaSet, Snapshot, Step, plan_pass
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from gitdeploy.core.scaling.rollingmath import RolloutBounds, max_surge, max_unavailable
from tests.fixtures.rolloutpass import RECORD_UID, T0, V1, V2, entry, make_app, make_target, rs


def rolling(surge: int | str, unavailable: int | str, kind: AppKind = AppKind.DEPLOYMENT) -> Strategy:
    strategy_type = StrategyType.ROLLING if kind is AppKind.DEPLOYMENT_CONFIG else StrategyType.ROLLING_UPDATE
    return Strategy(strategy_type, rolling=RollingParams(max_surge=surge, max_unavailable=unavailable))


def with_pods(observed: ObservedReplicaSet, replicas: int, available: int) -> ObservedReplicaSet:
    state = dataclasses.replace(
        observed.state, replicas=replicas, current=replicas, ready=available, available=available
    )
    return dataclasses.replace(observed, state=state)


def created(action: CreateReplicaSet, now: float) -> ObservedReplicaSet:
    spec = action.spec
    revision = int(dict(spec.annotations)["gitdeploy.io/revision"])
    state = ReplicaSetState(spec.name, spec.template_hash, revision, now, spec.replicas, spec.replicas)
    return ObservedReplicaSet(
        "demo", "web", state, tuple(sorted(spec.annotations)), f"uid-{spec.name}", True, spec.template
    )


def patched(observed: ObservedReplicaSet, action: PatchReplicaSet) -> ObservedReplicaSet:
    annotations = tuple(sorted((dict(observed.annotations) | dict(action.annotations)).items()))
    observed = dataclasses.replace(observed, annotations=annotations)
    if action.replicas is None:
        return observed
    # the ReplicaSet controller: new pods are not available yet, removed pods were available
    return with_pods(observed, action.replicas, min(observed.state.available, action.replicas))


def word(action: CreateReplicaSet | PatchReplicaSet, old_name: str) -> str:
    if isinstance(action, CreateReplicaSet):
        return f"create new→{action.spec.replicas}"
    who = "old" if action.name == old_name else "new"
    if action.replicas is None:
        return f"{who} {dict(action.annotations).get(PHASE_ANNOTATION, 'annotated')}"
    phase = dict(action.annotations).get(PHASE_ANNOTATION)
    return f"{who}→{action.replicas}" + (f" {phase}" if phase else "")


def roll_out(app: App, replicas: int) -> list[list[str]]:
    """Steps from a Complete old revision of ``replicas`` to a Complete new one: each step's writes."""
    limit = replicas + max_surge(RolloutBounds(app.strategy.type.value, replicas, *bounds_of(app)))
    floor = replicas - max_unavailable(RolloutBounds(app.strategy.type.value, replicas, *bounds_of(app)))
    old = rs(V1, 1, replicas, desired=replicas, max_replicas=limit)
    cluster = {old.name: old}
    record = AppRecord(revisions=(entry(V1, 1),))
    target, now = make_target(app), T0
    steps: list[list[str]] = []
    for _ in range(50):
        step: Step = plan_pass(target, Snapshot(tuple(cluster.values()), (), record, RECORD_UID), now)
        record = step.record or record
        writes = []
        for action in step.actions:
            assert isinstance(action, CreateReplicaSet | PatchReplicaSet)
            if isinstance(action, CreateReplicaSet):
                cluster[action.spec.name] = created(action, now)
            else:
                cluster[action.name] = patched(cluster[action.name], action)
            states = [o.state for o in cluster.values()]
            assert sum(s.replicas for s in states) <= limit
            assert sum(s.available for s in states) >= floor
            writes.append(word(action, old.name))
        if step.phase == AppPhase.COMPLETE:
            steps.append(writes)
            return steps
        steps.append(writes)
        cluster = {name: with_pods(o, o.state.replicas, o.state.replicas) for name, o in cluster.items()}
        now += 1.0
    raise AssertionError("the rollout did not complete")


def bounds_of(app: App) -> tuple[int | str, int | str]:
    assert app.strategy.rolling is not None
    return app.strategy.rolling.max_surge, app.strategy.rolling.max_unavailable


CASES = [
    pytest.param(
        8,
        rolling("25%", "25%"),
        [["old→6", "create new→4"], ["old→2", "new→8"], ["old→0", "new Complete"]],
        id="8 replicas 25%/25%",
    ),
    pytest.param(
        100,
        rolling("25%", "25%"),
        [["old→75", "create new→50"], ["old→25", "new→100"], ["old→0", "new Complete"]],
        id="100 replicas 25%/25%",
    ),
    pytest.param(
        10,
        rolling(0, 1),
        [["old→9", "create new→1"]]
        + [[f"old→{9 - n}", f"new→{n + 1}"] for n in range(1, 10)]
        + [["new Complete"]],
        id="10 replicas 0/1",
    ),
    pytest.param(
        3,
        rolling(1, 0),
        [["create new→1"], ["old→2", "new→2"], ["old→1", "new→3"], ["old→0", "new Complete"]],
        id="3 replicas 1/0",
    ),
    pytest.param(
        8,
        rolling("25%", "25%", AppKind.DEPLOYMENT_CONFIG),
        # a DeploymentConfig's step is one pass (besides the one that creates its ReplicaSet)
        [["create new→2", "old→6"], ["new→4"], ["old→2"], ["new→8"], ["old→0", "new Complete"]],
        id="DeploymentConfig 8 replicas 25%/25%: one pass per step",
    ),
]


@pytest.mark.parametrize(("replicas", "strategy", "expected"), CASES)
def test_each_step_writes_each_replica_set_once_creation_included(
    replicas: int, strategy: Strategy, expected: list[list[str]]
) -> None:
    kind = AppKind.DEPLOYMENT_CONFIG if strategy.type is StrategyType.ROLLING else AppKind.DEPLOYMENT
    assert roll_out(make_app(V2, replicas=replicas, strategy=strategy, kind=kind), replicas) == expected


def test_the_created_replica_set_carries_the_pods_and_marks_of_its_step() -> None:
    app = make_app(V2, replicas=8, strategy=rolling("25%", "25%"))
    old = rs(V1, 1, 8, desired=8, max_replicas=10)
    step = plan_pass(
        make_target(app), Snapshot((old,), (), AppRecord(revisions=(entry(V1, 1),)), RECORD_UID), T0
    )
    scale_down, create = step.actions
    assert isinstance(scale_down, PatchReplicaSet) and isinstance(create, CreateReplicaSet)
    marks = dict(create.spec.annotations)
    assert (
        create.spec.replicas,
        marks["gitdeploy.io/desired-replicas"],
        marks["gitdeploy.io/max-replicas"],
    ) == (
        4,
        "8",
        "10",
    )
    assert (marks[PHASE_ANNOTATION], marks["gitdeploy.io/revision"]) == ("Running", "2")
    assert [e.message for e in step.events if e.reason == "ScalingReplicaSet"] == [
        f"Scaled down replica set {old.name} to 6; Scaled up replica set {create.spec.name} to 4"
    ]


def test_a_replicas_change_mid_rollout_scales_each_replica_set_once() -> None:
    # 10 replicas, maxSurge 3, maxUnavailable 2, mid-rollout with every pod available; scaled to 15:
    # proportional scaling (old 8→11, new 5→7), then the passes it allows, one write each
    strategy = rolling(3, 2)
    old = rs(V1, 1, 8, desired=10, max_replicas=13)
    new = rs(V2, 2, 5, phase="Running", desired=10, max_replicas=13)
    app = make_app(V2, replicas=15, strategy=strategy)
    step = plan_pass(
        make_target(app), Snapshot((old, new), (), AppRecord(revisions=(entry(V1, 1),)), RECORD_UID), T0
    )
    assert [word(a, old.name) for a in step.actions if isinstance(a, PatchReplicaSet)] == ["old→8", "new→10"]
