"""The reconcile loop: keep the cluster at what the config repo says, one step per app per pass.

* :meth:`Controller.poll` asks git whether the tracked ref moved. Only then is desired state loaded
  (blob-cached: one changed file is one parse), and only apps whose manifest changed become due.
  A poll with no new commit makes no API call and parses nothing.
* :meth:`Controller.reconcile_due` takes every due app, lists each namespace involved once
  (ReplicaSets, app records, and hook pods when an app there has hooks), or, when few of a
  namespace's apps are due (:func:`lists_per_app`), each of those apps' own objects, and runs one
  step per app on a bounded pool of workers. An app in rollout is due again after its step's
  requeue delay (with jitter); a settled app only when its manifest changes, or at the periodic resync.
* Errors are data: a failing app backs off exponentially on its own; an invalid manifest makes
  only its apps ``InvalidManifest`` (they keep their last good revision, and a rollout in flight
  finishes with the last good manifest). An unreachable repo changes no decision: passes go on
  from the last good desired state (a rollout under way finishes, drift is repaired), apps report
  ``SourceUnavailable``, and the repo is polled again after its backoff (:meth:`Controller.poll_delay`);
  a commit made meanwhile is read once the repo answers.

Apps that left git are ``Orphaned`` (the commit that removed them named); with prune their
ReplicaSets are scaled to 0 and deleted, with their record, under the rules of
:mod:`gitdeploy.controller.orphans` (evidence, ``pruneLimit``, the opt-out annotation). An app whose
manifest still names it, valid or not, is never an orphan.

A head whose ``gitdeploy.yaml`` cannot be used (it does not parse or validate, a ``paths`` entry
matches nothing, ``--path`` is gone) is refused as a whole: nothing of it deploys, nothing is
pruned, every app keeps what it runs and reports ``InvalidSettings`` with the file:line.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.controller.imagetriggers import (
    ImageSettings,
    ImageTriggers,
    image_message,
    keep_note_current,
    target_for_images,
)
from gitdeploy.controller.orphans import (
    OrphanHandler,
    OrphanPhase,
    PruneGate,
    Verdict,
    decide_gate,
    unreadable_files,
    unreadable_home,
)
from gitdeploy.controller.rollouts import RolloutRunner, build_snapshot, choose_target
from gitdeploy.core.imagetriggers import followed_tags, stream_tag_key, suspension_note
from gitdeploy.core.models import App, AppKey, StrategyType
from gitdeploy.core.observed import ObservedPod, ObservedReplicaSet, PodCensus, StoredRecord
from gitdeploy.core.pruning import PruneLimit, prune_blocker, prune_opted_out
from gitdeploy.core.records import AppRecord, Cause, CommitRef, SyncStatus
from gitdeploy.core.rollout import AppPhase, Snapshot, Step, starts_rollout, wants_pod_census
from gitdeploy.core.syncstate import Health, Sync, classify
from gitdeploy.errors import DamagedRecordError, GitdeployError, TransientError
from gitdeploy.manifests.loader import LoadResult
from gitdeploy.source.repo import ConfigRepo

log = logging.getLogger("gitdeploy.loop")

MAX_BACKOFF_SECONDS = 60.0
PER_APP_LISTS_BELOW = 4
"""See :func:`lists_per_app`. Measured on bench/run.py's cached cluster (833 apps and 1,666
ReplicaSets per namespace, the embedded cluster in process, a busy 2-core machine): listing a
namespace's ReplicaSets and app records takes 250–300 ms however few of its apps are due (most
of it decoding the ReplicaSets' JSON), the lists of one app 0.7 ms (1.1 ms with hook pods); with
the 4 workers, 100 due apps' own lists took 97 ms, 200 took 212 ms (as long as the namespace's
lists), 400 took 484 ms."""
RESYNC_SECONDS = 300.0
"""How often every app is looked at again when nothing told gitdeploy it changed (`run --resync-interval`)."""


def lists_per_app(due: int, apps_in_namespace: int) -> bool:
    """Whether a pass reads ``due`` apps of a namespace through lists of each app's own objects
    (ReplicaSets, record, hook pods by the ``gitdeploy.io/app`` label) rather than one list per
    kind of the whole namespace: when the namespace holds at least :data:`PER_APP_LISTS_BELOW`
    times more apps than are due. A pass over every app (a resync) lists namespaces.

    >>> lists_per_app(1, 833), lists_per_app(208, 833), lists_per_app(209, 833), lists_per_app(1, 3)
    (True, True, False, False)
    """
    return due * PER_APP_LISTS_BELOW <= apps_in_namespace


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


def _changed_apps(before: tuple[App, ...], after: tuple[App, ...]) -> tuple[list[App], list[AppKey]]:
    """The apps of ``after`` that ``before`` does not hold as they are (new or changed), and the keys
    of ``before`` that ``after`` lacks; both sorted by key. The desired-state reader keeps the App
    objects of untouched apps, so after a commit this is a walk of identity checks, not a
    comparison of every app.
    """
    changed: list[App] = []
    removed: list[AppKey] = []
    i = j = 0
    old_count, new_count = len(before), len(after)
    while i < old_count and j < new_count:
        old, new = before[i], after[j]
        if old is new:
            i, j = i + 1, j + 1
        elif old.key == new.key:
            changed.append(new)
            i, j = i + 1, j + 1
        elif old.key < new.key:
            removed.append(old.key)
            i += 1
        else:
            changed.append(new)
            j += 1
    removed += [app.key for app in before[i:]]
    changed += after[j:]
    return changed, removed


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


def _suspension(app: App, record: AppRecord) -> str:
    """What the app's report says of its suspended image triggers (see :func:`suspension_note`)."""
    suspended, reason = record.triggers_suspended, record.suspended_reason
    return suspension_note(str(app.key), followed_tags(app), suspended=suspended, reason=reason)


def _jitter(delay: float) -> float:
    """±10% so that many apps requeued together spread out; short delays stay exact."""
    return delay if delay < 2.0 else delay * random.uniform(0.9, 1.1)


class Controller:
    """One config repo, one cluster. Thread-safe for one :meth:`run` plus readers of ``reports``."""

    def __init__(
        self,
        repo: ConfigRepo,
        cluster: Cluster,
        clock: Clock,
        *,
        prune: bool | None = None,
        prune_limit: PruneLimit | None = None,
        workers: int = 4,
        resync_seconds: float = RESYNC_SECONDS,
        namespaces: frozenset[str] = frozenset(),
        images: ImageSettings | None = None,
    ) -> None:
        self.repo = repo
        self.images = ImageTriggers(cluster, clock, images or ImageSettings())
        """Image stream tags and the ImageChange triggers that follow them."""
        self._images_stale = False
        """A new desired state arrived: resolve its image streams before the next pass."""
        self.cluster = cluster
        self.clock = clock
        self.reader = DesiredStateReader(repo)
        self.runner = RolloutRunner(cluster, clock)
        self.prune_flag = prune
        self.prune_limit_flag = prune_limit
        self.orphan_handler = OrphanHandler(cluster, clock, self._with_status)
        self.workers = max(1, workers)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="reconcile")
        """Kept between passes: starting its threads again for every pass cost about 2 ms a step."""
        self.resync_seconds = resync_seconds
        self.namespaces = namespaces
        """Only apps in these namespaces (all when empty); the others are left alone."""
        self.head: str | None = None
        self.desired: LoadResult | None = None
        self.apps: dict[AppKey, App] = {}
        """The last good manifest of every app in git (kept for apps whose manifest became invalid)."""
        self.problems: dict[AppKey, str] = {}
        self.orphans: dict[AppKey, str] = {}
        self.protected: set[AppKey] = set()
        """Apps whose manifest says ``gitdeploy.io/prune: "false"`` (kept when they leave git)."""
        self.refusal: str | None = None
        """Why the head commit (``refused_head``) is not applied: its settings cannot be used."""
        self.refused_head: str | None = None
        self._gate: PruneGate | None = None
        """What the head decides for the orphans of the pass under way (see :meth:`prune_gate`)."""
        self.due: dict[AppKey, float] = {}
        self.failures: dict[AppKey, int] = defaultdict(int)
        self.reports: dict[AppKey, AppReport] = {}
        self.source_error: str | None = None
        self.source_retry_after = 0.0
        """After a failed poll: the source's backoff before the next one (see :meth:`poll_delay`)."""
        self.source_hint: str | None = None
        """What to do about ``source_error`` (the error's hint), for the CLI."""
        self._commits: dict[str, CommitRef] = {}
        """Commit that last changed each manifest file, at the current head (cleared when it moves)."""
        self._next_resync = 0.0
        self._progressed: set[AppKey] = set()
        """Apps whose ReplicaSets made progress while a pass over them was under way."""
        self.watched: set[str] = set()
        """Namespaces whose ReplicaSets a watch follows (see :mod:`gitdeploy.controller.watcher`)."""
        self._counted_apps: dict[AppKey, App] = {}
        self._apps_per_namespace: Counter[str] = Counter()
        self._lock = threading.Lock()
        # -- observers (metrics): called on the loop's threads; they must be cheap and not raise --
        self.poll_observers: list[Callable[[float, bool], None]] = []
        """(seconds, failed) after every poll of the config repo."""
        self.reconcile_observers: list[Callable[[float, str], None]] = []
        """(seconds, "success" or "error") after every pass over one app."""

    @property
    def prune(self) -> bool:
        if self.prune_flag is not None:
            return self.prune_flag
        return bool(self.desired is not None and self.desired.settings.prune)

    @property
    def prune_limit(self) -> PruneLimit:
        if self.prune_limit_flag is not None:
            return self.prune_limit_flag
        return self.desired.settings.prune_limit if self.desired is not None else PruneLimit()

    def prune_gate(self) -> PruneGate:
        """What the head decides for this pass's orphans: may they be pruned, and are they held."""
        with self._lock:
            pending = sum(1 for key in self.orphans if key not in self.protected)
            apps = len(self.apps)
        desired, head = self.desired, self.head or ""
        if self.refusal is not None or desired is None:
            return PruneGate(head, self.prune, prune_blocker(self.refusal or "no commit read yet", ()))
        return decide_gate(head, self.prune, desired.diagnostics, pending, apps, self.prune_limit)

    # -- source --------------------------------------------------------------------------------------

    def poll(self, pushed: str | None = None) -> bool:
        """Ask git for news; load desired state only when the head moved. True when it did.

        ``pushed`` is the head a verified push event named (see :meth:`ConfigRepo.poll`).
        """
        started = time.perf_counter()
        try:
            result = self.repo.poll(pushed)
        except GitdeployError as problem:
            self._observe(self.poll_observers, time.perf_counter() - started, True)
            self._source_failed(problem)
            return False
        self._observe(self.poll_observers, time.perf_counter() - started, False)
        self.source_error = self.source_hint = None
        self.source_retry_after = 0.0
        if result.head == self.refused_head:
            return False
        if result.head == self.head:
            if self.refusal is None:
                return False
            self._end_refusal()  # back at the last good head (a force-push, a revert)
            return True
        try:
            desired = self.reader.load(result.head)
        except TransientError as problem:
            self._source_failed(problem)
            return False
        except GitdeployError as problem:  # the commit as a whole cannot be used (--path gone, too big)
            self._refuse(
                result.head, f"{problem.message} ({problem.hint})" if problem.hint else problem.message
            )
            return True
        if desired.settings_problems:
            self._refuse(result.head, "; ".join(d.render() for d in desired.settings_problems))
            return True
        self._apply_desired(desired, result.head)
        if self.refusal is not None:
            self._end_refusal()
        self._images_stale = True  # resolved by the next pass: a standby polls but writes nothing
        return True

    def poll_delay(self, interval: float) -> float:
        """Seconds until the next poll: ``interval``, or after a failed poll the source's backoff
        (5 s doubling to 5 min, see :func:`~gitdeploy.source.gitcmd.compute_backoff`) when longer.

        >>> from types import SimpleNamespace
        >>> Controller.poll_delay(SimpleNamespace(source_retry_after=0.0), 2.0)
        2.0
        >>> Controller.poll_delay(SimpleNamespace(source_retry_after=20.0), 2.0)
        20.0
        """
        return max(interval, self.source_retry_after)

    def _end_refusal(self) -> None:
        """The head is good again: every app said InvalidSettings, each says what it is now, and
        records not in git are orphans again."""
        log.info("[settings] commit %s is applied", (self.head or "")[:7], extra={"commit": self.head})
        self.refusal = self.refused_head = None
        self.mark_all_due()
        self._next_resync = self.clock.now()

    def _refuse(self, head: str, why: str) -> None:
        """Apply nothing of ``head``: every app keeps what it has and reports why."""
        self.refusal = (
            f"{why}; commit {head[:7]} is not applied: nothing of it deploys and nothing is pruned "
            "until this is fixed"
        )
        self.refused_head = head
        log.error("[settings] %s", self.refusal, extra={"commit": head})
        now = self.clock.now()
        with self._lock:
            for key in [*self.apps, *self.problems, *self.orphans]:
                self.due[key] = now
            if self._next_resync == 0.0:
                self._next_resync = now  # the apps that run, to say why nothing changes

    def _source_failed(self, problem: GitdeployError) -> None:
        """Nothing new applies: what runs stays at the last synced commit, every app says why."""
        self.source_error = problem.message
        self.source_hint = problem.hint or None
        self.source_retry_after = problem.retry_after if isinstance(problem, TransientError) else 0.0
        last = self.head[:7] if self.head else "none yet"
        log.warning(
            "[source] unavailable (%s); last synced commit %s stays in force, rollouts under way go on",
            problem.message,
            last,
        )
        for key in self.apps:
            self._report_source_unavailable(key)

    def _apply_desired(self, desired: LoadResult, head: str) -> None:
        now = self.clock.now()
        changed, removed = _changed_apps(self.desired.apps if self.desired else (), desired.apps)
        changed = [app for app in changed if self._mine(app.key)]
        rendered: dict[str, list[str]] = defaultdict(list)
        for diagnostic in desired.diagnostics:
            rendered[diagnostic.app].append(diagnostic.render())
        unreadable = unreadable_files(desired)
        for file in sorted(unreadable):  # an app's own problems are logged with its status
            for problem in unreadable[file]:
                log.warning("[source] %s", problem)
        problems = {
            key: "; ".join(rendered[str(key)]) or "the manifest is invalid (see `gitdeploy validate`)"
            for key in desired.invalid_apps
            if self._mine(key)
        }
        with self._lock:
            apps = dict(self.apps)  # a new dict: readers may hold the old one
            for app in changed:
                if prune_opted_out(app.annotations):
                    self.protected.add(app.key)
                else:
                    self.protected.discard(app.key)
                old = apps.get(app.key)
                if (
                    old is None
                    or old.manifest_json != app.manifest_json
                    or old.template_hash != app.template_hash
                ):
                    self.due[app.key] = now
                apps[app.key] = app
            for key in set(problems) | set(self.problems):
                self.due[key] = now
            # Gone: apps that left git, and invalid ones (kept at their last good manifest) that left
            # too. An app that became invalid keeps its last good manifest, also when its file no
            # longer parses (it is still in git, but does not say which apps it holds).
            now_valid = {app.key for app in changed}
            for key in [*removed, *self.problems]:
                if key in apps and key not in problems and key not in now_valid:
                    if apps[key].location.file in unreadable:
                        problems[key] = "; ".join(unreadable[apps[key].location.file])
                    else:
                        self.orphans[key] = self._removal_note(apps.pop(key), head)
                    self.due[key] = now
            for key in self.orphans:  # whether they may be pruned depends on the whole commit
                self.due[key] = now
            self.apps = apps
            self.problems = problems
            self.desired = desired
            self.head = head
            self._commits.clear()
            if self._next_resync == 0.0:
                self._next_resync = now  # the first load also looks for orphans from earlier runs

    def _mine(self, key: AppKey) -> bool:
        return not self.namespaces or key.namespace in self.namespaces

    def _removal_note(self, app: App, head: str) -> str:
        try:
            change = self.repo.last_change(app.location.file, head)
        except GitdeployError:
            change = None
        if change is None:
            return "removed from git"
        return f"removed from git in {change.sha[:7]} ({change.subject!r} by {change.author_name})"

    def commit_for(self, app: App) -> CommitRef:
        """The commit that last changed the app's manifest file (at the tracked head)."""
        assert self.head is not None
        found = self._commits.get(app.location.file)
        if found is None:
            info = self.repo.attribute(app.location.file, self.head)  # BENCH: one history walk for all apps
            found = (
                CommitRef(info.sha, info.author_name, info.subject)
                if info is not None
                else CommitRef(self.head, "", "")
            )
            self._commits[app.location.file] = found
        return found

    def _manifest_commit(self, app: App) -> str:
        """The sha of :meth:`commit_for`, or "" when git cannot say (the verdict is written anyway)."""
        if self.head is None:
            return ""
        try:
            return self.commit_for(app).sha
        except GitdeployError:
            return ""

    # -- passes --------------------------------------------------------------------------------------

    def notice(self, key: AppKey, resource_version: str) -> bool:
        """An app record changed outside this loop (a rollback, a deploy request): pass over the app
        now. The loop's own writes are ignored. True when the app was marked due."""
        if self.runner.record_versions.get(key) == resource_version:
            return False
        with self._lock:
            if key not in self.apps and key not in self.orphans:
                return False  # an orphan's record changes when a person confirms its prune
            self.due[key] = self.clock.now()
        return True

    def notice_progress(self, key: AppKey) -> bool:
        """A ReplicaSet of the app made progress (see :mod:`gitdeploy.controller.watcher`): if the
        app waits in a rollout, pass over it now instead of at its requeue time; if a pass over it
        is under way, again right after it. True when that is what happens."""
        with self._lock:
            report = self.reports.get(key)
            if report is None or report.settled or key in self.failures:
                return False
            if key in self.due:
                self.due[key] = min(self.due[key], self.clock.now())
            else:
                self._progressed.add(key)
        return True

    def notice_drift(self, kind: str, rs: ObservedReplicaSet) -> bool:
        """A ReplicaSet of an app in git changed in a way this loop did not make it (``kubectl
        scale``, a delete: see :meth:`RolloutRunner.changed_by_hand`): pass over the app now, which
        undoes it (:mod:`gitdeploy.core.drift`). True when the app was marked due."""
        key = AppKey(rs.namespace, rs.app)
        if not self.runner.changed_by_hand(kind, rs):
            return False
        with self._lock:
            if key not in self.apps:
                return False
            self.due[key] = self.clock.now()
        log.info("[%s] ReplicaSet %s changed by hand (%s); passing over the app now", key, rs.name, kind)
        return True

    def mark_all_due(self) -> None:
        now = self.clock.now()
        with self._lock:
            for key in [*self.apps, *self.orphans]:
                self.due[key] = now

    def next_due_in(self) -> float | None:
        with self._lock:
            times = [*self.due.values()]
        if self.images.next_check is not None:
            times.append(self.images.next_check)
        if not times:
            return None
        return max(min(times) - self.clock.now(), 0.0)

    def notice_stream(self, state: StoredRecord) -> bool:
        """An image stream state changed in the cluster (``gitdeploy tag``; see
        :mod:`gitdeploy.controller.streamwatch`): the next pass takes it in and passes over the
        apps that follow a tag that moved (:meth:`ImageTriggers.notice`). True when news."""
        return self.images.notice(state)

    def _refresh_images(self) -> None:
        """Resolve the image stream tags; apps with triggers on a tag that changed become due."""
        streams = [s for s in self.desired.image_streams if self._mine(s.key)] if self.desired else []
        if not streams and self.images.next_check is None:
            return
        self._mark_followers_due(self.images.refresh(streams))

    def _mark_followers_due(self, changed: set[str]) -> None:
        """Apps with triggers on one of the ``changed`` stream tags are due now."""
        if not changed:
            return
        now = self.clock.now()
        with self._lock:
            for key, app in self.apps.items():
                if any(stream_tag_key(t) in changed for t in app.triggers.image_change):
                    self.due[key] = min(self.due.get(key, now), now)

    def reconcile_due(self, only: Iterable[AppKey] | None = None) -> list[AppReport]:
        """One pass over the apps that are due now (or over ``only``); returns their reports."""
        now = self.clock.now()
        self._resync_if_time(now)
        self._mark_followers_due(self.images.take_news())
        if self._images_stale or (self.images.next_check is not None and now >= self.images.next_check):
            self._images_stale = False
            self._refresh_images()
        with self._lock:
            keys = sorted(only) if only is not None else sorted(k for k, t in self.due.items() if t <= now)
            for key in keys:
                self.due.pop(key, None)
        if not keys:
            return []
        # One decision for the whole pass: how many of the head's orphans prune would delete.
        self._gate = self.prune_gate() if any(key in self.orphans for key in keys) else None
        by_namespace: dict[str, list[AppKey]] = defaultdict(list)
        for key in keys:
            by_namespace[key.namespace].append(key)
        reports: list[AppReport] = []
        futures: list[Future[AppReport | None]] = []
        earlier = 0
        for namespace, members in sorted(by_namespace.items()):
            # MEMORY: the next namespace is listed once the steps of all but the last one listed
            # are done, so a pass holds what it listed of two namespaces, not of every one.
            wait(futures[:earlier])
            earlier = len(futures)
            if lists_per_app(len(members), self._apps_in(namespace)):
                futures += [self._pool.submit(self._list_and_reconcile_one, key) for key in members]
                continue
            try:
                listed = self._list_namespace(namespace, members)
            except GitdeployError as problem:
                reports += [self._failed(key, problem) for key in members]  # never a silent pass
                continue
            futures += [self._pool.submit(self._reconcile_one, key, *listed[key.name]) for key in members]
            del listed  # each step holds its own app's objects only, freed when it is done
        for future in futures:
            report = future.result()
            if report is not None:
                reports.append(report)
        return reports

    def _apps_in(self, namespace: str) -> int:
        """How many apps of git live in ``namespace`` (counted once per desired state)."""
        apps = self.apps
        if self._counted_apps is not apps:
            self._apps_per_namespace = Counter(key.namespace for key in apps)
            self._counted_apps = apps
        return self._apps_per_namespace[namespace]

    def _wants_pods(self, key: AppKey) -> bool:
        """Whether the app may have hook or deployer pods to look at."""
        app = self.apps.get(key)
        return app is not None and (bool(app.strategy.hooks) or app.strategy.type is StrategyType.CUSTOM)

    def _wants_census(self, key: AppKey) -> bool:
        """Whether the app's pods must be counted (:func:`wants_pod_census`)."""
        app = self.apps.get(key)
        return app is not None and wants_pod_census(app)

    def _list_namespace(self, namespace: str, members: list[AppKey]) -> dict[str, Listed]:
        """One list call per kind for the whole namespace (pods only when an app may have hook
        pods, or is Recreate: then every app pod, to count them per ReplicaSet), split by app; only
        the ReplicaSets of ``members`` are read from the list."""
        names = {key.name for key in members}
        replica_sets: dict[str, list[ObservedReplicaSet]] = {name: [] for name in names}
        for rs in self.cluster.list_replica_sets(namespace, of_apps=names):
            replica_sets[rs.app].append(rs)
        records = {r.app: r for r in self.cluster.list_app_records(namespace)}
        pods: dict[str, list[ObservedPod]] = {name: [] for name in names}
        counted = {key.name for key in members if self._wants_census(key)}
        census: dict[str, PodCensus] = {}
        if counted or any(self._wants_pods(key) for key in members):
            hook_pods, census = (
                self.cluster.list_pods_with_census(namespace)
                if counted
                else (self.cluster.list_app_pods(namespace), {})
            )
            for pod in hook_pods:
                if pod.app in pods:
                    pods[pod.app].append(pod)
        return {
            name: (
                replica_sets[name],
                pods[name],
                records,
                census.get(name, PodCensus()) if name in counted else None,
            )
            for name in names
        }

    def _list_and_reconcile_one(self, key: AppKey) -> AppReport | None:
        """A pass over one app from lists of its own objects (when few apps of its namespace are due)."""
        try:
            replica_sets = self.cluster.list_replica_sets(key.namespace, key.name)
            records = {r.app: r for r in self.cluster.list_app_records(key.namespace, key.name)}
            pods: list[ObservedPod] = []
            census = None
            if self._wants_census(key):
                pods, counted = self.cluster.list_pods_with_census(key.namespace, key.name)
                census = counted.get(key.name, PodCensus())
            elif self._wants_pods(key):
                pods = self.cluster.list_app_pods(key.namespace, key.name)
        except GitdeployError as problem:
            return self._failed(key, problem)
        return self._reconcile_one(key, replica_sets, pods, records, census)

    def _reconcile_one(
        self,
        key: AppKey,
        replica_sets: list[ObservedReplicaSet],
        pods: list[ObservedPod],
        records: Mapping[str, StoredRecord],
        census: PodCensus | None = None,
    ) -> AppReport | None:
        stored = records.get(key.name)
        if stored is not None:  # the record as this pass saw it is no news when a watch reports it
            self.runner.record_versions[key] = stored.resource_version
        started = time.perf_counter()
        try:
            self.runner.release_old_replica_sets(replica_sets)
            app = self.apps.get(key)
            if app is None:
                report = self._without_manifest(key, replica_sets, stored)
                if report is None:
                    return None
            else:
                report = self._step(app, build_snapshot(key, replica_sets, pods, stored, census), stored)
        except DamagedRecordError as problem:
            self._observe(self.reconcile_observers, time.perf_counter() - started, "error")
            return self._damaged(key, replica_sets, problem)
        except GitdeployError as problem:
            self._observe(self.reconcile_observers, time.perf_counter() - started, "error")
            return self._failed(key, problem)
        self.failures.pop(key, None)
        self._observe(self.reconcile_observers, time.perf_counter() - started, "success")
        return report

    @staticmethod
    def _observe(observers: list[Callable[[float, Any], None]], seconds: float, outcome: Any) -> None:
        for observer in observers:
            observer(seconds, outcome)

    def _step(self, app: App, snapshot: Snapshot, stored: StoredRecord | None) -> AppReport:
        head = self.head or ""
        images = self.images.decide(app, snapshot)  # ImageChange triggers: images of followed tags
        app, note = images.app, self.images.note(app, images)
        provisional = choose_target(app, CommitRef(head), snapshot, cause=images.cause)
        commit = (
            self.commit_for(app) if starts_rollout(provisional.template_hash, snapshot) else CommitRef(head)
        )
        target = target_for_images(choose_target(app, commit, snapshot, cause=images.cause), images)
        problem = self.problems.get(app.key)

        def verdict(step: Step) -> tuple[Sync, Health, str]:
            sync, health, message = judge(step)
            recovery = (step.record or snapshot.record).recovery
            return sync, health, f"{message}; {recovery}" if recovery else message

        def judge(step: Step) -> tuple[Sync, Health, str]:
            pin = target.pin
            sync, health = classify(step, pinned=pin is not None)
            if self.refusal is not None:
                return Sync.INVALID_SETTINGS, health, self.refusal
            if problem is not None:
                return Sync.INVALID_MANIFEST, health, problem
            if pin is not None and step.phase is AppPhase.COMPLETE:
                how = "rollback" if pin.cause is Cause.ROLLBACK else "automatic rollback"
                return (
                    sync,
                    health,
                    (
                        f"pinned to revision {pin.revision}'s template by {how} ({pin.reason}); a commit "
                        f"that changes the manifest, or `gitdeploy deploy {app.key} --latest`, rolls forward"
                    ),
                )
            return sync, health, image_message(step.message, step.phase, images, note)

        def amend(step: Step, record: AppRecord) -> AppRecord:
            sync, health, message = verdict(step)
            protected = app.key in self.protected
            if record.prune_protected != protected:
                record = dataclasses.replace(record, prune_protected=protected)
            return self._with_status(
                record,
                sync,
                health,
                message,
                str(app.location),
                target.manifest_digest,
                app.paused,
                manifest_commit=lambda: self._manifest_commit(app),
                image_triggers=followed_tags(app),
            )

        step = self.runner.run_step(
            target,
            snapshot,
            stored,
            keep_note_current(amend, note, lambda s: verdict(s)[2]),
            watched=app.key.namespace in self.watched,
        )
        sync, health, message = verdict(step)
        if self.source_error is not None:  # decided from the last good commit; the record keeps its verdict
            sync, message = Sync.SOURCE_UNAVAILABLE, f"{message}; {self._source_note()}"
        settled = step.requeue_after is None
        suspended = _suspension(app, step.record or snapshot.record)  # shown, never stored: it goes stale
        message = f"{message}; {suspended}" if suspended else message
        report = AppReport(
            app.key, sync, health, step.phase, message, step.revision, settled, bool(suspended)
        )
        self._remember(report, step.requeue_after)
        return report

    def _with_status(
        self,
        record: AppRecord,
        sync: str,
        health: str,
        message: str,
        location: str,
        digest: str = "",
        paused: bool = False,
        *,
        manifest_commit: Callable[[], str] | None = None,
        image_triggers: tuple[str, ...] = (),
    ) -> AppRecord:
        """``record`` with the loop's verdict, when the verdict changed (so steady state writes nothing).
        ``manifest_commit`` is asked only then (a git history walk per head, shared by all apps)."""
        current = record.status
        verdict = (sync, health, location, digest, paused, image_triggers)
        if (
            current is not None
            and (
                current.sync,
                current.health,
                current.location,
                current.manifest_digest,
                current.paused,
                current.image_triggers,
            )
            == verdict
        ):
            return record
        now = self.clock.now()
        status = SyncStatus(
            sync,
            health,
            message,
            self.head or "",
            location,
            now,
            digest,
            paused,
            manifest_commit() if manifest_commit is not None else "",
            image_triggers,
        )
        return dataclasses.replace(record, status=status, last_synced_commit=self.head or "")

    def _remember(self, report: AppReport, requeue_after: float | None) -> None:
        previous = self.reports.get(report.key)
        if previous is None or (previous.sync, previous.health, previous.phase) != (
            report.sync,
            report.health,
            report.phase,
        ):
            log.info(
                "[%s] %s/%s: %s",
                report.key,
                report.sync,
                report.health,
                report.message,
                extra={"commit": self.head, "revision": report.revision},
            )
        with self._lock:
            self.reports[report.key] = report
            progressed = report.key in self._progressed  # during the pass: look again at once
            self._progressed.discard(report.key)
            if requeue_after is not None:
                delay = 0.0 if progressed else _jitter(requeue_after)
                self.due[report.key] = min(self.due.get(report.key, float("inf")), self.clock.now() + delay)

    def _damaged(
        self, key: AppKey, replica_sets: list[ObservedReplicaSet], problem: DamagedRecordError
    ) -> AppReport:
        """The record cannot be read: the app is held as it runs until someone repairs or deletes
        the record (a change of it wakes the app: the record watch; and so does the resync)."""
        report = damaged_report(key, replica_sets, problem, self.reports.get(key))
        self.failures.pop(key, None)
        self._remember(report, None)
        return report

    def _failed(self, key: AppKey, problem: GitdeployError) -> AppReport:
        """The pass over ``key`` failed: its report says so (unsettled), and it is due again after
        a backoff."""
        self.failures[key] += 1
        delay = min(2.0 ** (self.failures[key] - 1), MAX_BACKOFF_SECONDS)
        if isinstance(problem, TransientError):
            delay = max(delay, min(problem.retry_after, MAX_BACKOFF_SECONDS))
        log.warning("[%s] pass failed (retry in %.0f s): %s", key, delay, problem.message)
        previous = self.reports.get(key)
        report = AppReport(
            key,
            previous.sync if previous else Sync.OUT_OF_SYNC,
            previous.health if previous else Health.DEGRADED,
            previous.phase if previous else AppPhase.PROGRESSING,
            f"error: {problem} (retrying in {delay:.0f} s)",  # with its hint: what to do
            previous.revision if previous else 0,
        )
        with self._lock:
            self.reports[key] = report
            self.due[key] = self.clock.now() + delay
        return report

    def _source_note(self) -> str:
        last = self.head[:7] if self.head else "none"
        return f"{self.source_error}; last synced commit {last}"

    def _report_source_unavailable(self, key: AppKey) -> None:
        previous = self.reports.get(key)
        with self._lock:
            self.reports[key] = AppReport(
                key,
                Sync.SOURCE_UNAVAILABLE,
                previous.health if previous else Health.HEALTHY,
                previous.phase if previous else "",
                self._source_note(),
                previous.revision if previous else 0,
                settled=previous.settled if previous else True,  # a rollout under way goes on
            )

    # -- orphans -------------------------------------------------------------------------------------

    def managed_namespaces(self) -> Sequence[str | None]:
        """Where the resync (and the metrics of apps by state) look for app records: the
        namespaces gitdeploy was given, else those git names (and those of known apps). Not the
        whole cluster, which the Role that ``deploy/`` ships refuses, unless nothing names a
        namespace yet (the first commit read was refused): then every namespace, if gitdeploy
        may list them (``None``)."""
        if self.namespaces:
            return sorted(self.namespaces)
        known = {key.namespace for key in [*self.apps, *self.problems, *self.orphans]}
        return sorted(known) if known else [None]

    def _resync_if_time(self, now: float) -> None:
        """Periodically look at every app again, and find records of apps that are not in git."""
        if self._next_resync == 0.0 or now < self._next_resync:
            return
        self._next_resync = now + self.resync_seconds
        records: list[StoredRecord] = []
        for namespace in self.managed_namespaces():
            try:
                records += self.cluster.list_app_records(namespace)
            except GitdeployError as problem:  # loud: orphans there go unnoticed until it is fixed
                log.error(
                    "[resync] cannot list the app records in %s, orphans there are not found: %s",
                    namespace or "all namespaces (pass --namespace to name them)",
                    problem,
                )
        with self._lock:
            for record in records:
                key = AppKey(record.namespace, record.app)
                if not self._mine(key):
                    continue
                if key not in self.apps and key not in self.problems and self.refusal is None:
                    self.orphans.setdefault(key, "not in git (any more)")
                self.due.setdefault(key, now)
            for key in self.apps:
                self.due.setdefault(key, now)

    def _without_manifest(
        self,
        key: AppKey,
        replica_sets: list[ObservedReplicaSet],
        stored: StoredRecord | None,
    ) -> AppReport | None:
        """A pass over an app the head does not hold validly; None when nothing of it is known."""
        runs = stored is not None or bool(replica_sets)
        problem = self.problems.get(key)
        if problem is None and key in self.orphans:
            problem = self._unreadable_home(stored)
        if problem is not None and not runs:  # new and invalid from the start: nothing to touch
            report = AppReport(key, Sync.INVALID_MANIFEST, Health.MISSING, "", problem, settled=True)
        elif problem is not None or (self.refusal is not None and runs):
            sync = Sync.INVALID_SETTINGS if self.refusal is not None else Sync.INVALID_MANIFEST
            message = self.refusal or problem or ""
            found = self.orphan_handler.without_manifest(key, sync, message, replica_sets, stored)
            report = self._verdict_report(key, found)
        elif key in self.orphans and runs:
            note = self.orphans[key]
            found = self.orphan_handler.orphan(
                key, note, replica_sets, stored, self._gate or self.prune_gate(), key in self.protected
            )
            if found.phase == OrphanPhase.PRUNED:
                with self._lock:
                    self.orphans.pop(key, None)
                    self.protected.discard(key)
            report = self._verdict_report(key, found)
        else:
            self.orphans.pop(key, None)
            return None
        self._remember(report, None)
        return report

    @staticmethod
    def _verdict_report(key: AppKey, verdict: Verdict) -> AppReport:
        return AppReport(key, verdict.sync, verdict.health, verdict.phase, verdict.message, settled=True)

    def _unreadable_home(self, stored: StoredRecord | None) -> str | None:
        if stored is None or self.desired is None:
            return None
        return unreadable_home(AppRecord.from_json(stored.payload), unreadable_files(self.desired))
