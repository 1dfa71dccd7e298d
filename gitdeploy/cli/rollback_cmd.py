"""``gitdeploy rollback``: go back to an earlier revision, and make it stick.

Printing and wiring only: the decisions are :mod:`gitdeploy.core.history.control`, the reads and writes
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
from gitdeploy.cli.output import MACHINE_FORMATS, output_option, print_data
from gitdeploy.cli.status_cmd import find_app
from gitdeploy.cli.target import open_cluster
from gitdeploy.controller import rollback as control
from gitdeploy.controller.gitrevert import GitRevert
from gitdeploy.controller.restore import SCALING, STRATEGY, TRIGGERS
from gitdeploy.core.commits import Author
from gitdeploy.core.history.control import SkippedRollback
from gitdeploy.core.imagetriggers import comparable
from gitdeploy.core.models import App, AppKey
from gitdeploy.core.templatediff import diff_templates
from gitdeploy.errors import GitdeployError
from gitdeploy.source.gitcmd import configured_author
from gitdeploy.source.repo import ConfigRepo


def app_error(app: object, problem: GitdeployError) -> None:
    """``error: APP: what`` on stderr, naming the app once (a message that starts with it says it)."""
    text = str(problem)
    click.echo(f"error: {text}" if text.startswith(f"{app} ") else f"error: {app}: {text}", err=True)


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
    restored = plan.restored
    if restored is not None:
        restore = plan.record.pin.restore if plan.record.pin is not None else ()
        if SCALING in restore:
            lines.append(f"  restores replicas: {restored.replicas}, selector: {_selector(restored)}")
        if STRATEGY in restore:
            lines.append(f"  restores strategy: {restored.strategy.type.value}")
        if TRIGGERS in restore:
            lines.append(f"  restores triggers: {', '.join(restored.triggers.names()) or 'none'}")
    if _suspends_triggers(plan):
        lines.append(f"  image triggers: suspended (`gitdeploy deploy {key} --enable-triggers` resumes them)")
    lines.append(
        f"  pinned while {key}'s manifest in git is unchanged; a commit that changes it, or "
        f"`gitdeploy deploy {key} --latest`, rolls forward"
    )
    return lines


def _suspends_triggers(plan: control.RollbackPlan) -> bool:
    """Whether the rollback suspends image triggers the app has (as the loop last recorded them)."""
    status = plan.state.record.status
    return status is not None and bool(status.image_triggers)


def _selector(app: App) -> str:
    labels = ",".join(f"{k}={v}" for k, v in app.selector.match_labels)
    return labels + (
        f" (+{len(app.selector.match_expressions)} expressions)" if app.selector.match_expressions else ""
    )


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
        "triggersSuspended": _suspends_triggers(plan),
        "restores": list(plan.record.pin.restore) if plan.record.pin is not None else [],
        "applied": done,
    }


def parse_author(text: str | None) -> Author:
    """``--author "Name <email>"``; else git's user.name/user.email; else gitdeploy's own."""
    if text is not None:
        name, _, rest = text.partition("<")
        email = rest.removesuffix(">").strip() if rest.endswith(">") else ""
        if not name.strip() or "@" not in email:
            raise click.BadParameter(f"{text!r} is not 'Name <email>'", param_hint="--author")
        return Author(name.strip(), email)
    return configured_author() or Author("gitdeploy", "gitdeploy@localhost")


def _git_revert(
    ctx: click.Context,
    apps: tuple[str, ...],
    namespace: str | None,
    choose: dict[str, Any],
    *,
    repo: str,
    base: str,
    branch: str | None,
    subpath: str,
    push: bool,
    note: str,
    author: Author,
    restore: tuple[str, ...],
    output: str,
) -> None:
    cluster = open_cluster(get_context(ctx))
    failed = False
    chosen = []
    for name in apps:
        try:
            key: AppKey = find_app(cluster, name, namespace)
            chosen.append((key, control.choose(cluster, key, **choose)[1]))
        except SkippedRollback as skipped:
            click.echo(str(skipped))
        except GitdeployError as problem:
            app_error(name, problem)
            failed = True
    with ConfigRepo(repo, ref=base, subpath=subpath, state_dir=get_context(ctx).state_dir) as source:
        revert = GitRevert(source, source.poll().head)
        # bottom-up within a file, so the lines of the documents above stay where the loader saw them
        for key, choice in sorted(chosen, key=lambda kc: revert.line_of(kc[0]), reverse=True):
            try:
                revert.add(key, choice)
            except SkippedRollback as skipped:
                click.echo(str(skipped))
            except GitdeployError as problem:
                app_error(key, problem)
                failed = True
        if revert.apps:
            onto = branch or base
            message = revert.message(note, by=who())
            sha = revert.push(onto, message, author) if push else None
            if output in MACHINE_FORMATS:
                print_data(
                    {
                        "apps": [
                            {"app": str(a.key), "from": a.choice.current.revision, "to": a.target.revision,
                             "commit": a.target.commit.sha, "file": a.path}
                            for a in revert.apps
                        ],
                        "branch": onto,
                        "base": revert.base_sha,
                        "message": message,
                        "diff": revert.diff(),
                        "pushed": sha,
                    },
                    output,
                )  # fmt: skip
            else:
                _print_revert(revert, message, onto, base, sha, restore)
    if failed:
        ctx.exit(1)


def _print_revert(
    revert: GitRevert, message: str, onto: str, base: str, sha: str | None, restore: tuple[str, ...]
) -> None:
    if restore:
        click.echo(f"--change-* ({', '.join(restore)}): implied, the target's whole manifest is written back")
    if sha is None:
        click.echo(f"would commit on {onto} (on top of {base} at {revert.base_sha[:7]}):")
        click.echo("\n".join(f"    {line}".rstrip() for line in message.splitlines()))
        click.echo(revert.diff(), nl=False)
        click.echo("nothing changed: add --push to commit and push")
        return
    click.echo(f"pushed {sha[:7]} to {onto}: {message.splitlines()[0]}")
    if onto == base:
        click.echo("the loop deploys it on its next poll (or now: gitdeploy sync --wait)")
    else:
        click.echo(f"{base} is unchanged: open a pull request from {onto} into {base}")


@click.command("rollback")
@click.argument("apps", nargs=-1, required=True, metavar="APP...")
@click.option("-n", "--namespace", default=None, help="Namespace of the apps (or name them as ns/name).")
@click.option(
    "--to-revision", type=int, default=None, help="Go back to this revision (`gitdeploy history APP`)."
)
@click.option("--to-commit", default=None, help="Go back to the newest revision deployed from this commit.")
@click.option("-m", "--message", default="", help="Why: kept in the revision log (and the commit).")
@click.option("--dry-run", is_flag=True, help="Print what would change, change nothing.")
@click.option(
    "--change-scaling-settings",
    is_flag=True,
    help="Also restore the target's replicas and selector (needs --repo).",
)
@click.option("--change-strategy", is_flag=True, help="Also restore the target's strategy (needs --repo).")
@click.option("--change-triggers", is_flag=True, help="Also restore the target's triggers (needs --repo).")
@click.option(
    "--git-revert",
    is_flag=True,
    help="Instead of pinning, write the target's manifest back into git as one commit (needs --repo).",
)
@click.option(
    "--branch",
    default=None,
    help="With --git-revert: put the commit on this new branch, for a pull request, instead of --base.",
)
@click.option("--push", is_flag=True, help="With --git-revert: make the commit and push it (else print it).")
@click.option(
    "--author",
    default=None,
    help="With --git-revert: 'Name <email>' of the commit [default: git's user.name/user.email, "
    "else gitdeploy <gitdeploy@localhost>].",
)
@click.option(
    "--repo",
    default=None,
    help="Config repo (URL or path): to rebuild a template whose ReplicaSet is gone, for --change-*, "
    "and for --git-revert.",
)
@click.option("--base", default="main", show_default=True, help="The branch gitdeploy tracks.")
@click.option("--path", "subpath", default="", help="The repo directory gitdeploy reads (monorepos).")
@output_option()
@click.pass_context
def rollback(
    ctx: click.Context,
    apps: tuple[str, ...],
    namespace: str | None,
    to_revision: int | None,
    to_commit: str | None,
    message: str,
    dry_run: bool,
    change_scaling_settings: bool,
    change_strategy: bool,
    change_triggers: bool,
    git_revert: bool,
    branch: str | None,
    push: bool,
    author: str | None,
    repo: str | None,
    base: str,
    subpath: str,
    output: str,
) -> None:
    """Roll apps back to an earlier revision's template and exact images, and keep them there.

    The default target is the last Complete revision before the current one. The rollback is a new
    revision (the target's ReplicaSet is reused when it still exists). The app's image triggers are
    suspended and it stays pinned while its manifest in git is unchanged: `gitdeploy status` shows
    Pinned. A running `gitdeploy run` carries the rollback out; without one, run `gitdeploy sync`.
    Only the template rolls back unless --change-scaling-settings, --change-strategy or
    --change-triggers restore those settings of the target's manifest too.

    With --git-revert git stays the source of truth: the target's manifest is written back into
    the app's file (only its own document) as one commit for all the apps, on --base or on a new
    --branch; nothing is pinned and no trigger suspended. It prints the commit and its diff; with
    --push it commits and pushes (fast-forward only) and the loop deploys it.

    \b
    Exit codes: 0 done (or skipped: already at that template), 1 refused or failed.

    \b
    Examples:
      gitdeploy rollback shop/web
      gitdeploy rollback web -n shop --to-revision 3 -m "checkout errors since 4"
      gitdeploy rollback web --to-commit 1a2b3c4 --dry-run
      gitdeploy rollback shop/web --to-revision 2 --change-strategy --repo https://git.example/cfg
      gitdeploy rollback shop/web shop/api --git-revert --repo https://git.example/cfg --branch undo --push
    """
    if to_revision is not None and to_commit is not None:
        raise click.UsageError("give --to-revision or --to-commit, not both")
    restore = tuple(
        group
        for group, wanted in (
            (SCALING, change_scaling_settings),
            (STRATEGY, change_strategy),
            (TRIGGERS, change_triggers),
        )
        if wanted
    )
    if git_revert:
        if repo is None:
            raise click.UsageError("--git-revert writes to the config repo: give it with --repo")
        _git_revert(
            ctx, apps, namespace, {"to_revision": to_revision, "to_commit": to_commit},
            repo=repo, base=base, branch=branch, subpath=subpath, push=push and not dry_run,
            note=message, author=parse_author(author), restore=restore, output=output,
        )  # fmt: skip
        return
    if branch is not None or push or author is not None:
        raise click.UsageError("--branch, --push and --author go with --git-revert")
    if restore and repo is None:
        raise click.UsageError(
            "--change-* restore settings of the target revision's manifest, read from git: "
            "give the repo with --repo"
        )
    with optional_repo(ctx, repo, base, subpath) as source:
        failed = _rollback_in_cluster(
            ctx, apps, namespace, to_revision=to_revision, to_commit=to_commit, message=message,
            dry_run=dry_run, restore=restore, source=source, output=output,
        )  # fmt: skip
    if failed:
        ctx.exit(1)


def _rollback_in_cluster(
    ctx: click.Context,
    apps: tuple[str, ...],
    namespace: str | None,
    *,
    to_revision: int | None,
    to_commit: str | None,
    message: str,
    dry_run: bool,
    restore: tuple[str, ...],
    source: ConfigRepo | None,
    output: str,
) -> bool:
    """Pin each app to its target revision (see :func:`rollback`); whether any failed."""
    cluster = open_cluster(get_context(ctx))
    load_app = control.git_app_loader(source) if source is not None else None
    failed = False
    results: list[dict[str, Any]] = []
    for name in apps:
        try:
            key = find_app(cluster, name, namespace)
            plan = control.plan_rollback(
                cluster, key, to_revision=to_revision, to_commit=to_commit, message=message,
                by=who(), now=time.time(), load_app=load_app, restore=restore,
            )  # fmt: skip
        except SkippedRollback as skipped:
            click.echo(str(skipped))
            continue
        except GitdeployError as problem:
            app_error(name, problem)
            failed = True
            continue
        try:
            if not dry_run:
                control.write_record(cluster, plan.state, plan.record)
        except GitdeployError as problem:
            app_error(key, problem)
            failed = True
            continue
        if output in MACHINE_FORMATS:
            results.append(_plan_json(plan, not dry_run))
        else:
            _say_rolled_back(key, plan, dry_run)
    if output in MACHINE_FORMATS:
        print_data(results, output)
    return failed


def _say_rolled_back(key: AppKey, plan: control.RollbackPlan, dry_run: bool) -> None:
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
