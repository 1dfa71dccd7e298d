"""Membership of ``gitdeploy run --sharding``: each replica's own member Lease, and the live members.

:class:`Membership` renews this replica's member Lease (``gitdeploy-member-<hash of identity>``,
labelled ``gitdeploy.io/member=true``) every retry period on its own thread, and lists the member
Leases in the same namespace. The rules are :mod:`gitdeploy.core.lease` (a Lease is valid for its
duration after *this process saw it change*; a holder of this machine that no longer runs is gone
at once) and :mod:`gitdeploy.core.sharding` (who owns which app).

A second thread watches the member Leases (:mod:`gitdeploy.controller.memberwatch`): a renewal
counts from when the watch delivered it, not from the next list, and a member Lease deleted makes
the next list come at once.

Fencing: :meth:`Membership.fresh` is True only while this replica renewed its Lease within the
renew deadline, by its own monotonic clock, and :attr:`Membership.term` grows each time that
lapsed. The loop checks both before every write for an app: a replica paused (SIGSTOP) past its
renew deadline refuses, on resume, the writes of the step it was in, even once its Lease is
renewed. Because ``renew deadline < lease duration``, it stopped before any other replica could
take its apps over.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.leader import holder_is_gone, lease_problem, process_runs
from gitdeploy.controller.memberwatch import MemberWatch
from gitdeploy.core.lease import (
    JITTER_FACTOR,
    LeaseTimings,
    ObservedLease,
    decide_lease,
    observed_since,
    renew_deadline_passed,
    seen_since,
)
from gitdeploy.core.sharding import (
    MEMBER_LABEL,
    STALE_AFTER,
    SeenMember,
    live_members,
    member_lease_name,
    next_expiry,
    stale_members,
)
from gitdeploy.errors import ConflictError, GitdeployError, NotFoundError

log = logging.getLogger("gitdeploy.sharding")

EXPIRY_MARGIN = 0.05
"""Seconds after a member's Lease expires at which to look again (so the look comes after it)."""


class Membership:
    """This replica's member Lease and its view of the live members. Thread-safe."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        identity: str,
        clock: Clock,
        monotonic: Clock,
        timings: LeaseTimings,
        on_change: Callable[[frozenset[str]], None] | None = None,
        runs: Callable[[int], bool] = process_runs,
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.identity = identity
        self.name = member_lease_name(identity)
        self.clock = clock
        """Wall time, for the Lease's ``renewTime`` (what people read)."""
        self.monotonic = monotonic
        """This process's monotonic clock: validity of the Leases seen, and the renew deadline."""
        self.timings = timings
        self.on_change = on_change
        """Called (on the membership thread) with the live members whenever they change."""
        self._runs = runs
        self.leading: Callable[[], bool] = lambda: False
        """Whether this replica holds the leader Lease: the leader deletes the member Leases left
        behind by replicas that did not shut down cleanly (:func:`stale_members`)."""
        self._lock = threading.Lock()
        self._own: ObservedLease | None = None
        self._last_renewed: float | None = None
        self._term = 0
        """Grows each time the fence lapsed (a renewal came after the renew deadline had passed):
        what this replica admitted before may have been taken over meanwhile."""
        self._seen: dict[str, tuple[str, float, ObservedLease]] = {}
        """Each member Lease by name: its resourceVersion, since when (monotonic) it is so, and it."""
        self._live: frozenset[str] = frozenset()
        self._told: frozenset[str] | None = None
        self._problem = ""
        self._stop = threading.Event()
        self._wake = threading.Event()
        self.watch = MemberWatch(cluster, namespace, self.name, monotonic, self._wake.set)
        self._thread: threading.Thread | None = None

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"

    def fresh(self) -> bool:
        """True while this replica renewed its member Lease within the renew deadline (fencing)."""
        with self._lock:
            last = self._last_renewed
        return last is not None and not renew_deadline_passed(
            last, self.monotonic.now(), self.timings.renew_deadline
        )

    @property
    def term(self) -> int:
        with self._lock:
            return self._term

    def members(self) -> frozenset[str]:
        """The live members as last listed (this replica among them only while :meth:`fresh`)."""
        with self._lock:
            live = self._live
        return live if self.fresh() else live - {self.identity}

    # -- one try ---------------------------------------------------------------------------------

    def step(self) -> None:
        """Renew this replica's member Lease, then list the members."""
        started = self.monotonic.now()
        try:
            self._renew(started)
            listed = self.cluster.list_leases(
                self.namespace, f"{MEMBER_LABEL}=true", timeout=self.timings.renew_deadline
            )
        except GitdeployError as problem:
            if problem.message != self._problem:
                self._problem = problem.message
                log.warning("member lease %s: %s", self.lease, lease_problem(problem, self.namespace))
            self._tell(self.members())
            return
        self._problem = ""
        now = self.monotonic.now()
        heard = self.watch.heard_at({name: lease.resource_version for name, lease in listed.items()})
        seen: dict[str, tuple[str, float, ObservedLease]] = {}
        for name, lease in listed.items():
            before = self._seen.get(name)
            at = min(now, heard.get(name, now))
            since = seen_since(
                observed_since(before[:2] if before else None, lease.resource_version, at),
                now,
                lease.spec.duration_seconds,
                holder_gone=holder_is_gone(lease.spec.holder, self.identity, self._runs),
            )
            seen[name] = (lease.resource_version, since, lease)
        if self.leading():
            self._delete_stale(seen, now)
        live = live_members([SeenMember(entry[2].spec, entry[1]) for entry in seen.values()], now)
        with self._lock:
            self._seen = seen
            self._live = live | ({self.identity} if self._own is not None else frozenset())
        self._tell(self.members())

    def _delete_stale(self, seen: dict[str, tuple[str, float, ObservedLease]], now: float) -> None:
        """Delete the member Leases unchanged for :data:`STALE_AFTER` × their duration (dropped
        from ``seen``). Each delete names the resourceVersion seen: a replica that renewed in
        between (one resumed after a pause) keeps its Lease."""
        members = {name: SeenMember(entry[2].spec, entry[1]) for name, entry in seen.items()}
        for name in stale_members(members, now):
            if name == self.name:
                continue
            version, since, lease = seen[name]
            try:
                self.cluster.delete_lease(self.namespace, name, version, timeout=self.timings.renew_deadline)
            except (ConflictError, NotFoundError):  # renewed or deleted meanwhile: read it again
                continue
            except GitdeployError as problem:
                log.warning("could not delete the member lease %s/%s: %s", self.namespace, name, problem)
                continue
            del seen[name]
            log.info(
                "deleted the member lease %s/%s of %s: not renewed for %.0f s (over %d × its %d s)",
                self.namespace,
                name,
                lease.spec.holder or "nobody",
                now - since,
                STALE_AFTER,
                lease.spec.duration_seconds,
            )

    def _renew(self, started: float) -> None:
        """Create or renew the member Lease (this replica's alone: a conflict means it was changed
        by hand, and the next try reads it again; gone means the leader deleted it after it went
        unrenewed for long, as after a pause: it is created anew)."""
        own = self._own
        if own is None:
            own = self.cluster.read_lease(self.namespace, self.name, timeout=self.timings.renew_deadline)
        try:
            try:
                written = self._write_own(own)
            except NotFoundError:
                if own is None:  # the namespace is missing
                    raise
                log.info("member lease %s: deleted while not renewed; creating it anew", self.lease)
                written = self._write_own(None)
        except GitdeployError:
            self._own = None  # read it again at the next try
            raise
        with self._lock:
            last = self._last_renewed
            lapsed = last is not None and renew_deadline_passed(last, started, self.timings.renew_deadline)
            if lapsed:
                self._term += 1  # paused or cut off past the deadline: earlier admissions are void
            self._own = written
            self._last_renewed = started  # when the try began: the Lease may be older than now
        if lapsed and last is not None:
            log.warning(
                "member lease %s: renewed again after %.0f s, past the %g s renew deadline (this "
                "process was paused or could not reach the API server); it acted on no app meanwhile, "
                "and rejoins: apps that moved to other replicas come back as to a new member",
                self.lease,
                started - last,
                self.timings.renew_deadline,
            )

    def _write_own(self, own: ObservedLease | None) -> ObservedLease:
        decision = decide_lease(
            own.spec if own else None,
            identity=self.identity,
            now=self.clock.now(),
            observed_at=self.monotonic.now(),
            lease_duration=self.timings.lease_seconds,
        )
        assert decision.write is not None  # a member Lease is named after its holder
        return self.cluster.write_lease(
            self.namespace,
            self.name,
            decision.write,
            own.resource_version if own else None,
            timeout=self.timings.renew_deadline,
            labels={MEMBER_LABEL: "true"},
        )

    def _tell(self, live: frozenset[str]) -> None:
        with self._lock:
            previous, self._told = self._told, live
        if live == previous:
            return
        log.info("members: %s", ", ".join(sorted(live)) or "none (this replica's Lease is not fresh)")
        if self.on_change is not None:
            self.on_change(live)

    # -- in the background -----------------------------------------------------------------------

    def start(self) -> None:
        """Renew and list every retry period, and watch the member Leases, on daemon threads
        until :meth:`close`."""
        self._thread = threading.Thread(target=self._run, name="membership", daemon=True)
        self._thread.start()
        watch = threading.Thread(target=self.watch.run, args=(self._stop,), name="member-watch", daemon=True)
        watch.start()  # it ends with the process if a watch is under way at close

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            self.step()
            self._wake.wait(self.next_wait())

    def next_wait(self) -> float:
        """Seconds until the next try: a retry period (with jitter), or less when a member's Lease
        expires sooner (:func:`~gitdeploy.core.sharding.next_expiry`): then just after it."""
        wait = self.timings.retry_period * random.uniform(1.0, JITTER_FACTOR) / JITTER_FACTOR
        with self._lock:
            seen = [SeenMember(lease.spec, since) for _, since, lease in self._seen.values()]
        expiry = next_expiry(seen, self.monotonic.now(), self.identity)
        return wait if expiry is None else min(wait, expiry + EXPIRY_MARGIN)

    def close(self) -> None:
        """Stop renewing, and delete the member Lease (clean shutdown: the others take this
        replica's apps over at their next try instead of after the Lease expired)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timings.renew_deadline + self.timings.retry_period)
        with self._lock:
            own, self._own, self._last_renewed = self._own, None, None
        if own is None:
            return
        try:
            self.cluster.delete_lease(
                self.namespace, self.name, own.resource_version, timeout=self.timings.retry_period
            )
        except GitdeployError as problem:
            log.warning(
                "could not delete the member lease %s (%s); it expires by itself", self.lease, problem
            )
            return
        log.info("released the member lease %s", self.lease)
