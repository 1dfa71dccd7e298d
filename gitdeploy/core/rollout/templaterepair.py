"""Undoing a hand edit of the pod template of an app's current ReplicaSet (pure; see
:mod:`gitdeploy.core.rollout.templatedrift` for how it is found and why the fix is what it is).

:func:`plan_template_repair` adds to a pass's :class:`~gitdeploy.core.rollout.Step` what the
executor does before the step's own actions: write the revision's recorded template back (at any
phase: a rollout must not scale up pods of an edited template), then, once the revision is
complete, replace the pods made from the edited template within the app's bounds, one pass at a
time, and say in one ``DriftCorrected`` event what was undone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from gitdeploy.core.models import PodTemplate
from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout import DEFAULT_REQUEUE_SECONDS, AppPhase, Event, Snapshot, Step, Target
from gitdeploy.core.rollout.context import bounds_of
from gitdeploy.core.rollout.drift import DRIFT_CORRECTED
from gitdeploy.core.rollout.templatedrift import (
    TemplateDrift,
    TemplatePod,
    find_template_drift,
    needs_digest,
    pods_to_replace,
    template_digest,
)
from gitdeploy.core.scaling.replicasets import split_replica_sets
from gitdeploy.core.scaling.rollingmath import min_available


@dataclass(frozen=True)
class TemplateRepair:
    """What to do to ReplicaSet ``name`` (of ``template_hash``) this pass.

    ``restore``: write this template back (git's recorded one, as ``create`` writes it), then record
    the digest of what the server stored. ``delete_pods``: pods made from an edited template.
    ``replacing``: the ``gitdeploy.io/replacing-pods`` mark after this pass (None: leave it).
    ``digest``: record this digest of the template as it is (a ReplicaSet without one)."""

    name: str
    template_hash: str
    restore: PodTemplate | None = None
    delete_pods: tuple[str, ...] = ()
    replacing: bool | None = None
    digest: str = ""


def current_replica_set(target: Target, snap: Snapshot) -> ObservedReplicaSet | None:
    """The ReplicaSet that runs the target's template, if there is one."""
    new, _ = split_replica_sets([rs.state for rs in snap.replica_sets], target.template_hash)
    return next((rs for rs in snap.replica_sets if new is not None and rs.name == new.name), None)


@dataclass(frozen=True)
class TemplateCheck:
    """A pass's look at the template of the app's current ReplicaSet, taken once per pass (the
    digest of a listed template is the costly part)."""

    rs: ObservedReplicaSet | None
    """The ReplicaSet that runs the target's template (None: none yet, or it has no template)."""
    drift: TemplateDrift | None = None

    @property
    def wants_pods(self) -> bool:
        """Whether the pass needs the pods of the current ReplicaSet listed (it is being repaired)."""
        return self.rs is not None and self.drift is not None


def check_template(target: Target, snap: Snapshot) -> TemplateCheck:
    """The current ReplicaSet and its template drift against the target's template."""
    rs = current_replica_set(target, snap)
    if rs is None or rs.template is None:
        return TemplateCheck(None)
    return TemplateCheck(rs, find_template_drift(rs, target.template))


def plan_template_repair(
    target: Target, check: TemplateCheck, step: Step, pods: Sequence[TemplatePod] | None
) -> tuple[Step, TemplateRepair | None]:
    """``step`` told of the repair (its event, a requeue while pods are replaced), and the repair."""
    rs, drift = check.rs, check.drift
    if rs is None or rs.template is None:
        return step, None
    if drift is None:
        if not needs_digest(rs):
            return step, None
        return step, TemplateRepair(rs.name, rs.state.template_hash, digest=template_digest(rs.template))
    if not drift.replacing:
        undone = f"restored the template of revision {rs.state.revision}; pods made from the edited one go"
        event = Event(DRIFT_CORRECTED, f"{drift.render()}; {undone}", warning=True)
        repair = TemplateRepair(rs.name, rs.state.template_hash, restore=target.template, replacing=True)
        return _told(step, event, "restoring its pod template, changed by hand"), repair
    if step.phase != AppPhase.COMPLETE or pods is None:
        return step, None
    replicas = rs.state.replicas
    floor = min_available(bounds_of(target.app, replicas))  # 0: Recreate and Custom stop all at once
    going, stale = pods_to_replace(
        pods, rs.template, ready=rs.state.ready, min_available=floor, replicas=replicas
    )
    if not stale:
        return step, TemplateRepair(rs.name, rs.state.template_hash, replacing=False)
    message = f"replacing {stale} pod(s) made from a pod template changed by hand"
    told = dataclasses.replace(
        step, message=f"{step.message}; {message}", requeue_after=DEFAULT_REQUEUE_SECONDS
    )
    return told, TemplateRepair(rs.name, rs.state.template_hash, delete_pods=going)


def _told(step: Step, event: Event, message: str) -> Step:
    requeue = step.requeue_after if step.requeue_after is not None else DEFAULT_REQUEUE_SECONDS
    return dataclasses.replace(
        step,
        events=(event, *step.events),
        message=f"{step.message}; {message}",
        requeue_after=min(requeue, DEFAULT_REQUEUE_SECONDS),
    )


__all__ = ["TemplateCheck", "TemplateRepair", "check_template", "current_replica_set", "plan_template_repair"]
