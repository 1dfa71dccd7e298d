"""What merging a change will do to each app: the pure classification behind ``gitdeploy plan``.

The planner compares the desired state at the head of a change with a :class:`Baseline` (today: the
desired state at the base commit; later, with ``--live``: what the cluster runs) and says, per app,
which one :class:`ChangeKind` applies. The rules, in order:

==========  =======================================================================================
invalid     the head has problems for this app (or its file no longer parses)
add         the app is new at the head
remove      the app is gone at the head; ``prune`` (head settings) says whether it is deleted
manual      the template changes, but nothing starts the rollout by itself: ``paused: true``, no
            ConfigChange trigger (a DeploymentConfig), or the baseline pins the app (a rollback)
rollback    the template changes back to one the app had at an earlier commit (a revert)
rollout     the template changes (a new revision)
scale       only ``replicas`` changes (no new revision)
settings    strategy, triggers, history limit, deadlines, labels... change; no rollout
drift       (live plans) nothing changes, but the cluster differs from what gitdeploy recorded
unchanged   nothing gitdeploy acts on changes
==========  =======================================================================================

Everything here is pure: the caller reads the two commits (and, for rollbacks, the earlier
templates) and passes plain values in.

Worked example: base ``web`` runs ``nginx:1.25`` with 3 replicas; the head sets ``nginx:1.26``.
:func:`plan_app` returns kind ``rollout``, reason ``web image nginx:1.25 -> nginx:1.26``, one
template change, and the rollout ``RollingUpdate, maxSurge 25% (1 pod), maxUnavailable 25% (0
pods) of 3 replicas`` (fenceposts from :func:`gitdeploy.core.scaling.rollingmath.resolve_fenceposts`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from gitdeploy.core.commits import CommitInfo, shorten_sha
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.models import App, AppKey, Hook, RepoSettings, Strategy, StrategyType
from gitdeploy.core.planning.canarytimeline import abort_line, canary_timeline, pauses_summary
from gitdeploy.core.pruning import PRUNE_ANNOTATION, prune_opted_out
from gitdeploy.core.scaling.rollingmath import resolve_fenceposts
from gitdeploy.core.templatediff import FieldChange, diff_templates, summarize_changes

DEFAULT_SETTINGS = RepoSettings()
NEW_APP_REPLICAS = 1
"""A new app whose manifest omits ``replicas`` starts with this many (see :class:`App`)."""


class ChangeKind(StrEnum):
    INVALID = "invalid"
    ADD = "add"
    REMOVE = "remove"
    MANUAL = "manual"
    ROLLBACK = "rollback"
    ROLLOUT = "rollout"
    SCALE = "scale"
    SETTINGS = "settings"
    DRIFT = "drift"
    UNCHANGED = "unchanged"


CHANGE_ORDER: tuple[ChangeKind, ...] = tuple(ChangeKind)
"""The order plans list kinds in: what needs attention first."""


@dataclass(frozen=True)
class DesiredSnapshot:
    """Desired state as the manifests layer read it at one commit (a core copy of ``LoadResult``)."""

    apps: tuple[App, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    invalid_apps: tuple[AppKey, ...] = ()
    settings: RepoSettings = field(default_factory=RepoSettings)


@dataclass(frozen=True)
class Baseline:
    """What the head is compared with.

    Without ``--live`` it is the desired state at the base commit (``label`` names it, for example
    ``base 1a2b3c4d5e6f``). A live plan will build one from what the cluster runs: ``apps`` from the
    app records (the running template, replicas and settings), and ``pinned`` from the records'
    control state: app -> why it does not follow git now (``rolled back to revision 3``). A
    template change of a pinned app is ``manual``. ``drift`` says how an app's ReplicaSets differ
    from its record, ``notes`` what else the cluster says of it (see
    :mod:`gitdeploy.core.planning.livebaseline`).
    """

    label: str
    apps: tuple[App, ...]
    invalid_apps: tuple[AppKey, ...] = ()
    pinned: Mapping[AppKey, str] = field(default_factory=dict)
    drift: Mapping[AppKey, tuple[str, ...]] = field(default_factory=dict)
    notes: Mapping[AppKey, tuple[str, ...]] = field(default_factory=dict)
    suspended: Mapping[AppKey, str] = field(default_factory=dict)
    """Apps whose image triggers a rollback suspended: why, and what resumes them. Git changing
    nothing else, such an app is ``manual``: the newest images of its tags do not roll out."""


@dataclass(frozen=True)
class EarlierTemplate:
    """An earlier commit at which the app had the head's template (found in its manifest's history).

    ``revision`` is the gitdeploy revision that ran it, when known (a live plan reads it from the
    app record; a plan from git alone does not know revisions).
    """

    commit: CommitInfo
    revision: int | None = None

    def describe(self) -> str:
        """``commit 1a2b3c4d5e6f "Bump web to 1.25" by Ada``."""
        where = f"revision {self.revision}, " if self.revision is not None else ""
        return f'{where}commit {self.commit.short_sha} "{self.commit.subject}" by {self.commit.author_name}'


@dataclass(frozen=True)
class SettingChange:
    """A field outside the template that differs (``strategy``, ``triggers``, ``replicas``...)."""

    field: str
    before: str | None
    after: str | None

    def render(self) -> str:
        """One line; ``(none)`` stands for a missing side.

        >>> SettingChange("strategy", "RollingUpdate", "Recreate").render()
        'strategy: RollingUpdate -> Recreate'
        """
        return f"{self.field}: {self.before or '(none)'} -> {self.after or '(none)'}"


@dataclass(frozen=True)
class HookPlan:
    phase: str
    container: str
    failure_policy: str
    command: tuple[str, ...]

    def render(self) -> str:
        command = " ".join(self.command) or "(container command)"
        return f"{self.phase}: {command} in container {self.container}, on failure {self.failure_policy}"


@dataclass(frozen=True)
class RolloutPlan:
    """How a new template will be rolled out: strategy, bounds as pod counts, and hooks.

    ``surge_pods``/``unavailable_pods`` are set for rolling strategies only.
    """

    strategy: StrategyType
    replicas: int
    max_surge: str | None = None
    max_unavailable: str | None = None
    surge_pods: int | None = None
    unavailable_pods: int | None = None
    custom_image: str | None = None
    hooks: tuple[HookPlan, ...] = ()
    steps: tuple[str, ...] = ()
    """A canary's timeline, a line per step with the pods at each weight
    (:func:`~gitdeploy.core.planning.canarytimeline.canary_timeline`)."""
    pauses: str = ""
    """A canary's pauses in all (``timed pauses 1m30s in all, 1 pause until promoted``)."""
    on_abort: str = ""
    """What an abort does to a canary (:func:`~gitdeploy.core.planning.canarytimeline.abort_line`)."""

    def describe(self) -> str:
        """One line, for example ``RollingUpdate, maxSurge 25% (1 pod), maxUnavailable 25% (0 pods)
        of 3 replicas``.

        >>> RolloutPlan(StrategyType.RECREATE, 2).describe()
        'Recreate: stop all 2 old pods, then start 2 new ones'
        """
        if self.strategy is StrategyType.CANARY:
            walked = max(len(self.steps) - 1, 0)  # the timeline ends with the full size
            return (
                f"Canary, maxSurge {self.max_surge} ({_pods(self.surge_pods or 0)}), "
                f"maxUnavailable {self.max_unavailable} ({_pods(self.unavailable_pods or 0)}) "
                f"of {self.replicas} replicas; {walked} steps, {self.pauses}"
            )
        if self.surge_pods is not None and self.unavailable_pods is not None:
            return (
                f"{self.strategy.value}, maxSurge {self.max_surge} ({_pods(self.surge_pods)}), "
                f"maxUnavailable {self.max_unavailable} ({_pods(self.unavailable_pods)}) "
                f"of {self.replicas} replicas"
            )
        if self.strategy is StrategyType.RECREATE:
            return f"Recreate: stop all {self.replicas} old pods, then start {self.replicas} new ones"
        return (
            f"{self.strategy.value}: deployer image {self.custom_image or '(none)'}, {self.replicas} replicas"
        )


def _pods(n: int) -> str:
    return f"{n} pod" if n == 1 else f"{n} pods"


@dataclass(frozen=True)
class AppPlan:
    """The plan of one app. ``file``/``line`` point at the head's manifest (the base's when removed)."""

    key: AppKey
    kind: ChangeKind
    reason: str
    app_kind: str = ""
    file: str = ""
    line: int = 0
    hash_before: str | None = None
    hash_after: str | None = None
    replicas_before: int | None = None
    replicas_after: int | None = None
    template_changes: tuple[FieldChange, ...] = ()
    settings_changes: tuple[SettingChange, ...] = ()
    rollout: RolloutPlan | None = None
    rollback_to: EarlierTemplate | None = None
    manual_reasons: tuple[str, ...] = ()
    prune: bool | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    commits: tuple[CommitInfo, ...] = ()
    files: tuple[str, ...] = ()
    """Every manifest file this app was in at the base or the head (for its commit history)."""
    drift: tuple[str, ...] = ()
    """Live plans: how the cluster differs from what gitdeploy recorded for the running revision."""
    notes: tuple[str, ...] = ()
    """Live plans: what else the cluster says (running revision, kept images, how to end a pin)."""


@dataclass(frozen=True)
class Plan:
    """The plan of a whole change. ``apps`` holds every app that is not unchanged, in
    :data:`CHANGE_ORDER` then by key; ``problems`` the head's problems not tied to one of them.
    """

    baseline: str
    apps: tuple[AppPlan, ...]
    unchanged: int
    """Apps that were read and found unchanged."""
    problems: tuple[Diagnostic, ...] = ()
    untouched_files: int = 0
    """Manifest files the change does not touch, so not read: every app in them is unchanged."""

    @property
    def valid(self) -> bool:
        return not self.problems and all(a.kind is not ChangeKind.INVALID for a in self.apps)

    @property
    def has_changes(self) -> bool:
        return bool(self.apps)

    def counts(self) -> dict[ChangeKind, int]:
        """How many apps of each kind, every kind present (``unchanged`` too)."""
        found = Counter(a.kind for a in self.apps)
        return {
            kind: (self.unchanged if kind is ChangeKind.UNCHANGED else found[kind]) for kind in ChangeKind
        }


def _hook_text(hook: Hook) -> str:
    command = " ".join(hook.command)
    return (
        f"{command or '(container command)'} in {hook.container_name}, on failure {hook.failure_policy.value}"
    )


def _strategy_fields(strategy: Strategy, out: dict[str, str]) -> None:
    out["strategy"] = strategy.type.value
    if strategy.rolling is not None:
        r = strategy.rolling
        out["strategy.maxSurge"] = str(r.max_surge)
        out["strategy.maxUnavailable"] = str(r.max_unavailable)
        out["strategy.intervalSeconds"] = str(r.interval_seconds)
        out["strategy.updatePeriodSeconds"] = str(r.update_period_seconds)
        out["strategy.timeoutSeconds"] = str(r.timeout_seconds)
    if strategy.recreate is not None:
        out["strategy.timeoutSeconds"] = str(strategy.recreate.timeout_seconds)
    for phase, hook in strategy.hooks.items():
        out[f"strategy.hooks.{phase}"] = _hook_text(hook)
    if strategy.custom is not None:
        out["strategy.custom.image"] = strategy.custom.image
        out["strategy.custom.command"] = " ".join(strategy.custom.command)
        for env in strategy.custom.environment:
            out[f"strategy.custom.environment.{env.name}"] = env.value
    if strategy.resources_json != "{}":
        out["strategy.resources"] = strategy.resources_json


def settings_fields(app: App) -> dict[str, str]:
    """The fields outside the template that gitdeploy acts on, as text (``replicas`` excluded).

    >>> from gitdeploy.core.models import (AppKind, Location, PodTemplate, Selector,
    ...     Triggers)
    >>> app = App(AppKind.DEPLOYMENT, "apps/v1", AppKey("demo", "web"), Location("web.yaml", 1),
    ...     PodTemplate("{}"), "h", Selector(), Strategy(StrategyType.RECREATE), Triggers(True))
    >>> settings_fields(app)["strategy"], settings_fields(app)["triggers"]
    ('Recreate', 'ConfigChange')
    """
    out: dict[str, str] = {"kind": app.kind.value}
    _strategy_fields(app.strategy, out)
    triggers = app.triggers.names()
    manual_images = [t.stream_tag for t in app.triggers.image_change if not t.automatic]
    out["triggers"] = ", ".join(triggers) or "(none)"
    if manual_images:
        out["triggers.notAutomatic"] = ", ".join(manual_images)
    out["paused"] = str(app.paused).lower()
    out["revisionHistoryLimit"] = str(app.revision_history_limit)
    out["progressDeadlineSeconds"] = str(app.progress_deadline_seconds)
    out["minReadySeconds"] = str(app.min_ready_seconds)
    out["autoRollback"] = str(app.auto_rollback).lower()
    selector = [f"{k}={v}" for k, v in app.selector.match_labels]
    selector += [f"{e.key} {e.operator} ({','.join(e.values)})" for e in app.selector.match_expressions]
    out["selector"] = ", ".join(selector)
    out.update({f"labels.{k}": v for k, v in app.labels})
    out.update({f"annotations.{k}": v for k, v in app.annotations})
    return out


def diff_settings(before: App, after: App) -> tuple[SettingChange, ...]:
    """The :func:`settings_fields` that differ, sorted by field (``replicas`` excluded)."""
    old, new = settings_fields(before), settings_fields(after)
    return tuple(
        SettingChange(name, old.get(name), new.get(name))
        for name in sorted(old.keys() | new.keys())
        if old.get(name) != new.get(name)
    )


def _replicas_text(replicas: int | None) -> str | None:
    return None if replicas is None else str(replicas)


def plan_rollout(app: App, current_replicas: int | None, *, first: bool = False) -> RolloutPlan:
    """How ``app``'s template would roll out at its desired replicas (``first``: the app's first
    revision, which a canary deploys at full size at once).

    ``replicas`` omitted in the manifest keeps the current count (``current_replicas``), or
    :data:`NEW_APP_REPLICAS` for a new app.

    >>> from gitdeploy.core.models import (AppKind, Location, PodTemplate, RollingParams, Selector,
    ...     Triggers)
    >>> app = App(AppKind.DEPLOYMENT, "apps/v1", AppKey("demo", "web"), Location("web.yaml", 1),
    ...     PodTemplate("{}"), "h", Selector(), Strategy(StrategyType.ROLLING_UPDATE, RollingParams()),
    ...     Triggers(True), replicas=3)
    >>> plan_rollout(app, None).describe()
    'RollingUpdate, maxSurge 25% (1 pod), maxUnavailable 25% (0 pods) of 3 replicas'
    """
    replicas = app.replicas if app.replicas is not None else current_replicas
    if replicas is None:
        replicas = NEW_APP_REPLICAS
    strategy = app.strategy
    hooks = tuple(
        HookPlan(phase, hook.container_name, hook.failure_policy.value, hook.command)
        for phase, hook in strategy.hooks.items()
    )
    if strategy.type.is_rolling or strategy.canary is not None:
        params = strategy.rolling or strategy.canary
        surge_bound = params.max_surge if params else "25%"
        unavailable_bound = params.max_unavailable if params else "25%"
        surge, unavailable = resolve_fenceposts(surge_bound, unavailable_bound, replicas)
        return RolloutPlan(
            strategy.type,
            replicas,
            max_surge=str(surge_bound),
            max_unavailable=str(unavailable_bound),
            surge_pods=surge,
            unavailable_pods=min(unavailable, replicas),
            hooks=hooks,
            steps=canary_timeline(strategy.canary.steps, replicas, first=first) if strategy.canary else (),
            pauses=pauses_summary(strategy.canary.steps) if strategy.canary else "",
            on_abort=abort_line(strategy.canary.abort_scale_down_delay_seconds) if strategy.canary else "",
        )
    custom_image = strategy.custom.image if strategy.custom is not None else None
    return RolloutPlan(strategy.type, replicas, custom_image=custom_image, hooks=hooks)


def manual_reasons(app: App, pinned: str | None = None) -> tuple[str, ...]:
    """Why a new template of ``app`` would not roll out by itself (empty: it would).

    >>> from gitdeploy.core.models import AppKind, Location, PodTemplate, Selector, Triggers
    >>> app = App(AppKind.DEPLOYMENT_CONFIG, "apps.openshift.io/v1", AppKey("demo", "api"),
    ...     Location("api.yaml", 1), PodTemplate("{}"), "h", Selector(), Strategy(StrategyType.ROLLING),
    ...     Triggers(config_change=False), paused=True)
    >>> manual_reasons(app)
    ('paused: true', 'no ConfigChange trigger')
    """
    reasons: list[str] = []
    if app.paused:
        reasons.append("paused: true")
    if not app.triggers.config_change:
        reasons.append("no ConfigChange trigger")
    if pinned:
        reasons.append(f"pinned: {pinned}")
    return tuple(reasons)


def _images(app: App) -> str:
    return ", ".join(f"{c.name}={c.image}" for c in app.template.containers)


def _first_line(diagnostics: Sequence[Diagnostic]) -> str:
    first = diagnostics[0]
    more = f" (and {len(diagnostics) - 1} more problem(s))" if len(diagnostics) > 1 else ""
    return f"{first.file}:{first.line}: {first.message}{more}"


def plan_app(
    key: AppKey,
    before: App | None,
    after: App | None,
    *,
    head_problems: Sequence[Diagnostic] = (),
    settings: RepoSettings = DEFAULT_SETTINGS,
    earlier: EarlierTemplate | None = None,
    pinned: str | None = None,
    invalid_at_base: bool = False,
) -> AppPlan:
    """Classify one app (see the module docstring for the rules).

    ``head_problems`` are the head's diagnostics for this app (or for its file, when the file no
    longer parses); ``earlier`` is set when the head's template equals one the app had before the
    baseline; ``pinned`` says why the baseline pins the app (live plans only).
    """
    shown = after or before
    base = AppPlan(
        key=key,
        kind=ChangeKind.UNCHANGED,
        reason="unchanged",
        app_kind=shown.kind.value if shown else "",
        file=shown.location.file if shown else (head_problems[0].file if head_problems else ""),
        line=shown.location.line if shown else (head_problems[0].line if head_problems else 0),
        hash_before=before.template_hash if before else None,
        hash_after=after.template_hash if after else None,
        replicas_before=before.replicas if before else None,
        replicas_after=after.replicas if after else None,
        files=tuple(dict.fromkeys(a.location.file for a in (before, after) if a is not None)),
    )
    if head_problems:
        return replace(
            base, kind=ChangeKind.INVALID, reason=_first_line(head_problems), diagnostics=tuple(head_problems)
        )
    if after is None:
        assert before is not None, "an app must exist on at least one side"
        return _removed(base, before, settings)
    if before is None:
        return _added(base, after, invalid_at_base)
    return _changed(base, before, after, earlier, pinned)


def _removed(base: AppPlan, before: App, settings: RepoSettings) -> AppPlan:
    prune = settings.prune and not prune_opted_out(before.annotations)
    if prune:
        reason = "no longer in git: deleted from the cluster (prune is on)"
    elif settings.prune:
        reason = f'no longer in git: keeps running, never pruned ({PRUNE_ANNOTATION}: "false")'
    else:
        reason = "no longer in git: keeps running, no longer managed (prune is off)"
    return replace(base, kind=ChangeKind.REMOVE, reason=reason, prune=prune)


def _added(base: AppPlan, after: App, invalid_at_base: bool) -> AppPlan:
    rollout = plan_rollout(after, None, first=True)
    if invalid_at_base:
        reason = f"invalid at the baseline, valid now: deploys {_images(after)}"
        return replace(base, kind=ChangeKind.ROLLOUT, reason=reason, rollout=rollout)
    reason = f"new {after.kind.value}, {rollout.replicas} replica(s): {_images(after)}"
    return replace(base, kind=ChangeKind.ADD, reason=reason, rollout=rollout)


def _changed(
    base: AppPlan, before: App, after: App, earlier: EarlierTemplate | None, pinned: str | None
) -> AppPlan:
    """An app on both sides: a new template, a scale, other settings, or nothing."""
    settings_changes = diff_settings(before, after)
    if before.replicas != after.replicas:
        replicas = SettingChange("replicas", _replicas_text(before.replicas), _replicas_text(after.replicas))
        settings_changes = (replicas, *settings_changes)
    base = replace(base, settings_changes=settings_changes)
    if before.template_hash != after.template_hash:
        changes = diff_templates(before.template, after.template)
        summary = summarize_changes(changes) or "template changed"
        base = replace(
            base, template_changes=changes, rollout=plan_rollout(after, before.replicas), rollback_to=earlier
        )
        manual = manual_reasons(after, pinned)
        if manual:
            reason = f"not rolled out by itself ({'; '.join(manual)}): {summary}"
            return replace(base, kind=ChangeKind.MANUAL, reason=reason, manual_reasons=manual)
        if earlier is not None:
            reason = f"back to the template of {earlier.describe()}: {summary}"
            return replace(base, kind=ChangeKind.ROLLBACK, reason=reason)
        return replace(base, kind=ChangeKind.ROLLOUT, reason=summary)
    if before.replicas != after.replicas and after.replicas is not None:
        others = len(settings_changes) - 1
        reason = f"replicas {_replicas_text(before.replicas) or '(live count)'} -> {after.replicas}"
        reason += f", and {others} setting(s) changed" if others else ", no new revision"
        return replace(base, kind=ChangeKind.SCALE, reason=reason)
    if settings_changes:
        names = ", ".join(c.field for c in settings_changes[:3])
        more = f" and {len(settings_changes) - 3} more" if len(settings_changes) > 3 else ""
        return replace(base, kind=ChangeKind.SETTINGS, reason=f"{names}{more} changed, no rollout")
    return base


def apps_with_new_template(baseline: Sequence[App], head: Sequence[App]) -> list[tuple[App, App]]:
    """``(before, after)`` of every app whose template changes: those whose earlier templates a
    caller looks up (for :class:`EarlierTemplate`) before calling :func:`plan_changes`."""
    before = {a.key: a for a in baseline}
    return [
        (before[a.key], a) for a in head if a.key in before and before[a.key].template_hash != a.template_hash
    ]


def plan_changes(
    baseline: Baseline,
    head: DesiredSnapshot,
    *,
    earlier: Mapping[AppKey, EarlierTemplate] | None = None,
) -> Plan:
    """Plan every app of the baseline and the head.

    Head problems that name an app go to that app (``invalid``); a file-level problem (the file no
    longer parses) goes to each baseline app that was defined in that file and is missing at the
    head; the others stay in :attr:`Plan.problems`.
    """
    earlier = earlier or {}
    before = {a.key: a for a in baseline.apps}
    after = {a.key: a for a in head.apps}
    invalid_at_head = set(head.invalid_apps)
    by_app: dict[str, list[Diagnostic]] = {}
    file_level: dict[str, list[Diagnostic]] = {}
    for d in head.diagnostics:
        if d.app:
            by_app.setdefault(d.app, []).append(d)
        else:
            file_level.setdefault(d.file, []).append(d)
    used: set[Diagnostic] = set()
    plans: list[AppPlan] = []
    unchanged = 0
    for key in sorted(before.keys() | after.keys() | invalid_at_head):
        problems = list(by_app.get(str(key), ()))
        old = before.get(key)
        if key not in after and old is not None and old.location.file in file_level:
            problems += file_level[old.location.file]
        if key in invalid_at_head and not problems:
            problems = [Diagnostic(old.location.file if old else "", 0, 0, str(key), "invalid at the head")]
        used.update(problems)
        plan = plan_app(
            key,
            old,
            None if problems else after.get(key),
            head_problems=problems,
            settings=head.settings,
            earlier=earlier.get(key),
            pinned=baseline.pinned.get(key),
            invalid_at_base=key in baseline.invalid_apps,
        )
        plan = replace(plan, drift=baseline.drift.get(key, ()), notes=baseline.notes.get(key, ()))
        if plan.kind is ChangeKind.UNCHANGED and plan.drift:
            more = f" (and {len(plan.drift) - 1} more)" if len(plan.drift) > 1 else ""
            plan = replace(plan, kind=ChangeKind.DRIFT, reason=f"{plan.drift[0]}{more}")
        held = baseline.suspended.get(key)
        if plan.kind is ChangeKind.UNCHANGED and held:
            plan = replace(plan, kind=ChangeKind.MANUAL, reason=held, manual_reasons=(held,))
        if plan.kind is ChangeKind.UNCHANGED:
            unchanged += 1
        else:
            plans.append(plan)
    order = {kind: i for i, kind in enumerate(CHANGE_ORDER)}
    plans.sort(key=lambda p: (order[p.kind], p.key))
    leftover = tuple(d for d in head.diagnostics if d not in used)
    return Plan(baseline=baseline.label, apps=tuple(plans), unchanged=unchanged, problems=leftover)


def attach_commits(plan: Plan, commits: Mapping[AppKey, Sequence[CommitInfo]]) -> Plan:
    """The same plan with each app's commits (between the baseline and the head) filled in."""
    return replace(plan, apps=tuple(replace(a, commits=tuple(commits.get(a.key, ()))) for a in plan.apps))


def describe_commit(commit: CommitInfo) -> str:
    """``1a2b3c4d5e6f Ada Author: Bump web``, the one-line form plans print."""
    return f"{shorten_sha(commit.sha)} {commit.author_name}: {commit.subject}"
