"""The ``gitdeploy`` command: wiring and printing only (DESIGN.md, layer ``cli``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from gitdeploy import __version__
from gitdeploy.cli.cluster_cmd import cluster
from gitdeploy.cli.context import CliContext, default_state_dir
from gitdeploy.cli.plan_cmd import plan
from gitdeploy.cli.run_cmd import run, sync
from gitdeploy.cli.status_cmd import history, rollout, status
from gitdeploy.cli.tag_cmd import tag
from gitdeploy.cli.validate_cmd import validate
from gitdeploy.errors import GitdeployError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="gitdeploy")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="GITDEPLOY_STATE_DIR",
    default=None,
    help="Where gitdeploy keeps its state (the embedded cluster, repo mirrors). "
    "Default: $XDG_STATE_HOME/gitdeploy.",
)
@click.option(
    "--kubeconfig", envvar="KUBECONFIG", default=None, help="Act on the cluster of this kubeconfig."
)
@click.option("--context", "kube_context", default=None, help="The kubeconfig context to use.")
@click.option("--debug", is_flag=True, help="Print tracebacks for errors.")
@click.option("--no-color", is_flag=True, envvar="NO_COLOR", help="Never colour the output.")
@click.pass_context
def cli(
    ctx: click.Context,
    state_dir: Path | None,
    kubeconfig: str | None,
    kube_context: str | None,
    debug: bool,
    no_color: bool,
) -> None:
    """gitdeploy keeps a cluster at what a git repository says, and performs the rollouts itself."""
    ctx.obj = CliContext(
        state_dir=state_dir or default_state_dir(),
        kubeconfig=kubeconfig,
        kube_context=kube_context,
        debug=debug,
        color=not no_color and sys.stdout.isatty(),
    )


cli.add_command(validate)
cli.add_command(plan)
cli.add_command(cluster)
cli.add_command(run)
cli.add_command(sync)
cli.add_command(status)
cli.add_command(history)
cli.add_command(rollout)
cli.add_command(tag)


def main(argv: list[str] | None = None) -> None:
    """Entry point: turn our errors into one line on stderr and a documented exit code."""
    args = argv if argv is not None else sys.argv[1:]
    debug = "--debug" in args or bool(os.environ.get("GITDEPLOY_DEBUG"))
    try:
        code = cli.main(args=argv, prog_name="gitdeploy", standalone_mode=False)
    except click.exceptions.Exit as stop:
        sys.exit(stop.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as problem:
        problem.show()
        sys.exit(problem.exit_code)
    except GitdeployError as problem:
        if debug:
            raise
        click.echo(f"error: {problem}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
