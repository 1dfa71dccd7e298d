"""``gitdeploy plan``: what merging a change will roll out, for pull-request review."""

from __future__ import annotations

import click
from rich.text import Text

from gitdeploy.cli.context import get_context
from gitdeploy.cli.output import MACHINE_FORMATS, console, output_option, print_data, print_table
from gitdeploy.cli.plan_output import (
    PlanRefs,
    detail_lines,
    header_text,
    plan_to_json,
    render_markdown,
    summary_line,
)
from gitdeploy.cli.target import open_cluster
from gitdeploy.cli.trust import load_trusted_keys, trusted_key_option
from gitdeploy.controller.liveplan import plan_live
from gitdeploy.controller.planreader import PlanReader
from gitdeploy.core.diagnostics import printable
from gitdeploy.core.planning.changes import Plan
from gitdeploy.source.repo import ConfigRepo

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_CHANGES = 2


def exit_code(plan: Plan, detailed: bool) -> int:
    """1 when anything is invalid; else 0, or with ``--detailed-exitcode`` 2 when something changes."""
    if not plan.valid:
        return EXIT_INVALID
    return EXIT_CHANGES if detailed and plan.has_changes else EXIT_OK


def _print_text(plan: Plan, refs: PlanRefs) -> None:
    out = console()
    out.print(Text(f"Plan: {refs.base_label} -> {refs.head_label}"))
    if plan.apps:
        print_table(
            ["app", "change", "detail", "file"],
            [
                (str(a.key), a.kind.value, a.reason, f"{printable(a.file)}:{a.line}" if a.file else "")
                for a in plan.apps
            ],
        )
    for a in plan.apps:
        out.print()
        out.print(header_text(a))
        for line in detail_lines(a):
            out.print(line)
    if plan.problems:
        out.print()
        out.print(Text("problems:"))
        for d in plan.problems:
            out.print(Text(d.render(), style="red"))
    out.print(Text(summary_line(plan)))


@click.command()
@click.option(
    "--repo",
    default=".",
    show_default=True,
    help="The config repository (URL or path); both refs are read from it without a checkout.",
)
@click.option(
    "--base",
    "base_ref",
    default=None,
    help="What the change merges into: branch, tag, full ref or sha (required without --live).",
)
@click.option(
    "--head",
    "head_ref",
    default="HEAD",
    show_default=True,
    help="The change: branch, tag, full ref or sha (HEAD: the repo's current commit).",
)
@click.option("--path", "subpath", default="", help="The directory of the repo that holds the config.")
@click.option(
    "--live",
    is_flag=True,
    help="Compare HEAD with what the cluster runs now (--kubeconfig/--context, else the embedded "
    "cluster) instead of with --base: pinned apps, image-trigger images, drift, orphans.",
)
@trusted_key_option
@output_option("markdown")
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 0 when nothing changes, 2 when something does (1 stays: invalid or error).",
)
@click.pass_context
def plan(
    ctx: click.Context,
    repo: str,
    base_ref: str | None,
    head_ref: str,
    subpath: str,
    live: bool,
    trusted_keys: tuple[str, ...],
    output: str,
    detailed_exitcode: bool,
) -> None:
    """Show what merging HEAD into BASE will do to each app, without touching a cluster;
    with --live, what deploying HEAD will do to what the cluster runs now.

    Per app: rollout (with the template diff, the strategy and hooks), rollback (back to the
    template of an earlier commit), manual (would roll out, but is paused or has no ConfigChange
    trigger), scale, settings, add, remove (and whether prune is on), or invalid (the problems,
    as `gitdeploy validate` prints them); with the commits of the change that touched the app.

    With --live (reads the cluster, changes nothing): rollout is diffed against the running
    ReplicaSet; manual also covers an app pinned by a rollback (with how to end the pin); drift
    says a ReplicaSet differs from the app record (scaled or edited by hand); remove is an app only
    in the cluster; images that image triggers resolved are kept, not reported as changes.

    With --trusted-key, a --head commit not signed by one of those keys is refused (exit 1).

    Exit codes: 0 valid (with --detailed-exitcode: 0 no changes, 2 changes), 1 invalid or error.

    \b
    Examples:
      gitdeploy plan --base main --head feature/bump-web
      gitdeploy plan --repo . --base refs/remotes/origin/main --head HEAD -o markdown
      gitdeploy plan --repo https://git.example.com/config.git --base main --head pr-42 -o json
      gitdeploy --kubeconfig ~/.kube/prod plan --live --head main
    """
    if live == (base_ref is not None):
        raise click.UsageError(
            "give either --base REF (compare two commits) or --live (compare with the cluster)"
        )
    cli = get_context(ctx)
    state_dir = cli.state_dir

    trusted = load_trusted_keys(trusted_keys, state_dir)

    def open_repo(ref: str, *, verify: bool = False) -> ConfigRepo:
        return ConfigRepo(
            repo,
            ref=None if ref == "HEAD" else ref,
            subpath=subpath,
            state_dir=state_dir,
            trusted_keys=trusted if verify else None,
        )

    if base_ref is None:
        cluster = open_cluster(cli)
        with open_repo(head_ref, verify=True) as source:
            head_sha = source.poll().head
            refs = PlanRefs(cluster.description, "", head_ref, head_sha)
            result = plan_live(PlanReader(source), cluster, head_sha, label=refs.base_label)
    else:
        with open_repo(base_ref) as base_source:
            base_sha = base_source.poll().head
        with open_repo(head_ref, verify=True) as source:
            head_sha = source.poll().head
            refs = PlanRefs(base_ref, base_sha, head_ref, head_sha)
            result = PlanReader(source).plan(base_sha, head_sha, label=refs.base_label)
    if output in MACHINE_FORMATS:
        print_data(plan_to_json(result, refs), output)
    elif output == "markdown":
        click.echo(render_markdown(result, refs))
    else:
        _print_text(result, refs)
    ctx.exit(exit_code(result, detailed_exitcode))
