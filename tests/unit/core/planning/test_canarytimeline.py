"""A canary's timeline in `gitdeploy plan` (pure): the pods at each weight as the rollout sizes
them (both shares rounded up), the pauses and their durations, and a first revision's full size."""

from __future__ import annotations

import pytest

from gitdeploy.core.canarysteps import AnalysisRef, AnalysisStep, CanaryStep, Pause, SetWeight
from gitdeploy.core.planning.canarytimeline import abort_line, canary_timeline, pauses_summary


@pytest.mark.parametrize(
    ("steps", "replicas", "timeline"),
    [
        (
            (SetWeight(25),),
            4,
            ("1. setWeight 25 → canary 1, stable 3", "then full size → canary 4, stable 0"),
        ),
        # 10% of 5 pods: half a pod each way, both rounded up (6 pods for a while)
        (
            (SetWeight(10),),
            5,
            ("1. setWeight 10 → canary 1, stable 5", "then full size → canary 5, stable 0"),
        ),
        (
            (SetWeight(0), Pause(5400)),
            3,
            ("1. setWeight 0 → canary 0, stable 3", "2. pause 1h30m", "then full size → canary 3, stable 0"),
        ),
        (
            (AnalysisStep(AnalysisRef(("error-rate",))), Pause()),
            2,
            (
                "1. analysis error-rate",
                "2. pause until promoted (`gitdeploy rollout promote`)",
                "then full size → canary 2, stable 0",
            ),
        ),
        ((), 4, ("then full size → canary 4, stable 0",)),
    ],
)
def test_each_step_with_its_pods(
    steps: tuple[CanaryStep, ...], replicas: int, timeline: tuple[str, ...]
) -> None:
    assert canary_timeline(steps, replicas) == timeline


def test_a_first_revision_walks_no_steps() -> None:
    assert canary_timeline((SetWeight(25), Pause()), 4, first=True) == (
        "first revision: full size at once, no steps (as Argo Rollouts) → 4 pods",
    )


@pytest.mark.parametrize(
    ("steps", "summary"),
    [
        ((SetWeight(25), Pause(30), Pause(90)), "timed pauses 2m in all"),
        ((Pause(), Pause(), Pause(60)), "timed pauses 1m in all, 2 pauses until promoted"),
        ((SetWeight(50),), "no pauses"),
    ],
)
def test_pauses_in_all(steps: tuple[CanaryStep, ...], summary: str) -> None:
    assert pauses_summary(steps) == summary


@pytest.mark.parametrize(
    ("delay", "note"),
    [
        (None, ""),
        (30, "; abortScaleDownDelaySeconds 30 has no effect without a traffic router (as in Argo Rollouts)"),
        (0, "; abortScaleDownDelaySeconds 0 has no effect without a traffic router (as in Argo Rollouts)"),
    ],
)
def test_an_abort_goes_back_to_the_stable_at_once_and_names_a_delay_written(
    delay: int | None, note: str
) -> None:
    # Argo Rollouts' basic canary: abortScaleDownDelaySeconds is "N/A" (rolling update back to
    # the stable); gitdeploy says so rather than dropping the field silently
    at_once = "on abort: back to the stable at once, within maxSurge and maxUnavailable"
    assert abort_line(delay) == at_once + note
