"""How an app compares with git (sync) and how well it runs (health), as ``gitdeploy status`` shows.

Sync: ``Synced`` (the cluster runs git's template, rollout complete), ``OutOfSync`` (a rollout is
due, running or failed), ``Pinned`` (a rollback holds an older revision while git is unchanged),
``InvalidManifest`` (git's manifest does not validate; the last good revision keeps running),
``SourceUnavailable`` (the config repo cannot be read), ``InvalidSettings`` (the head commit's
``gitdeploy.yaml``, or ``--path``, cannot be used: nothing of that commit applies), ``Orphaned``
(the app left git, its ReplicaSets remain), ``PruneHeld`` (the app left git and prune would delete
it, but its commit prunes more apps than ``pruneLimit``: a person must confirm), ``RecordDamaged``
(the app record cannot be read: the app is held as it runs).
Health: ``Healthy``, ``Progressing``, ``Degraded``, ``Suspended`` (paused),
``Missing`` (nothing of it runs).
"""

from __future__ import annotations

from enum import StrEnum

from gitdeploy.core.progress import ConditionStatus, ConditionType, DeploymentStatus
from gitdeploy.core.rollout import AppPhase, Step


class Sync(StrEnum):
    SYNCED = "Synced"
    OUT_OF_SYNC = "OutOfSync"
    PINNED = "Pinned"
    INVALID_MANIFEST = "InvalidManifest"
    SOURCE_UNAVAILABLE = "SourceUnavailable"
    ORPHANED = "Orphaned"
    RECORD_DAMAGED = "RecordDamaged"
    INVALID_SETTINGS = "InvalidSettings"
    PRUNE_HELD = "PruneHeld"


class Health(StrEnum):
    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    SUSPENDED = "Suspended"
    MISSING = "Missing"


def is_available(status: DeploymentStatus) -> bool:
    condition = status.condition(ConditionType.AVAILABLE)
    return condition is not None and condition.status == ConditionStatus.TRUE


def classify(step: Step, *, pinned: bool) -> tuple[Sync, Health]:
    """Sync and health after a pass.

    >>> from gitdeploy.core.progress import DeploymentStatus
    >>> classify(Step(AppPhase.PROGRESSING, "", 2, DeploymentStatus()), pinned=False)
    (<Sync.OUT_OF_SYNC: 'OutOfSync'>, <Health.PROGRESSING: 'Progressing'>)
    """
    if step.phase == AppPhase.COMPLETE:
        sync = Sync.PINNED if pinned else Sync.SYNCED
        return sync, Health.HEALTHY if is_available(step.status) else Health.DEGRADED
    if step.phase == AppPhase.PROGRESSING:
        return (Sync.PINNED if pinned else Sync.OUT_OF_SYNC), Health.PROGRESSING
    if step.phase == AppPhase.PAUSED:
        return Sync.OUT_OF_SYNC, Health.SUSPENDED
    if step.phase == AppPhase.FAILED:
        return (Sync.PINNED if pinned else Sync.OUT_OF_SYNC), Health.DEGRADED
    return Sync.OUT_OF_SYNC, Health.HEALTHY if is_available(step.status) else Health.DEGRADED
