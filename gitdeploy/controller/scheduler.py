"""The one scheduler: what drives the controller's passes, for ``run``, ``sync``, the benchmarks
and the tests.

* :meth:`Scheduler.run` — until stopped: poll at ``interval`` (at once on a webhook push; after a
  failed poll, with the source's backoff), and run a pass whenever apps are due, a slice of them
  at a time (:data:`~gitdeploy.controller.workqueue.PASS_SLICE`): a push waits for one slice.
* :meth:`Scheduler.settle` — on a fake clock: poll, then pass after pass until no app is due,
  moving the clock to the next due time.
* :meth:`Scheduler.pass_answering` — ``sync``'s first pass, with a word on every app it passed over.
* :meth:`Scheduler.follow` — ``sync --wait``: pass over the given apps until they settle.

:class:`~gitdeploy.controller.workers.PassHooks` are its explicit hooks: what a benchmark times
or a test slows down, without overriding the controller.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

from gitdeploy.controller.loop import AppReport, Controller
from gitdeploy.controller.reconcile import unanswered_report
from gitdeploy.controller.workers import NO_HOOKS, PassHooks
from gitdeploy.controller.workqueue import PASS_SLICE
from gitdeploy.core.models import AppKey

log = logging.getLogger("gitdeploy")

STALE_READ_PASSES = 3
"""How many passes ``sync`` makes over an app whose passes come to no verdict before it says so
(:meth:`Scheduler.pass_answering`): another writer that changes a ReplicaSet now and then (its
controller's status, an autoscaler) is outlasted; one that keeps at it is reported."""

SHORTEST_WAIT = 0.05
"""A loop on the system clock never waits less between passes (a busy loop helps nobody)."""


def next_resync_in(controller: Controller) -> float | None:
    """Seconds until the periodic resync (None before the first load schedules it): the loop
    waits no longer, so the resync comes on time even when polls are rare (the replicas of
    ``run --sharding`` that do not lead poll every ten intervals)."""
    at = controller.queue.next_resync
    return max(at - controller.clock.now(), 0.0) if at else None


class Scheduler:
    """Drives one :class:`Controller` (see the module docstring)."""

    def __init__(self, controller: Controller, hooks: PassHooks = NO_HOOKS) -> None:
        self.controller = controller
        self.hooks = hooks

    def pass_once(
        self,
        only: Iterable[AppKey] | None = None,
        size: int | None = None,
        cut: Callable[[], bool] | None = None,
    ) -> list[AppReport]:
        """One pass over the due apps, at most a slice of ``size`` (or ``only`` those), a routine
        slice cut short once ``cut()`` says so (see :meth:`Controller.reconcile_due`);
        ``after_pass`` hears of it."""
        started = time.perf_counter()
        reports = self.controller.reconcile_due(only, self.hooks, size, cut)
        if reports and self.hooks.after_pass is not None:
            self.hooks.after_pass(reports, time.perf_counter() - started)
        return reports

    def pass_answering(self, only: Iterable[AppKey] | None = None) -> dict[AppKey, AppReport]:
        """``sync``'s first pass: :meth:`pass_once` over ``only`` (None: the due apps), then over
        those whose pass came to no verdict (a write found an object changed since the pass read
        it, see :class:`~gitdeploy.errors.StaleReadError`) again, each after its retry wait, up to
        :data:`STALE_READ_PASSES` passes in all. One that never came to a verdict gets an unsettled
        report that says why: sync names every app it passed over, and never exits 0 for an app
        it left as it was."""
        reports = {r.key: r for r in self.pass_once(only)}
        unanswered = self.controller.reconciler.unanswered
        for _ in range(STALE_READ_PASSES - 1):
            again = {key: problem for key, problem in unanswered.items() if key not in reports}
            if not again:
                break
            time.sleep(max(problem.retry_after for problem in again.values()))
            reports.update((r.key, r) for r in self.pass_once(again))
        for key, problem in unanswered.items():
            if key not in reports:
                reports[key] = unanswered_report(key, problem, STALE_READ_PASSES)
        return reports

    def settle(
        self,
        advance: Callable[[float], object],
        *,
        limit: float,
        shortest: float,
        longest: float = float("inf"),
    ) -> int | None:
        """Poll, then pass after pass until no app is due; between passes ``advance`` the (fake)
        clock to the next due time, by ``shortest`` to ``longest`` seconds. Returns the number of
        passes, or None when apps were still due after ``limit`` seconds of that clock. The image
        check (always scheduled while image triggers are on) runs when a pass meets its time, but
        does not keep a settle going."""
        controller = self.controller
        controller.poll()
        start, passes = controller.clock.now(), 0
        while controller.clock.now() - start < limit:
            self.pass_once()
            passes += 1
            wait = controller.next_due_in(apps_only=True)
            if wait is None:
                return passes
            advance(min(max(wait, shortest), longest))
        return None

    def run(
        self,
        stop: threading.Event,
        wake: threading.Event,
        interval: float,
        *,
        pushed: deque[str] | None = None,
        acting: Callable[[], bool] = lambda: True,
        polled: Callable[[float], None] | None = None,
        period: Callable[[float], float] | None = None,
    ) -> None:
        """Poll at ``interval`` and pass over due apps until ``stop``; ``wake`` cuts a wait short
        (a push, a watch's notice, a leadership change). ``pushed`` holds the head the newest push
        named, for the next poll to fetch at once. Only while ``acting()`` (this process leads): a
        standby polls git but reconciles nothing. ``polled(started)`` is called after every poll
        (``started``: when it began, on :func:`time.perf_counter`). ``period(interval)``, asked
        anew at every turn, stretches the time between polls (``run --sharding``: the replicas
        that do not lead poll rarely, see :mod:`gitdeploy.controller.headnews`)."""
        controller = self.controller
        pushed = pushed if pushed is not None else deque(maxlen=1)
        every = period or (lambda seconds: seconds)
        last_poll = float("-inf")  # the first turn polls
        while not stop.is_set():
            wake.clear()  # a push, a watch's notice or a leadership change sets it: no waiting then
            now = time.perf_counter()
            # a watch's notice needs a pass, not a poll of git
            if now >= last_poll + controller.poll_delay(every(interval)) or pushed:
                controller.poll(pushed.pop() if pushed else None)  # only this thread pops
                if polled is not None:
                    polled(now)
                last_poll = now
            if acting():
                self.pass_once(size=PASS_SLICE, cut=lambda: bool(pushed))
                if controller.queue.cut_short:
                    continue  # more apps are due now: a push gets its turn at the next slice
            due = (controller.next_due_in(), next_resync_in(controller)) if acting() else ()
            wait = min((t for t in due if t is not None), default=None)
            # the source's backoff after a failure; a role change wakes this loop and is asked anew
            timeout = last_poll + controller.poll_delay(every(interval)) - time.perf_counter()
            if wait is not None:
                timeout = min(timeout, wait)
            wake.wait(max(timeout, SHORTEST_WAIT))

    def follow(
        self,
        reports: dict[AppKey, AppReport],
        deadline: float,
        wake: threading.Event,
        show: Callable[[dict[AppKey, AppReport]], None],
    ) -> set[AppKey]:
        """``sync --wait``: pass over the unsettled apps of ``reports`` (updated in place) until all
        settle or the monotonic ``deadline``; ``show`` the apps followed before each wait. Returns
        the apps followed."""
        followed: set[AppKey] = set()
        while time.monotonic() < deadline and not all(r.settled for r in reports.values()):
            pending = [k for k, r in reports.items() if not r.settled]
            followed.update(pending)
            show({k: reports[k] for k in followed})
            wake.wait(min(max(self.controller.next_due_in() or 0.2, SHORTEST_WAIT), 1.0))
            wake.clear()
            for report in self.pass_once(pending):
                reports[report.key] = report
        return followed
