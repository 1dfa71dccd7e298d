"""Sync and health as ``gitdeploy status`` shows them (pure): the verdict after a pass
(:func:`classify`), and a stored verdict checked against what the cluster shows now
(:func:`live_verdict`)."""

from __future__ import annotations

import pytest

from gitdeploy.core.rollout import AppPhase, Step
from gitdeploy.core.rollout.drift import Drift
from gitdeploy.core.rollout.templatedrift import TemplateDrift
from gitdeploy.core.scaling.progress import (
    ConditionStatus,
    ConditionType,
    DeploymentCondition,
    DeploymentStatus,
)
from gitdeploy.core.sync.syncstate import Health, Sync, classify, live_verdict
from tests.fixtures.rolloutpass import named


def status(available: ConditionStatus | None) -> DeploymentStatus:
    """A status whose Available condition is ``available`` (None: it has none)."""
    if available is None:
        return DeploymentStatus()
    condition = DeploymentCondition(
        ConditionType.AVAILABLE, available, "MinimumReplicasAvailable", "", 0.0, 0.0
    )
    return DeploymentStatus(conditions=(condition,))


UP, DOWN = ConditionStatus.TRUE, ConditionStatus.FALSE
CLASSIFY = [
    # (id, phase, Available, pinned, verdict)
    ("complete and available", AppPhase.COMPLETE, UP, False, (Sync.SYNCED, Health.HEALTHY)),
    ("complete, not available", AppPhase.COMPLETE, DOWN, False, (Sync.SYNCED, Health.DEGRADED)),
    ("complete, no condition yet", AppPhase.COMPLETE, None, False, (Sync.SYNCED, Health.DEGRADED)),
    ("complete at a pinned revision", AppPhase.COMPLETE, UP, True, (Sync.PINNED, Health.HEALTHY)),
    ("progressing", AppPhase.PROGRESSING, UP, False, (Sync.OUT_OF_SYNC, Health.PROGRESSING)),
    ("rolling back to a pin", AppPhase.PROGRESSING, UP, True, (Sync.PINNED, Health.PROGRESSING)),
    ("paused", AppPhase.PAUSED, UP, False, (Sync.OUT_OF_SYNC, Health.SUSPENDED)),
    (
        "paused while pinned: git is not what runs",
        AppPhase.PAUSED,
        UP,
        True,
        (Sync.OUT_OF_SYNC, Health.SUSPENDED),
    ),
    ("failed", AppPhase.FAILED, UP, False, (Sync.OUT_OF_SYNC, Health.DEGRADED)),
    ("a pinned revision failed", AppPhase.FAILED, UP, True, (Sync.PINNED, Health.DEGRADED)),
    (
        "waiting for a deploy, the old pods serve",
        AppPhase.WAITING,
        UP,
        False,
        (Sync.OUT_OF_SYNC, Health.HEALTHY),
    ),
    (
        "waiting for a deploy, nothing available",
        AppPhase.WAITING,
        DOWN,
        False,
        (Sync.OUT_OF_SYNC, Health.DEGRADED),
    ),
]


@pytest.mark.parametrize(("phase", "available", "pinned", "verdict"), named(CLASSIFY))
def test_classify(
    phase: AppPhase, available: ConditionStatus | None, pinned: bool, verdict: tuple[Sync, Health]
) -> None:
    assert classify(Step(phase, "", 2, status(available)), pinned=pinned) == verdict


UNDONE = "the next pass of `gitdeploy run` (or `gitdeploy sync`) undoes it"
SCALED = Drift("web-a", 1, 3)
EDITED = TemplateDrift("web-a", replacing=True)
LIVE = [
    # (id, stored (sync, health), drift, ready, desired, expected (sync, health, message))
    ("suspended stays", ("OutOfSync", "Suspended"), [SCALED], 0, 3, ("OutOfSync", "Suspended", "m")),
    ("missing stays", ("Synced", "Missing"), [], 0, 3, ("Synced", "Missing", "m")),
    (
        "pinned and scaled by hand, enough ready",
        ("Pinned", "Healthy"),
        [SCALED],
        3,
        3,
        (
            "OutOfSync",
            "Healthy",
            f"{SCALED.render()}: {UNDONE}; m",
        ),
    ),
    (
        "out of sync already, pods of an edited template replaced",
        ("OutOfSync", "Progressing"),
        [EDITED],
        1,
        3,
        (
            "OutOfSync",
            "Degraded",
            f"{EDITED.render()}: {UNDONE}; m",
        ),
    ),
    (
        "a stored Degraded stays until all are ready",
        ("Synced", "Degraded"),
        [],
        2,
        3,
        ("Synced", "Degraded", "m; 2 of 3 pods ready"),
    ),
    ("all ready again: Healthy", ("Pinned", "Progressing"), [], 3, 3, ("Pinned", "Healthy", "m")),
]


@pytest.mark.parametrize(("stored", "drift", "ready", "desired", "expected"), named(LIVE))
def test_live_verdict(
    stored: tuple[str, str],
    drift: list[Drift | TemplateDrift],
    ready: int,
    desired: int,
    expected: tuple[str, str, str],
) -> None:
    sync, health, message = live_verdict(*stored, "m", drift=drift, ready=ready, desired=desired)
    assert (sync, health, message) == expected


def test_a_live_verdict_of_pods_missing_joins_the_stored_message() -> None:
    assert live_verdict("Synced", "Healthy", "", drift=[], ready=1, desired=3) == (
        "Synced",
        "Progressing",
        "1 of 3 pods ready",
    )
