"""Source tracking: what the config repo's head says, and which apps a new head makes due.

:meth:`SourceTracker.poll` asks git whether the tracked ref moved. Only then is desired state
loaded (blob-cached: one changed file is one parse), and only apps whose manifest changed become
due. A poll with no new commit makes no API call and parses nothing.

An invalid manifest makes only its apps ``InvalidManifest`` (they keep their last good manifest).
An unreachable repo changes no decision: passes go on from the last good desired state, apps
report ``SourceUnavailable``, and the repo is polled again after its backoff
(:meth:`SourceTracker.poll_delay`). A head whose ``gitdeploy.yaml`` cannot be used is refused as
a whole: nothing of it deploys, nothing is pruned, every app reports ``InvalidSettings``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from gitdeploy.clock import Clock
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.controller.orphans import PruneGate, decide_gate, unreadable_files
from gitdeploy.controller.workqueue import DueQueue
from gitdeploy.core.history.records import CommitRef
from gitdeploy.core.models import App, AppKey
from gitdeploy.core.pruning import PruneLimit, prune_blocker, prune_opted_out
from gitdeploy.errors import GitdeployError, TransientError
from gitdeploy.manifests.loader import LoadResult
from gitdeploy.source.repo import ConfigRepo

log = logging.getLogger("gitdeploy.loop")


def changed_apps(before: tuple[App, ...], after: tuple[App, ...]) -> tuple[list[App], list[AppKey]]:
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


class SourceTracker:
    """The tracked head, its desired state, and what it says of each app (see the module docstring)."""

    def __init__(
        self,
        repo: ConfigRepo,
        clock: Clock,
        queue: DueQueue,
        lock: threading.RLock,
        namespaces: frozenset[str],
        on_source_failed: Callable[[], None],
    ) -> None:
        self.repo = repo
        self.clock = clock
        self.queue = queue
        self.lock = lock
        self.namespaces = namespaces
        """Only apps in these namespaces (all when empty); the others are left alone."""
        self._on_source_failed = on_source_failed
        self.reader = DesiredStateReader(repo)
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
        self.source_error: str | None = None
        self.source_retry_after = 0.0
        """After a failed poll: the source's backoff before the next one (see :meth:`poll_delay`)."""
        self.source_hint: str | None = None
        """What to do about ``source_error`` (the error's hint), for the CLI."""
        self.images_stale = False
        """A new desired state arrived: resolve its image streams before the next pass."""
        self._commits: dict[str, CommitRef] = {}
        """Commit that last changed each manifest file, at the current head (cleared when it moves)."""
        self.poll_observers: list[Callable[[float, bool], None]] = []
        """(seconds, failed) after every poll of the config repo."""

    def poll(self, pushed: str | None = None) -> bool:
        """Ask git for news; load desired state only when the head moved. True when it did.

        ``pushed`` is the head a verified push event named (see :meth:`ConfigRepo.poll`).
        """
        started = time.perf_counter()
        try:
            result = self.repo.poll(pushed)
        except GitdeployError as problem:
            self._observe(time.perf_counter() - started, True)
            self._source_failed(problem)
            return False
        self._observe(time.perf_counter() - started, False)
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
        self.images_stale = True  # resolved by the next pass: a standby polls but writes nothing
        return True

    def _observe(self, seconds: float, failed: bool) -> None:
        for observer in self.poll_observers:
            observer(seconds, failed)

    def poll_delay(self, interval: float) -> float:
        """Seconds until the next poll: ``interval``, or after a failed poll the source's backoff
        (5 s doubling to 5 min, see :func:`~gitdeploy.source.gitcmd.compute_backoff`) when longer.

        >>> from types import SimpleNamespace
        >>> SourceTracker.poll_delay(SimpleNamespace(source_retry_after=0.0), 2.0)
        2.0
        >>> SourceTracker.poll_delay(SimpleNamespace(source_retry_after=20.0), 2.0)
        20.0
        """
        return max(interval, self.source_retry_after)

    def all_keys(self) -> list[AppKey]:
        return [*self.apps, *self.orphans]

    def _end_refusal(self) -> None:
        """The head is good again: every app said InvalidSettings, each says what it is now, and
        records not in git are orphans again."""
        log.info("[settings] commit %s is applied", (self.head or "")[:7], extra={"commit": self.head})
        self.refusal = self.refused_head = None
        now = self.clock.now()
        self.queue.add_all(self.all_keys(), now, new_input=True)
        self.queue.resync_soon(now, force=True)

    def _refuse(self, head: str, why: str) -> None:
        """Apply nothing of ``head``: every app keeps what it has and reports why."""
        self.refusal = (
            f"{why}; commit {head[:7]} is not applied: nothing of it deploys and nothing is pruned "
            "until this is fixed"
        )
        self.refused_head = head
        log.error("[settings] %s", self.refusal, extra={"commit": head})
        now = self.clock.now()
        with self.lock:
            self.queue.add_all([*self.apps, *self.problems, *self.orphans], now, new_input=True)
            self.queue.resync_soon(now)  # the apps that run, to say why nothing changes

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
        self._on_source_failed()

    def source_note(self) -> str:
        last = self.head[:7] if self.head else "none"
        return f"{self.source_error}; last synced commit {last}"

    def _apply_desired(self, desired: LoadResult, head: str) -> None:
        now = self.clock.now()
        changed, removed = changed_apps(self.desired.apps if self.desired else (), desired.apps)
        changed = [app for app in changed if self.mine(app.key)]
        unreadable = unreadable_files(desired)
        problems = self._problems_of(desired, unreadable)
        with self.lock:
            due = set(self.queue.held)  # a new commit is new input for apps held by a permanent error
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
                    due.add(app.key)
                apps[app.key] = app
            due.update(problems, self.problems)
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
                    due.add(key)
            due.update(self.orphans)  # whether they may be pruned depends on the whole commit
            self.queue.add_all(due, now, new_input=True)
            self.apps = apps
            self.problems = problems
            self.desired = desired
            self.head = head
            self._commits.clear()
            self.queue.resync_soon(now)  # the first load also looks for orphans from earlier runs

    def _problems_of(self, desired: LoadResult, unreadable: dict[str, list[str]]) -> dict[AppKey, str]:
        """The invalid apps of ``desired`` (of this controller's namespaces), with their problems."""
        rendered: dict[str, list[str]] = defaultdict(list)
        for diagnostic in desired.diagnostics:
            rendered[diagnostic.app].append(diagnostic.render())
        for file in sorted(unreadable):  # an app's own problems are logged with its status
            for problem in unreadable[file]:
                log.warning("[source] %s", problem)
        return {
            key: "; ".join(rendered[str(key)]) or "the manifest is invalid (see `gitdeploy validate`)"
            for key in desired.invalid_apps
            if self.mine(key)
        }

    def mine(self, key: AppKey) -> bool:
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

    def manifest_commit(self, app: App) -> str:
        """The sha of :meth:`commit_for`, or "" when git cannot say (the verdict is written anyway)."""
        if self.head is None:
            return ""
        try:
            return self.commit_for(app).sha
        except GitdeployError:
            return ""

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

    def prune_gate(self, prune: bool, limit: PruneLimit) -> PruneGate:
        """What the head decides for this pass's orphans: may they be pruned, and are they held."""
        with self.lock:
            pending = sum(1 for key in self.orphans if key not in self.protected)
            apps = len(self.apps)
        desired, head = self.desired, self.head or ""
        if self.refusal is not None or desired is None:
            return PruneGate(head, prune, prune_blocker(self.refusal or "no commit read yet", ()))
        return decide_gate(head, prune, desired.diagnostics, pending, apps, limit)
