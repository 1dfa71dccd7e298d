"""``gitdeploy deploy``: deployment control (``oc rollout latest|cancel|retry`` and image triggers)."""

from __future__ import annotations

import time

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.rollback_cmd import who
from gitdeploy.cli.status_cmd import find_app
from gitdeploy.cli.target import open_cluster
from gitdeploy.controller import rollback as control
from gitdeploy.core.history import control as decide
from gitdeploy.errors import PermanentError


@click.command("deploy")
@click.argument("app", metavar="APP")
@click.option("-n", "--namespace", default=None, help="Namespace of the app (or name it as ns/name).")
@click.option(
    "--latest",
    "action",
    flag_value="latest",
    help="Roll out git's manifest now: releases a rollback pin, and starts an app without a "
    "ConfigChange trigger.",
)
@click.option(
    "--enable-triggers",
    "action",
    flag_value="enable-triggers",
    help="Resume the image triggers a rollback suspended (releases the pin: git's manifest with the "
    "newest images deploys).",
)
@click.option(
    "--retry",
    "action",
    flag_value="retry",
    help="Run the last revision again under its own number, if it Failed (its hooks run again).",
)
@click.option(
    "--cancel",
    "action",
    flag_value="cancel",
    help="Stop the rollout in progress and bring the previous revision back.",
)
@click.pass_context
def deploy(ctx: click.Context, app: str, namespace: str | None, action: str | None) -> None:
    """Control an app's deployments: roll out git's manifest, resume image triggers, retry a
    failed revision, or cancel one in progress.

    A running `gitdeploy run` carries the change out; without one, run `gitdeploy sync`.

    \b
    Exit codes: 0 done, 1 refused (the message says why and what to do).

    \b
    Examples:
      gitdeploy deploy shop/web --latest
      gitdeploy deploy shop/web --enable-triggers
      gitdeploy deploy shop/web --retry
      gitdeploy deploy web -n shop --cancel
    """
    if action is None:
        raise click.UsageError("say what to do: --latest, --enable-triggers, --retry or --cancel")
    cluster = open_cluster(get_context(ctx))
    key = find_app(cluster, app, namespace)
    state = control.read_app(cluster, key)
    record = state.record
    if action == "latest":
        updated = decide.request_latest(record, in_progress=state.in_progress, app=str(key))
        note = "git's manifest rolls out on the next pass"
        if record.pin is not None:
            note += f" (released the pin to revision {record.pin.revision})"
    elif action == "enable-triggers":
        if not record.triggers_suspended:
            click.echo(f"{key}: image triggers are not suspended; nothing to do")
            return
        updated = decide.enable_triggers(record)
        note = "image triggers resumed: the newest images of its streams roll out with git's manifest"
        if record.pin is not None:
            note += f" (released the pin to revision {record.pin.revision})"
    elif action == "retry":
        retried = control.retry(cluster, state, by=who(), now=time.time())
        click.echo(f"{key}: revision {retried.revision} runs again ({retried.message})")
        return
    else:
        current = state.current_entry
        if current is None:
            raise PermanentError(
                f"{key} has not been deployed yet",
                hint="nothing to cancel; `gitdeploy status` shows what runs, `gitdeploy sync` deploys it",
            )
        updated = decide.cancel(record, current, by=who(), now=time.time(), app=str(key))
        note = f"revision {current.revision} cancelled; the previous revision comes back on the next pass"
    control.write_record(cluster, state, updated)
    click.echo(f"{key}: {note}")
