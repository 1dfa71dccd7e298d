"""One reconcile pass for one app: read what the cluster holds, plan one step, carry it out.

The decisions are :func:`gitdeploy.core.rollout.plan_pass` (pure); this module does the I/O around
it through the cluster adapter, in a crash-safe order: the app record first (an outcome, a pin),
then the ReplicaSet and pod actions, then events. Every action is idempotent with respect to the
next pass: if gitdeploy dies in between, the next pass reads the cluster and picks up from there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

from gitdeploy.clock import Clock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.writecheck import writes_checked_by
from gitdeploy.controller.measuring import measured
from gitdeploy.controller.restore import restore_settings
from gitdeploy.core.history.records import AppRecord, Cause, CommitRef, Outcome, is_emptied, load_record
from gitdeploy.core.models import App, AppKey, PodTemplate
from gitdeploy.core.observed import (
    ObservedPod,
    ObservedReplicaSet,
    PodCensus,
    ReplicaSetSpec,
    StoredRecord,
    record_name,
)
from gitdeploy.core.podstates import PodState
from gitdeploy.core.rollout import (
    Action,
    CreatePod,
    CreateReplicaSet,
    DeletePod,
    DeleteReplicaSet,
    Event,
    PatchReplicaSet,
    Snapshot,
    Step,
    Target,
    plan_pass,
    wants_pod_census,
)
from gitdeploy.core.rollout.labeldrift import (
    app_by_name,
    foreign_message,
    hidden_replica_sets,
    is_own,
    label_changes,
    labels_edited,
    own_labels,
    relabel_event,
    told_relabelled,
)
from gitdeploy.core.rollout.templatedrift import (
    REPLACING_PODS_ANNOTATION,
    TEMPLATE_DIGEST_ANNOTATION,
    TemplatePod,
    edited_by_hand,
    template_digest,
)
from gitdeploy.core.rollout.templaterepair import (
    TemplateCheck,
    TemplateRepair,
    check_template,
    plan_template_repair,
)
from gitdeploy.core.rollout.transitions import RolloutTransition, rollout_transitions
from gitdeploy.core.scaling.progress import DeploymentStatus
from gitdeploy.errors import (
    AlreadyExistsError,
    ConflictError,
    GitdeployError,
    NotFoundError,
    StaleReadError,
    TransientError,
)

log = logging.getLogger("gitdeploy.rollout")


FOREIGN_RETRY_SECONDS = 60.0
"""How often a pass looks again at a ReplicaSet that has the name gitdeploy needs but is not its own
(the user renames or deletes it; no watch of gitdeploy's ReplicaSets sees that one)."""

STALE_READ_RETRY = 1.0
"""When a pass whose write found a ReplicaSet changed since its read (:class:`StaleReadError`) is
due again at the latest: the watch that tells of the change makes it due at once."""


def manifest_digest(app: App) -> str:
    """A short digest of the app's whole manifest (a rollback pin holds while it is unchanged)."""
    return hashlib.sha256(app.manifest_json.encode()).hexdigest()[:16]


def choose_target(
    app: App, commit: CommitRef, snapshot: Snapshot, *, cause: Cause = Cause.CONFIG_CHANGE
) -> Target:
    """What ``app`` should run: git's template, unless a rollback pinned a revision.

    A pin holds while the app's manifest is the one it was set on (a pin set without a digest is
    bound to the manifest the loop sees first) and its template is at hand: on its ReplicaSet, or
    rebuilt from git into the pin (never a template edited by hand). A changed manifest rolls
    forward from git as usual.
    """
    digest = manifest_digest(app)
    record = snapshot.record
    git_target = Target(
        app=app,
        template=app.template,
        template_hash=app.template_hash,
        commit=commit,
        cause=cause,
        change_cause=app.change_cause,
        auto_start=app.triggers.config_change or record.deploy_requested,
        manifest_digest=digest,
    )
    pin = record.pin
    if pin is None or pin.manifest_digest not in ("", digest):
        return git_target
    pinned = next((rs for rs in snapshot.replica_sets if rs.state.template_hash == pin.template_hash), None)
    if pin.template:  # rebuilt from git: the revision's ReplicaSet was gone or edited by hand
        template = PodTemplate(pin.template)
    elif pinned is not None and pinned.template is not None and not edited_by_hand(pinned):
        template = pinned.template
    else:
        return git_target
    entry = record.entry(pin.revision)
    return dataclasses.replace(
        git_target,
        app=restore_settings(app, pin),
        template=template,
        template_hash=pin.template_hash,
        commit=entry.commit if entry is not None else commit,
        cause=pin.cause,
        change_cause=f"rollback to revision {pin.revision}: {pin.reason}",
        auto_start=True,
        pin=dataclasses.replace(pin, manifest_digest=digest),
    )


def build_snapshot(
    app: AppKey,
    replica_sets: Iterable[ObservedReplicaSet],
    pods: Iterable[ObservedPod],
    stored: StoredRecord | None,
    census: PodCensus | None = None,
) -> Snapshot:
    """The planner's view of one app from namespace-wide lists (or per-app reads). A record that
    cannot be read raises :class:`~gitdeploy.errors.DamagedRecordError` (never read as empty)."""
    return Snapshot(
        replica_sets=tuple(rs for rs in replica_sets if rs.app == app.name and rs.namespace == app.namespace),
        pods=tuple(p for p in pods if p.namespace == app.namespace and p.app == app.name),
        record=load_record(app.namespace, app.name, stored.payload) if stored is not None else AppRecord(),
        record_uid=stored.uid if stored is not None else "",
        record_emptied=stored is not None and is_emptied(stored.payload),
        pod_census=census,
    )


class ShardHooks(Protocol):
    """What ``run --sharding`` (:class:`~gitdeploy.controller.shards.ShardGate`) checks before writes."""

    def fence(self, key: AppKey) -> None:
        """Raise unless this replica may still write for ``key``."""

    def before_write(self, key: AppKey, record: AppRecord, version: str | None) -> AppRecord:
        """Fence, and name this replica as the owner in a record it creates (``version`` None)."""
        ...

    def holds(self, key: AppKey) -> bool:
        """Whether this replica holds ``key`` now (else its ReplicaSets are another replica's)."""
        ...


_News = TypeVar("_News")


def tell(observers: Iterable[Callable[[_News], None]], news: Iterable[_News], key: AppKey) -> None:
    """Tell each observer each piece of ``news`` (about app ``key``), on the reconcile thread: a
    failing observer is logged, never fails the step."""
    for item in news:
        for observer in observers:
            try:
                observer(item)
            except Exception:  # an observer's bug must not stop rollouts
                log.exception("[%s] %s observer failed", key, type(item).__name__)


SCALING_REASON = "ScalingReplicaSet"


def _log_scales(key: AppKey, snapshot: Snapshot, step: Step, events: Iterable[Event]) -> None:
    """A scale of a revision that is complete (a commit that changed only ``replicas``) is a
    state change of its own: logged. The scales of a rollout under way are debug lines (the
    rollout's own states are logged)."""
    entry = snapshot.record.entry(step.revision)
    settled = entry is not None and entry.outcome is Outcome.COMPLETE
    for event in events:
        if event.reason == SCALING_REASON:
            revision = step.revision
            level = logging.INFO if settled else logging.DEBUG
            log.log(level, "[%s] revision %d: %s", key, revision, event.message, extra={"revision": revision})


def plan_explained(
    cluster: Cluster,
    target: Target,
    snapshot: Snapshot,
    now: float,
    previous: DeploymentStatus | None,
    watched: bool,
) -> tuple[Snapshot, Step]:
    """:func:`plan_pass`; a step that fails a revision its pods can explain is planned again with
    them (:attr:`Step.explain_with_pods`). The snapshot planned with, and the step."""
    step = plan_pass(target, snapshot, now, previous, watched=watched)
    if step.explain_with_pods and snapshot.new_pods is None:
        snapshot = dataclasses.replace(snapshot, new_pods=_pod_states(cluster, target.app, step))
        step = plan_pass(target, snapshot, now, previous, watched=watched)
    return snapshot, step


def _pod_states(cluster: Cluster, app: App, step: Step) -> tuple[PodState, ...]:
    """The pods of the ReplicaSet ``step`` fails, read to say why (none if they cannot be read:
    the revision fails all the same, its message without the pods' reasons)."""
    try:
        return tuple(cluster.list_pod_states(app.namespace, app.name, step.explain_with_pods))
    except GitdeployError as problem:
        log.warning(
            "[%s] could not read the pods to say why revision %d failed: %s", app.key, step.revision, problem
        )
        return ()


def template_pods(cluster: Cluster, check: TemplateCheck) -> list[TemplatePod] | None:
    """The pods of the current ReplicaSet while its hand-edited template is being repaired."""
    rs = check.rs
    if rs is None or not check.wants_pods:
        return None
    return cluster.list_replica_set_pods(rs.namespace, rs.app, rs.state.template_hash)


class RolloutRunner:
    """Plans and executes passes for apps on one cluster; remembers each app's last status."""

    def __init__(self, cluster: Cluster, clock: Clock) -> None:
        self.cluster = cluster
        self.clock = clock
        self.statuses: dict[AppKey, DeploymentStatus] = {}
        self.record_versions: dict[AppKey, str] = {}
        """The resourceVersion of each app record this runner wrote last (its own changes)."""
        self.replicas_known: dict[tuple[str, str], tuple[int, int]] = {}
        """``spec.replicas`` and ``metadata.generation`` of each ReplicaSet (by namespace and name)
        as this runner last saw or set them (:meth:`changed_by_hand`)."""
        self.digests_due: dict[tuple[str, str], str] = {}
        """The template digest of each ReplicaSet this runner created and has not scaled since: it
        goes with the next scale of that ReplicaSet (a rollout always writes its new ReplicaSet
        again), so creating a ReplicaSet costs no write of its own. Lost with the process, it is then
        recorded from the template as read (:func:`~gitdeploy.core.rollout.templatedrift.needs_digest`)."""
        self.shards: ShardHooks | None = None
        """With ``run --sharding``: asked before every write for an app (see :class:`ShardHooks`)."""
        self.leading: Callable[[], bool] | None = None
        """With leader election (not sharded): whether this process still leads, asked before every
        write for an app, so that a leader paused in the middle of a pass past its renew deadline
        (SIGSTOP, a long GC, a frozen VM) writes nothing of that pass once it runs again."""
        # -- observers (metrics, notifications) --
        self.observers: list[Callable[[RolloutTransition], None]] = []
        """Told of every rollout a step started or ended, after the step was carried out."""
        self.event_observers: list[Callable[[Event], None]] = []
        """Told of each event of a step (a canary's step, an analysis run's end), after the step
        was carried out."""

    def fence(self, key: AppKey) -> None:
        """Raise a :class:`TransientError` unless this process may still write for ``key`` now."""
        if self.shards is not None:
            self.shards.fence(key)
        if self.leading is not None and not self.leading():
            raise TransientError(
                f"[{key}] not written: this process no longer holds the leader Lease (not renewed "
                "within its renew deadline), so another may be acting on the app now",
                hint="it acts again once it leads again",
            )

    def read_snapshot(self, key: AppKey, *, census: bool = False) -> tuple[Snapshot, StoredRecord | None]:
        """Three reads for one app, its pods' ``census`` included if asked (the loop uses
        namespace-wide lists instead)."""
        replica_sets = self.cluster.list_replica_sets(key.namespace, key.name)
        counted: PodCensus | None = None
        if census:
            pods, counts = self.cluster.list_pods_with_census(key.namespace, key.name)
            counted = counts.get(key.name, PodCensus())
        else:
            pods = self.cluster.list_app_pods(key.namespace, key.name)
        stored = self.cluster.read_app_record(key.namespace, key.name)
        return build_snapshot(key, replica_sets, pods, stored, counted), stored

    def reconcile(self, app: App, commit: CommitRef, *, cause: Cause = Cause.CONFIG_CHANGE) -> Step:
        """Read the app's state, plan one step, execute it; returns the step."""
        snapshot, stored = self.read_snapshot(app.key, census=wants_pod_census(app))
        with writes_checked_by(functools.partial(self.fence, app.key)):  # as the loop's (writecheck)
            return self.run_step(choose_target(app, commit, snapshot, cause=cause), snapshot, stored)

    def run_step(
        self,
        target: Target,
        snapshot: Snapshot,
        stored: StoredRecord | None,
        amend: Callable[[Step, AppRecord], AppRecord] | None = None,
        *,
        watched: bool = False,
    ) -> Step:
        """Plan and execute one pass. ``amend`` may change the record to write (the loop adds its
        sync status there, so that it costs no write of its own); ``watched``: a watch of the
        app's ReplicaSets wakes the caller (see :func:`plan_pass`)."""
        now, clock, cluster = self.clock.now(), self.clock, self.cluster
        fence = functools.partial(self.fence, target.app.key)
        snapshot = measured(target, snapshot, now, clock, cluster, fence)
        snapshot, relabelled = self._relabel_hidden(target, snapshot)
        for rs in snapshot.replica_sets:
            self.know(rs.namespace, rs.name, rs.state.replicas, rs.generation)
        previous = self.statuses.get(target.app.key)
        snapshot, step = plan_explained(self.cluster, target, snapshot, now, previous, watched)
        for name, changes in relabelled:
            step = told_relabelled(step, name, changes)
        check = check_template(target, snapshot)
        step, repair = plan_template_repair(target, check, step, template_pods(self.cluster, check))
        record = step.record or snapshot.record
        if amend is not None and not step.create_record:
            record = amend(step, record)
        if record != (step.record or snapshot.record):
            step = dataclasses.replace(step, record=record)
        if self.shards is not None and step.record is None and stored is not None and step.actions:
            step = dataclasses.replace(step, record=record)  # sharded: the write names the version read
        self.execute(target.app, snapshot, stored, step, repair)
        self.statuses[target.app.key] = step.status
        if self.observers:
            tell(self.observers, rollout_transitions(target, snapshot.record, step, now), target.app.key)
        tell(self.event_observers, step.events, target.app.key)
        return step

    def _relabel_hidden(
        self, target: Target, snapshot: Snapshot
    ) -> tuple[Snapshot, list[tuple[str, tuple[str, ...]]]]:
        """Find by name each ReplicaSet the revision log knows whose labels hide it from the lists
        (see :mod:`~gitdeploy.core.rollout.labeldrift`), put gitdeploy's labels back, and return
        the snapshot with them, and (name, what was undone) of each relabelled one."""
        app, listed = target.app, snapshot.replica_sets
        relabelled: list[tuple[str, tuple[str, ...]]] = []
        for name, template_hash in hidden_replica_sets(app.name, target.template_hash, snapshot):
            found = self._relabel(app.key, name, template_hash, wanted=template_hash == target.template_hash)
            if found is None:
                continue
            observed, changes = found
            listed = (*(rs for rs in listed if rs.name != observed.name), observed)
            if changes:
                relabelled.append((observed.name, changes))
        return dataclasses.replace(snapshot, replica_sets=listed), relabelled

    def _relabel(
        self, key: AppKey, name: str, template_hash: str, *, wanted: bool
    ) -> tuple[ObservedReplicaSet, tuple[str, ...]] | None:
        """Read ReplicaSet ``name`` (None: there is none) and put gitdeploy's labels back on it;
        it and the labels changed. One that gitdeploy did not make for ``template_hash`` is never
        changed: left alone (None) when it is a replaced revision's name, refused when the target
        needs it (a TransientError: looked at again every :data:`FOREIGN_RETRY_SECONDS`)."""
        read = self.cluster.read_replica_set(key.namespace, name)
        if read is None:
            return None
        found, observed = read
        if not is_own(found, template_hash) and not wanted:
            return None
        if not is_own(found, template_hash):
            hint = f"rename or delete ReplicaSet {found.name}"  # the cluster, not git, must change:
            raise TransientError(  # look again, as the watch does not see a ReplicaSet not labelled ours
                foreign_message(found, key.name, template_hash), hint=hint, retry_after=FOREIGN_RETRY_SECONDS
            )
        changes = label_changes(found, key.name, template_hash)
        if changes:
            self.fence(key)
            labels = own_labels(key.name, template_hash)
            observed = self.cluster.relabel_replica_set(key.namespace, name, labels)
            log.info("[%s] ReplicaSet %s: restored its labels, changed by hand", key, name)
        return observed, changes

    def changed_by_hand(self, kind: str, rs: ObservedReplicaSet) -> bool:
        """Whether a watch's news of ``rs`` (ADDED, MODIFIED, DELETED) is a change this runner did
        not make: a delete, labels not naming its app and template, or a spec newer than any it saw
        or wrote with other ``spec.replicas`` than it set last (news of an older spec, or of the
        status of one it told of, is late news). One it never saw tells nothing (see the resync)."""
        known = self.replicas_known.get((rs.namespace, rs.name))
        key = AppKey(rs.namespace, app_by_name(rs.name))  # its labels may no longer say it
        if known is None or not acts_on(self, key):
            return False  # one it never saw, or one another replica or leader may change now
        if kind == "DELETED":
            del self.replicas_known[rs.namespace, rs.name]
            return True
        if labels_edited(rs):  # metadata: no new generation
            return True
        replicas, generation = known
        late = bool(rs.generation) and rs.generation <= generation
        if hand := not late and (replicas != rs.state.replicas or edited_by_hand(rs)):
            self.know(rs.namespace, rs.name, replicas, rs.generation)
        return hand

    def know(self, namespace: str, name: str, replicas: int, generation: int = 0) -> None:
        """Remember ``replicas`` as the ReplicaSet's, and the newest ``generation`` seen of it
        (0 while a write that will bump it is under way)."""
        seen = self.replicas_known.get((namespace, name), (0, 0))[1]
        self.replicas_known[namespace, name] = (replicas, max(seen, generation))

    # -- execution -----------------------------------------------------------------------------------

    def execute(
        self,
        app: App,
        snapshot: Snapshot,
        stored: StoredRecord | None,
        step: Step,
        repair: TemplateRepair | None = None,
    ) -> None:
        """Carry out ``step`` (read as ``snapshot``): the record first, then ``repair``, then its
        actions, then its events. Each scale and delete names the ReplicaSet's resourceVersion as
        ``snapshot`` read it, or as this step wrote it since (see :meth:`_apply`)."""
        ns = app.namespace
        record_uid = snapshot.record_uid
        if step.record is not None:
            record = with_logs(self.cluster, ns, step.record, step.log_pods)
            version = None if step.create_record or stored is None else stored.resource_version
            record_uid = self.write_record(app.key, record, version).uid
        versions = {rs.name: rs.resource_version for rs in snapshot.replica_sets}
        repair_template(self, app, repair, versions)
        events = list(step.events)
        for action in step.actions:
            if (relabelled := self._apply(app.key, action, versions)) is not None:
                events.insert(0, relabelled)
        for event in events:
            self._record_event(app, record_uid, event)
        _log_scales(app.key, snapshot, step, events)
        if step.actions or step.record is not None:
            log.debug("[%s] %s: %s", app.key, step.phase, step.message)

    def _apply(self, key: AppKey, action: Action, versions: dict[str, str]) -> Event | None:
        """Carry out one action of a step; an event it adds (a ReplicaSet relabelled). A scale and
        a delete name the resourceVersion of the ReplicaSet as this pass read it (``versions``, by
        name, with this step's own writes), as the Kubernetes Deployment controller's Update does:
        a ReplicaSet changed since (its status, another replica, a hand) refuses it, and the step
        ends there (:class:`StaleReadError`). So a write that a paused replica sends on resume,
        checked before the pause, is refused by a ReplicaSet the new owner changed meanwhile."""
        ns = key.namespace
        self.fence(key)
        if isinstance(action, CreateReplicaSet):
            versions.pop(action.spec.name, None)  # (made by this step: written unconditioned)
            return self._create_replica_set(key, action.spec)
        elif isinstance(action, PatchReplicaSet):
            with at_version_read(self, key, action.name):
                if action.replicas is not None:
                    self.know(ns, action.name, action.replicas)  # before: a watch may tell it first
                annotations = dict(action.annotations)
                digest = self.digests_due.get((ns, action.name))
                if digest is not None:
                    annotations[TEMPLATE_DIGEST_ANNOTATION] = digest
                version = versions.get(action.name, "")
                patched = self.cluster.scale_replica_set(
                    ns, action.name, action.replicas, annotations, version=version
                )
            self.digests_due.pop((ns, action.name), None)
            self.know(ns, action.name, patched.state.replicas, patched.generation)
            versions[action.name] = patched.resource_version
        elif isinstance(action, DeleteReplicaSet):
            with at_version_read(self, key, action.name):
                self.replicas_known.pop((ns, action.name), None)
                self.cluster.delete_replica_set(ns, action.name, version=versions.get(action.name, ""))
            self.digests_due.pop((ns, action.name), None)
        elif isinstance(action, CreatePod):
            try:
                self.cluster.create_pod(action.spec)
            except AlreadyExistsError:
                log.info("[%s] pod %s is still being deleted; retrying next pass", key, action.spec.name)
        elif isinstance(action, DeletePod):
            self.cluster.delete_pod(ns, action.name)
        return None

    def _create_replica_set(self, key: AppKey, spec: ReplicaSetSpec) -> Event | None:
        """Create a revision's ReplicaSet; the digest of its template as stored is due (see
        :attr:`digests_due`). One of that name that the lists did not show (its labels changed
        by hand) gets gitdeploy's labels back, for the next pass to list: the event says so."""
        self.know(key.namespace, spec.name, spec.replicas)  # before: a watch may tell it first
        try:
            created = self.cluster.create_replica_set(spec)
        except AlreadyExistsError:
            log.info("[%s] ReplicaSet %s exists already; the next pass adopts it", key, spec.name)
            found = self._relabel(key, spec.name, spec.template_hash, wanted=True)
            return relabel_event(spec.name, found[1]) if found is not None and found[1] else None
        if created.template is not None:  # the template as the server stored it
            self.digests_due[key.namespace, spec.name] = template_digest(created.template)
        return None

    def _record_event(self, app: App, record_uid: str, event: Event) -> None:
        try:
            self.fence(app.key)  # a process paused after its step's writes tells nothing on resume
            self.cluster.record_event(
                app.namespace,
                ("ConfigMap", record_name(app.name), record_uid),  # an object that exists
                event.reason,
                event.message,
                warning=event.warning,
                now=self.clock.now(),
            )
        except GitdeployError as problem:  # an event is never worth failing a step for
            log.warning("[%s] could not record event %s: %s", app.key, event.reason, problem)

    def write_record(self, key: AppKey, record: AppRecord, version: str | None) -> StoredRecord:
        """The loop's one write of an app record (``version`` None: create it, with its namespace
        if that is missing); its resourceVersion is remembered as this runner's own change.
        Sharded: fenced, and a record it creates names this replica as its owner."""
        if self.shards is not None:
            record = self.shards.before_write(key, record, version)
        self.fence(key)
        try:
            written = self.cluster.write_app_record(key.namespace, key.name, record.to_json(), version)
        except NotFoundError:
            if version is not None:
                raise
            self.cluster.ensure_namespace(key.namespace)  # a new app in a new namespace
            written = self.cluster.write_app_record(key.namespace, key.name, record.to_json(), None)
        self.record_versions[key] = written.resource_version
        return written


@contextlib.contextmanager
def at_version_read(runner: RolloutRunner, key: AppKey, name: str) -> Iterator[None]:
    """A write of ReplicaSet ``name`` at the resourceVersion read (see
    :meth:`RolloutRunner._apply`): a conflict leaves what ``runner`` knew of it as it was, and
    ends the step."""
    known = runner.replicas_known.get((key.namespace, name))
    try:
        with refused_when_changed(key, f"ReplicaSet {name}"):
            yield
    except StaleReadError:
        if known is not None:  # not written: what it saw of it last stands
            runner.replicas_known[key.namespace, name] = known
        raise


@contextlib.contextmanager
def refused_when_changed(key: AppKey, what: str) -> Iterator[None]:
    """A write of ``what`` (of app ``key``) at the resourceVersion this pass read: a conflict ends
    the pass as a :class:`StaleReadError`, and the next pass decides again from what it reads."""
    try:
        yield
    except ConflictError as problem:
        raise StaleReadError(
            f"[{key}] {what} changed since this pass read it",
            hint="the next pass reads it again",
            retry_after=STALE_READ_RETRY,
        ) from problem


def repair_template(
    runner: RolloutRunner, app: App, repair: TemplateRepair | None, versions: dict[str, str]
) -> None:
    """Carry out a :class:`TemplateRepair`: the template first, then its digest (and the mark
    of pods being replaced), then the pods made from the edited template; ``versions`` (see
    :meth:`RolloutRunner.execute`) learns the ReplicaSet's new resourceVersion."""
    if repair is None:
        return
    runner.fence(app.key)
    ns, name = app.namespace, repair.name
    if (
        repair == TemplateRepair(name, repair.template_hash, digest=repair.digest)
        and (ns, name) in runner.digests_due
    ):
        return  # only the digest, which goes with the ReplicaSet's next scale
    marks: dict[str, str | None] = {}
    if repair.restore is not None:
        restored = runner.cluster.restore_replica_set_template(
            ns, name, app.name, repair.template_hash, repair.restore
        )
        runner.know(ns, name, restored.state.replicas, restored.generation)  # not a hand change
        versions[name] = restored.resource_version
        assert restored.template is not None
        marks[TEMPLATE_DIGEST_ANNOTATION] = template_digest(restored.template)
        log.info("[%s] ReplicaSet %s: restored the pod template changed by hand", app.key, name)
    if repair.digest:
        marks[TEMPLATE_DIGEST_ANNOTATION] = repair.digest
    if repair.replacing is not None:
        marks[REPLACING_PODS_ANNOTATION] = "true" if repair.replacing else None
    if marks:
        versions[name] = runner.cluster.annotate_replica_set(ns, name, marks).resource_version
    for pod in repair.delete_pods:
        runner.cluster.delete_pod(ns, pod)
        log.info("[%s] pod %s, made from a pod template changed by hand, deleted", app.key, pod)


def with_logs(cluster: Cluster, namespace: str, record: AppRecord, pods: tuple[str, ...]) -> AppRecord:
    """Add the log tail of finished hook and deployer pods to the revisions that ran them."""
    if not pods:
        return record
    logs = {name: cluster.read_pod_log(namespace, name) for name in set(pods)}
    entries = []
    for entry in record.revisions:
        hooks = tuple(
            dataclasses.replace(h, log=logs[h.pod]) if h.pod in logs and not h.log else h for h in entry.hooks
        )
        entries.append(dataclasses.replace(entry, hooks=hooks) if hooks != entry.hooks else entry)
    return dataclasses.replace(record, revisions=tuple(entries))


def release_old_replica_sets(
    runner: RolloutRunner, key: AppKey, replica_sets: Iterable[ObservedReplicaSet]
) -> None:
    """Release the ReplicaSets an earlier gitdeploy made owned by the app record (once each)."""
    for rs in replica_sets:
        if rs.owned_the_old_way and rs.app == key.name:
            runner.fence(key)
            runner.cluster.release_replica_set(rs.namespace, rs.name)
            log.info("[%s] ReplicaSet %s released from the app record", key, rs.name)


def acts_on(runner: RolloutRunner, key: AppKey) -> bool:
    """Whether ``runner`` acts on ``key`` now: it holds the app (``run --sharding``) and may still
    write for it (:meth:`RolloutRunner.fence`: its Lease renewed in time, and it still leads with
    leader election). Else another process may be changing the app's ReplicaSets: a process paused
    past its Lease hears of their changes when it resumes, before it notices that it lost it."""
    if runner.shards is not None and not runner.shards.holds(key):
        return False
    try:
        runner.fence(key)
    except TransientError:
        return False
    return True


def forget_replica_sets(runner: RolloutRunner) -> None:
    """Leader election: the Lease changed hands. What this runner knew of the ReplicaSets is from
    before another leader's changes, which are no hand's (:meth:`RolloutRunner.changed_by_hand`
    learns them again from the next pass over each app, as after a start)."""
    runner.replicas_known.clear()
    runner.digests_due.clear()


def forget_app(runner: RolloutRunner, key: AppKey) -> None:
    """``run --sharding``: ``key`` moved to another replica, whose changes to its ReplicaSets are
    not changes by hand (:meth:`RolloutRunner.changed_by_hand` knows nothing of them any more)."""
    for known in (runner.replicas_known, runner.digests_due):
        for namespace, name in list(known):
            if namespace == key.namespace and app_by_name(name) == key.name:
                known.pop((namespace, name), None)
