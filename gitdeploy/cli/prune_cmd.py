"""``gitdeploy prune``: the prunes ``pruneLimit`` held, and ``--confirm`` to let them go ahead."""

from __future__ import annotations

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.output import output_option, print_data, print_table
from gitdeploy.cli.target import open_cluster
from gitdeploy.controller.orphans import HeldPrune, confirm_held_prunes, list_held_prunes
from gitdeploy.errors import PermanentError


@click.command("prune")
@click.option("-n", "--namespace", default=None, help="Only apps in this namespace.")
@click.option(
    "--confirm",
    is_flag=True,
    help="Let the held prunes of the commit that holds them go ahead: the apps are deleted.",
)
@click.option(
    "--commit",
    default=None,
    metavar="SHA",
    help="Only the prunes held by this commit (a prefix will do); needed when several are held.",
)
@output_option()
@click.pass_context
def prune(ctx: click.Context, namespace: str | None, confirm: bool, commit: str | None, output: str) -> None:
    """List the prunes that pruneLimit held; with --confirm, let them go ahead.

    When one commit would prune more apps than pruneLimit (gitdeploy.yaml or --prune-limit), the
    loop deletes none of them: each app shows PruneHeld. --confirm confirms the held prunes of the
    commit that holds them; a running `gitdeploy run` deletes the apps at once (without one, run
    `gitdeploy sync --prune`). A newer commit's prunes need a new confirmation.

    \b
    Exit codes: 0 listed or confirmed, 1 refused (the message says why and what to do).

    \b
    Examples:
      gitdeploy prune
      gitdeploy prune --confirm
      gitdeploy prune -n shop --confirm --commit 3f2a1c9
    """
    cluster = open_cluster(get_context(ctx))
    held = list_held_prunes(cluster, namespace)
    if commit is not None:
        held = [h for h in held if h.commit.startswith(commit)]
    commits = sorted({h.commit for h in held})
    if not confirm:
        _show(held, output)
        if held and output == "text":
            click.echo(f"\n{len(held)} held; `gitdeploy prune --confirm` deletes them", err=True)
        return
    if not held:
        click.echo("no prunes are held; nothing to confirm")
        return
    if len(commits) > 1:
        raise PermanentError(
            f"prunes are held by several commits: {', '.join(c[:7] for c in commits)}",
            hint="confirm one of them with --commit SHA (the newest is the loop's head)",
        )
    confirm_held_prunes(cluster, held)
    names = ", ".join(str(h.key) for h in held)
    click.echo(f"confirmed the prune of {len(held)} apps held by commit {commits[0][:7]}: {names}")
    click.echo("a running `gitdeploy run` deletes them now; without one, `gitdeploy sync --prune` does")


def _show(held: list[HeldPrune], output: str) -> None:
    rows = [
        {"app": str(h.key), "commit": h.commit, "confirmed": h.confirmed, "message": h.message} for h in held
    ]
    if output != "text":
        print_data(rows, output)
    elif not rows:
        click.echo("no prunes are held")
    else:
        print_table(
            ["app", "commit", "confirmed", "message"],
            [[r["app"], str(r["commit"])[:7], "yes" if r["confirmed"] else "no", r["message"]] for r in rows],
        )
