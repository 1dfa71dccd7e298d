"""The ``gitdeploy`` command: wiring and printing only (DESIGN.md, layer ``cli``)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

import click
from click.shell_completion import get_completion_class

from gitdeploy import __version__
from gitdeploy.cli.canary_cmd import abort, promote
from gitdeploy.cli.cluster_cmd import cluster
from gitdeploy.cli.context import CliContext, default_state_dir
from gitdeploy.cli.dashboard_cmd import dashboard
from gitdeploy.cli.demo_cmd import demo
from gitdeploy.cli.deploy_cmd import deploy
from gitdeploy.cli.plan_cmd import plan
from gitdeploy.cli.prune_cmd import prune
from gitdeploy.cli.rollback_cmd import rollback
from gitdeploy.cli.run_cmd import run, sync
from gitdeploy.cli.status_cmd import history, rollout, status
from gitdeploy.cli.tag_cmd import tag
from gitdeploy.cli.validate_cmd import validate
from gitdeploy.errors import GitdeployError

COMPLETE_VAR = "_GITDEPLOY_COMPLETE"


class _Gitdeploy(click.Group):
    """The top-level group: every command it hands out also accepts the global options."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            add_global_options(command)
        return command


def _override(field: str) -> Any:
    """A callback that puts a global option given after the command into the shared context."""

    def apply(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is None or value is False:
            return
        root = ctx.find_root()
        if isinstance(root.obj, CliContext):
            if field == "state_dir":
                value = Path(value)
            if field == "color":
                value = False
            root.obj = dataclasses.replace(root.obj, **{field: value})

    return apply


GLOBAL_OPTIONS = (
    ("--state-dir", "state_dir", False),
    ("--kubeconfig", "kubeconfig", False),
    ("--context", "kube_context", False),
    ("--debug", "debug", True),
    ("--no-color", "color", True),
)


def add_global_options(command: click.Command) -> None:
    """Let ``gitdeploy status --context prod`` mean ``gitdeploy --context prod status`` (as kubectl).

    The options are hidden in each command's help (the top-level help lists them once). Idempotent;
    a command that defines an option of the same name keeps its own.
    """
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_global_options(sub)
        return
    taken = {opt for param in command.params for opt in param.opts}
    for flag, field, is_flag in GLOBAL_OPTIONS:
        if flag in taken:
            continue
        command.params.append(
            click.Option(
                [flag],
                is_flag=is_flag,
                default=False if is_flag else None,
                expose_value=False,
                hidden=True,
                callback=_override(field),
            )
        )


@click.group(
    cls=_Gitdeploy,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Global options may also follow the command (`gitdeploy status --context prod`).",
)
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
@click.option("--debug", is_flag=True, help="Print tracebacks for errors (or set GITDEPLOY_DEBUG=1).")
@click.option("--no-color", is_flag=True, help="Never colour the output (or set NO_COLOR).")
@click.pass_context
def cli(
    ctx: click.Context,
    state_dir: Path | None,
    kubeconfig: str | None,
    kube_context: str | None,
    debug: bool,
    no_color: bool,
) -> None:
    """gitdeploy keeps a cluster at what a git repository says, and performs the rollouts itself.

    Without --kubeconfig/--context (and outside a pod), commands act on the embedded cluster of the
    state directory. APP is `name` or `namespace/name`. Colour only on a terminal.

    Exit codes: 0 success, 1 failure (each command's help says which), 2 usage error,
    130 interrupted.

    \b
    Examples:
      gitdeploy validate examples/
      gitdeploy sync --repo ./config --wait
      gitdeploy status
      gitdeploy history shop/web --revision 2 --repo ./config
      gitdeploy --context prod rollout status shop/web
    """
    ctx.obj = CliContext(
        state_dir=state_dir or default_state_dir(),
        kubeconfig=kubeconfig,
        kube_context=kube_context,
        debug=debug or bool(os.environ.get("GITDEPLOY_DEBUG")),
        color=not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty(),
    )


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL (commands, options, choices).

    Exit codes: 0 printed, 2 unknown shell.

    \b
    Examples:
      eval "$(gitdeploy completion bash)"           # in ~/.bashrc
      eval "$(gitdeploy completion zsh)"            # in ~/.zshrc
      gitdeploy completion fish > ~/.config/fish/completions/gitdeploy.fish
    """
    shell_class = get_completion_class(shell)
    assert shell_class is not None  # click knows the three choices
    click.echo(shell_class(ctx.find_root().command, {}, "gitdeploy", COMPLETE_VAR).source())


cli.add_command(validate)
cli.add_command(plan)
cli.add_command(cluster)
cli.add_command(run)
cli.add_command(sync)
cli.add_command(status)
cli.add_command(history)
rollout.add_command(promote)
rollout.add_command(abort)
cli.add_command(rollout)
cli.add_command(tag)
cli.add_command(rollback)
cli.add_command(deploy)
cli.add_command(prune)
cli.add_command(completion)
cli.add_command(demo)
cli.add_command(dashboard)


def main(argv: list[str] | None = None) -> None:
    """Entry point: turn every error into one line on stderr and a documented exit code."""
    args = argv if argv is not None else sys.argv[1:]
    debug = "--debug" in args or bool(os.environ.get("GITDEPLOY_DEBUG"))
    if COMPLETE_VAR in os.environ:  # shell completion asks; click answers and exits
        cli.main(args=argv, prog_name="gitdeploy", complete_var=COMPLETE_VAR)
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
    except BrokenPipeError:  # `gitdeploy history web | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as problem:  # a bug, or a library error no adapter translated
        if debug:
            raise
        click.echo(
            f"error: unexpected {type(problem).__name__}: {problem} "
            "(rerun with --debug for the traceback, and please report it)",
            err=True,
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
