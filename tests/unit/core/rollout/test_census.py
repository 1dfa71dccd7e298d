"""When a pass counts an app's pods (:func:`wants_pod_census`, :func:`at_rest`): a Recreate app,
or a rolling one with ``TerminationComplete``, while anything may still create a pod; never
once it is at rest on git's template, where counting would list every pod of its namespace for
nothing."""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.models import PodReplacementPolicy
from gitdeploy.core.rollout import wants_pod_census
from gitdeploy.core.rollout.inputs import at_rest
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from tests.fixtures.rolloutpass import RECREATE, ROLLING, V1, V2, make_app, rs

RollingComplete = dataclasses.replace(
    make_app(V2, strategy=ROLLING), pod_replacement_policy=PodReplacementPolicy.TERMINATION_COMPLETE
)


def state(
    image: str, revision: int, replicas: int, current: int | None = None, available: int | None = None
) -> ReplicaSetState:
    return rs(image, revision, replicas, current, available).state


# (what the cluster holds, app's replicas in git, at rest) for an app whose git template is V2
CASES: list[tuple[str, list[ReplicaSetState], int | None, bool]] = [
    ("git's template, every pod available, old at 0", [state(V1, 1, 0), state(V2, 2, 3)], 3, True),
    ("git's template alone", [state(V2, 2, 3)], 3, True),
    ("git leaves the replicas to an autoscaler", [state(V2, 2, 5)], None, True),
    ("no ReplicaSet yet", [], 3, False),
    ("a new commit: only the old template runs", [state(V1, 1, 3)], 3, False),
    (
        "the old ReplicaSet asked for 0, its pods not gone yet",
        [state(V1, 1, 0, 2), state(V2, 2, 3)],
        3,
        False,
    ),
    ("the old ReplicaSet still asked for pods", [state(V1, 1, 1), state(V2, 2, 3)], 3, False),
    ("the new ReplicaSet short of git's replicas", [state(V1, 1, 0), state(V2, 2, 2)], 3, False),
    ("the new ReplicaSet's pods not all there", [state(V2, 2, 3, 2)], 3, False),
    ("the new ReplicaSet's pods not all available", [state(V2, 2, 3, 3, 2)], 3, False),
    ("scaled by hand below git's replicas", [state(V2, 2, 1)], 3, False),
    ("git's replicas changed", [state(V2, 2, 3)], 5, False),
    ("scaled to 0 by git, pods still going", [state(V2, 2, 0, 1)], 0, False),
    ("scaled to 0 by git, every pod gone", [state(V2, 2, 0)], 0, False),
]


@pytest.mark.parametrize(("held", "replicas", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_at_rest(held: list[ReplicaSetState], replicas: int | None, expected: bool) -> None:
    app = make_app(V2, strategy=RECREATE, replicas=replicas)
    assert at_rest(app, held) is expected


@pytest.mark.parametrize(("held", "replicas", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_recreate_or_termination_complete_app_is_counted_unless_at_rest(
    held: list[ReplicaSetState], replicas: int | None, expected: bool
) -> None:
    for app in (
        make_app(V2, strategy=RECREATE, replicas=replicas),
        dataclasses.replace(RollingComplete, replicas=replicas),
    ):
        assert wants_pod_census(app, held) is not expected
        assert wants_pod_census(app)  # nothing listed yet: counted


def test_a_rolling_app_that_lets_pods_overlap_is_never_counted() -> None:
    app = make_app(V2, strategy=ROLLING)
    assert not wants_pod_census(app)
    assert not wants_pod_census(app, [state(V1, 1, 0, 2), state(V2, 2, 3)])
