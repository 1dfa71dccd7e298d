"""``reconcile(app) -> Result``: one pass over one app, from what the pass listed, as data.

:meth:`Reconciler.reconcile` steps an app of git (``RolloutRunner.run_step``: plan, execute, and
the record written once with the loop's verdict, :class:`~gitdeploy.controller.verdicts.StatusVerdict`),
or plans and executes what an app without a valid manifest needs (:mod:`gitdeploy.controller.orphans`).
It returns a :class:`Result`: the app's report, when to pass over it again, and the error, if
any, whose kind decides how the queue retries it (:mod:`gitdeploy.controller.workqueue`).
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gitdeploy.clock import Clock
from gitdeploy.cluster.writecheck import writes_checked_by
from gitdeploy.controller.gitposition import GitPosition
from gitdeploy.controller.imagetriggers import ImageTriggers, target_for_images
from gitdeploy.controller.orphans import (
    OrphanPhase,
    PruneExecutor,
    PruneGate,
    Seen,
    Verdict,
    plan_orphan,
    plan_without_manifest,
    record_of,
    unreadable_files,
    unreadable_home,
)
from gitdeploy.controller.rollouts import (
    RolloutRunner,
    build_snapshot,
    choose_target,
    release_old_replica_sets,
)
from gitdeploy.controller.shards import Admission, ShardGate
from gitdeploy.controller.tracking import SourceTracker
from gitdeploy.controller.verdicts import StatusVerdict, judge
from gitdeploy.core.history.records import AppRecord, CommitRef
from gitdeploy.core.imagetriggers import followed_tags, suspension_note
from gitdeploy.core.models import App, AppKey
from gitdeploy.core.observed import APP_LABEL, ObservedPod, ObservedReplicaSet, PodCensus, StoredRecord
from gitdeploy.core.rollout import AppPhase, Snapshot, Step, starts_rollout
from gitdeploy.core.sync.syncstate import Health, Sync
from gitdeploy.errors import (
    AlreadyExistsError,
    ConflictError,
    DamagedRecordError,
    GitdeployError,
    StaleReadError,
)

log = logging.getLogger("gitdeploy.loop")

Listed = tuple[list[ObservedReplicaSet], list[ObservedPod], Mapping[str, StoredRecord], PodCensus | None]
"""One app's ReplicaSets and hook pods, and (at least) its app record by app name."""


@dataclass(frozen=True)
class AppReport:
    """The latest word on one app, for the CLI and logs."""

    key: AppKey
    sync: str
    health: str
    phase: str
    message: str
    revision: int = 0
    settled: bool = False
    """True when no further pass is planned (Complete, or Failed/Waiting for a person)."""
    triggers_suspended: bool = False
    """The app has image triggers and a rollback suspended them (the message says so)."""


@dataclass(frozen=True)
class Result:
    """What one pass over one app came to."""

    key: AppKey
    report: AppReport | None = None
    """None: the pass failed (``error``), or nothing of the app is known any more."""
    requeue_after: float | None = None
    """Seconds until the app is due again (None: not before something changes)."""
    error: GitdeployError | None = None
    """Why the pass failed: :func:`~gitdeploy.controller.workqueue.holds` tells a permanent one
    (held until the app's input changes) from a transient one (backed off)."""


def damaged_report(
    key: AppKey,
    replica_sets: list[ObservedReplicaSet],
    problem: DamagedRecordError,
    previous: AppReport | None,
) -> AppReport:
    """The report of an app whose record cannot be read (never read as empty, never overwritten)."""
    running = any(rs.state.available for rs in replica_sets if rs.app == key.name)
    return AppReport(
        key,
        Sync.RECORD_DAMAGED,
        previous.health if previous else (Health.HEALTHY if running else Health.MISSING),
        previous.phase if previous else "",
        f"{problem.message}: {problem.hint}",
        previous.revision if previous else 0,
        settled=True,
    )


def failed_report(key: AppKey, previous: AppReport | None, message: str) -> AppReport:
    """The report of an app whose pass failed: unsettled, ``message`` (the error, with its hint,
    and when it is retried), SYNC ``Unknown`` (the pass could not compare the app with git, as
    Argo CD says of a comparison error: a verdict from before would not say what runs now) beside
    the health, phase and revision the app was last seen with."""
    return AppReport(
        key,
        Sync.UNKNOWN,
        previous.health if previous else Health.DEGRADED,
        previous.phase if previous else AppPhase.PROGRESSING,
        message,
        previous.revision if previous else 0,
    )


def unanswered_report(key: AppKey, problem: StaleReadError, passes: int) -> AppReport:
    """The report of an app none of whose ``passes`` came to a verdict, each ending at a write
    that found an object changed since its read (``problem``, the last one): SYNC and HEALTH
    ``Unknown``, unsettled."""
    return AppReport(
        key,
        Sync.UNKNOWN,
        Health.UNKNOWN,
        "",
        f"error: {problem.message}, at each of {passes} passes: something else keeps changing it "
        f"(`kubectl get rs,configmaps -n {key.namespace} -l {APP_LABEL}={key.name} -w` shows the changes); "
        "run sync again once it stops",
    )


def source_unavailable_report(key: AppKey, previous: AppReport | None, note: str) -> AppReport:
    """The report of an app of git while the repo cannot be read (a rollout under way goes on)."""
    return AppReport(
        key,
        Sync.SOURCE_UNAVAILABLE,
        previous.health if previous else Health.HEALTHY,
        previous.phase if previous else "",
        note,
        previous.revision if previous else 0,
        settled=previous.settled if previous else True,
    )


def jitter(delay: float) -> float:
    """±10% so that many apps requeued together spread out; short delays stay exact."""
    return delay if delay < 2.0 else delay * random.uniform(0.9, 1.1)


def _suspension(app: App, record: AppRecord) -> str:
    """What the app's report says of its suspended image triggers (see :func:`suspension_note`)."""
    suspended, reason = record.triggers_suspended, record.suspended_reason
    return suspension_note(str(app.key), followed_tags(app), suspended=suspended, reason=reason)


class Reconciler:
    """One pass over one app (see the module docstring)."""

    def __init__(
        self,
        source: SourceTracker,
        runner: RolloutRunner,
        images: ImageTriggers,
        clock: Clock,
        previous: Callable[[AppKey], AppReport | None],
    ) -> None:
        self.source = source
        self.runner = runner
        self.images = images
        self.clock = clock
        self.previous = previous
        """The app's last report (for one whose record cannot be read)."""
        self.pruner = PruneExecutor(runner.cluster, clock, runner.write_record, runner.fence)
        self.gate: Callable[[], PruneGate] = lambda: PruneGate("", False)
        """What the head decides for the orphans of the pass under way."""
        self.watched: set[str] = set()
        """Namespaces whose ReplicaSets a watch follows (see :mod:`gitdeploy.controller.watcher`)."""
        self.observers: list[Callable[[float, str], None]] = []
        """(seconds, "success" or "error") after every pass over one app."""
        self.unanswered: dict[AppKey, StaleReadError] = {}
        """The apps whose last pass came to no verdict, and why: a write at the version the pass
        read found the object changed since (no report; due again after the problem's
        ``retry_after``)."""
        self.shards: ShardGate | None = None
        """With ``run --sharding``: which apps this replica acts on (:mod:`gitdeploy.controller.shards`)."""
        self.position: GitPosition | None = None
        """With leader election alone: an app whose record names a commit newer than this
        process's head waits for git (after a takeover, :mod:`gitdeploy.controller.gitposition`;
        with ``--sharding`` the :class:`ShardGate` sees to it)."""

    def reading(self) -> int | None:
        """Noted before a pass reads an app's objects, and handed to :meth:`reconcile` with them
        (see :meth:`~gitdeploy.controller.shards.Admissions.reading`; None when not sharded)."""
        return self.shards.admissions.reading() if self.shards is not None else None

    def reconcile(self, key: AppKey, listed: Listed, read_in: int | None = None) -> Result:
        """One pass over ``key`` from what was ``listed`` of it (after :meth:`reading` gave ``read_in``)."""
        replica_sets, pods, records, census = listed
        self.unanswered.pop(key, None)
        stored = records.get(key.name)
        if stored is not None:  # the record as this pass saw it is no news when a watch reports it
            self.runner.record_versions[key] = stored.resource_version
        started = time.perf_counter()
        try:
            if self.shards is not None:
                admitted = self._admit(key, stored, read_in)
                if not admitted.act:
                    return Result(key, requeue_after=admitted.requeue_after)
                stored = admitted.stored
            with writes_checked_by(functools.partial(self.runner.fence, key)):  # see writecheck
                release_old_replica_sets(self.runner, key, replica_sets)
                app = self.source.apps.get(key)
                if app is None:
                    result = self._without_manifest(key, replica_sets, stored)
                else:
                    snapshot = build_snapshot(key, replica_sets, pods, stored, census)
                    result = self._step(app, snapshot, stored)
        except StaleReadError as problem:  # not a failure: the next pass reads the change
            self._observe(started, "requeue")
            log.debug("%s; %s", problem.message, problem.hint)
            self.unanswered[key] = problem
            return Result(key, requeue_after=problem.retry_after)
        except DamagedRecordError as problem:
            self._observe(started, "error")
            return Result(key, damaged_report(key, replica_sets, problem, self.previous(key)), None, problem)
        except AlreadyExistsError as problem:  # sharded: another replica created the record first
            self._observe(started, "error")
            raced = self.shards is not None and ConflictError(f"[{key}] {problem.message}")
            return Result(key, error=raced or problem)
        except GitdeployError as problem:
            self._observe(started, "error")
            return Result(key, error=problem)
        self._observe(started, "success")
        return result

    def _admit(self, key: AppKey, stored: StoredRecord | None, read_in: int | None) -> Admission:
        """Whether this replica acts on ``key`` now (sharded), claiming or releasing it first."""
        assert self.shards is not None
        orphan = key not in self.source.apps and key in self.source.orphans
        admitted = self.shards.admit(key, stored, self.runner.write_record, orphan=orphan, read_in=read_in)
        if admitted.act and admitted.stored is not None:
            self.runner.record_versions[key] = admitted.stored.resource_version
        return admitted

    def _observe(self, started: float, outcome: str) -> None:
        seconds = time.perf_counter() - started
        for observer in self.observers:
            observer(seconds, outcome)

    def _waits_for_git(self, key: AppKey, record: Callable[[], AppRecord | None]) -> Result | None:
        """With leader election alone: when the app's ``record()`` names a commit newer than this
        process's head, this pass leaves the app as it runs, neither stepping it nor (as an app
        its older head lacks) pruning it, and looks again after a while."""
        if self.position is None:
            return None
        try:
            found = record()
        except DamagedRecordError:  # the pass says so, where it matters
            return None
        if found is None or not self.position.waits(key, found):
            return None
        return Result(key, requeue_after=self.position.recheck)

    def _step(self, app: App, snapshot: Snapshot, stored: StoredRecord | None) -> Result:
        if (waiting := self._waits_for_git(app.key, lambda: snapshot.record)) is not None:
            return waiting
        source = self.source
        head = source.head or ""
        images = self.images.decide(app, snapshot)  # ImageChange triggers: images of followed tags
        app, note = images.app, self.images.note(app, images)
        provisional = choose_target(app, CommitRef(head), snapshot, cause=images.cause)
        commit = (
            source.commit_for(app) if starts_rollout(provisional.template_hash, snapshot) else CommitRef(head)
        )
        target = target_for_images(choose_target(app, commit, snapshot, cause=images.cause), images)
        refusal, problem = source.refusal, source.problems.get(app.key)

        def verdict(step: Step) -> tuple[Sync, Health, str]:
            sync, health, message = judge(app, step, target, images, note, refusal=refusal, problem=problem)
            recovery = (step.record or snapshot.record).recovery
            return sync, health, f"{message}; {recovery}" if recovery else message

        def amend(step: Step, record: AppRecord) -> AppRecord:
            sync, health, message = verdict(step)
            status = StatusVerdict(
                sync,
                health,
                message,
                str(app.location),
                target.manifest_digest,
                app.paused,
                followed_tags(app),
                prune_protected=app.key in source.protected,
                note=note,
            )
            return status.apply(
                record, self.clock.now(), source.head or "", lambda: source.manifest_commit(app)
            )

        watched = app.key.namespace in self.watched
        step = self.runner.run_step(target, snapshot, stored, amend, watched=watched)
        sync, health, message = verdict(step)
        if source.source_error is not None:  # decided from the last good commit; the record keeps its verdict
            sync, message = Sync.SOURCE_UNAVAILABLE, f"{message}; {source.source_note()}"
        suspended = _suspension(app, step.record or snapshot.record)  # shown, never stored: it goes stale
        message = f"{message}; {suspended}" if suspended else message
        settled = step.requeue_after is None
        report = AppReport(
            app.key, sync, health, step.phase, message, step.revision, settled, bool(suspended)
        )
        return Result(app.key, report, step.requeue_after)

    def _without_manifest(
        self, key: AppKey, replica_sets: list[ObservedReplicaSet], stored: StoredRecord | None
    ) -> Result:
        """A pass over an app the head does not hold validly; no report when nothing of it is known."""
        if (waiting := self._waits_for_git(key, lambda: record_of(stored))) is not None:
            return waiting
        source = self.source
        runs = stored is not None or bool(replica_sets)
        problem = source.problems.get(key)
        if problem is None and key in source.orphans:
            problem = self._unreadable_home(stored)
        seen = Seen(key, replica_sets, stored, self.clock.now(), source.head or "")
        if problem is not None and not runs:  # new and invalid from the start: nothing to touch
            return Result(
                key, AppReport(key, Sync.INVALID_MANIFEST, Health.MISSING, "", problem, settled=True)
            )
        if problem is not None or (source.refusal is not None and runs):
            sync = Sync.INVALID_SETTINGS if source.refusal is not None else Sync.INVALID_MANIFEST
            found = self.pruner.execute(plan_without_manifest(seen, sync, source.refusal or problem or ""))
            return Result(key, _verdict_report(key, found))
        if key in source.orphans and runs:
            plan = plan_orphan(seen, source.orphans[key], self.gate(), key in source.protected)
            found = self.pruner.execute(plan)
            if found.phase == OrphanPhase.PRUNED:
                with source.lock:
                    source.orphans.pop(key, None)
                    source.protected.discard(key)
            return Result(key, _verdict_report(key, found))
        source.orphans.pop(key, None)
        return Result(key)

    def _unreadable_home(self, stored: StoredRecord | None) -> str | None:
        desired = self.source.desired
        if stored is None or desired is None:
            return None
        return unreadable_home(AppRecord.from_json(stored.payload), unreadable_files(desired))


def _verdict_report(key: AppKey, verdict: Verdict) -> AppReport:
    return AppReport(key, verdict.sync, verdict.health, verdict.phase, verdict.message, settled=True)


__all__ = ["AppReport", "Listed", "Reconciler", "Result", "damaged_report", "jitter"]
