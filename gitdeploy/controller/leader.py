"""Leader election for ``gitdeploy run`` through a ``coordination.k8s.io/v1`` Lease.

:class:`LeaderElector` tries to acquire or renew the Lease every retry period on its own thread (the
rules are :mod:`gitdeploy.core.lease`); the loop asks :meth:`LeaderElector.is_leader` before each pass
and acts only while it is True, and the runner asks it again before every write for an app
(:attr:`~gitdeploy.controller.rollouts.RolloutRunner.leading`). What a leader does when it can no
longer renew: the pass in progress writes nothing more (each write is refused as a transient error),
then the loop stops acting and the elector keeps trying as a standby. ``is_leader`` turns False by
itself once the renew deadline passed, even when the elector's own request hangs, so a leader stops
acting before the Lease could expire.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.core.lease import (
    JITTER_FACTOR,
    LeaseTimings,
    ObservedLease,
    Role,
    decide_lease,
    holder_pid_to_check,
    observed_since,
    release_lease,
    renew_deadline_passed,
    seen_since,
)
from gitdeploy.errors import AlreadyExistsError, ConflictError, ForbiddenError, GitdeployError, NotFoundError

log = logging.getLogger("gitdeploy.leader")

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_LEASE_NAMESPACE = "gitdeploy-system"


def default_lease_namespace(in_cluster: bool, namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The pod's own namespace when running in a pod, else ``gitdeploy-system``."""
    if in_cluster:
        try:
            found = namespace_file.read_text(encoding="utf-8").strip()
        except OSError:
            found = ""
        if found:
            return found
    return DEFAULT_LEASE_NAMESPACE


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def new_identity() -> str:
    """``<pod or host name>_<boot id>.<pid>_<random>``: unique even when a restarted process keeps
    its host name and process id (a restarted container), and telling a process of this machine
    whether a holder of the Lease was one of its own (:func:`~gitdeploy.core.lease.same_machine_pid`)."""
    try:
        boot = BOOT_ID.read_text().strip().replace("-", "")[:8]
    except OSError:
        boot = "noboot"
    host = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{host}_{boot}.{os.getpid()}_{secrets.token_hex(4)}"


def process_runs(pid: int) -> bool:
    """Whether another process ``pid`` runs on this machine (this process's own id: the holder was
    an earlier process with the same id, as after a container restart, so it does not)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def holder_is_gone(holder: str, identity: str, runs: Callable[[int], bool] = process_runs) -> bool:
    """Whether the holder of a Lease was a process of this machine that no longer runs (a
    restarted ``gitdeploy run`` finding its predecessor's Lease: gone at once, not only once the
    Lease expired). The leader Lease and the member Leases share this rule
    (:func:`~gitdeploy.core.lease.holder_pid_to_check`, then ``runs``; its Lease's validity:
    :func:`~gitdeploy.core.lease.seen_since`)."""
    pid = holder_pid_to_check(holder, identity)
    return pid is not None and not runs(pid)


def lease_problem(problem: GitdeployError, namespace: str) -> GitdeployError:
    """``problem`` of a request for a Lease in ``namespace``, with a hint that says what to do:
    a NotFoundError of a Lease this process reads or creates means the namespace is missing; a
    ForbiddenError, that the Role of deploy/leader-election.yaml is not bound there (the general
    403 hint names the Role of the managed namespaces, which has no Leases)."""
    if isinstance(problem, NotFoundError):
        return NotFoundError(problem.message, hint=f"create namespace {namespace}, or pass --lease-namespace")
    if isinstance(problem, ForbiddenError):
        hint = (
            f"apply deploy/leader-election.yaml's Role and RoleBinding in namespace {namespace} (get, "
            "list, watch, create, update and delete on Leases), or pass --lease-namespace"
        )
        return ForbiddenError(problem.message, hint=hint)
    return problem


class LeaderElector:
    """One process's part in leader election on the Lease ``namespace/name``. Thread-safe."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        identity: str,
        clock: Clock,
        timings: LeaseTimings,
        on_change: Callable[[Role], None] | None = None,
        runs: Callable[[int], bool] = process_runs,
    ) -> None:
        self.cluster = cluster
        self._runs = runs
        """Whether a process of this machine runs (the holder of a Lease this machine wrote)."""
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.clock = clock
        self.timings = timings
        self.on_change = on_change
        """Called (on the elector's thread) when the role changes, and with the first decision."""
        self._lock = threading.Lock()
        self._role: Role | None = None
        self._leader = ""
        self._observed: ObservedLease | None = None
        self._observed_at = 0.0
        self._last_renewed = 0.0
        self._problem = ""
        self._told_of: tuple[str, bool] = ("", False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def decided(self) -> bool:
        """True once this process knows whether it leads (the readiness condition)."""
        with self._lock:
            return self._role is not None

    @property
    def leader(self) -> str:
        """The holder this process last saw ('' when unknown or free)."""
        with self._lock:
            return self._leader

    def is_leader(self) -> bool:
        """True while this process holds the Lease and renewed it within the renew deadline."""
        with self._lock:
            return self._role is Role.LEADER and not renew_deadline_passed(
                self._last_renewed, self.clock.now(), self.timings.renew_deadline
            )

    # -- one try ---------------------------------------------------------------------------------

    def step(self) -> None:
        """Read the Lease once and acquire, renew or stand by (client-go's ``tryAcquireOrRenew``)."""
        now = self.clock.now()
        try:
            current = self.cluster.read_lease(self.namespace, self.name, timeout=self.timings.renew_deadline)
            self._observe(current, now)
            if current is not None:  # a holder gone at once expired (it can never renew again)
                gone = self._holder_is_gone(current.spec.holder)
                self._observed_at = seen_since(
                    self._observed_at, now, current.spec.duration_seconds, holder_gone=gone
                )
            decision = decide_lease(
                current.spec if current else None,
                identity=self.identity,
                now=now,
                observed_at=self._observed_at,
                lease_duration=self.timings.lease_seconds,
            )
            if decision.write is not None:
                written = self.cluster.write_lease(
                    self.namespace,
                    self.name,
                    decision.write,
                    current.resource_version if current else None,
                    timeout=self.timings.renew_deadline,
                )
                self._observe(written, now)
                with self._lock:
                    self._last_renewed = now
        except GitdeployError as problem:
            self._failed(problem, now)
            return
        self._problem = ""
        self._become(decision.role, decision.leader)

    def _observe(self, lease: ObservedLease | None, now: float) -> None:
        """Remember ``lease``; a new resourceVersion restarts its validity on this process's clock."""
        version = lease.resource_version if lease else None
        seen = self._observed.resource_version if self._observed else None
        self._observed_at = observed_since(
            (seen or "", self._observed_at) if self._observed_at else None, version or "", now
        )
        self._observed = lease

    def _holder_is_gone(self, holder: str) -> bool:
        """Whether ``holder`` was a process of this machine that no longer runs (a restarted
        ``gitdeploy run`` finding its predecessor's Lease): said once in the log either way."""
        pid = holder_pid_to_check(holder, self.identity)
        if pid is None:
            return False
        gone = holder_is_gone(holder, self.identity, self._runs)
        if (holder, gone) != self._told_of:
            self._told_of = (holder, gone)
            what = "no longer runs; taking it over" if gone else "still runs; standing by"
            log.info("lease %s: its holder %s, process %d of this machine, %s", self.lease, holder, pid, what)
        return gone

    def _failed(self, problem: GitdeployError, now: float) -> None:
        if isinstance(problem, ConflictError | AlreadyExistsError):
            log.debug("lease %s: another process wrote it first; re-reading", self.lease)
        elif problem.message != self._problem:
            self._problem = problem.message
            log.warning("lease %s: %s", self.lease, lease_problem(problem, self.namespace))
        with self._lock:
            lost = self._role is Role.LEADER and renew_deadline_passed(
                self._last_renewed, now, self.timings.renew_deadline
            )
        if lost:
            log.warning(
                "lost the lease %s: not renewed for %.1f s; stop acting after the step in progress",
                self.lease,
                now - self._last_renewed,
            )
            self._become(Role.STANDBY, "")

    def _become(self, role: Role, leader: str) -> None:
        with self._lock:
            previous, previous_leader = self._role, self._leader
            self._role, self._leader = role, leader
        if role is Role.LEADER and previous is not Role.LEADER:
            log.info("became leader (lease %s, identity %s)", self.lease, self.identity)
        elif role is Role.STANDBY and (previous is not Role.STANDBY or leader != previous_leader):
            if previous is Role.LEADER and leader:
                log.warning(
                    "lost the lease %s to %s: stop acting after the step in progress", self.lease, leader
                )
            log.info(
                "standby: leader is %s (lease %s); taking over if it is not renewed for %d s",
                leader or "unknown",
                self.lease,
                self.timings.lease_seconds,
            )
        if role is not previous and self.on_change is not None:
            self.on_change(role)

    # -- in the background -----------------------------------------------------------------------

    def start(self) -> None:
        """Try every retry period on a daemon thread until :meth:`close`."""
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.step()
            wait = self.timings.retry_period
            if not self.is_leader():
                wait *= random.uniform(1.0, JITTER_FACTOR)
            self._stop.wait(wait)

    def close(self) -> None:
        """Stop trying, and release the Lease when holding it (graceful shutdown)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timings.renew_deadline + self.timings.retry_period)
        self.release()

    def release(self) -> bool:
        """Give the Lease up so a standby takes over at its next try; True when released."""
        with self._lock:
            held = self._role is Role.LEADER
            self._role = Role.STANDBY if held else self._role
        observed = self._observed
        if not held or observed is None or observed.spec.holder != self.identity:
            return False
        try:
            self.cluster.write_lease(
                self.namespace,
                self.name,
                release_lease(observed.spec, self.clock.now()),
                observed.resource_version,
                timeout=self.timings.retry_period,
            )
        except GitdeployError as problem:
            log.warning("could not release the lease %s (%s); it expires by itself", self.lease, problem)
            return False
        finally:
            if self.on_change is not None:
                self.on_change(Role.STANDBY)
        log.info("released the lease %s", self.lease)
        return True
