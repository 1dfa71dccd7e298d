"""``gitdeploy status``, ``gitdeploy history`` and ``gitdeploy rollout status``: what runs, and why."""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.durations import Duration
from gitdeploy.cli.output import MACHINE_FORMATS, WIDE, console, output_option, print_data, print_table
from gitdeploy.cli.progress import RolloutProgress
from gitdeploy.cli.target import cluster_at, open_cluster, resolve_target
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.inspect import (
    AppView,
    TemplateDiff,
    commit_message,
    list_app_views,
    progress_at_commit,
    revision_history,
    suspended_triggers,
    template_diff,
    with_owner_leases,
)
from gitdeploy.controller.leader import default_lease_namespace
from gitdeploy.core.history.records import Outcome, RevisionEntry
from gitdeploy.core.history.wording import describe_age, describe_cause, describe_outcome
from gitdeploy.core.models import AppKey
from gitdeploy.core.sync.commitwait import Reached
from gitdeploy.core.timestamps import format_timestamp
from gitdeploy.errors import NotFoundError


def age(since: float | None, now: float | None = None) -> str:
    """``42s``, ``5m``, ``3h``, ``2d`` as kubectl prints ages (:func:`describe_age`), by now."""
    return describe_age(since, now if now is not None else time.time())


def split_app(name: str, namespace: str | None) -> tuple[str | None, str]:
    """``APP`` as ``name`` or ``namespace/name``."""
    if "/" in name:
        ns, _, app = name.partition("/")
        return ns, app
    return namespace, name


def find_app(cluster: Any, name: str, namespace: str | None) -> AppKey:
    ns, app = split_app(name, namespace)
    views = list_app_views(cluster, ns, app)
    if not views:
        where = f" in namespace {ns}" if ns else ""
        raise NotFoundError(f"no app {app!r}{where}", hint="`gitdeploy status` lists the apps gitdeploy runs")
    if len(views) > 1:
        raise NotFoundError(
            f"{app!r} exists in several namespaces: {', '.join(str(v.key) for v in views)}",
            hint="name it as namespace/name or pass -n",
        )
    return views[0].key


NAMESPACE_HELP = "The app's namespace (or write APP as namespace/name)."


@click.command("status")
@click.argument("app", required=False)
@click.option("-n", "--namespace", default=None, help="Only this namespace.")
@click.option(
    "--lease-namespace",
    default=None,
    help="Where `run --sharding` keeps its member Leases, to mark owners that stopped acting "
    "(default: as run's, the pod's own namespace in a cluster, else gitdeploy-system).",
)
@output_option(WIDE)
@click.pass_context
def status(
    ctx: click.Context, app: str | None, namespace: str | None, lease_namespace: str | None, output: str
) -> None:
    """What each app runs, whether it matches git (SYNC), how well it runs (HEALTH), and why.

    Reads the cluster only, so it works from any machine. The table fits 80 columns; -o wide
    adds the pods up to date and available, the commit with its subject, the template hash and
    the images. With `run --sharding`, an OWNER column names the replica that claimed each app:
    `(released)` after it when it handed the app over, `(lease expired)` or `(no lease)` when it
    stopped acting on it (the live replicas take it over and claim it). Exit codes: 0 listed
    (whatever the apps' state), 1 APP not found or the cluster cannot be read.

    \b
    Examples:
      gitdeploy status
      gitdeploy status -o wide
      gitdeploy status shop/web -o json
      gitdeploy status -n shop -o yaml
    """
    target = resolve_target(get_context(ctx))
    cluster = cluster_at(target)
    ns, name = split_app(app, namespace) if app else (namespace, None)
    views = list_app_views(cluster, ns, name)
    if app and not views:
        raise NotFoundError(f"no app {app!r}", hint="`gitdeploy status` lists the apps gitdeploy runs")
    if any(v.owner for v in views):  # run --sharding: is each owner's member Lease live?
        where = lease_namespace or default_lease_namespace(target.in_cluster)
        views = with_owner_leases(cluster, views, where, time.time())
    if output in MACHINE_FORMATS:
        print_data([_view_json(v) for v in views], output)
        return
    if not views:
        click.echo(
            "No apps yet: `gitdeploy run --repo ...` or `gitdeploy sync --repo ...` deploys a config repo."
        )
        return
    wide = output == WIDE
    sharded = any(v.owner for v in views)  # run --sharding: which replica acts on each app
    columns = STATUS_WIDE if wide else STATUS
    if sharded:
        columns = [*columns[:-1], "owner", columns[-1]]
    print_table(columns, [_status_row(v, wide, sharded) for v in views], whole=wide)


STATUS = ["app", "ready", "revision", "sync", "health", "message"]
STATUS_WIDE = [
    "app", "ready", "up-to-date", "available", "revision", "commit", "sync", "health", "hash", "images",
    "message",
]  # fmt: skip


def _view_json(v: AppView) -> dict[str, Any]:
    return {
        **dataclasses.asdict(v),
        "key": str(v.key),
        "images": [{"container": c, "image": i} for c, i in v.images],
    }


def _status_row(v: AppView, wide: bool, sharded: bool) -> list[str]:
    owner = [v.owner or "-"] if sharded else []
    if not wide:
        return [str(v.key), f"{v.ready}/{v.replicas}", str(v.revision), v.sync, v.health, *owner, v.message]
    return [
        str(v.key),
        f"{v.ready}/{v.replicas}",
        str(v.up_to_date),
        str(v.available),
        str(v.revision),
        f"{v.commit} {v.subject}".strip() or "-",
        v.sync,
        v.health,
        v.template_hash or "-",
        ", ".join(image for _, image in v.images) or "-",
        *owner,
        v.message,
    ]


@click.command("history")
@click.argument("app")
@click.option("-n", "--namespace", default=None, help=NAMESPACE_HELP)
@click.option(
    "--revision", type=int, default=None, help="Show one revision in full: message, record, template diff."
)
@click.option(
    "--repo",
    default=None,
    help="With --revision: the config repo (URL or path) to read the full commit message from "
    "(default: the mirror `run`/`sync` keep in the state dir).",
)
@click.option(
    "--branch", default=None, help="With --repo: the branch to fetch (default: the repo's default)."
)
@output_option(WIDE)
@click.pass_context
def history(
    ctx: click.Context,
    app: str,
    namespace: str | None,
    revision: int | None,
    repo: str | None,
    branch: str | None,
    output: str,
) -> None:
    """The app's revisions, each tied to the commit that caused it.

    The table fits 80 columns; -o wide adds the images, the template hash, the start time, the
    message (why a revision failed) and the whole commit subject. With --revision N: the whole
    record (commit, cause, ReplicaSet, times, images, hooks), the full commit message and what
    changed in the pod template since the revision before.

    Exit codes: 0 shown, 1 no such app or revision, or the cluster cannot be read.

    \b
    Examples:
      gitdeploy history web
      gitdeploy history web -o wide
      gitdeploy history shop/web --revision 3
      gitdeploy history shop/web --revision 3 --repo https://github.com/acme/deploy -o yaml
    """
    cli = get_context(ctx)
    cluster = open_cluster(cli)
    key = find_app(cluster, app, namespace)
    entries, record = revision_history(cluster, key)
    if revision is None:
        if output in MACHINE_FORMATS:
            print_data([_entry_json(e) for e in entries], output)
            return
        _print_history(entries, wide=output == WIDE)
        suspended = suspended_triggers(key, record)
        if suspended:
            click.echo(f"\n{key}: {suspended}")
        return
    entry = next((e for e in entries if e.revision == revision), None)
    if entry is None:
        raise NotFoundError(f"{key} has no revision {revision}", hint=f"`gitdeploy history {key}` lists them")
    message = commit_message(cli.state_dir, entry.commit.sha, repo, branch) if entry.commit.sha else None
    diff = template_diff(cluster, key, entries, revision)
    if output in MACHINE_FORMATS:
        print_data({**_entry_json(entry), "message": message, "diff": _diff_json(diff)}, output)
        return
    _print_revision(key, entry, message, diff, repo)


def _print_history(entries: list[RevisionEntry], *, wide: bool) -> None:
    """The revisions; ``wide`` adds the images, the template hash, the start time and the
    message (why a revision failed) and, as every wide table, never cuts a cell."""
    canaries = any(e.canary for e in entries)  # the column only for an app that had a canary
    extra = ["images", "hash", "started"] if wide else []
    print_table(
        [
            "revision",
            "commit",
            "author",
            "age",
            "cause",
            "status",
            *extra,
            *(["canary"] * canaries),
            *(["message"] * wide),
        ],
        [
            [
                str(e.revision),
                f"{e.commit.short} {e.commit.subject}".strip(),
                e.commit.author,
                age(e.started_at),
                describe_cause(e),
                describe_outcome(e),
                *(_history_extra(e) if wide else []),
                *([e.canary or "-"] * canaries),
                *([e.message or "-"] * wide),
            ]
            for e in entries
        ],
        whole=wide,
    )


def _history_extra(e: RevisionEntry) -> list[str]:
    started = format_timestamp(e.started_at) if e.started_at is not None else "-"
    return [", ".join(image for _, image in e.images) or "-", e.template_hash or "-", started]


def _entry_json(e: RevisionEntry) -> dict[str, Any]:
    body = dataclasses.asdict(e)
    body["outcome"] = e.outcome.value
    body["commit"] = {"sha": e.commit.sha, "author": e.commit.author, "subject": e.commit.subject}
    body["images"] = [{"container": c, "image": i} for c, i in e.images]
    body["hooks"] = [dataclasses.asdict(h) for h in e.hooks]
    return body


def _diff_json(diff: TemplateDiff) -> dict[str, Any]:
    return {
        "against": diff.against,
        "changes": None
        if diff.changes is None
        else [
            {"scope": c.scope, "field": c.field, "before": c.before, "after": c.after} for c in diff.changes
        ],
        "missingReplicaSets": list(diff.missing),
    }


def _when(at: float | None) -> str:
    if at is None:
        return "-"
    return f"{format_timestamp(at)} ({age(at)} ago)"


def _print_revision(
    key: AppKey, e: RevisionEntry, message: str | None, diff: TemplateDiff, repo: str | None
) -> None:
    lines = [
        f"Revision:      {e.revision}",
        f"Status:        {describe_outcome(e)}" + (f": {e.message}" if e.message else ""),
        f"Cause:         {describe_cause(e)}",
        f"Commit:        {e.commit.sha}",
        f"Author:        {e.commit.author}",
        f"Subject:       {e.commit.subject}",
        f"Change cause:  {e.change_cause}",
        f"ReplicaSet:    {e.replica_set} (template hash {e.template_hash})",
        f"Started:       {_when(e.started_at)}",
        f"Finished:      {_when(e.finished_at)}",
        "Images:",
        *[f"  {c}: {i}" for c, i in e.images],
    ]
    if e.by:
        lines.insert(3, f"By:            {e.by}")
    if e.canary:
        lines.append(f"Canary:        {e.canary}")
    for hook in e.hooks:
        lines.append(f"Hook {hook.phase}: {hook.outcome} after {hook.attempts} attempt(s), pod {hook.pod}")
        lines += [f"  | {line}" for line in hook.log.splitlines()[-10:]]
    lines += ["", *_message_lines(e, message, repo), "", *_diff_lines(key, diff)]
    out = console()
    for line in lines:
        out.print(line, markup=False)


def _message_lines(e: RevisionEntry, message: str | None, repo: str | None) -> list[str]:
    if message is not None:
        return ["Commit message:", *[f"  {line}".rstrip() for line in message.rstrip().splitlines()]]
    if not e.commit.sha:
        return ["Commit message: (no commit recorded)"]
    where = f"in {repo}" if repo else "in the state dir's repo mirrors"
    hint = "pass --repo URL|PATH of the config repo"
    return [f"Commit message: (commit {e.commit.short} not found {where}; {hint})"]


def _diff_lines(key: AppKey, diff: TemplateDiff) -> list[str]:
    if diff.against is None:
        return ["Template: the first revision (nothing to compare with)"]
    title = f"Template changes since revision {diff.against}:"
    if diff.changes is None:
        return [
            f"{title} unknown: ReplicaSet {', '.join(diff.missing)} was removed by the history limit",
            f"  (the commits still hold it: `gitdeploy plan --base <commit of revision {diff.against}> "
            f"--head <commit of revision {diff.revision}>`; `gitdeploy history {key}` lists the commits)",
        ]
    if not diff.changes:
        return [f"{title} none (the same template)"]
    lines = [title]
    for scope in dict.fromkeys(c.scope for c in diff.changes):
        lines.append(f"  {scope}")
        lines += [f"    {c.render()}" for c in diff.changes if c.scope == scope]
    return lines


@click.group("rollout")
def rollout() -> None:
    """Follow rollouts (as `kubectl rollout`), and promote or abort a canary.

    \b
    Examples:
      gitdeploy rollout status shop/web
      gitdeploy rollout promote shop/web
      gitdeploy rollout abort shop/web
    """


def _commit_sha(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[0-9a-fA-F]{4,40}", value):
        raise click.BadParameter(f"{value!r} is not a commit sha (4 to 40 hex digits)", ctx, param)
    return value.lower() if value is not None else None


@rollout.command("status")
@click.argument("app")
@click.option("-n", "--namespace", default=None, help=NAMESPACE_HELP)
@click.option(
    "--commit",
    "sha",
    default=None,
    callback=_commit_sha,
    help="Wait until the app's state reflects this commit (short or full sha), e.g. the one just pushed.",
)
@click.option("--timeout", type=Duration(), default="10m", show_default=True, help="Give up after this.")
@click.option("--interval", type=Duration(), default="1s", show_default=True, hidden=True)
@click.pass_context
def rollout_status(
    ctx: click.Context, app: str, namespace: str | None, sha: str | None, timeout: float, interval: float
) -> None:
    """Wait for the app's current rollout to finish, as `kubectl rollout status` does; with
    --commit, for the rollout of that commit.

    A live progress bar on a terminal; otherwise one line each time what it waits for changes
    ("Waiting for rollout to finish: 2 of 3 updated replicas are available...").

    A canary is done only past its last step: each step is printed as it is reached, and at a
    `pause: {}` it keeps waiting (as `kubectl argo rollouts status` does) until someone runs
    `gitdeploy rollout promote APP` or --timeout passes.

    Right after a push the current revision is still the previous commit's: pass --commit so that
    the loop's answer for that commit is what counts. It ends when the revision that commit caused
    completes (0) or fails (1), or when the loop compared the app against it and there was nothing
    to roll out (0). A commit that does not change the app's manifest is never reported for it:
    wait for the apps it changes (`gitdeploy plan --base SHA~1 --head SHA` lists them).

    Exit codes: 0 the current revision (or that commit's) completed, 1 it failed, --timeout passed,
    or no such app.

    \b
    Examples:
      gitdeploy rollout status web
      gitdeploy rollout status shop/web --timeout 5m
      git push && gitdeploy rollout status shop/web --commit "$(git rev-parse HEAD)"
    """
    cluster = open_cluster(get_context(ctx))
    key = find_app(cluster, app, namespace)
    if sha is not None:
        if not _wait_for_commit(cluster, key, sha, time.monotonic() + timeout, interval):
            ctx.exit(1)
        return
    deadline = time.monotonic() + timeout
    with RolloutProgress() as progress:
        while True:
            view = list_app_views(cluster, key.namespace, key.name)[0]
            if view.phase in (Outcome.COMPLETE.value, Outcome.FAILED.value):
                progress.finish(view, view.phase)
                break
            progress.show(view)
            if time.monotonic() >= deadline:
                break
            time.sleep(interval)
    if view.phase == Outcome.COMPLETE.value:
        click.echo(f'app "{key}" successfully rolled out (revision {view.revision})')
        return
    if view.phase == Outcome.FAILED.value:
        _echo_failed(key, view.revision, view.message)
    else:
        at = f" at {view.canary}" if view.canary else ""
        click.echo(
            f"error: timed out waiting for the rollout of {key}{at} after {timeout:.0f} s "
            "(it goes on; run again or raise --timeout)",
            err=True,
        )
    ctx.exit(1)


def _echo_failed(key: AppKey, revision: int, message: str) -> None:
    click.echo(
        f'error: app "{key}" revision {revision} failed: {message} '
        f"(details: `gitdeploy history {key} --revision {revision}`; "
        "fix the manifest and push, or revert the commit)",
        err=True,
    )


def _wait_for_commit(cluster: Cluster, key: AppKey, sha: str, deadline: float, interval: float) -> bool:
    """Follow ``key`` until its state reflects commit ``sha``; True when done, False (said why)
    when that commit's revision failed or the deadline passed first."""
    with RolloutProgress() as progress:
        told = False
        while True:
            view, found = progress_at_commit(cluster, key, sha)
            if found.reached in (Reached.DONE, Reached.FAILED) or time.monotonic() >= deadline:
                break
            if found.reached is Reached.IN_PROGRESS:
                progress.show(view)
            elif not told:
                click.echo(f"Waiting for gitdeploy to reach commit {sha[:7]} for {key}...")
                told = True
            time.sleep(interval)
        if found.reached is Reached.DONE:
            progress.finish(view, Outcome.COMPLETE.value)
        elif found.reached is Reached.FAILED:
            progress.finish(view, Outcome.FAILED.value)
    short = sha[:7]
    if found.reached is Reached.DONE:
        click.echo(f'app "{key}" at commit {short}: {found.message}; successfully rolled out')
        return True
    if found.reached is Reached.FAILED:
        _echo_failed(key, found.revision or view.revision, f"commit {short}: {found.message}")
        return False
    last = view.commit or "none"
    click.echo(
        f"error: timed out: the loop has not reached commit {short} for {key} ({found.message}; "
        f"its current revision {view.revision} is of commit {last}); check that `gitdeploy run` runs "
        f"and tracks the branch you pushed, and that the commit changes {key}'s manifest "
        f"(`gitdeploy plan --base {short}~1 --head {short}` lists the apps it changes)",
        err=True,
    )
    return False
