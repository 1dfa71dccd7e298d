"""``gitdeploy rollback`` and ``gitdeploy deploy``: read an app's record and ReplicaSets, decide
(:mod:`gitdeploy.core.history.control`), write the record back. The loop carries the change out.

Writes use the record's resourceVersion, so a rollback that races with the loop's own write fails
with a conflict instead of losing either (the command says to try again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.core.canarystate import CANARY_RESTART
from gitdeploy.core.hashing import template_hash
from gitdeploy.core.history.control import RollbackChoice, apply_rollback, choose_rollback
from gitdeploy.core.history.control import retry as decide_retry
from gitdeploy.core.history.records import AppRecord, Outcome, RevisionEntry, load_record
from gitdeploy.core.history.recovery import revision_entry_of
from gitdeploy.core.imagetriggers import comparable, replace_images
from gitdeploy.core.models import App, AppKey, PodTemplate
from gitdeploy.core.observed import (
    PHASE_ANNOTATION,
    PROGRESSED_AT_ANNOTATION,
    STARTED_AT_ANNOTATION,
    ObservedReplicaSet,
    PodPhase,
    StoredRecord,
    newest_replica_set,
)
from gitdeploy.core.rollout.templatedrift import edited_by_hand
from gitdeploy.core.timestamps import format_timestamp
from gitdeploy.errors import ConflictError, NotFoundError, PermanentError
from gitdeploy.source.repo import ConfigRepo

LoadApp = Callable[[AppKey, RevisionEntry], App]
"""Reads the app as a revision's commit in git declared it."""


@dataclass(frozen=True)
class AppState:
    key: AppKey
    record: AppRecord
    stored: StoredRecord
    replica_sets: tuple[ObservedReplicaSet, ...]

    @property
    def current(self) -> ObservedReplicaSet | None:
        return newest_replica_set(self.replica_sets)

    @property
    def current_revision(self) -> int:
        current = self.current
        return current.state.revision if current is not None else self.record.latest_revision

    @property
    def current_entry(self) -> RevisionEntry | None:
        """The current revision's log entry; built from its ReplicaSet while it is in flight."""
        entry = self.record.entry(self.current_revision)
        current = self.current
        if entry is None and current is not None:
            phase = self.record.outcome_of(current.state.revision, current.annotation(PHASE_ANNOTATION))
            entry = revision_entry_of(current, phase)
        return entry

    @property
    def in_progress(self) -> bool:
        entry = self.current_entry
        return entry is not None and entry.outcome is Outcome.RUNNING

    def template_of(self, entry: RevisionEntry) -> PodTemplate | None:
        """The revision's template from its ReplicaSet; None when that is gone or its template was
        changed by hand (then it is rebuilt from git: the revision's commit and images)."""
        found = self.replica_set_of(entry)
        return found.template if found is not None and not edited_by_hand(found) else None

    def replica_set_of(self, entry: RevisionEntry) -> ObservedReplicaSet | None:
        return next((rs for rs in self.replica_sets if rs.state.template_hash == entry.template_hash), None)


def read_app(cluster: Cluster, key: AppKey) -> AppState:
    stored = cluster.read_app_record(key.namespace, key.name)
    if stored is None:
        raise NotFoundError(
            f"no app {key} in the cluster",
            hint="check the name and namespace (-n); `gitdeploy status` lists the apps",
        )
    replica_sets = tuple(cluster.list_replica_sets(key.namespace, key.name))
    return AppState(key, load_record(key.namespace, key.name, stored.payload), stored, replica_sets)


def write_record(cluster: Cluster, state: AppState, record: AppRecord) -> None:
    key = state.key
    cluster.write_app_record(key.namespace, key.name, record.to_json(), state.stored.resource_version)


@dataclass(frozen=True)
class RollbackPlan:
    """What a rollback of one app will do; :func:`apply` writes it."""

    state: AppState
    choice: RollbackChoice
    record: AppRecord
    """The record to write: the pin and the suspended triggers."""
    template: PodTemplate
    current_template: PodTemplate | None
    rebuilt: bool
    """The target's ReplicaSet is gone: its template was rebuilt from git at its commit."""
    restored: App | None = None
    """The target's app from git, when ``--change-*`` flags restore some of its settings."""

    @property
    def next_revision(self) -> int:
        return max(self.state.current_revision, self.state.record.latest_revision) + 1


def choose(
    cluster: Cluster, key: AppKey, *, to_revision: int | None, to_commit: str | None
) -> tuple[AppState, RollbackChoice]:
    """The app's state and the revision to go back to; refuses a paused app."""
    state = read_app(cluster, key)
    status = state.record.status
    if status is not None and status.paused:
        raise PermanentError(
            f"{key} is paused: a rollback would not progress",
            hint="resume it first (remove `paused: true` from its manifest and push)",
        )
    choice = choose_rollback(
        state.record, state.current_entry, to_revision=to_revision, to_commit=to_commit, app=str(key)
    )
    return state, choice


def plan_rollback(
    cluster: Cluster,
    key: AppKey,
    *,
    to_revision: int | None,
    to_commit: str | None,
    message: str,
    by: str,
    now: float,
    load_app: LoadApp | None,
    restore: tuple[str, ...] = (),
) -> RollbackPlan:
    """``restore`` names the settings groups (:mod:`gitdeploy.controller.restore`) that
    roll back with the template; they are read from git, so they need ``load_app``."""
    state, choice = choose(cluster, key, to_revision=to_revision, to_commit=to_commit)
    target = choice.target
    status = state.record.status
    current = state.current
    current_template = current.template if current is not None else None
    template = state.template_of(target)
    rebuilt = template is None
    if load_app is None and (rebuilt or restore):
        gone = state.replica_set_of(target) is None
        why = (
            f"revision {target.revision}'s ReplicaSet was removed by the history limit"
            if rebuilt and gone
            else f"the pod template of revision {target.revision}'s ReplicaSet was changed by hand"
            if rebuilt
            else f"restoring {' and '.join(restore)} settings needs revision {target.revision}'s manifest"
        )
        raise PermanentError(
            why, hint=f"pass --repo so gitdeploy can read it from git at commit {target.commit.short}"
        )
    from_git = load_app(key, target) if load_app is not None and (rebuilt or restore) else None
    if template is None:
        assert from_git is not None
        template = replace_images(comparable(from_git.template), dict(target.images))
    record = apply_rollback(
        state.record,
        choice,
        manifest_digest=status.manifest_digest if status is not None else "",
        by=by,
        message=message,
        now=now,
        template=template.canonical_json if rebuilt else "",
        template_hash=template_hash(template) if rebuilt else "",
        restore=restore,
        manifest=from_git.manifest_json if from_git is not None and restore else "",
    )
    restored = from_git if restore else None
    return RollbackPlan(state, choice, record, template, current_template, rebuilt, restored)


def retry(cluster: Cluster, state: AppState, *, by: str, now: float) -> RevisionEntry:
    """Run the last Failed revision again under its own number; returns its entry as written.

    Everything that makes the planner see it as failed is reset, in an order that lets a loop
    pass in between record no second failure: while the record still says Failed the planner
    writes nothing for the revision, so the failed hook and deployer pods go first (the hooks run
    again), then the ReplicaSet's phase and progress marks (its deadline starts now; a running
    loop's in-memory status yields to these newer marks), and last the record, which makes the
    revision Running again. A ReplicaSet or a record changed since they were read fails its
    write with a conflict, and what comes after it is not written.
    """
    key, current = state.key, state.current
    entry = state.current_entry
    if entry is None or current is None:
        raise PermanentError(
            f"{key} has not been deployed yet", hint="nothing to retry; `gitdeploy sync` deploys it first"
        )
    record = decide_retry(state.record, entry, by=by, now=now, app=str(key))
    prefix = f"{current.name}-"
    for pod in cluster.list_app_pods(key.namespace, key.name):
        if pod.name.startswith(prefix) and pod.revision == entry.revision and pod.phase == PodPhase.FAILED:
            cluster.delete_pod(key.namespace, pod.name)
    stamp = format_timestamp(now)
    try:
        cluster.scale_replica_set(
            key.namespace,
            current.name,
            None,
            {
                PHASE_ANNOTATION: Outcome.RUNNING.value,
                STARTED_AT_ANNOTATION: stamp,
                PROGRESSED_AT_ANNOTATION: stamp,
                # a canary walks its steps again from the first, no longer aborted
                **{name: empty for name, empty in CANARY_RESTART.items() if current.annotation(name)},
            },
            version=current.resource_version,
        )
    except ConflictError as problem:  # changed since it was read: by a replica's step, or a hand
        raise ConflictError(
            f"{key}: revision {entry.revision} was not retried: its ReplicaSet {current.name} changed "
            f"since it was read ({problem.message})",
            hint=f"run `gitdeploy deploy {key} --retry` again: it reads the ReplicaSet anew",
        ) from problem
    write_record(cluster, state, record)
    retried = record.entry(entry.revision)
    assert retried is not None
    return retried


def git_app_loader(repo: ConfigRepo) -> LoadApp:
    """Read an app from the manifest at a revision's commit (to rebuild its template with the
    images it ran, or to restore its settings)."""
    reader = DesiredStateReader(repo)

    def load(key: AppKey, entry: RevisionEntry) -> App:
        try:
            desired = reader.load(repo.resolve_commit(entry.commit.sha))
        except PermanentError as problem:
            raise PermanentError(
                f"cannot read commit {entry.commit.short} of revision {entry.revision} from the repo: "
                f"{problem.message}",
                hint="check --repo/--branch, or pick another revision with --to-revision",
            ) from problem
        app = next((a for a in desired.apps if a.key == key), None)
        if app is None:
            raise PermanentError(
                f"{key} is not a valid app at commit {entry.commit.short} (revision {entry.revision})",
                hint="pick another revision with --to-revision",
            )
        return app

    return load


__all__ = [
    "AppState",
    "RollbackPlan",
    "choose",
    "git_app_loader",
    "plan_rollback",
    "read_app",
    "retry",
    "write_record",
]
