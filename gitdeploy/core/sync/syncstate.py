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
Both are ``Unknown`` until the loop has passed over the app once.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from gitdeploy.core.rollout import AppPhase, Step
from gitdeploy.core.rollout.drift import Drift
from gitdeploy.core.rollout.templatedrift import TemplateDrift
from gitdeploy.core.scaling.progress import ConditionStatus, ConditionType, DeploymentStatus


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
    UNKNOWN = "Unknown"
    """No verdict stored yet (the loop has not passed over the app), or, in the loop's report, its
    last pass failed before it could compare the app with git."""


class Health(StrEnum):
    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    SUSPENDED = "Suspended"
    MISSING = "Missing"
    UNKNOWN = "Unknown"
    """No verdict stored yet: the loop has not passed over the app."""


def is_available(status: DeploymentStatus) -> bool:
    condition = status.condition(ConditionType.AVAILABLE)
    return condition is not None and condition.status == ConditionStatus.TRUE


def classify(step: Step, *, pinned: bool) -> tuple[Sync, Health]:
    """Sync and health after a pass.

    >>> from gitdeploy.core.scaling.progress import DeploymentStatus
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


def live_verdict(
    sync: str,
    health: str,
    message: str,
    *,
    drift: Sequence[Drift | TemplateDrift],
    ready: int,
    desired: int,
) -> tuple[str, str, str]:
    """The loop's stored verdict on an app whose current revision is Complete, checked against
    what the cluster shows now: a stored verdict never contradicts READY.

    * Drift (a ReplicaSet scaled by hand, :func:`~gitdeploy.core.rollout.drift.find_drift`): the cluster
      no longer runs what git says, so ``Synced``/``Pinned`` become ``OutOfSync``; with fewer pods
      ready than desired the app is ``Degraded``, since nothing but gitdeploy scales it back.
    * No drift, fewer pods ready than desired: ``Progressing``, as Argo CD calls a Deployment whose
      available replicas are below its updated ones: the ReplicaSet controller is bringing pods
      back (a stored ``Degraded`` stays). All ready: ``Healthy``.

    ``Suspended`` and ``Missing`` stay as they are.

    >>> from gitdeploy.core.rollout.drift import Drift
    >>> hand = [Drift("web-a", 0, 2)]
    >>> sync, health, message = live_verdict("Synced", "Healthy", "ok", drift=hand, ready=0, desired=2)
    >>> sync, health, message.startswith("web-a was scaled to 0 by hand (gitdeploy set 2): the next")
    ('OutOfSync', 'Degraded', True)
    >>> live_verdict("Synced", "Healthy", "revision 1 complete", drift=[], ready=1, desired=2)
    ('Synced', 'Progressing', 'revision 1 complete; 1 of 2 pods ready')
    >>> live_verdict("Synced", "Degraded", "revision 1 complete", drift=[], ready=2, desired=2)
    ('Synced', 'Healthy', 'revision 1 complete')
    """
    if health not in (Health.HEALTHY, Health.PROGRESSING, Health.DEGRADED):
        return sync, health, message
    if drift:
        if sync in (Sync.SYNCED, Sync.PINNED):
            sync = Sync.OUT_OF_SYNC.value
        if ready < desired:
            health = Health.DEGRADED.value
        undone = "the next pass of `gitdeploy run` (or `gitdeploy sync`) undoes it"
        return sync, health, _joined(f"{'; '.join(d.render() for d in drift)}: {undone}", message)
    if ready >= desired:
        return sync, Health.HEALTHY.value, message
    if health != Health.DEGRADED:
        health = Health.PROGRESSING.value
    return sync, health, _joined(message, f"{ready} of {desired} pods ready")


def _joined(*parts: str) -> str:
    return "; ".join(part for part in parts if part)
