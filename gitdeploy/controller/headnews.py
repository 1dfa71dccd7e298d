"""Pushes and polls shared by the replicas of ``gitdeploy run --sharding`` (the rules are
:mod:`gitdeploy.core.headnews`).

:class:`HeadNews` is one replica's part:

* an *announcer* thread writes the head announcement Lease (compare-and-swap on its
  resourceVersion; of two replicas announcing one commit, the second finds it named and drops
  its write) for a verified webhook push (:meth:`HeadNews.pushed`, called from the HTTP server's
  event loop: it only hands the commit over) and after a poll of this replica that moved its
  head (:meth:`HeadNews.after_poll`);
* a *watch* thread keeps one watch on that one object (listed, then watched by name; resumed
  where it broke off with a growing pause, 1 s doubling to 30 s; listed again after 410 Gone),
  and hands each announced commit this replica should fetch to ``fetch_now`` (the loop treats
  it as a push: it fetches the branch and deploys what the fetch brought);
* :meth:`HeadNews.period` is how long the loop waits between two polls of git: ``--interval``
  for the leader, many times that for the others while the watch works.

Nothing here is needed for correctness: an announcement that is lost, late, stale or forged
costs at most a fetch, or a wait until the next poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.leader import lease_problem
from gitdeploy.controller.listwatch import WatchHealth, follow_once, keep_watching
from gitdeploy.core.headnews import (
    Announced,
    HeadAnnouncement,
    ObservedAnnouncement,
    WriteAct,
    decide_write,
    poll_period,
    same_ref,
    should_announce,
    should_fetch,
)
from gitdeploy.errors import AlreadyExistsError, ConflictError, GitdeployError, NotFoundError

log = logging.getLogger("gitdeploy.sharding")

WATCH_SECONDS = 300
"""The server ends each watch after this long; it is resumed from where it was."""
WRITE_TRIES = 3


class HeadNews:
    """One replica's share of pushes and polls (see the module docstring). Thread-safe."""

    def __init__(
        self,
        cluster: Cluster,
        where: tuple[str, str],
        identity: str,
        ref: str,
        head: Callable[[], str | None],
        clock: Clock,
        fetch_now: Callable[[str], None],
    ) -> None:
        self.cluster = cluster
        self.namespace, self.name = where
        self.identity = identity
        self.ref = ref
        self.head = head
        """This replica's head as its last successful poll found it (None before the first)."""
        self.clock = clock
        """Wall time, for the announcement's ``at`` (what people read)."""
        self.fetch_now = fetch_now
        self.leading: Callable[[], bool] = lambda: False
        self.leader: Callable[[], str] = lambda: ""
        self.failed: Callable[[], bool] = lambda: False
        """Whether this replica's last poll of git failed."""
        self._lock = threading.Lock()
        self._seen: ObservedAnnouncement | None = None
        self._fetched_for = ""
        self._other_refs: set[tuple[str, str]] = set()
        """(replica, ref) of the announcements of other branches (each said once)."""
        self._polled: str | None = None
        self.health = WatchHealth(
            lambda: f"lease {self.lease}",
            "heads the other replicas find are fetched at once",
            "polling git at --interval",
            log,
            explain=lambda problem: lease_problem(problem, self.namespace),
        )
        self._pending: HeadAnnouncement | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.announced = 0
        """Announcements this replica wrote."""

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def watching(self) -> bool:
        return self.health.watching

    def period(self, interval: float) -> float:
        """Seconds until the next poll of git (:func:`~gitdeploy.core.headnews.poll_period`)."""
        return poll_period(
            interval,
            leading=self.leading(),
            leader_known=bool(self.leader()),
            watching=self.watching,
            failed=self.failed(),
        )

    # -- announcing ------------------------------------------------------------------------------

    def pushed(self, sha: str) -> None:
        """A verified webhook push named ``sha``: announce it at once (on the announcer thread;
        this returns at once, as the HTTP server's event loop needs)."""
        self._announce(sha, Announced.PUSH)

    def after_poll(self) -> None:
        """After each poll: announce the head when the poll moved it and the announcement does
        not name it yet."""
        head = self.head()
        with self._lock:
            moved, self._polled = head != self._polled, head
            seen = self._seen.announcement if self._seen is not None else None
            pending = self._pending
        if not moved or (pending is not None and pending.sha == head):
            return
        if head is not None and should_announce(seen, head=head, ref=self.ref):
            self._announce(head, Announced.POLL)

    def _announce(self, sha: str, source: Announced) -> None:
        with self._lock:
            self._pending = HeadAnnouncement(sha, self.ref, self.identity, self.clock.now(), source)
        self._wake.set()

    def _announcer(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                wanted, self._pending = self._pending, None
            if wanted is not None and not self._stop.is_set():
                self.write(wanted)

    def write(self, wanted: HeadAnnouncement) -> WriteAct:
        """Write ``wanted`` unless the object names its commit already; a conflict reads the
        object again and decides anew (up to :data:`WRITE_TRIES` times). Errors are logged (an
        announcement is never worth more than a warning), and the next poll announces again."""
        with self._lock:
            current = self._seen
        try:
            for _ in range(WRITE_TRIES):
                if current is None:
                    current = self.cluster.head_leases.read(self.namespace, self.name)
                if decide_write(current.announcement if current else None, wanted) is WriteAct.DROP:
                    return WriteAct.DROP
                version = current.resource_version if current is not None else None
                try:
                    written = self.cluster.head_leases.write(self.namespace, self.name, wanted, version)
                except NotFoundError as gone:
                    if version is None:  # a create: the namespace is missing
                        raise lease_problem(gone, self.namespace) from None
                    current = None  # another replica deleted it: read again
                    continue
                except (ConflictError, AlreadyExistsError):
                    current = None  # another replica wrote first: read again
                    continue
                self._remember(written)
                self.announced += 1
                log.info(
                    "announced %s of %s (%s) in lease %s",
                    wanted.sha[:12],
                    self.ref,
                    wanted.source,
                    self.lease,
                )
                return WriteAct.WRITE
        except GitdeployError as problem:
            log.warning(
                "could not announce %s in lease %s: %s; again after the next poll",
                wanted.sha[:12],
                self.lease,
                problem,
            )
        else:
            log.info(
                "announcing %s: lease %s kept changing; again after the next poll",
                wanted.sha[:12],
                self.lease,
            )
        with self._lock:
            self._polled = None  # the next poll announces its head unless the object names it by then
        return WriteAct.DROP

    def _remember(self, observed: ObservedAnnouncement | None) -> None:
        """What the object says now, as this replica last wrote or watched it (None: deleted)."""
        with self._lock:
            self._seen = observed

    # -- watching --------------------------------------------------------------------------------

    def noticed(self, observed: ObservedAnnouncement) -> None:
        """The watch saw the object (listed, added or changed): fetch at once if it names a commit
        of this branch that another replica announced and this one does not have."""
        self._remember(observed)
        news = observed.announcement
        if news is not None and news.by != self.identity and not same_ref(news.ref, self.ref):
            self._other_ref(news)
        with self._lock:
            fetch = should_fetch(
                news, identity=self.identity, ref=self.ref, head=self.head(), fetched_for=self._fetched_for
            )
            if fetch and news is not None:
                self._fetched_for = news.sha
        if fetch and news is not None:
            log.info("%s announced %s (%s): fetching now", news.by or "someone", news.sha[:12], news.source)
            self.fetch_now(news.sha)

    def _other_ref(self, news: HeadAnnouncement) -> None:
        """Another replica of the fleet follows another branch: say so once per replica and
        branch (its apps would change commits each time they move between the two)."""
        with self._lock:
            told = (news.by, news.ref) in self._other_refs
            self._other_refs.add((news.by, news.ref))
        if not told:
            log.warning(
                "replica %s follows %s, this replica %s: the replicas sharing the Lease %s should all "
                "follow the same --repo, --branch and --path (an app that moves between them changes "
                "commits)",
                news.by or "(unnamed)",
                news.ref,
                self.ref,
                self.lease,
            )

    def _watcher(self) -> None:
        keep_watching(
            self._stop,
            lambda version, reached: follow_once(
                f"watch of lease {self.lease}",
                lambda: self.cluster.head_leases.list_at(self.namespace, self.name),
                lambda since: self.cluster.head_leases.watch(
                    self.namespace, self.name, since, timeout_seconds=WATCH_SECONDS
                ),
                version,
                self.noticed,
                deleted=lambda _gone: self._remember(None),
                reached=reached,
            ),
            self.health,
        )

    # -- in the background -----------------------------------------------------------------------

    def start(self) -> None:
        for name, target in (("head-watch", self._watcher), ("head-announcer", self._announcer)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        """Stop both threads (a watch in progress ends with the process: its thread is a daemon)."""
        self._stop.set()
        self._wake.set()
