"""``gitdeploy rollback``: go back to an earlier revision, and make it stick.

Printing and wiring only: the decisions are :mod:`gitdeploy.core.rollback`, the reads and writes
:mod:`gitdeploy.controller.rollback`.
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.output import print_json
from gitdeploy.cli.status_cmd import _find
from gitdeploy.cli.target import open_cluster
from gitdeploy.controller import rollback as control
from gitdeploy.core.imagetriggers import comparable
from gitdeploy.core.models import AppKey
from gitdeploy.core.rollback import SkippedRollback
from gitdeploy.core.templatediff import diff_templates
from gitdeploy.errors import GitdeployError
from gitdeploy.source.repo import ConfigRepo


def who() -> str:
    """``user@host``: who ran the command, for the revision log."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


@contextmanager
def optional_repo(
    ctx: click.Context, repo: str | None, branch: str, subpath: str
) -> Iterator[ConfigRepo | None]:
    if repo is None:
        yield None
        return
    with ConfigRepo(repo, ref=branch, subpath=subpath, state_dir=get_context(ctx).state_dir) as source:
        yield source


def _describe(plan: control.RollbackPlan) -> list[str]:
    key, choice = plan.state.key, plan.choice
    target = choice.target
    commit = target.commit
    lines = [
        f"{key}: revision {choice.current.revision} -> revision {target.revision}'s template "
        f"(commit {commit.short} {commit.subject!r} by {commit.author or 'unknown'})"
    ]
    if plan.current_template is not None:
        changes = diff_templates(comparable(plan.current_template), comparable(plan.template))
        lines += [f"  {c.scope}: {c.render()}" for c in changes]
    if plan.rebuilt:
        lines.append(
            f"  its ReplicaSet was removed by the history limit: rebuilt from git at {commit.short} "
            "with the images it ran"
        )
    else:
        lines.append(f"  reuses ReplicaSet {target.replica_set}")
    lines.append(f"  image triggers: suspended (`gitdeploy deploy {key} --enable-triggers` resumes them)")
    lines.append(
        f"  pinned while {key}'s manifest in git is unchanged; a commit that changes it, or "
        f"`gitdeploy deploy {key} --latest`, rolls forward"
    )
    return lines


def _plan_json(plan: control.RollbackPlan, done: bool) -> dict[str, Any]:
    target = plan.choice.target
    return {
        "app": str(plan.state.key),
        "from": plan.choice.current.revision,
        "to": target.revision,
        "commit": target.commit.sha,
        "replicaSet": "" if plan.rebuilt else target.replica_set,
        "rebuiltFromGit": plan.rebuilt,
        "images": [{"container": c, "image": i} for c, i in target.images],
        "triggersSuspended": True,
        "applied": done,
    }


@click.command("rollback")
@click.argument("apps", nargs=-1, required=True, metavar="APP...")
@click.option("-n", "--namespace", default=None, help="Namespace of the apps (or name them as ns/name).")
@click.option(
    "--to-revision", type=int, default=None, help="Go back to this revision (`gitdeploy history APP`)."
)
@click.option("--to-commit", default=None, help="Go back to the newest revision deployed from this commit.")
@click.option("-m", "--message", default="", help="Why: kept in the revision log.")
@click.option("--dry-run", is_flag=True, help="Print what would change, change nothing.")
@click.option(
    "--repo",
    default=None,
    help="Config repo (URL or path): needed when the target's ReplicaSet is gone, to rebuild it from git.",
)
@click.option("--branch", default="main", show_default=True, help="The branch gitdeploy tracks.")
@click.option("--path", "subpath", default="", help="The repo directory gitdeploy reads (monorepos).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def rollback(
    ctx: click.Context,
    apps: tuple[str, ...],
    namespace: str | None,
    to_revision: int | None,
    to_commit: str | None,
    message: str,
    dry_run: bool,
    repo: str | None,
    branch: str,
    subpath: str,
    output: str,
) -> None:
    """Roll apps back to an earlier revision's template and exact images, and keep them there.

    The default target is the last Complete revision before the current one. The rollback is a new
    revision (the target's ReplicaSet is reused when it still exists). The app's image triggers are
    suspended and it stays pinned while its manifest in git is unchanged: `gitdeploy status` shows
    Pinned. A running `gitdeploy run` carries the rollback out; without one, run `gitdeploy sync`.

    \b
    Exit codes: 0 done (or skipped: already at that template), 1 refused or failed.

    \b
    Examples:
      gitdeploy rollback shop/web
      gitdeploy rollback web -n shop --to-revision 3 -m "checkout errors since 4"
      gitdeploy rollback web --to-commit 1a2b3c4 --dry-run
    """
    if to_revision is not None and to_commit is not None:
        raise click.UsageError("give --to-revision or --to-commit, not both")
    cluster = open_cluster(get_context(ctx))
    failed = False
    results: list[dict[str, Any]] = []
    with optional_repo(ctx, repo, branch, subpath) as source:
        rebuild = control.git_rebuilder(source) if source is not None else None
        for name in apps:
            try:
                key: AppKey = _find(cluster, name, namespace)
                plan = control.plan_rollback(
                    cluster,
                    key,
                    to_revision=to_revision,
                    to_commit=to_commit,
                    message=message,
                    by=who(),
                    now=time.time(),
                    rebuild=rebuild,
                )
            except SkippedRollback as skipped:
                click.echo(str(skipped))
                continue
            except GitdeployError as problem:
                click.echo(f"error: {name}: {problem}", err=True)
                failed = True
                continue
            if not dry_run:
                try:
                    control.apply(cluster, plan)
                except GitdeployError as problem:
                    click.echo(f"error: {key}: {problem}", err=True)
                    failed = True
                    continue
            if output == "json":
                results.append(_plan_json(plan, not dry_run))
                continue
            for line in _describe(plan):
                click.echo(line)
            if dry_run:
                click.echo(f"{key}: dry run, nothing changed")
            else:
                click.echo(
                    f"{key} rolled back: revision {plan.next_revision} will run "
                    f"revision {plan.choice.target.revision}'s template "
                    f"(follow it: gitdeploy rollout status {key})"
                )
    if output == "json":
        print_json(results)
    if failed:
        ctx.exit(1)
