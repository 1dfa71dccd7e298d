"""Workers: one pass over the due apps, listed per namespace (or per app), reconciled in parallel.

A pass lists each namespace involved once (ReplicaSets, app records, and hook pods when an app
there has hooks), or, when few of a namespace's apps are due (:func:`lists_per_app`), each of
those apps' own objects, and runs :meth:`~gitdeploy.controller.reconcile.Reconciler.reconcile`
for each app on a bounded pool of threads. :class:`PassHooks` let a benchmark or a test watch
(or slow down) the lists and the steps without overriding anything.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.reconcile import AppReport, Listed, Reconciler, Result
from gitdeploy.core.models import App, AppKey, StrategyType
from gitdeploy.core.observed import ObservedPod, ObservedReplicaSet, PodCensus
from gitdeploy.core.rollout import wants_pod_census
from gitdeploy.core.rollout.analysisjobs import runs_analysis_pods
from gitdeploy.errors import GitdeployError

CUT_CHECK = 0.05
"""Seconds between two looks at whether a pass is to stop early (see :meth:`Workers.run`)."""

PER_APP_LISTS_BELOW = 4
"""See :func:`lists_per_app`. Listing a whole namespace costs the same however few of its apps are
due (most of it decoding every ReplicaSet's JSON), while one app's own lists cost a small fraction
of it. On ``bench/run.py``'s cached cluster, with the 4 workers, the due apps' own lists cost as
much as the namespace's when about a quarter of its apps were due."""


def lists_per_app(due: int, apps_in_namespace: int) -> bool:
    """Whether a pass reads ``due`` apps of a namespace through lists of each app's own objects
    (ReplicaSets, record, hook pods by the ``gitdeploy.io/app`` label) rather than one list per
    kind of the whole namespace: when the namespace holds at least :data:`PER_APP_LISTS_BELOW`
    times more apps than are due. A pass over every app (a resync) lists namespaces.

    >>> lists_per_app(1, 833), lists_per_app(208, 833), lists_per_app(209, 833), lists_per_app(1, 3)
    (True, True, False, False)
    """
    return due * PER_APP_LISTS_BELOW <= apps_in_namespace


@dataclass(frozen=True)
class PassHooks:
    """What a benchmark or a test watches of the passes the scheduler drives (all optional; they
    run on the loop's threads, and must not raise)."""

    before_list: Callable[[str, int], None] | None = None
    """(namespace, apps due there) before a pass lists the namespace as a whole."""
    around_step: Callable[[AppKey, Callable[[], Result]], Result] | None = None
    """Runs each app's reconcile (after its lists): call the given function, return its result."""
    after_pass: Callable[[list[AppReport], float], None] | None = None
    """(the pass's reports, its seconds) after every pass that had apps due."""


NO_HOOKS = PassHooks()

Finish = Callable[[Result], AppReport | None]
"""Takes a pass's result over one app in: its report (None when nothing of the app is known)."""


class Workers:
    """The pool that runs a pass's reconciles, and the lists that feed them."""

    def __init__(
        self, cluster: Cluster, reconciler: Reconciler, apps: Callable[[], dict[AppKey, App]], size: int
    ) -> None:
        self.cluster = cluster
        self.reconciler = reconciler
        self._apps = apps
        self.size = max(1, size)
        self._pool = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="reconcile")
        """Kept between passes: starting its threads again for every pass would add to every step."""
        self.sharing: Callable[[], int] = lambda: 1
        """How many replicas share the apps (``run --sharding``): a replica's pass over all of
        its own apps (its resync) lists namespaces too, as one replica's pass over every app does."""
        self._counted_apps: dict[AppKey, App] = {}
        self._apps_per_namespace: Counter[str] = Counter()

    def run(
        self, keys: list[AppKey], finish: Finish, hooks: PassHooks, cut: Callable[[], bool] | None = None
    ) -> list[AppReport]:
        """Reconcile ``keys``; each result goes to ``finish`` on the thread that made it (a
        namespace that cannot be listed fails its apps), and the reports it returns are the pass's.
        Once ``cut()`` says so, the pass stops early: the steps under way end, and the apps whose
        steps had not begun are not reconciled (nor given to ``finish``)."""
        by_namespace: dict[str, list[AppKey]] = defaultdict(list)
        for key in keys:
            by_namespace[key.namespace].append(key)
        reports: list[AppReport | None] = []
        futures: list[Future[AppReport | None]] = []
        earlier = 0
        for namespace, members in sorted(by_namespace.items()):
            # MEMORY: the next namespace is listed once the steps of all but the last one listed
            # are done, so a pass holds what it listed of two namespaces, not of every one.
            if self._waited(futures[:earlier], futures, cut):
                break
            earlier = len(futures)
            if lists_per_app(len(members), self._apps_in(namespace) // max(1, self.sharing())):
                futures += [
                    self._pool.submit(self._list_and_reconcile, key, finish, hooks) for key in members
                ]
                continue
            if hooks.before_list is not None:
                hooks.before_list(namespace, len(members))
            read_in = self.reconciler.reading()
            try:
                listed = self._list_namespace(namespace, members)
            except GitdeployError as problem:
                reports += [finish(Result(key, error=problem)) for key in members]  # never a silent pass
                continue
            futures += [
                self._pool.submit(self._reconcile, key, (listed[key.name], read_in), finish, hooks)
                for key in members
            ]
            del listed  # each step holds its own app's objects only, freed when it is done
        self._waited(futures, futures, cut)
        reports += [future.result() for future in futures if not future.cancelled()]
        return [report for report in reports if report is not None]

    @staticmethod
    def _waited(
        waited: list[Future[AppReport | None]],
        every: list[Future[AppReport | None]],
        cut: Callable[[], bool] | None,
    ) -> bool:
        """Wait for the ``waited`` steps; True when ``cut()`` said to stop first, and then every
        step of ``every`` not begun yet is cancelled."""
        while True:
            pending = wait(waited, timeout=CUT_CHECK if cut is not None else None).not_done
            if cut is not None and cut():
                for future in every:
                    future.cancel()
                return True
            if not pending:
                return False

    def _reconcile(
        self, key: AppKey, read: tuple[Listed, int | None], finish: Finish, hooks: PassHooks
    ) -> AppReport | None:
        """Reconcile ``key`` from what was listed of it, and when (:meth:`Reconciler.reading`)."""
        if hooks.around_step is None:
            return finish(self.reconciler.reconcile(key, *read))
        return finish(hooks.around_step(key, lambda: self.reconciler.reconcile(key, *read)))

    def _apps_in(self, namespace: str) -> int:
        """How many apps of git live in ``namespace`` (counted once per desired state)."""
        apps = self._apps()
        if self._counted_apps is not apps:
            self._apps_per_namespace = Counter(key.namespace for key in apps)
            self._counted_apps = apps
        return self._apps_per_namespace[namespace]

    def _wants_pods(self, key: AppKey) -> bool:
        """Whether the app may have hook, deployer or analysis pods to look at."""
        app = self._apps().get(key)
        if app is None:
            return False
        return bool(app.strategy.hooks) or app.strategy.type is StrategyType.CUSTOM or runs_analysis_pods(app)

    def _wants_census(self, key: AppKey, replica_sets: list[ObservedReplicaSet]) -> bool:
        """Whether the app's pods must be counted (:func:`wants_pod_census`), its ``replica_sets``
        as listed."""
        app = self._apps().get(key)
        return app is not None and wants_pod_census(app, (rs.state for rs in replica_sets))

    def _list_namespace(self, namespace: str, members: list[AppKey]) -> dict[str, Listed]:
        """One list call per kind for the whole namespace (pods only when an app may have hook
        pods, or must have its pods counted per ReplicaSet: a Recreate app not at rest, see
        :func:`wants_pod_census`; then every app pod), split by app; only
        the ReplicaSets and records of ``members`` are kept of the lists, page by page (a third of
        the namespace for each of three ``run --sharding`` replicas)."""
        names = {key.name for key in members}
        replica_sets: dict[str, list[ObservedReplicaSet]] = {name: [] for name in names}
        for rs in self.cluster.list_replica_sets(namespace, of_apps=names):
            replica_sets[rs.app].append(rs)
        records = {r.app: r for r in self.cluster.list_app_records(namespace, of_apps=names)}
        pods: dict[str, list[ObservedPod]] = {name: [] for name in names}
        counted = {key.name for key in members if self._wants_census(key, replica_sets[key.name])}
        census: dict[str, PodCensus] = {}
        if counted or any(self._wants_pods(key) for key in members):
            hook_pods, census = (
                self.cluster.list_pods_with_census(namespace)
                if counted
                else (self.cluster.list_app_pods(namespace), {})
            )
            for pod in hook_pods:
                if pod.app in pods:
                    pods[pod.app].append(pod)
        return {
            name: (
                replica_sets[name],
                pods[name],
                records,
                census.get(name, PodCensus()) if name in counted else None,
            )
            for name in names
        }

    def _list_and_reconcile(self, key: AppKey, finish: Finish, hooks: PassHooks) -> AppReport | None:
        """A pass over one app from lists of its own objects (when few apps of its namespace are due)."""
        read_in = self.reconciler.reading()
        try:
            replica_sets = self.cluster.list_replica_sets(key.namespace, key.name)
            records = {r.app: r for r in self.cluster.list_app_records(key.namespace, key.name)}
            pods: list[ObservedPod] = []
            census = None
            if self._wants_census(key, replica_sets):
                pods, counted = self.cluster.list_pods_with_census(key.namespace, key.name)
                census = counted.get(key.name, PodCensus())
            elif self._wants_pods(key):
                pods = self.cluster.list_app_pods(key.namespace, key.name)
        except GitdeployError as problem:
            return finish(Result(key, error=problem))
        return self._reconcile(key, ((replica_sets, pods, records, census), read_in), finish, hooks)
