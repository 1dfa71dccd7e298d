"""The due queue: when each app is passed over next, and how a failed pass delays it.

Shaped like client-go's workqueue with its ``ItemExponentialFailureRateLimiter``: one entry per app
(adding an app that is queued already keeps the earlier time: no duplicates), a per-app
exponential backoff of transient failures (:class:`ExponentialBackoff`), and apps whose pass
failed permanently *held*: nothing but a change of their input (the app's manifest, the commit,
a followed image, a person's request) queues them again (see :func:`holds`).

The queue also keeps the time of the next periodic resync. It shares the controller's lock (an
``RLock``): readers of :attr:`DueQueue.due` hold it while they iterate.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gitdeploy.core.models import AppKey
from gitdeploy.errors import AlreadyExistsError, GitdeployError, NotFoundError, PermanentError, TransientError

MAX_BACKOFF_SECONDS = 60.0


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
        self.progressed: set[AppKey] = set()
        """Apps whose ReplicaSets made progress while a pass over them was under way."""
        self.next_resync = 0.0
        """When every app is looked at again (0: not before the first desired state is read)."""

    def add(self, key: AppKey, at: float, *, new_input: bool = False) -> None:
        """``key`` is due at ``at`` (or earlier, if it is queued for earlier). A held app only when
        ``new_input``: its input changed, so it is tried again."""
        with self._lock:
            if key in self.held:
                if not new_input:
                    return
                del self.held[key]
            self.due[key] = min(self.due.get(key, at), at)

    def add_all(self, keys: Iterable[AppKey], at: float, *, new_input: bool = False) -> None:
        with self._lock:
            for key in keys:
                self.add(key, at, new_input=new_input)

    def add_if_absent(self, key: AppKey, at: float) -> None:
        """``key`` is due at ``at`` unless it is queued already (for whenever) or held."""
        with self._lock:
            if key not in self.held:
                self.due.setdefault(key, at)

    def hurry(self, key: AppKey, now: float) -> None:
        """Progress of an app in rollout: due now if queued, else again right after its pass."""
        with self._lock:
            if key in self.due:
                self.due[key] = min(self.due[key], now)
            else:
                self.progressed.add(key)

    def take(self, now: float, only: Iterable[AppKey] | None = None) -> list[AppKey]:
        """Remove and return (sorted) the apps due by ``now``, or ``only`` those."""
        with self._lock:
            keys = sorted(only) if only is not None else sorted(k for k, t in self.due.items() if t <= now)
            for key in keys:
                self.due.pop(key, None)
        return keys

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
