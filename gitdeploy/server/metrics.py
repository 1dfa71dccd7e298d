"""gitdeploy's Prometheus metrics, named for what the controller does.

Each :class:`Metrics` owns its own :class:`prometheus_client.CollectorRegistry`, never the global
default one: several instances (one per test, or a controller and a benchmark in one process) do not
clash, and nothing registered by an imported library leaks into ``/metrics`` by accident.

The loop reports through methods named for its events::

    metrics = Metrics()
    metrics.observe_poll(0.21)                        # one fetch of the config repo
    metrics.observe_rollout(transition)               # a rollout began or ended (core.rollout.transitions)
    metrics.observe_event(event)                      # a pass's event: a canary step, an analysis run's end
    metrics.observe_reconcile(0.034, "success")       # one pass over one app
    metrics.set_app_states(sync={"Synced": 41, "OutOfSync": 1}, health={"Healthy": 42})
    metrics.follow_app_states(read)                   # or: read() gives them at every scrape
    metrics.api_request("patch", 200)                 # one Kubernetes API call
    metrics.set_leader(True)
    body = metrics.render()                            # Prometheus text format, for GET /metrics

Label values are free strings so the loop can choose its vocabulary, but they must come from a small
fixed set (a result, a cause, a verb, an HTTP status): never put an app name, a commit or an error
message in a label, or the number of series grows without bound.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from gitdeploy.core.analysis.phases import AnalysisPhase
from gitdeploy.core.rollout.outputs import Event
from gitdeploy.core.rollout.transitions import RolloutEvent, RolloutTransition
from gitdeploy.core.sync.syncstate import Health, Sync

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST
"""The ``Content-Type`` of :meth:`Metrics.render`'s output (the Prometheus text exposition format)."""

NAMESPACE: Final = "gitdeploy"

log = logging.getLogger("gitdeploy.metrics")


SyncState = Sync
"""Whether an app's cluster state matches git (``gitdeploy status``'s SYNC). Every state is always
exported, at 0 when no app is in it."""

HealthState = Health
"""How an app's current rollout and pods are doing. Every state is always exported, at 0 when none."""


# Buckets: a reconcile pass is milliseconds on a quiet app and seconds when the API is slow; a git
# fetch is tens of milliseconds for ls-remote and up to a minute for a first clone; a rollout is
# seconds to the 600 s default progress deadline and beyond.
RECONCILE_BUCKETS: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
POLL_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
AppStates = tuple[Mapping[str, int], Mapping[str, int], int]
"""The arguments of :meth:`Metrics.set_app_states`: apps by sync state, by health state, and how
many have suspended image triggers."""

ROLLOUT_BUCKETS: Final = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0)

STATES_WAIT: Final = 1.0
"""Seconds a scrape waits for the read of the apps by state (:meth:`Metrics.follow_app_states`)
before it answers with the counts of the last read that ended. A read works out again only the
apps whose objects changed (a few milliseconds on a settled fleet), but when thousands changed at
once, as right after a ``run --sharding`` replica took over another's apps, it takes seconds, and
a scrape that waited for it would answer the other series (the apps this replica owns, above all)
that late, or time out."""


class Metrics:
    """The metrics of one gitdeploy process, in a registry of their own.

    ``clock`` (seconds since the epoch) stamps the last successful poll; tests pass a fixed one.
    ``process_collectors`` adds the standard ``process_*``, ``python_gc_*`` and ``python_info``
    series (CPU, memory, open file descriptors); tests that compare whole outputs can turn it off.
    All methods are safe to call from several threads.
    """

    def __init__(
        self,
        *,
        version: str = "",
        clock: Callable[[], float] = time.time,
        process_collectors: bool = True,
        states_wait: float = STATES_WAIT,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._clock = clock
        self._states_wait = states_wait
        self._states_lock = threading.Lock()
        self._read_app_states: Callable[[], AppStates | None] | None = None
        self._reading = threading.Lock()
        self._read_under_way: Future[None] | None = None
        """The read of the app states under way, if any, on a thread of its own: a scrape that
        comes while one reads waits for its answer rather than reading after it (side by side they
        would work out the same apps twice; one after another, scrapes that come faster than a
        read ends would queue up reads without end), and for :data:`STATES_WAIT` at most. Guarded
        by ``_reading``."""
        registry = self.registry
        if process_collectors:
            ProcessCollector(registry=registry)
            PlatformCollector(registry=registry)
            GCCollector(registry=registry)
        # registered in this order, and so exported in it: build, reconcile, apps, rollouts, source,
        # the API and leadership, webhooks
        add = _Families(registry)
        _build_info(add).labels(version=version or "unknown").set(1)
        self._reconcile_seconds = _reconcile_histogram(add)
        self._apps = _AppStateGauges.build(add)
        self._sync_seen: set[str] = {s.value for s in SyncState}
        self._health_seen: set[str] = {s.value for s in HealthState}
        self._rollouts = _RolloutFamilies.build(add)
        self._canary_steps, self._analysis_runs = _canary_families(add)
        self._source = _SourceFamilies.build(add)
        self._api_requests, self._leader = _api_families(add)
        self._webhooks, self.webhook_bodies_reading = _webhook_families(add)
        self._shard_owned, self._shard_moves = _shard_families(add)
        self._moves_told = 0

    # -- reconcile loop -------------------------------------------------------------------------

    def observe_reconcile(self, seconds: float, result: str) -> None:
        """Record one reconcile pass of one app (``result``: e.g. ``success``, ``error``, ``requeue``)."""
        self._reconcile_seconds.labels(result=result).observe(_non_negative(seconds))

    def set_app_states(
        self, sync: Mapping[str, int], health: Mapping[str, int], triggers_suspended: int = 0
    ) -> None:
        """Replace the app counts with a snapshot: how many apps are in each sync and health state,
        and how many have image triggers a rollback suspended.

        States missing from the snapshot drop to 0 (a state seen once keeps its series, so a
        graph goes to zero instead of stopping). Counts must not be negative.
        """
        for counts in (sync, health):
            for state, count in counts.items():
                if count < 0:
                    raise ValueError(f"app count for state {state!r} is negative: {count}")
        with self._states_lock:
            self._replace_counts(self._apps.sync, self._sync_seen, sync)
            self._replace_counts(self._apps.health, self._health_seen, health)
            self._apps.triggers_suspended.set(max(triggers_suspended, 0))

    def follow_app_states(self, read: Callable[[], AppStates | None]) -> None:
        """Take the app counts from ``read()`` at every :meth:`render` (each scrape), so that they
        are as current as what ``gitdeploy status`` shows; ``read()`` returning None keeps the
        previous counts (the cluster could not be read), and so does a scrape that waited
        :data:`STATES_WAIT` for a read that goes on (the scrapes after it ends have its counts)."""
        self._read_app_states = read

    @staticmethod
    def _replace_counts(gauge: Gauge, seen: set[str], counts: Mapping[str, int]) -> None:
        seen.update(str(state) for state in counts)
        for state in seen:
            gauge.labels(state=state).set(counts.get(state, 0))

    # -- rollouts -------------------------------------------------------------------------------

    def rollout_started(self, cause: str) -> None:
        """A rollout began (``cause``: the revision's, e.g. ``ConfigChange``, ``AutoRollback``)."""
        self._rollouts.started.labels(cause=cause).inc()

    def rollout_completed(self, cause: str, seconds: float | None = None) -> None:
        """A rollout finished successfully; ``seconds`` is its duration when known."""
        self._rollouts.completed.labels(cause=cause).inc()
        if seconds is not None:
            self._rollouts.seconds.labels(outcome="completed").observe(_non_negative(seconds))

    def rollout_failed(self, cause: str, seconds: float | None = None) -> None:
        """A rollout failed (deadline exceeded, hook failed, cancelled); ``seconds`` when known."""
        self._rollouts.failed.labels(cause=cause).inc()
        if seconds is not None:
            self._rollouts.seconds.labels(outcome="failed").observe(_non_negative(seconds))

    def rollback_requested(self) -> None:
        """A rollback to an earlier revision was requested."""
        self._rollouts.rollbacks.inc()

    def observe_rollout(self, transition: RolloutTransition) -> None:
        """Count a rollout that began or ended (a cancelled one counts as failed)."""
        cause = transition.cause
        if transition.event in (RolloutEvent.STARTED, RolloutEvent.ROLLED_BACK):
            self.rollout_started(cause)
            if transition.event is RolloutEvent.ROLLED_BACK:
                self.rollback_requested()
        elif transition.event is RolloutEvent.COMPLETED:
            self.rollout_completed(cause, transition.seconds)
        else:
            self.rollout_failed(cause, transition.seconds)

    def observe_event(self, event: Event) -> None:
        """Count a canary's step reached (event ``CanaryStep``) and an analysis run that ended
        (``AnalysisSuccessful``, ``AnalysisFailed``, ...: by phase); other events count nothing."""
        if event.reason == "CanaryStep":
            self._canary_steps.inc()
        elif event.reason.startswith("Analysis") and event.reason[8:] in _RUN_PHASES:
            self._analysis_runs.labels(phase=event.reason[8:]).inc()

    # -- source, API, leadership, webhooks ------------------------------------------------------

    def observe_poll(self, seconds: float, error: bool = False) -> None:
        """Record one poll of the config repository; a failed one also counts as an error."""
        self._source.poll_seconds.observe(_non_negative(seconds))
        if error:
            self._source.poll_errors.inc()
        else:
            self._source.last_success.set(self._clock())

    def api_request(self, verb: str, code: int) -> None:
        """Count one Kubernetes API request (``verb``: get, list, create, patch...; ``code``: its status)."""
        self._api_requests.labels(verb=verb.lower(), code=str(code)).inc()

    def set_leader(self, leader: bool) -> None:
        """Say whether this process holds the leader Lease now."""
        self._leader.set(1 if leader else 0)

    def set_shard(self, owned: int, moves: int) -> None:
        """``run --sharding``: the apps this replica owns now, and the apps it took over so far."""
        self._shard_owned.set(owned)
        with self._states_lock:
            added, self._moves_told = max(moves - self._moves_told, 0), max(moves, self._moves_told)
        if added:
            self._shard_moves.inc(added)

    def webhook_delivery(self, provider: str, outcome: str) -> None:
        """Count one webhook delivery (``outcome``: triggered, ignored, duplicate, rejected, ...)."""
        self._webhooks.labels(provider=provider, outcome=outcome).inc()

    # -- exposition -----------------------------------------------------------------------------

    def _read_states(self) -> None:
        """Read the app states with ``read()`` (:meth:`follow_app_states`), or join the read under
        way (see :attr:`_read_under_way`), and wait for it :data:`STATES_WAIT` at most: the read
        sets the gauges when it ends, for this scrape or the ones after it. A read that fails fails the
        scrapes that waited for it (and is logged); the next scrape reads anew."""
        read = self._read_app_states
        if read is None:
            return
        with self._reading:
            under_way = self._read_under_way
            if under_way is None:
                under_way = self._read_under_way = Future()
                threading.Thread(
                    target=self._read_into, args=(read, under_way), name="metrics-app-states", daemon=True
                ).start()
        try:
            under_way.result(timeout=self._states_wait)
        except TimeoutError:
            log.info(
                "apps by state for /metrics: still reading after %g s; this scrape has the counts "
                "of the last read that ended, the scrapes after this read ends have its counts",
                self._states_wait,
            )

    def _read_into(self, read: Callable[[], AppStates | None], answer: Future[None]) -> None:
        failed: BaseException | None = None
        try:
            states = read()
            if states is not None:
                self.set_app_states(*states)
        except BaseException as problem:
            log.error("apps by state for /metrics: the read failed", exc_info=True)
            failed = problem
        with self._reading:  # before the answer: a scrape after it reads anew
            self._read_under_way = None
        if failed is not None:
            answer.set_exception(failed)
        else:
            answer.set_result(None)

    def render(self) -> bytes:
        """Every series in the Prometheus text format (serve it with :data:`CONTENT_TYPE`)."""
        self._read_states()
        with self._states_lock:
            return generate_latest(self.registry)


def _non_negative(seconds: float) -> float:
    """Durations from a clock that stepped back are recorded as 0, not as a negative observation."""
    return seconds if seconds > 0 else 0.0


# -- the metric families, by subject (each builder registers its families, in this order) ---------


@dataclass(frozen=True)
class _Families:
    """Makes metric families named under :data:`NAMESPACE` in ``registry``."""

    registry: CollectorRegistry

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(name, documentation, labels, namespace=NAMESPACE, registry=self.registry)

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, documentation, labels, namespace=NAMESPACE, registry=self.registry)

    def histogram(
        self, name: str, documentation: str, buckets: Sequence[float], labels: Sequence[str] = ()
    ) -> Histogram:
        return Histogram(
            name, documentation, labels, namespace=NAMESPACE, registry=self.registry, buckets=buckets
        )


def _build_info(add: _Families) -> Gauge:
    return add.gauge("build_info", "Always 1; the version label says which gitdeploy runs.", ["version"])


def _reconcile_histogram(add: _Families) -> Histogram:
    return add.histogram(
        "reconcile_duration_seconds",
        "Time one reconcile pass of one app took, by result.",
        RECONCILE_BUCKETS,
        ["result"],
    )


@dataclass(frozen=True)
class _AppStateGauges:
    """How many apps are in each sync and health state, and how many have triggers suspended."""

    sync: Gauge
    health: Gauge
    triggers_suspended: Gauge

    @classmethod
    def build(cls, add: _Families) -> _AppStateGauges:
        """The gauges. The two by-state families have no series until the apps are first counted
        (:meth:`Metrics.set_app_states` then exports every sync and health state, at 0 where no
        app is in it): before that, how many apps are in each state is not known, which no
        number would say. The count of suspended triggers, one series, is 0 until then."""
        sync = add.gauge("apps_sync_state", "Number of apps in each sync state (git vs cluster).", ["state"])
        health = add.gauge("apps_health_state", "Number of apps in each health state.", ["state"])
        triggers_suspended = add.gauge(
            "apps_image_triggers_suspended",
            "Number of apps whose image triggers a rollback suspended (deploy --enable-triggers).",
        )
        return cls(sync, health, triggers_suspended)


@dataclass(frozen=True)
class _RolloutFamilies:
    """Rollouts started, completed and failed by cause, their durations, and rollbacks."""

    started: Counter
    completed: Counter
    failed: Counter
    seconds: Histogram
    rollbacks: Counter

    @classmethod
    def build(cls, add: _Families) -> _RolloutFamilies:
        return cls(
            started=add.counter("rollouts_started", "Rollouts (new revisions) started, by cause.", ["cause"]),
            completed=add.counter("rollouts_completed", "Rollouts that completed, by cause.", ["cause"]),
            failed=add.counter(
                "rollouts_failed", "Rollouts that failed or were cancelled, by cause.", ["cause"]
            ),
            seconds=add.histogram(
                "rollout_duration_seconds",
                "Time from a rollout's start to its end, by outcome.",
                ROLLOUT_BUCKETS,
                ["outcome"],
            ),
            rollbacks=add.counter(
                "rollbacks", "Rollbacks requested (each also starts a rollout with its own cause)."
            ),
        )


_RUN_PHASES: Final = tuple(p.value for p in AnalysisPhase if p.completed)
"""The phases an analysis run ends in (Successful, Inconclusive, Error, Failed)."""


def _canary_families(add: _Families) -> tuple[Counter, Counter]:
    """Canary steps reached, and analysis runs ended by phase (every phase exported at 0)."""
    steps = add.counter(
        "canary_steps",
        "Canary steps reached (each step a canary walks to, and its end past the last step).",
    )
    runs = add.counter("analysis_runs", "Analysis runs of canaries that ended, by phase.", ["phase"])
    for phase in _RUN_PHASES:
        runs.labels(phase=phase)
    return steps, runs


@dataclass(frozen=True)
class _SourceFamilies:
    """Polls of the config repository: how long they took, which failed, the last that did not."""

    poll_seconds: Histogram
    poll_errors: Counter
    last_success: Gauge

    @classmethod
    def build(cls, add: _Families) -> _SourceFamilies:
        return cls(
            poll_seconds=add.histogram(
                "source_poll_duration_seconds",
                "Time one poll (fetch) of the config repository took.",
                POLL_BUCKETS,
            ),
            poll_errors=add.counter("source_poll_errors", "Polls of the config repository that failed."),
            last_success=add.gauge(
                "source_last_successful_poll_timestamp_seconds",
                "When the config repository was last polled successfully (0: never). Alert on its age.",
            ),
        )


def _api_families(add: _Families) -> tuple[Counter, Gauge]:
    """Kubernetes API requests by verb and code, and whether this process leads."""
    requests = add.counter(
        "kube_api_requests", "Kubernetes API requests, by verb and HTTP status code.", ["verb", "code"]
    )
    leader = add.gauge("leader", "1 while this process holds the leader Lease, else 0.")
    return requests, leader


def _shard_families(add: _Families) -> tuple[Gauge, Counter]:
    """``run --sharding``: the apps this replica owns, and the apps that moved to it."""
    owned = add.gauge(
        "shard_apps_owned",
        "Apps this replica has claimed (or adopted in a handover) and reconciles (run --sharding).",
    )
    moves = add.counter("shard_moves", "Apps this replica took over from another replica (run --sharding).")
    return owned, moves


def _webhook_families(add: _Families) -> tuple[Counter, Gauge]:
    """Webhook deliveries by provider and outcome, and the bodies being read now."""
    deliveries = add.counter(
        "webhook_deliveries",
        "Git webhook deliveries received, by provider and outcome.",
        ["provider", "outcome"],
    )
    reading = add.gauge(
        "webhook_bodies_reading",
        "Webhook request bodies being read now (at most the server's limit; more are refused 503).",
    )
    return deliveries, reading
