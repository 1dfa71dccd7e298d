"""``gitdeploy status``, ``gitdeploy history`` and ``gitdeploy rollout status``: what runs, and why."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.output import console, print_json, print_table
from gitdeploy.cli.run_cmd import Duration
from gitdeploy.cli.target import open_cluster
from gitdeploy.controller.inspect import AppView, list_app_views, revision_history
from gitdeploy.core.models import AppKey
from gitdeploy.core.records import Outcome, RevisionEntry
from gitdeploy.errors import NotFoundError


def age(since: float | None, now: float | None = None) -> str:
    """``42s``, ``5m``, ``3h``, ``2d`` as kubectl prints ages.

    >>> age(0.0, 59.0), age(0.0, 3600.0 * 5), age(None)
    ('59s', '5h', '<unknown>')
    """
    if since is None:
        return "<unknown>"
    seconds = max(int((now if now is not None else time.time()) - since), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def split_app(name: str, namespace: str | None) -> tuple[str | None, str]:
    """``APP`` as ``name`` or ``namespace/name``."""
    if "/" in name:
        ns, _, app = name.partition("/")
        return ns, app
    return namespace, name


def _find(cluster: Any, name: str, namespace: str | None) -> AppKey:
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


@click.command("status")
@click.argument("app", required=False)
@click.option("-n", "--namespace", default=None, help="Only this namespace.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def status(ctx: click.Context, app: str | None, namespace: str | None, output: str) -> None:
    """What each app runs, whether it matches git (SYNC), how well it runs (HEALTH), and why.

    \b
    Examples:
      gitdeploy status
      gitdeploy status shop/web -o json
    """
    cluster = open_cluster(get_context(ctx))
    ns, name = split_app(app, namespace) if app else (namespace, None)
    views = list_app_views(cluster, ns, name)
    if app and not views:
        raise NotFoundError(f"no app {app!r}", hint="`gitdeploy status` lists the apps gitdeploy runs")
    if output == "json":
        print_json([{**dataclasses.asdict(v), "key": str(v.key)} for v in views])
        return
    if not views:
        click.echo(
            "No apps yet: `gitdeploy run --repo ...` or `gitdeploy sync --repo ...` deploys a config repo."
        )
        return
    print_table(
        ["app", "ready", "up-to-date", "available", "revision", "commit", "sync", "health", "message"],
        [_status_row(v) for v in views],
    )


def _status_row(v: AppView) -> list[str]:
    return [
        str(v.key),
        f"{v.ready}/{v.replicas}",
        str(v.up_to_date),
        str(v.available),
        str(v.revision),
        v.commit,
        v.sync,
        v.health,
        v.message,
    ]


def _cause(entry: RevisionEntry) -> str:
    if entry.cause == "AutoRollback" and entry.rolled_back_from is not None:
        return f"Automatic rollback after revision {entry.rolled_back_from} failed"
    if entry.rolled_back_to is not None:
        return f"Rollback to revision {entry.rolled_back_to}"
    if entry.returns_to is not None:
        return f"{entry.cause} (template of revision {entry.returns_to})"
    return entry.cause


def _status_text(entry: RevisionEntry) -> str:
    if entry.outcome is Outcome.FAILED and entry.reason:
        return f"Failed ({entry.reason})"
    return entry.outcome.value


@click.command("history")
@click.argument("app")
@click.option("-n", "--namespace", default=None, help="The app's namespace (or write APP as namespace/name).")
@click.option("--revision", type=int, default=None, help="Show one revision in full.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def history(ctx: click.Context, app: str, namespace: str | None, revision: int | None, output: str) -> None:
    """The app's revisions, each tied to the commit that caused it.

    \b
    Examples:
      gitdeploy history web
      gitdeploy history shop/web --revision 3
    """
    cluster = open_cluster(get_context(ctx))
    key = _find(cluster, app, namespace)
    entries = revision_history(cluster, key)
    if revision is not None:
        entries = [e for e in entries if e.revision == revision]
        if not entries:
            raise NotFoundError(
                f"{key} has no revision {revision}", hint=f"`gitdeploy history {key}` lists them"
            )
    if output == "json":
        print_json([_entry_json(e) for e in entries])
        return
    if revision is not None:
        _print_revision(entries[0])
        return
    print_table(
        ["revision", "commit", "author", "age", "cause", "status", "images"],
        [
            [
                str(e.revision),
                f"{e.commit.short} {e.commit.subject}".strip(),
                e.commit.author,
                age(e.started_at),
                _cause(e),
                _status_text(e),
                ", ".join(image for _, image in e.images),
            ]
            for e in entries
        ],
    )


def _entry_json(e: RevisionEntry) -> dict[str, Any]:
    body = dataclasses.asdict(e)
    body["outcome"] = e.outcome.value
    body["commit"] = {"sha": e.commit.sha, "author": e.commit.author, "subject": e.commit.subject}
    body["images"] = [{"container": c, "image": i} for c, i in e.images]
    return body


def _when(at: float | None) -> str:
    if at is None:
        return "-"
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") + f" ({age(at)} ago)"


def _print_revision(e: RevisionEntry) -> None:
    out = console()
    lines = [
        f"Revision:      {e.revision}",
        f"Status:        {_status_text(e)}" + (f": {e.message}" if e.message else ""),
        f"Cause:         {_cause(e)}",
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
    for hook in e.hooks:
        lines.append(f"Hook {hook.phase}: {hook.outcome} after {hook.attempts} attempt(s), pod {hook.pod}")
        lines += [f"  | {line}" for line in hook.log.splitlines()[-10:]]
    for line in lines:
        out.print(line, markup=False)


@click.group("rollout")
def rollout() -> None:
    """Follow rollouts (as `kubectl rollout`)."""


@rollout.command("status")
@click.argument("app")
@click.option("-n", "--namespace", default=None, help="The app's namespace (or write APP as namespace/name).")
@click.option("--timeout", type=Duration(), default="10m", show_default=True, help="Give up after this.")
@click.option("--interval", type=Duration(), default="1s", show_default=True, hidden=True)
@click.pass_context
def rollout_status(
    ctx: click.Context, app: str, namespace: str | None, timeout: float, interval: float
) -> None:
    """Wait for the app's current rollout to finish; exit 0 when it completes, 1 when it fails.

    \b
    Example:
      gitdeploy rollout status shop/web --timeout 5m
    """
    cluster = open_cluster(get_context(ctx))
    key = _find(cluster, app, namespace)
    deadline = time.monotonic() + timeout
    said = ""
    while True:
        view = list_app_views(cluster, key.namespace, key.name)[0]
        if view.phase == Outcome.COMPLETE.value:
            click.echo(f'app "{key}" successfully rolled out (revision {view.revision})')
            return
        if view.phase == Outcome.FAILED.value:
            click.echo(
                f'error: app "{key}" revision {view.revision} failed: {view.message} '
                f"(details: `gitdeploy history {key} --revision {view.revision}`; "
                "fix the manifest and push, or revert the commit)",
                err=True,
            )
            ctx.exit(1)
        line = _waiting_line(view)
        if line != said:
            click.echo(line)
            said = line
        if time.monotonic() >= deadline:
            click.echo(
                f"error: timed out waiting for the rollout of {key} after {timeout:.0f} s "
                "(it goes on; run again or raise --timeout)",
                err=True,
            )
            ctx.exit(1)
        time.sleep(interval)


def _waiting_line(v: AppView) -> str:
    if v.up_to_date < v.replicas:
        done = f"{v.up_to_date} out of {v.replicas}"
        return f"Waiting for rollout to finish: {done} new replicas have been updated..."
    if v.available < v.replicas:
        return (
            f"Waiting for rollout to finish: {v.available} of {v.replicas} updated replicas are available..."
        )
    return f"Waiting for rollout to finish: {v.ready - v.up_to_date} old replicas are pending termination..."
