"""How ``gitdeploy plan`` prints a plan: text for a terminal, markdown for a PR comment, JSON for bots.

:func:`render_markdown` and :func:`plan_to_json` are plain functions of a plan (no console), so a CI
job and the tests get exactly the same text.
"""

from __future__ import annotations

import html
import re
from dataclasses import asdict, dataclass
from typing import Any

from rich.text import Text

from gitdeploy.core.commits import CommitInfo, shorten_sha
from gitdeploy.core.diagnostics import Diagnostic, printable
from gitdeploy.core.planning.changes import (
    CHANGE_ORDER,
    AppPlan,
    ChangeKind,
    Plan,
    RolloutPlan,
    describe_commit,
)

JSON_VERSION = 2
"""2: field names in camelCase, as Kubernetes writes them (1 had snake_case)."""


@dataclass(frozen=True)
class PlanRefs:
    """The two commits a plan compares, as the user named them and as shas. A live plan has no base
    commit: ``base_ref`` describes the cluster and ``base_sha`` is empty."""

    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str

    @property
    def live(self) -> bool:
        return not self.base_sha

    @property
    def base_label(self) -> str:
        return f"{self.base_ref} ({shorten_sha(self.base_sha)})" if self.base_sha else self.base_ref

    @property
    def head_label(self) -> str:
        return f"{self.head_ref} ({shorten_sha(self.head_sha)})"


def unchanged_text(plan: Plan) -> str:
    """``3 app(s) unchanged, 9,997 file(s) the change does not touch``."""
    text = f"{plan.unchanged} app(s) unchanged"
    if plan.untouched_files:
        text += f", {plan.untouched_files:,} file(s) the change does not touch"
    return text


def summary_line(plan: Plan) -> str:
    """``Plan: 1 rollout, 1 scale; 3 app(s) unchanged.`` (kinds with no app are left out)."""
    counts = plan.counts()
    parts = [f"{counts[k]} {k.value}" for k in CHANGE_ORDER if k is not ChangeKind.UNCHANGED and counts[k]]
    changed = ", ".join(parts) if parts else "no changes"
    problems = f"; {len(plan.problems)} other problem(s)" if plan.problems else ""
    return f"Plan: {changed}; {unchanged_text(plan)}{problems}."


# -- JSON -------------------------------------------------------------------------------------


def _diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    return {**asdict(d), "text": d.render()}


def _commit_json(c: CommitInfo) -> dict[str, Any]:
    return {"sha": c.sha, "author": c.author_name, "email": c.author_email, "subject": c.subject}


def _app_json(a: AppPlan) -> dict[str, Any]:
    rollout = a.rollout
    return {
        "app": str(a.key),
        "namespace": a.key.namespace,
        "name": a.key.name,
        "kind": a.app_kind,
        "change": a.kind.value,
        "reason": a.reason,
        "file": a.file,
        "line": a.line,
        "template_hash": {"before": a.hash_before, "after": a.hash_after},
        "replicas": {"before": a.replicas_before, "after": a.replicas_after},
        "template_changes": [
            {"scope": c.scope, "field": c.field, "before": c.before, "after": c.after}
            for c in a.template_changes
        ],
        "settings_changes": [
            {"field": c.field, "before": c.before, "after": c.after} for c in a.settings_changes
        ],
        "strategy": None
        if rollout is None
        else {
            "type": rollout.strategy.value,
            "replicas": rollout.replicas,
            "max_surge": rollout.max_surge,
            "max_unavailable": rollout.max_unavailable,
            "surge_pods": rollout.surge_pods,
            "unavailable_pods": rollout.unavailable_pods,
            "custom_image": rollout.custom_image,
            "description": rollout.describe(),
            "steps": list(rollout.steps),
            "on_abort": rollout.on_abort or None,
            "hooks": [
                {
                    "phase": h.phase,
                    "container": h.container,
                    "failure_policy": h.failure_policy,
                    "command": list(h.command),
                }
                for h in rollout.hooks
            ],
        },
        "rollback_to": None
        if a.rollback_to is None
        else {**_commit_json(a.rollback_to.commit), "revision": a.rollback_to.revision},
        "manual_reasons": list(a.manual_reasons),
        "prune": a.prune,
        "errors": [_diagnostic_json(d) for d in a.diagnostics],
        "commits": [_commit_json(c) for c in a.commits],
        "drift": list(a.drift),
        "notes": list(a.notes),
    }


def plan_to_json(plan: Plan, refs: PlanRefs) -> dict[str, Any]:
    """The plan as a JSON object; the shape is stable (``version`` changes if it ever must).
    Field names are written here as printed: :func:`~gitdeploy.cli.output.machine_form` turns
    the snake_case keys below into camelCase.

    Top level::

        version   2
        base      {"ref": str, "sha": str}           what the head is compared with; with --live
                                                     the cluster: "ref" describes it, "sha" is ""
        live      bool                               true: compared with what the cluster runs
        head      {"ref": str, "sha": str}
        valid     bool                               false: some app or file is invalid (exit 1)
        changed   bool                               true: at least one app is not unchanged
        summary   {kind: int}                        every kind below; "unchanged" counts the apps
                                                     read (see untouchedFiles)
        untouchedFiles  int                          .yaml/.yml/.json files the change does not touch:
                                                     not read, every app in them is unchanged
        apps      [app]                              apps that change, in kind order, then by app
        errors    [error]                            problems not tied to a listed app

    Kinds, in order: invalid, add, remove, manual, rollback, rollout, scale, settings, drift,
    unchanged. With ``--live``: ``add`` is an app not deployed yet, ``remove`` one only in the
    cluster (orphaned), ``manual`` includes apps pinned by a rollback, ``drift`` an app whose
    ReplicaSets differ from its record while git changes nothing; settings are not compared
    (the cluster does not hold them).

    ``app``::

        app, namespace, name, kind      "demo/web", "demo", "web", "Deployment"|"DeploymentConfig"
        change                          one of the kinds
        reason                          one line, as in the text and markdown summaries
        file, line                      the manifest at the head (at the base when removed)
        templateHash                   {"before": str|null, "after": str|null}
        replicas                        {"before": int|null, "after": int|null}  (null: not set)
        templateChanges                [{"scope", "field", "before", "after"}]; scope is
                                        "container <name>", "init container <name>" or "pod";
                                        before/after are strings, null when absent
        settingsChanges                [{"field", "before", "after"}] (replicas, strategy, triggers...)
        strategy                        null, or for a new template how it rolls out: {"type",
                                        "replicas", "maxSurge", "maxUnavailable", "surgePods",
                                        "unavailablePods", "customImage", "description",
                                        "hooks": [{"phase", "container", "failurePolicy", "command"}],
                                        "steps": [str]: a canary's timeline, a line per step with
                                        the pods at each weight, then the full size}
        rollbackTo                     null, or {"sha", "author", "email", "subject", "revision"}:
                                        the earlier commit whose template the head returns to
        manualReasons                  why a new template does not roll out by itself
        prune                           for "remove": whether the app is deleted (else null)
        errors                          [error] for "invalid"
        commits                         [{"sha", "author", "email", "subject"}] between base and
                                        head that changed the app's manifest, newest first (with
                                        --live: from the commit of the running revision)
        drift                           [str] with --live: how the ReplicaSets differ from the
                                        app record (scaled or edited by hand); else []
        notes                           [str] with --live: the running revision, images image
                                        triggers keep, suspended triggers, how to end a pin; else []

    ``error``: ``{"file", "line", "column", "app", "path", "message", "hint", "text"}``, where
    ``text`` is the line ``gitdeploy validate`` prints.
    """
    return {
        "version": JSON_VERSION,
        "base": {"ref": refs.base_ref, "sha": refs.base_sha},
        "head": {"ref": refs.head_ref, "sha": refs.head_sha},
        "live": refs.live,
        "valid": plan.valid,
        "changed": plan.has_changes,
        "summary": {k.value: n for k, n in plan.counts().items()},
        "untouched_files": plan.untouched_files,
        "apps": [_app_json(a) for a in plan.apps],
        "errors": [_diagnostic_json(d) for d in plan.problems],
    }


# -- markdown ---------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]#|~<>!])")


def _md_text(text: str) -> str:
    """Plain text that markdown and HTML show as it is (commit subjects, reasons)."""
    return _MD_SPECIAL.sub(r"\\\1", text.replace("&", "&amp;").replace("\n", " "))


def _md_code(text: str | None) -> str:
    """A value in a table cell: HTML code, so pipes, backticks and tags stay literal."""
    if text is None:
        return "<i>(none)</i>"
    escaped = html.escape(text.replace("\n", "\\n"), quote=False).replace("|", "&#124;")
    return f"<code>{escaped}</code>"


def _fence(lines: list[str]) -> str:
    longest = max((len(m) for line in lines for m in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([f"{fence}text", *lines, fence])


def _md_rollout(rollout: RolloutPlan) -> list[str]:
    """How a new template rolls out: the strategy, a canary's timeline, the hooks."""
    out = [f"**Rollout**: {_md_text(rollout.describe())}", ""]
    timeline = [*rollout.steps, rollout.on_abort] if rollout.on_abort else list(rollout.steps)
    for lines in (
        [f"- {_md_text(line)}" for line in timeline],
        [f"- hook {_md_code(h.render())}" for h in rollout.hooks],
    ):
        out += [*lines, ""] if lines else []
    return out


def _md_app(a: AppPlan) -> list[str]:
    summary = f"<b>{a.kind.value}</b> <code>{html.escape(str(a.key))}</code>: {html.escape(a.reason)}"
    out = ["<details>", f"<summary>{summary}</summary>", ""]
    where = f"{printable(a.file)}:{a.line}" if a.file else "(no file)"
    out.append(f"{_md_text(a.app_kind or 'App')} in {_md_code(where)}")
    out.append("")
    if a.diagnostics:
        out += [_fence([d.render() for d in a.diagnostics]), ""]
    if a.template_changes:
        hashes = f" (template hash {_md_code(a.hash_before)} → {_md_code(a.hash_after)})"
        out += [
            f"**Template changes**{hashes}",
            "",
            "| where | field | before | after |",
            "|---|---|---|---|",
        ]
        out += [
            f"| {_md_text(c.scope)} | {_md_code(c.field)} | {_md_code(c.before)} | {_md_code(c.after)} |"
            for c in a.template_changes
        ]
        out.append("")
    if a.settings_changes:
        out += ["**Other changes**", "", "| field | before | after |", "|---|---|---|"]
        out += [
            f"| {_md_code(c.field)} | {_md_code(c.before)} | {_md_code(c.after)} |"
            for c in a.settings_changes
        ]
        out.append("")
    if a.rollback_to is not None:
        out += [f"**Rollback** to the template of {_md_text(a.rollback_to.describe())}", ""]
    if a.manual_reasons:
        out += [f"**Not rolled out by itself**: {_md_text('; '.join(a.manual_reasons))}", ""]
    if a.rollout is not None:
        out += _md_rollout(a.rollout)
    if a.prune is not None:
        out += [f"**Prune** is {'on' if a.prune else 'off'} in gitdeploy.yaml", ""]
    if a.drift:
        out += ["**Drift** (the cluster differs from the app record)", ""]
        out += [f"- {_md_text(d)}" for d in a.drift]
        out.append("")
    if a.notes:
        out += ["**In the cluster**", ""]
        out += [f"- {_md_text(n)}" for n in a.notes]
        out.append("")
    if a.commits:
        out += ["**Commits**", ""]
        out += [
            f"- {_md_code(c.short_sha)} {_md_text(c.subject)} ({_md_text(c.author_name)})" for c in a.commits
        ]
        out.append("")
    out += ["</details>", ""]
    return out


def render_markdown(plan: Plan, refs: PlanRefs) -> str:
    """A PR comment: a title, a one-row summary table of counts, then one collapsible section per app.

    Rendered as GitHub (CommonMark + tables) renders it: the ``<details>`` and ``<summary>`` lines
    are HTML blocks, the blank line after ``</summary>`` lets the section body be markdown again.
    """
    counts = plan.counts()
    hidden = {ChangeKind.UNCHANGED} if refs.live else {ChangeKind.UNCHANGED, ChangeKind.DRIFT}
    kinds = [k for k in CHANGE_ORDER if k not in hidden]  # drift: only a live plan can see it
    status = "" if plan.valid else " — **invalid**"
    lines = [
        f"### gitdeploy plan: {_md_code(refs.base_label)} → {_md_code(refs.head_label)}{status}",
        "",
        "| " + " | ".join(k.value for k in kinds) + " | unchanged |",
        "|" + "---:|" * (len(kinds) + 1),
        "| " + " | ".join(str(counts[k]) for k in kinds) + f" | {_md_text(unchanged_text(plan))} |",
        "",
    ]
    if not plan.apps:
        lines += ["No app changes.", ""]
    for a in plan.apps:
        lines += _md_app(a)
    if plan.problems:
        lines += ["**Other problems**", "", _fence([d.render() for d in plan.problems]), ""]
    return "\n".join(lines)


# -- text -------------------------------------------------------------------------------------

_KIND_STYLE = {
    ChangeKind.INVALID: "bold red",
    ChangeKind.ADD: "green",
    ChangeKind.REMOVE: "red",
    ChangeKind.MANUAL: "yellow",
    ChangeKind.ROLLBACK: "magenta",
    ChangeKind.ROLLOUT: "cyan",
    ChangeKind.SCALE: "blue",
    ChangeKind.SETTINGS: "blue",
    ChangeKind.DRIFT: "yellow",
}


def detail_lines(a: AppPlan) -> list[Text]:
    """The indented body of one app in the text output (never parsed as rich markup)."""
    out: list[Text] = []
    out += [Text(f"  {d.render()}", style="red") for d in a.diagnostics]
    width = max((len(c.scope) for c in a.template_changes), default=0)
    out += [Text(f"  {c.scope:<{width}}  {c.render()}") for c in a.template_changes]
    out += [Text(f"  {c.render()}") for c in a.settings_changes]
    if a.rollback_to is not None:
        out.append(Text(f"  rollback to the template of {a.rollback_to.describe()}", style="magenta"))
    if a.manual_reasons:
        out.append(Text(f"  not rolled out by itself: {'; '.join(a.manual_reasons)}", style="yellow"))
    if a.rollout is not None:
        out.append(Text(f"  rollout: {a.rollout.describe()}"))
        out += [Text(f"    {line}") for line in a.rollout.steps]
        out += [Text(f"    {a.rollout.on_abort}")] if a.rollout.on_abort else []
        out += [Text(f"  hook {h.render()}") for h in a.rollout.hooks]
    if a.prune is not None:
        out.append(Text(f"  prune is {'on' if a.prune else 'off'} (gitdeploy.yaml)"))
    out += [Text(f"  drift: {d}", style="yellow") for d in a.drift]
    out += [Text(f"  cluster: {n}") for n in a.notes]
    if a.commits:
        out.append(Text("  commits:"))
        out += [Text(f"    {describe_commit(c)}", style="dim") for c in a.commits]
    return out


def header_text(a: AppPlan) -> Text:
    where = f" ({printable(a.file)}:{a.line})" if a.file else ""
    return Text.assemble((a.kind.value, _KIND_STYLE.get(a.kind, "")), " ", (str(a.key), "bold"), where)
