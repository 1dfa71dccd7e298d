"""The ``gitdeploy`` command: wiring and printing only (DESIGN.md, layer ``cli``)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, NoReturn

import click
from click.shell_completion import get_completion_class

from gitdeploy import __version__
from gitdeploy.cli.context import CliContext, default_state_dir
from gitdeploy.errors import GitdeployError

COMPLETE_VAR = "_GITDEPLOY_COMPLETE"

COMMANDS: dict[str, tuple[str, str]] = {
    "validate": (
        "validate_cmd:validate",
        "Check the manifests under PATH (a directory or one file), or of a git repo at a ref.",
    ),
    "plan": (
        "plan_cmd:plan",
        "Show what merging HEAD into BASE will do to each app, without touching a cluster; with "
        "--live, what deploying HEAD will do to what the cluster runs now.",
    ),
    "cluster": (
        "cluster_cmd:cluster",
        "Run the embedded cluster (a local Kubernetes API with simulated pods).",
    ),
    "run": ("run_cmd:run", "Keep the cluster at what the config repo says, until stopped (SIGTERM/Ctrl-C)."),
    "sync": ("run_cmd:sync", "One pass at the tracked head; with --wait, until the rollouts end."),
    "status": (
        "status_cmd:status",
        "What each app runs, whether it matches git (SYNC), how well it runs (HEALTH), and why.",
    ),
    "history": ("status_cmd:history", "The app's revisions, each tied to the commit that caused it."),
    "rollout": (
        "canary_cmd:rollout",
        "Follow rollouts (as `kubectl rollout`), and promote or abort a canary.",
    ),
    "tag": (
        "tag_cmd:tag",
        "Point an image stream tag at SOURCE; apps whose ImageChange triggers follow it roll out.",
    ),
    "rollback": (
        "rollback_cmd:rollback",
        "Roll apps back to an earlier revision's template and exact images, and keep them there.",
    ),
    "deploy": (
        "deploy_cmd:deploy",
        "Control an app's deployments: roll out git's manifest, resume image triggers, retry a "
        "failed revision, or cancel one in progress.",
    ),
    "prune": ("prune_cmd:prune", "List the prunes that pruneLimit held; with --confirm, let them go ahead."),
    "dashboard": (
        "dashboard_cmd:dashboard",
        "Serve a web dashboard: every app's SYNC and HEALTH, and per app its revisions, "
        "rollout and events, updated live as the cluster changes.",
    ),
    "demo": (
        "demo_cmd:demo",
        "Show gitdeploy at work on a fresh embedded cluster, narrated, in under a minute.",
    ),
}
"""Each command's module and object in ``gitdeploy.cli``, and the summary ``gitdeploy --help``
shows (its help's first sentence: a test holds them equal). A command's module is imported only
when that command runs, so ``--help``, ``--version`` and a quick command do not pay for the
kubernetes client and the rest."""


class _Gitdeploy(click.Group):
    """The top-level group: commands loaded when used, each also accepting the global options."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            module, _, name = COMMANDS[cmd_name][0].partition(":")
            command = getattr(importlib.import_module(f"gitdeploy.cli.{module}"), name)
            self.add_command(command, cmd_name)
        if command is not None:
            add_global_options(command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list with whole summaries (wrapped, never cut), importing no command."""
        rows = [
            (name, COMMANDS[name][1] if name in COMMANDS else self.commands[name].get_short_help_str(1000))
            for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


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


cli.add_command(completion)


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


def entry() -> NoReturn:
    """The ``gitdeploy`` command (and ``python -m gitdeploy``): :func:`main`, then the exit.

    When threads still run at the end (a watch blocked in its read until its server timeout, the
    leader elector), the interpreter is not shut down around them: a daemon thread that wakes
    while Python finalizes can abort the process (SIGABRT, exit -6) after the command did all its
    work and printed its answer. What was printed is flushed first. Only here, at the process's
    own entry: :func:`main` may run inside another program (``gitdeploy demo`` runs its steps so).
    """
    code = 0
    try:
        main()
    except SystemExit as done:
        if threading.active_count() == 1:
            raise
        code = done.code if isinstance(done.code, int) else 0  # main exits with numbers only
    if threading.active_count() == 1:
        sys.exit(code)
    logging.disable(logging.CRITICAL)  # nothing more from the threads while the streams flush
    with contextlib.suppress(OSError):  # `gitdeploy history web | head`: the reader is gone
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
