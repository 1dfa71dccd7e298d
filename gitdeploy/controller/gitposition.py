"""Whether this process's git head is behind the commit an app's record names, so that it waits
for git instead of rolling the app back to an older commit (:class:`GitPosition`).

Another process may have rolled out a commit this one has not fetched yet: the replica that
owned the app before a move (``run --sharding``), or the leader before a takeover (leader
election), when this process's polls failed meanwhile (the git server unreachable from here
alone, or its backoff after failures). Acting then on the desired state of its own older head
would roll out that older commit as a new revision: it waits instead, until its poll reaches the
commit, or a poll finds that the branch does not hold it (moved back by a force push, or the
commit is of another branch). While its polls fail, it waits: the app stays as it runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gitdeploy.clock import Clock
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import AppKey
from gitdeploy.errors import GitdeployError
from gitdeploy.source.repo import ConfigRepo

log = logging.getLogger("gitdeploy.loop")

RECENT_COMMITS = 10_000
"""How many of the head's newest commits are known at once to be no newer than it (a set of
about 1 MiB, one ``git rev-list`` per head); an older one costs a ``git merge-base``."""


class GitPosition:
    """Whether this process's git head is behind the commit an app's record names: then it waits
    for its poll to catch up instead of rolling the app back to an older commit (see the module
    docstring), and ``fetch_now`` is told of the commit once: the loop fetches the branch at
    once, as for a push, rather than waiting for a poll (with ``run --sharding`` a replica that
    does not lead polls only every ten intervals).

    It waits for a commit newer than its head only until a poll that began after it found the
    commit newer has looked at the branch: if the branch then does not hold the commit, the branch
    was moved back (a force push), and the app follows the branch's head as everywhere else. A
    commit missing from its mirror is waited for the same way: once a poll that began after it
    was first missed fetched the branch without it, the branch does not hold it. :meth:`polled`
    is to be told of every poll."""

    def __init__(
        self,
        repo: ConfigRepo,
        head: Callable[[], str | None],
        clock: Clock,
        recheck: float = 2.0,
    ) -> None:
        self.repo = repo
        self.head = head
        self.clock = clock
        self.recheck = recheck
        """How soon an app that waits is looked at again (seconds)."""
        self._unknown_since: dict[str, float] = {}
        self._newer_since: dict[str, float] = {}
        """When this replica first found each commit newer than its head (its clock)."""
        self._looked_at = float("-inf")
        """When the last successful poll began (its clock): the branch's head is known as of then."""
        self._left: set[tuple[str, str]] = set()
        """(commit, branch head): the branch at that head does not hold that commit (said once)."""
        self._newer: dict[tuple[str, str], bool] = {}
        """Whether a commit is newer than a head, by (head, commit): a failover claims thousands
        of apps whose records name a few commits, and each answer is a ``git merge-base``."""
        self._recent: tuple[str, frozenset[str]] = ("", frozenset())
        """The head, and its newest :data:`RECENT_COMMITS` commits (itself and its ancestors):
        the commit an app's record names is mostly one of them, older than the head, which is
        answered without a ``git merge-base`` (every app of a resync names its own last commit)."""
        self.fetch_now: Callable[[str], None] = lambda _sha: None
        self._told: dict[AppKey, str] = {}
        """The commit each app last waited for (said once in the log)."""

    def polled(self, seconds: float, failed: bool) -> None:
        """A poll of git ended after ``seconds`` (a poll observer of the source tracker)."""
        if not failed:
            self._looked_at = max(self._looked_at, self.clock.now() - seconds)

    def waits(self, key: AppKey, record: AppRecord) -> bool:
        """Whether this process (a new owner, a new leader) waits for its head to reach the commit
        ``record`` names before it acts on ``key`` (said once per commit in the log)."""
        sha = self.behind(record)
        if sha and self._told.get(key) != sha:
            why = (
                "which this replica has not fetched yet"
                if sha in self._unknown_since
                else "newer than its head"
            )
            log.info("[%s] waits: its record names commit %s, %s", key, sha[:12], why)
        if sha:
            self._told[key] = sha
        else:  # MEMORY: only the apps that wait are remembered, not every app a pass looked at
            self._told.pop(key, None)
        return bool(sha)

    def behind(self, record: AppRecord) -> str:
        """The commit of ``record`` this process's head is behind ('' when it is not)."""
        head = self.head()
        latest = max(record.revisions, key=lambda e: e.revision, default=None)
        named = {record.last_synced_commit, latest.commit.sha if latest is not None else ""} - {"", head}
        for sha in sorted(named):
            if head is None:
                return sha
            try:
                newer = self._is_newer(head, sha)
            except GitdeployError:  # not fetched yet (its polls may be failing), or not on the branch
                if self._looked_at <= self._first_seen(self._unknown_since, sha):
                    return sha
                self._say_left(sha, self.repo.head, "does not hold (a poll fetched the branch without it)")
                continue
            if newer and not self._left_branch(sha):
                return sha
        return ""

    def _first_seen(self, since: dict[str, float], sha: str) -> float:
        """When ``sha`` was first waited for (now, telling ``fetch_now`` of it, if it was not)."""
        if sha not in since:
            if len(since) >= 1024:  # commits come and go: keep the recent ones
                since.clear()
            since[sha] = self.clock.now()
            self.fetch_now(sha)
        return since[sha]

    def _left_branch(self, sha: str) -> bool:
        """Whether the branch no longer holds ``sha``, as a poll that began after this replica
        found it newer than its head saw the branch (False until such a poll ended)."""
        since = self._first_seen(self._newer_since, sha)
        branch = self.repo.head
        if self._looked_at <= since or branch is None:
            return False
        if (sha, branch) in self._left:
            return True
        try:
            if self.repo.is_ancestor(sha, branch):
                return False  # the branch holds it: this replica has yet to load it
        except GitdeployError:
            return False
        self._say_left(sha, branch, "no longer holds (it was moved back: a force push)")
        return True

    def _say_left(self, sha: str, branch: str | None, why: str) -> None:
        """Warn once that the branch at ``branch`` does not hold ``sha``, ``why``."""
        if (sha, branch or "") in self._left:
            return
        if len(self._left) >= 1024:
            self._left.clear()
        self._left.add((sha, branch or ""))
        log.warning(
            "records name commit %s, which the branch %s; their apps follow the branch's head %s",
            sha[:12],
            why,
            (branch or "(none)")[:12],
        )

    def _is_newer(self, head: str, sha: str) -> bool:
        if sha in self._recent_commits(head):
            return False
        newer = self._newer.get((head, sha))
        if newer is None:
            newer = self.repo.is_ancestor(head, sha)
            if len(self._newer) >= 1024:  # heads come and go: keep the answers of the recent ones
                self._newer.clear()
            self._newer[head, sha] = newer
        return newer

    def _recent_commits(self, head: str) -> frozenset[str]:
        if self._recent[0] != head:
            try:
                self._recent = (head, self.repo.recent_commits(head, RECENT_COMMITS))
            except GitdeployError:  # the head is not in the mirror (yet): each commit is asked
                return frozenset()
        return self._recent[1]


__all__ = ["GitPosition"]
