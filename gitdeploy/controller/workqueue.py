"""The due queue: when each app is passed over next, and how a failed pass delays it.

Shaped like client-go's workqueue with its ``ItemExponentialFailureRateLimiter``: one entry per app
(adding an app that is queued already keeps the earlier time: no duplicates), a per-app
exponential backoff of transient failures (:class:`ExponentialBackoff`), and apps whose pass
failed permanently *held*: nothing but a change of their input (the app's manifest, the commit,
a followed image, a person's request) queues them again (see :func:`holds`).

A pass may take a *slice* of what is due (:func:`first_slice`): apps something asked for (a
commit, a record, a hand's change, a rollout's progress) before *routine* ones (the periodic
resync, a new leader's look at every app), in passes of their own, whole namespaces at a time.
So a push that comes while a replica passes over its 10,000 apps waits for one slice, not for
all of them: controller-runtime's priority queue puts the items of a resync behind those of an
event for the same reason.

The queue also keeps the time of the next periodic resync. It shares the controller's lock (an
``RLock``): readers of :attr:`DueQueue.due` hold it while they iterate.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gitdeploy.core.models import AppKey
from gitdeploy.errors import AlreadyExistsError, GitdeployError, NotFoundError, PermanentError, TransientError

MAX_BACKOFF_SECONDS = 60.0
PASS_SLICE = 500
"""How many due apps ``run``'s passes take at most (whole namespaces: a slice may end past it to
finish the last one). A slice of a resync took about half a second in ``bench/run.py
commit-during-resync`` (one replica and its embedded cluster, 2 cores) and about 2 s in
``bench/sharding_scale.py`` (three replicas and the cluster on 2 cores); a resync of 30,000 apps
is 60 slices, each taken after one sort of the due apps."""


@dataclass(frozen=True)
class ExponentialBackoff:
    """``base`` seconds doubling with each failure in a row, at most ``cap``; at least what a
    :class:`TransientError` asked for (``retry_after``, capped too).

    >>> [ExponentialBackoff().delay(n) for n in (1, 2, 3, 7, 8)]
    [1.0, 2.0, 4.0, 60.0, 60.0]
    >>> ExponentialBackoff().delay(1, retry_after=5.0)
    5.0
    """

    base: float = 1.0
    cap: float = MAX_BACKOFF_SECONDS

    def delay(self, failures: int, retry_after: float = 0.0) -> float:
        return max(min(self.base * 2.0 ** (failures - 1), self.cap), min(retry_after, self.cap))


def holds(problem: GitdeployError) -> bool:
    """Whether a pass that failed with ``problem`` waits for its input to change instead of
    backing off: a :class:`PermanentError`, except "not found" and "already exists", which say
    that the cluster moved under the pass (the next pass reads it again).

    >>> holds(PermanentError("forbidden")), holds(TransientError("timeout")), holds(NotFoundError("gone"))
    (True, False, False)
    """
    return isinstance(problem, PermanentError) and not isinstance(problem, NotFoundError | AlreadyExistsError)


def first_slice(due: Mapping[AppKey, float], routine: set[AppKey], size: int) -> list[AppKey]:
    """The apps a pass takes of the ``due`` ones (with the times they are due): those something
    asked for, else the ``routine`` ones, never both (an app asked for is not held up by routine
    ones in its pass); in the order they became due (the longest waiting first, so that apps in
    rollout, due again and again, starve none), at one time namespace by namespace; at most
    ``size`` of them, and then the rest of the last one's namespace due with it, so that no
    namespace of a resync is listed twice for it.

    >>> a1, a2, b1, b2, c1 = (AppKey(*key.split("/")) for key in ("a/1", "a/2", "b/1", "b/2", "c/1"))
    >>> [str(k) for k in first_slice(dict.fromkeys([c1, b2, a1, b1, a2], 0.0), {a1, a2, b1, b2}, 2)]
    ['c/1']
    >>> [str(k) for k in first_slice({b2: 1.0, a1: 2.0, b1: 1.0, a2: 2.0}, {a1, a2, b1, b2}, 1)]
    ['b/1', 'b/2']
    """
    asked = [key for key in due if key not in routine]
    ordered = sorted(asked or due, key=lambda key: (due[key], key))
    if len(ordered) <= size:
        return ordered
    end = max(size, 1)
    last = ordered[end - 1]
    while end < len(ordered) and ordered[end].namespace == last.namespace and due[ordered[end]] == due[last]:
        end += 1
    return ordered[:end]


class DueQueue:
    """Apps by the time they are due (see the module docstring). Thread-safe."""

    def __init__(self, lock: threading.RLock, backoff: ExponentialBackoff | None = None) -> None:
        self._lock = lock
        self.backoff = backoff or ExponentialBackoff()
        self.due: dict[AppKey, float] = {}
        self.failures: defaultdict[AppKey, int] = defaultdict(int)
        """Failed passes in a row, by app."""
        self.held: dict[AppKey, str] = {}
        """Apps whose last pass failed permanently, with the error: due only when their input changes."""
        self.routine: set[AppKey] = set()
        """Due apps that nothing asked for: a slice takes them after the others (:func:`first_slice`)."""
        self.cut_short = False
        """Whether the last :meth:`take` left due apps behind (more passes are due at once)."""
        self.may_cut = False
        """Whether the slice the last :meth:`take` took may be cut short: routine apps, and the
        routine slice before it was not cut (so pushes coming all the time slow a resync down by
        half at most, and never stop it)."""
        self._cut_last = False
        """Whether the last routine slice was cut short (:meth:`give_back`)."""
        self.progressed: set[AppKey] = set()
        """Apps whose ReplicaSets made progress while a pass over them was under way."""
        self.next_resync = 0.0
        """When every app is looked at again (0: not before the first desired state is read)."""

    def add(self, key: AppKey, at: float, *, new_input: bool = False, routine: bool = False) -> None:
        """``key`` is due at ``at`` (or earlier, if it is queued for earlier). A held app only when
        ``new_input``: its input changed, so it is tried again. Not ``routine``: something asked
        for it, so it goes before the routine apps (also when it was queued as one)."""
        with self._lock:
            if key in self.held:
                if not new_input:
                    return
                del self.held[key]
            if not routine:
                self.routine.discard(key)
            elif key not in self.due:
                self.routine.add(key)
            self.due[key] = min(self.due.get(key, at), at)

    def add_all(
        self, keys: Iterable[AppKey], at: float, *, new_input: bool = False, routine: bool = False
    ) -> None:
        with self._lock:
            for key in keys:
                self.add(key, at, new_input=new_input, routine=routine)

    def add_if_absent(self, key: AppKey, at: float) -> None:
        """``key`` is due at ``at``, a routine app (the resync), unless it is queued already (for
        whenever) or held."""
        with self._lock:
            if key not in self.held and key not in self.due:
                self.add(key, at, routine=True)

    def hurry(self, key: AppKey, now: float) -> None:
        """Progress of an app in rollout: due now if queued, else again right after its pass."""
        with self._lock:
            if key in self.due:
                self.due[key] = min(self.due[key], now)
                self.routine.discard(key)
            else:
                self.progressed.add(key)

    def take(self, now: float, only: Iterable[AppKey] | None = None, size: int | None = None) -> list[AppKey]:
        """Remove and return the apps due by ``now``: all of them, sorted, or with a ``size`` a
        slice (:func:`first_slice`); or ``only`` those, sorted."""
        with self._lock:
            if only is not None:
                keys = sorted(only)
            else:
                due = {k: t for k, t in self.due.items() if t <= now}
                keys = sorted(due) if size is None else first_slice(due, self.routine, size)
                self.cut_short = len(keys) < len(due)
            routine = bool(keys) and all(key in self.routine for key in keys)
            self.may_cut = routine and not self._cut_last
            self._cut_last = self._cut_last and not routine
            for key in keys:
                self.due.pop(key, None)
                self.routine.discard(key)
        return keys

    def give_back(self, keys: list[AppKey], now: float) -> None:
        """``keys``, taken by a routine slice that was cut short before their passes, are due
        again now, as routine apps."""
        with self._lock:
            self.add_all(keys, now, routine=True)
            self._cut_last = bool(keys)
            self.cut_short = self.cut_short or bool(self.due)

    def next_at(self) -> float | None:
        with self._lock:
            return min(self.due.values(), default=None)

    def done(self, key: AppKey, now: float, delay: float | None) -> None:
        """A pass over ``key`` succeeded: its failures are forgotten, and it is due again after
        ``delay`` (None: settled, not before something changes); at once when it progressed
        meanwhile."""
        with self._lock:
            self.forget(key)
            progressed = key in self.progressed
            self.progressed.discard(key)
            if delay is not None:
                self.add(key, now + (0.0 if progressed else delay))

    def forget(self, key: AppKey) -> None:
        with self._lock:
            self.failures.pop(key, None)
            self.held.pop(key, None)

    def failed(self, key: AppKey, now: float, problem: GitdeployError) -> float | None:
        """A pass over ``key`` failed: due again after its backoff (returned), or held (None)."""
        with self._lock:
            self.failures[key] += 1
            if holds(problem):
                self.held[key] = problem.message
                self.due.pop(key, None)
                self.routine.discard(key)
                return None
            retry_after = problem.retry_after if isinstance(problem, TransientError) else 0.0
            delay = self.backoff.delay(self.failures[key], retry_after)
            self.due[key] = now + delay
            return delay

    def resync_due(self, now: float, every: float) -> bool:
        """Whether the periodic resync is due now (then the next one is ``every`` seconds later)."""
        with self._lock:
            if self.next_resync == 0.0 or now < self.next_resync:
                return False
            self.next_resync = now + every
            return True

    def resync_soon(self, now: float, *, force: bool = False) -> None:
        """Resync at the next pass: the first desired state was read (or, ``force``, a refusal ended)."""
        with self._lock:
            if force or self.next_resync == 0.0:
                self.next_resync = now
