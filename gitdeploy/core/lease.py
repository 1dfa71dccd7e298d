"""Leader election rules: who may act, given the ``coordination.k8s.io/v1`` Lease (pure, no clock).

Two ``gitdeploy run`` against one cluster must never act at once. They share one Lease; the holder
renews it every retry period, the others stand by and take it over once it expired. The rules follow
client-go's ``leaderelection`` package:

* A Lease is valid for ``leaseDurationSeconds`` after this process *saw it change* (its own clock,
  never the writer's ``renewTime``, so clock skew between machines does not matter).
* Taking over a Lease another process held increments ``leaseTransitions``; renewing keeps
  ``acquireTime`` and the count.
* A leader that could not renew for ``renew_deadline`` seconds stops acting (it goes back to standby);
  ``renew_deadline < lease_duration`` leaves it time to finish the step in progress before anyone else
  may take over.
* A leader that shuts down releases the Lease (no holder, duration 1 s), so a standby takes over at
  its next try instead of waiting for the Lease to expire.

Worked example (lease of 15 s; process ``b`` first saw ``a``'s Lease at t=100):

>>> held = LeaseSpec("a", 15, acquire_time=90.0, renew_time=100.0, transitions=2)
>>> decide_lease(held, identity="b", now=110.0, observed_at=100.0, lease_duration=15).role
<Role.STANDBY: 'standby'>
>>> taken = decide_lease(held, identity="b", now=115.0, observed_at=100.0, lease_duration=15)
>>> taken.role, taken.write.holder, taken.write.transitions, taken.write.acquire_time
(<Role.LEADER: 'leader'>, 'b', 3, 115.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import Enum

from gitdeploy.errors import PermanentError

DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2
"""A standby waits between one and 1.2 retry periods; the renew deadline must allow one such wait."""


@dataclass(frozen=True)
class LeaseSpec:
    """The ``spec`` of a Lease. ``holder`` is empty when nobody holds it (released or never taken)."""

    holder: str
    duration_seconds: int
    acquire_time: float | None = None
    renew_time: float | None = None
    transitions: int = 0


@dataclass(frozen=True)
class ObservedLease:
    """A Lease as read from the cluster: its spec and the ``resourceVersion`` an update must name."""

    spec: LeaseSpec
    resource_version: str


class Role(Enum):
    LEADER = "leader"
    STANDBY = "standby"


@dataclass(frozen=True)
class LeaseDecision:
    """What to do now: the role to take and, when leading, the spec to write (create or update).

    ``leader`` is the holder to name in logs (this process when it leads, '' when nobody holds it).
    ``acquired`` is True when the write starts a new term (a new Lease or a takeover), not a renewal.
    """

    role: Role
    leader: str
    write: LeaseSpec | None = None
    acquired: bool = False


@dataclass(frozen=True)
class LeaseTimings:
    """The three durations of leader election, in seconds, checked like client-go checks them.

    >>> LeaseTimings(2, 1.5, 0.2).lease_seconds, LeaseTimings(1.5, 1, 0.2).lease_seconds
    (2, 2)
    >>> LeaseTimings(10, 10, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gitdeploy.errors.PermanentError: --renew-deadline (10 s) must be shorter than --lease-duration (10 s) ...
    """

    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD

    def __post_init__(self) -> None:
        if self.retry_period <= 0:
            raise PermanentError(
                f"--retry-period ({self.retry_period:g} s) must be positive", hint="for example 2s"
            )
        if self.renew_deadline >= self.lease_duration:
            raise PermanentError(
                f"--renew-deadline ({self.renew_deadline:g} s) must be shorter than "
                f"--lease-duration ({self.lease_duration:g} s)",
                hint="a leader must stop acting before a standby may take over: "
                "for example --lease-duration 15s --renew-deadline 10s",
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise PermanentError(
                f"--renew-deadline ({self.renew_deadline:g} s) must be longer than "
                f"{JITTER_FACTOR:g} × --retry-period ({self.retry_period:g} s)",
                hint="a leader must get more than one try to renew: for example --renew-deadline 10s "
                "--retry-period 2s",
            )

    @property
    def lease_seconds(self) -> int:
        """``leaseDurationSeconds`` to write: whole seconds, rounded up."""
        return max(1, math.ceil(self.lease_duration))


def decide_lease(
    current: LeaseSpec | None, *, identity: str, now: float, observed_at: float, lease_duration: int
) -> LeaseDecision:
    """Lead (create, renew or take over the Lease) or stand by, as client-go's ``tryAcquireOrRenew``.

    ``observed_at`` is when this process first saw ``current`` as it is (its own clock).

    >>> free = decide_lease(None, identity="b", now=50.0, observed_at=50.0, lease_duration=15)
    >>> free.role, free.acquired, free.write
    (<Role.LEADER: 'leader'>, True, LeaseSpec(holder='b', duration_seconds=15, acquire_time=50.0, \
renew_time=50.0, transitions=0))
    >>> mine = LeaseSpec("b", 15, acquire_time=50.0, renew_time=50.0, transitions=0)
    >>> decide_lease(mine, identity="b", now=52.0, observed_at=50.0, lease_duration=15).write
    LeaseSpec(holder='b', duration_seconds=15, acquire_time=50.0, renew_time=52.0, transitions=0)
    """
    if current is None:
        spec = LeaseSpec(identity, lease_duration, acquire_time=now, renew_time=now, transitions=0)
        return LeaseDecision(Role.LEADER, identity, spec, acquired=True)
    if current.holder == identity:
        renewed = replace(current, duration_seconds=lease_duration, renew_time=now)
        return LeaseDecision(Role.LEADER, identity, renewed)
    if current.holder and now < observed_at + current.duration_seconds:
        return LeaseDecision(Role.STANDBY, current.holder)
    taken = LeaseSpec(
        identity, lease_duration, acquire_time=now, renew_time=now, transitions=current.transitions + 1
    )
    return LeaseDecision(Role.LEADER, identity, taken, acquired=True)


def observed_since(previous: tuple[str, float] | None, version: str | None, now: float) -> float:
    """When this process first saw a Lease as it is now: ``previous`` (the resourceVersion it saw
    last, and since when) holds while the version is the same; a new one restarts at ``now``.
    Shared by the leader elector and the member Leases of sharding.

    >>> observed_since(("7", 100.0), "7", 110.0), observed_since(("7", 100.0), "8", 110.0)
    (100.0, 110.0)
    >>> observed_since(None, "7", 110.0)
    110.0
    """
    if previous is None or previous[0] != version:
        return now
    return previous[1]


def renew_deadline_passed(last_renewed: float, now: float, renew_deadline: float) -> bool:
    """True when a leader that last renewed at ``last_renewed`` must stop acting.

    >>> renew_deadline_passed(100.0, 109.9, 10.0), renew_deadline_passed(100.0, 110.0, 10.0)
    (False, True)
    """
    return now - last_renewed >= renew_deadline


def same_machine_pid(holder: str, identity: str) -> int | None:
    """The process id in ``holder`` when it names a process of this identity's host since its
    last boot (identities are ``<host>_<boot id>.<pid>_<random>``), else None: only then can this
    process tell whether the holder still runs (a restarted ``gitdeploy run`` finding the Lease
    of the run it replaces, instead of waiting for it to expire).

    >>> same_machine_pid("web-0_1a2b3c4d.1_aa", "web-0_1a2b3c4d.1_bb")
    1
    >>> same_machine_pid("web-0_1a2b3c4d.7_aa", "web-1_1a2b3c4d.1_bb") is None  # another pod
    True
    >>> same_machine_pid("laptop_99999999.7_aa", "laptop_1a2b3c4d.1_bb") is None  # rebooted since
    True
    >>> same_machine_pid("a_1", "laptop_1a2b3c4d.1_bb") is None  # an older gitdeploy's identity
    True
    """
    theirs, ours = holder.rsplit("_", 1)[0], identity.rsplit("_", 1)[0]
    host, _, machine = theirs.rpartition("_")
    boot, _, pid = machine.partition(".")
    our_host, _, our_machine = ours.rpartition("_")
    if not host or host != our_host or boot != our_machine.partition(".")[0] or not pid.isdigit():
        return None
    return int(pid)


def holder_pid_to_check(holder: str, identity: str) -> int | None:
    """The process id whose liveness decides whether ``holder`` of a Lease is gone at once: a
    process of this machine other than ``identity`` itself (:func:`same_machine_pid`); None when
    the Lease is free (''), held by ``identity``, or by a process this machine cannot see (it is
    gone only once its Lease expired). The leader Lease and the member Leases share this rule.

    >>> holder_pid_to_check("web-0_1a2b3c4d.7_aa", "web-0_1a2b3c4d.1_bb")
    7
    >>> [holder_pid_to_check(h, "web-0_1a2b3c4d.1_bb") for h in ("", "web-0_1a2b3c4d.1_bb")]
    [None, None]
    """
    if not holder or holder == identity:
        return None
    return same_machine_pid(holder, identity)


def seen_since(since: float, now: float, duration_seconds: int, *, holder_gone: bool) -> float:
    """When a Lease counts as last changed, on this process's clock: ``since`` (when this process
    first saw it as it is), or, when its holder is gone (:func:`holder_pid_to_check` names a
    process that no longer runs), at least its duration ago: it expired at once, since it can
    never be renewed again.

    >>> seen_since(100.0, 105.0, 15, holder_gone=False), seen_since(100.0, 105.0, 15, holder_gone=True)
    (100.0, 90.0)
    >>> seen_since(80.0, 105.0, 15, holder_gone=True)  # already expired: stays so
    80.0
    """
    return min(since, now - duration_seconds) if holder_gone else since


def release_lease(current: LeaseSpec, now: float) -> LeaseSpec:
    """The spec a leader writes on shutdown: no holder, 1 s, so a standby takes over at its next try.

    >>> release_lease(LeaseSpec("a", 15, 10.0, 40.0, 3), now=42.0)
    LeaseSpec(holder='', duration_seconds=1, acquire_time=42.0, renew_time=42.0, transitions=3)
    """
    return LeaseSpec("", 1, acquire_time=now, renew_time=now, transitions=current.transitions)


def format_micro_time(at: float) -> str:
    """A Kubernetes ``MicroTime``: RFC 3339, UTC, microseconds.

    >>> format_micro_time(1_700_000_000.25)
    '2023-11-14T22:13:20.250000Z'
    """
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
