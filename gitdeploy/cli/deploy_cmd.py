"""``gitdeploy deploy``: deployment control (``oc rollout latest|cancel|retry`` and image triggers)."""

from __future__ import annotations

import time

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.rollback_cmd import who
from gitdeploy.cli.status_cmd import find_app
from gitdeploy.cli.target import open_cluster
from gitdeploy.controller.actions import deploy_control


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
    note = deploy_control(cluster, key, action, by=who(), now=time.time())
    click.echo(f"{key}: {note}")
