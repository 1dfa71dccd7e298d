"""The app controls that ``gitdeploy deploy``, ``rollback`` and ``rollout promote|abort`` offer,
as functions the CLI and the dashboard both call (one code path, two front ends).

Each returns one line saying what was done; a refusal is a :class:`PermanentError` (nothing to
cancel, no canary in progress, no such revision). :func:`perform` also records a core/v1 Event on
the app's record naming who asked, as ``kubectl describe`` and the dashboard's app page show it.
"""

from __future__ import annotations

import logging
from enum import StrEnum

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller import canary
from gitdeploy.controller import rollback as control
from gitdeploy.core.history import control as decide
from gitdeploy.core.history.control import SkippedRollback
from gitdeploy.core.models import AppKey
from gitdeploy.core.observed import record_name
from gitdeploy.errors import GitdeployError, PermanentError

log = logging.getLogger(__name__)


class Action(StrEnum):
    ROLLBACK = "rollback"
    RETRY = "retry"
    CANCEL = "cancel"
    ENABLE_TRIGGERS = "enable-triggers"
    PROMOTE = "promote"
    ABORT = "abort"


EVENT_REASONS = {
    Action.ROLLBACK: "RollbackRequested",
    Action.RETRY: "RetryRequested",
    Action.CANCEL: "CancelRequested",
    Action.ENABLE_TRIGGERS: "TriggersEnableRequested",
    Action.PROMOTE: "PromoteRequested",
    Action.ABORT: "AbortRequested",
}


def deploy_control(cluster: Cluster, key: AppKey, action: str, *, by: str, now: float) -> str:
    """``gitdeploy deploy --latest|--enable-triggers|--retry|--cancel``: what was done, in one line."""
    state = control.read_app(cluster, key)
    record = state.record
    if action == "latest":
        updated = decide.request_latest(record, in_progress=state.in_progress, app=str(key))
        note = "git's manifest rolls out on the next pass"
        if record.pin is not None:
            note += f" (released the pin to revision {record.pin.revision})"
    elif action == Action.ENABLE_TRIGGERS:
        if not record.triggers_suspended:
            return "image triggers are not suspended; nothing to do"
        updated = decide.enable_triggers(record)
        note = "image triggers resumed: the newest images of its streams roll out with git's manifest"
        if record.pin is not None:
            note += f" (released the pin to revision {record.pin.revision})"
    elif action == Action.RETRY:
        retried = control.retry(cluster, state, by=by, now=now)
        return f"revision {retried.revision} runs again ({retried.message})"
    elif action == Action.CANCEL:
        current = state.current_entry
        if current is None:
            raise PermanentError(
                f"{key} has not been deployed yet",
                hint="nothing to cancel; `gitdeploy status` shows what runs, `gitdeploy sync` deploys it",
            )
        updated = decide.cancel(record, current, by=by, now=now, app=str(key))
        note = f"revision {current.revision} cancelled; the previous revision comes back on the next pass"
    else:
        raise ValueError(f"unknown deploy action {action!r}")
    control.write_record(cluster, state, updated)
    return note


def rollback_to(
    cluster: Cluster, key: AppKey, revision: int | None, *, message: str, by: str, now: float
) -> str:
    """``gitdeploy rollback APP --to-revision N -m MESSAGE`` (without --repo): pin the app to it."""
    try:
        plan = control.plan_rollback(
            cluster, key, to_revision=revision, to_commit=None, message=message,
            by=by, now=now, load_app=None, restore=(),
        )  # fmt: skip
    except SkippedRollback as skipped:
        return str(skipped)
    control.write_record(cluster, plan.state, plan.record)
    return (
        f"rolled back: revision {plan.next_revision} will run "
        f"revision {plan.choice.target.revision}'s template"
    )


def perform(
    cluster: Cluster,
    key: AppKey,
    action: Action,
    *,
    by: str,
    now: float,
    revision: int | None = None,
    message: str = "",
) -> str:
    """Carry ``action`` out as its CLI command does, then record an Event naming ``by``."""
    if action is Action.ROLLBACK:
        done = rollback_to(cluster, key, revision, message=message, by=by, now=now)
    elif action is Action.PROMOTE:
        request = canary.promote(cluster, key, full=False, by=by)
        done = f"revision {request.revision}'s canary promoted past step {request.state.step + 1}"
    elif action is Action.ABORT:
        request = canary.abort(cluster, key, by=by)
        done = f"aborting revision {request.revision}'s canary at step {request.state.step + 1}"
    else:
        done = deploy_control(cluster, key, action, by=by, now=now)
    record_action(cluster, key, action, f"{action} by {by}: {done}", now=now)
    return done


def record_action(cluster: Cluster, key: AppKey, action: Action, message: str, *, now: float) -> None:
    """An Event on the app's record (the object the loop records its events on)."""
    try:
        uid = control.read_app(cluster, key).stored.uid
        involved = ("ConfigMap", record_name(key.name), uid)
        cluster.record_event(key.namespace, involved, EVENT_REASONS[action], message, now=now)
    except GitdeployError as problem:  # the action is done; an event is never worth failing it
        log.warning("[%s] could not record the %s event: %s", key, action, problem)
