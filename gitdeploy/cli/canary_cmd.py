"""``gitdeploy rollout promote`` and ``gitdeploy rollout abort``: a canary's manual controls.

Printing and wiring only: the requests are :mod:`gitdeploy.controller.canary`, carried out by
the loop's next pass.
"""

from __future__ import annotations

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.rollback_cmd import who
from gitdeploy.cli.status_cmd import find_app, rollout
from gitdeploy.cli.target import open_cluster
from gitdeploy.controller import canary as control

NAMESPACE_HELP = "Namespace of the app (or name it as ns/name)."


@click.command("promote")
@click.argument("app", metavar="APP")
@click.option("-n", "--namespace", default=None, help=NAMESPACE_HELP)
@click.option("--full", is_flag=True, help="Skip every remaining step: the canary goes to full size.")
@click.pass_context
def promote(ctx: click.Context, app: str, namespace: str | None, full: bool) -> None:
    """End the current step of the app's canary (a pause, or a setWeight still scaling) and go
    on to the next; with --full, skip all the remaining steps.

    A running `gitdeploy run` carries it out; without one, run `gitdeploy sync`.

    \b
    Exit codes: 0 requested, 1 refused (no canary in progress; the message says why).

    \b
    Examples:
      gitdeploy rollout promote shop/web
      gitdeploy rollout promote web -n shop --full
    """
    cluster = open_cluster(get_context(ctx))
    key = find_app(cluster, app, namespace)
    request = control.promote(cluster, key, full=full, by=who())
    what = "every remaining step" if full else f"step {request.state.step + 1}"
    click.echo(f"{key}: revision {request.revision}'s canary promoted past {what}")


@click.command("abort")
@click.argument("app", metavar="APP")
@click.option("-n", "--namespace", default=None, help=NAMESPACE_HELP)
@click.pass_context
def abort(ctx: click.Context, app: str, namespace: str | None) -> None:
    """Abort the app's canary: the stable revision back to full size, the canary down to 0,
    and the revision marked Failed (RolloutAborted). Git is not changed: the revision stays
    failed until a new commit changes the app (or `gitdeploy deploy APP --retry`).

    \b
    Exit codes: 0 requested, 1 refused (no canary in progress; the message says why).

    \b
    Examples:
      gitdeploy rollout abort shop/web
    """
    cluster = open_cluster(get_context(ctx))
    key = find_app(cluster, app, namespace)
    request = control.abort(cluster, key, by=who())
    click.echo(
        f"{key}: aborting revision {request.revision}'s canary at step {request.state.step + 1}; "
        "the stable revision comes back to full size"
    )


rollout.add_command(promote)
rollout.add_command(abort)
