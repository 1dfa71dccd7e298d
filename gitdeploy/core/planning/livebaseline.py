"""The baseline of ``gitdeploy plan --live``: what the cluster runs, from ReplicaSets and app records.

A live plan compares the head of a change with what runs instead of with the base commit. Per app
the cluster says:

* the running revision: the ReplicaSet with the highest revision; its template (gitdeploy's own
  labels removed) and template hash, and the replicas gitdeploy wants for it;
* a rollback pin that still holds (the caller says whether it holds: the head's manifest is the one
  the pin was set on): a new template in git is then ``manual``, with the command that undoes it;
* images an image trigger resolved: a container named by an ImageChange trigger keeps the image
  it runs (a digest, ``repo@sha256:...``), so git's tag for that container is no change (a live
  plan does not ask the registry whether the tag moved);
* drift: the ReplicaSets differ from what the record says gitdeploy made (a ReplicaSet scaled or
  edited by hand, an old ReplicaSet that still has pods after the rollout completed);
* earlier revisions: a head template equal to one a Complete revision ran is a ``rollback``.

Settings that live only in git (strategy, triggers, deadlines) cannot be read back from the
cluster, so the baseline takes them from the head: a live plan reports template and replicas.
Everything here is pure; :mod:`gitdeploy.controller.liveplan` reads the cluster.

Worked example: ``shop/web`` runs revision 3 (``nginx:1.25``, 2 replicas) and someone ran ``kubectl
scale rs web-abc --replicas 5``; the head sets ``nginx:1.26``. The baseline app has ``nginx:1.25``
and 2 replicas, the drift is ``ReplicaSet web-abc has 5 replica(s), revision 3 wants 2 (scaled by
hand?)``, and the plan is a ``rollout`` with that drift listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gitdeploy.core.commits import CommitInfo
from gitdeploy.core.history.records import AppRecord, Outcome, Pin
from gitdeploy.core.imagetriggers import comparable, decide_images, followed_tags, suspension_note
from gitdeploy.core.models import (
    App,
    AppKey,
    AppKind,
    Location,
    PodTemplate,
    Selector,
    Strategy,
    StrategyType,
    Triggers,
)
from gitdeploy.core.observed import (
    COMMIT_ANNOTATION,
    PHASE_ANNOTATION,
    ObservedReplicaSet,
    newest_replica_set,
)
from gitdeploy.core.planning.changes import Baseline, EarlierTemplate


@dataclass(frozen=True)
class RunningApp:
    """One app as the cluster holds it: its ReplicaSets and its record."""

    key: AppKey
    replica_sets: tuple[ObservedReplicaSet, ...] = ()
    record: AppRecord = field(default_factory=AppRecord)

    @property
    def current(self) -> ObservedReplicaSet | None:
        """The ReplicaSet of the newest revision (the one gitdeploy last rolled out)."""
        return newest_replica_set(self.replica_sets)

    def outcome(self) -> Outcome | None:
        current = self.current
        if current is None:
            return None
        return self.record.outcome_of(current.state.revision, current.annotation(PHASE_ANNOTATION))


@dataclass(frozen=True)
class LiveInputs:
    """What :func:`gitdeploy.core.planning.changes.plan_changes` needs for a live plan."""

    baseline: Baseline
    head_apps: tuple[App, ...]
    """The head's apps, with the images image triggers keep put into their templates."""
    earlier: Mapping[AppKey, EarlierTemplate]
    running_commits: Mapping[AppKey, str]
    """The commit each app's running revision came from (where its commit list starts)."""


def kept_trigger_images(head: App, running: PodTemplate, *, suspended: bool) -> App:
    """``head`` as the loop deploys it when no stream tag moved: containers an ImageChange trigger
    names keep the image they run (:func:`gitdeploy.core.imagetriggers.decide_images`; no tag
    moves, so the cause, and with it the running hash, does not matter)."""
    return decide_images(head, {}, suspended=suspended, running=running, running_hash="").app


def find_drift(app: RunningApp) -> tuple[str, ...]:
    """How the ReplicaSets differ from what gitdeploy recorded for the running revision."""
    current = app.current
    if current is None:
        if app.record.revisions:
            latest = app.record.latest_revision
            return (f"the record has revisions up to {latest}, but no ReplicaSet exists (deleted by hand?)",)
        return ()
    out: list[str] = []
    revision = current.state.revision
    entry = app.record.entry(revision)
    if entry is not None and entry.template_hash and entry.template_hash != current.state.template_hash:
        out.append(
            f"ReplicaSet {current.name} has template {current.state.template_hash}, "
            f"the record says revision {revision} is {entry.template_hash}"
        )
    if entry is not None and entry.images and current.template is not None:
        recorded = dict(entry.images)
        for c in current.template.containers:
            if c.name in recorded and recorded[c.name] != c.image:
                out.append(
                    f"container {c.name} of ReplicaSet {current.name} runs {c.image}, "
                    f"revision {revision} deployed {recorded[c.name]} (edited by hand?)"
                )
    if app.outcome() is Outcome.COMPLETE:
        wanted = current.state.desired_replicas_annotation
        if wanted is not None and current.state.replicas != wanted:
            out.append(
                f"ReplicaSet {current.name} has {current.state.replicas} replica(s), "
                f"revision {revision} wants {wanted} (scaled by hand?)"
            )
        out += [
            f"old ReplicaSet {rs.name} still has {rs.state.replicas} replica(s) "
            f"after revision {revision} completed"
            for rs in sorted(app.replica_sets, key=lambda rs: rs.name)
            if rs is not current and rs.state.replicas > 0
        ]
    return tuple(out)


def earlier_revision(app: RunningApp, head_hash: str) -> EarlierTemplate | None:
    """The newest Complete revision, other than the running one, that ran ``head_hash``."""
    current = app.current
    running = current.state.revision if current is not None else None
    entries = [
        e
        for e in app.record.revisions
        if e.outcome is Outcome.COMPLETE and e.template_hash == head_hash and e.revision != running
    ]
    entry = max(entries, key=lambda e: e.revision, default=None)
    if entry is None:
        return None
    commit = CommitInfo(entry.commit.sha, entry.commit.author, "", 0.0, "", "", 0.0, entry.commit.subject, "")
    return EarlierTemplate(commit, revision=entry.revision)


def undo_pin_hint(key: AppKey, file: str) -> str:
    """How to end a rollback pin: roll forward by hand, or change the manifest in git."""
    where = f" to {file}" if file else ""
    return f"to roll forward: `gitdeploy deploy {key} --latest`, or push a change{where}"


def describe_pin(pin: Pin) -> str:
    """``rolled back to revision 1 by gitdeploy (autoRollback): revision 2 failed: ...``."""
    by = f" by {pin.by}" if pin.by else ""
    why = f": {pin.reason}" if pin.reason else ""
    return f"rolled back to revision {pin.revision}{by}{why}"


def _orphan_app(key: AppKey, record: AppRecord, template: PodTemplate, hash_: str, replicas: int) -> App:
    """An app that is only in the cluster: what is known of it (git no longer says the rest)."""
    file, _, line = (record.status.location if record.status is not None else "").rpartition(":")
    return App(
        kind=AppKind.DEPLOYMENT,
        api_version="apps/v1",
        key=key,
        location=Location(file, int(line) if line.isdigit() else 0),
        template=template,
        template_hash=hash_,
        selector=Selector(),
        strategy=Strategy(StrategyType.ROLLING_UPDATE),
        triggers=Triggers(config_change=True),
        replicas=replicas,
    )


def live_inputs(
    label: str,
    running: Sequence[RunningApp],
    head_apps: Sequence[App],
    *,
    pins_holding: frozenset[AppKey] = frozenset(),
) -> LiveInputs:
    """The baseline of a live plan, and the head's apps as the controller would deploy them.

    ``pins_holding`` names the apps whose rollback pin still holds (their head manifest is the one
    the pin was set on).
    """
    head_by_key = {a.key: a for a in head_apps}
    adjusted = dict(head_by_key)
    baseline_apps: list[App] = []
    pinned: dict[AppKey, str] = {}
    drift: dict[AppKey, tuple[str, ...]] = {}
    notes: dict[AppKey, tuple[str, ...]] = {}
    earlier: dict[AppKey, EarlierTemplate] = {}
    commits: dict[AppKey, str] = {}
    suspended: dict[AppKey, str] = {}
    for app in running:
        key, head, current, record = app.key, head_by_key.get(app.key), app.current, app.record
        found = find_drift(app)
        if found:
            drift[key] = found
        said: list[str] = []
        if current is None or current.template is None:
            continue
        template = comparable(current.template)
        replicas = current.state.desired_replicas_annotation or current.state.replicas
        commits[key] = current.annotation(COMMIT_ANNOTATION)
        outcome = app.outcome()
        said.append(f"runs revision {current.state.revision} ({outcome.value if outcome else 'unknown'})")
        if head is None:
            baseline_apps.append(_orphan_app(key, record, template, current.state.template_hash, replicas))
            notes[key] = tuple(said)
            continue
        git_images = {c.name: c.image for c in head.template.containers}
        head = adjusted[key] = kept_trigger_images(head, template, suspended=record.triggers_suspended)
        said += [
            f"image trigger: container {c.name} keeps {c.image} (git says {git_images[c.name]})"
            for c in head.template.containers
            if git_images.get(c.name, c.image) != c.image
        ]
        held = suspension_note(
            str(key), followed_tags(head), suspended=record.triggers_suspended, reason=record.suspended_reason
        )
        if held:
            said.append(held)
            suspended[key] = held
        pin = record.pin
        if pin is not None and key in pins_holding:
            pinned[key] = describe_pin(pin)
            said.append(undo_pin_hint(key, head.location.file))
        elif pin is not None:
            said.append(f"the rollback to revision {pin.revision} ends: the manifest changed since")
        baseline_apps.append(
            replace(
                head,
                template=template,
                template_hash=current.state.template_hash,
                replicas=replicas if head.replicas is not None else None,
            )
        )
        if head.template_hash != current.state.template_hash:
            found_earlier = earlier_revision(app, head.template_hash)
            if found_earlier is not None:
                earlier[key] = found_earlier
        notes[key] = tuple(said)
    baseline = Baseline(
        label, tuple(baseline_apps), pinned=pinned, drift=drift, notes=notes, suspended=suspended
    )
    return LiveInputs(baseline, tuple(adjusted.values()), earlier, commits)
