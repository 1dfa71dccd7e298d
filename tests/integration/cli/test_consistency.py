"""Every command feels the same: help with examples, the same global options, -o json|yaml, one-line
errors with an exit code, shell completion. The walk over registered commands covers new ones too."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import click
import pytest
import yaml

from gitdeploy.cli.main import COMMANDS, cli
from tests.fixtures.cli import EXAMPLES, RunCli


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _commands(sub, (*path, name))


for _name in cli.list_commands(click.Context(cli)):  # loads each command (they load when used)
    cli.get_command(click.Context(cli), _name)
EVERY_COMMAND = list(_commands(cli))


def test_help_lists_each_command_with_its_own_first_sentence_whole() -> None:
    # the summaries `gitdeploy --help` prints without importing the commands are theirs
    for name, (_, summary) in COMMANDS.items():
        assert summary == cli.commands[name].get_short_help_str(10_000), name


def test_version_and_help_import_no_command() -> None:
    probe = (
        "import sys\n"
        "from gitdeploy.cli.main import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('kubernetes', 'gitdeploy.cli.status')))\n"
        "print(loaded, file=sys.stderr)\n"
    )
    for args in (["--version"], ["--help"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True
        )
        assert done.stderr.strip() == "[]", (args, done.stderr)
    done = subprocess.run([sys.executable, "-c", probe, "status", "--help"], capture_output=True, text=True)
    assert "gitdeploy.cli.status_cmd" in done.stderr  # the probe sees what a command loads


def test_the_walk_finds_the_commands_of_the_readme() -> None:
    names = {" ".join(path) for path in EVERY_COMMAND}
    assert {"validate", "plan", "run", "sync", "status", "history", "rollout status", "completion"} <= names


@pytest.mark.parametrize("path", EVERY_COMMAND, ids=lambda p: " ".join(p) or "gitdeploy")
def test_every_command_has_help_with_an_example(run_cli: RunCli, path: tuple[str, ...]) -> None:
    done = run_cli(*path, "--help")
    assert done.returncode == 0, done.stderr
    assert f"Usage: gitdeploy {' '.join(path)}".rstrip() in done.stdout
    assert "Example" in done.stdout, f"`gitdeploy {' '.join(path)} --help` shows no example"
    for line in done.stdout.split("Example", 1)[1].splitlines()[1:]:
        if line.strip():
            assert line.strip().startswith(("gitdeploy", "eval", "#")), line
            break


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in EVERY_COMMAND
        if p and not isinstance(cli.get_command(click.Context(cli), p[0]), click.Group)
    ],
    ids=" ".join,
)
def test_every_command_takes_the_global_options_after_its_name(
    run_cli: RunCli, path: tuple[str, ...]
) -> None:
    done = run_cli(
        *path, "--state-dir", "/nonexistent/x", "--context", "c", "--no-color", "--debug", "--help"
    )
    assert done.returncode == 0, done.stderr


def test_a_global_option_after_the_command_is_used(run_cli: RunCli) -> None:
    missing = "/nonexistent/kubeconfig.yaml"
    done = run_cli("status", "--kubeconfig", missing)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and missing in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, "one line, no traceback"
    traced = run_cli("status", "--kubeconfig", missing, "--debug")
    assert "Traceback" in traced.stderr


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["history"], 2, "Missing argument 'APP'"),
        (["status", "-o", "xml"], 2, "'xml' is not one of 'text', 'json', 'yaml'"),
        (["rollout", "status", "web", "--timeout", "soon"], 2, "is not a duration"),
        (["completion", "tcsh"], 2, "'tcsh' is not one of"),
        (["history", "nope"], 1, "error: no app 'nope' (`gitdeploy status` lists the apps gitdeploy runs)"),
        (["rollout", "status", "shop/nope"], 1, "error: no app 'nope' in namespace shop"),
    ],
)
def test_errors_are_one_line_with_an_exit_code(
    run_cli: RunCli, args: list[str], code: int, says: str
) -> None:
    done = run_cli(*args)
    assert done.returncode == code
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    run_cli("cluster", "down")


def test_machine_output_is_the_same_in_json_and_yaml(run_cli: RunCli) -> None:
    try:
        as_json = run_cli("status", "-o", "json")
        as_yaml = run_cli("status", "-n", "shop", "-o", "yaml")
        assert (as_json.returncode, as_yaml.returncode) == (0, 0)
        assert json.loads(as_json.stdout) == yaml.safe_load(as_yaml.stdout) == []
    finally:
        run_cli("cluster", "down")


def _output_choices(path: tuple[str, ...]) -> list[str] | None:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    option = next((p for p in command.params if "--output" in p.opts), None)
    return None if option is None else list(getattr(option.type, "choices", []))


@pytest.mark.parametrize("path", [p for p in EVERY_COMMAND if _output_choices(p) is not None], ids=" ".join)
def test_every_command_with_output_offers_text_json_and_yaml(path: tuple[str, ...]) -> None:
    choices = _output_choices(path)
    assert choices is not None and {"text", "json", "yaml"} <= set(choices), choices


def test_validate_says_the_same_in_json_and_yaml(run_cli: RunCli) -> None:
    as_json = run_cli("validate", str(EXAMPLES), "-o", "json")
    as_yaml = run_cli("validate", str(EXAMPLES), "-o", "yaml")
    assert (as_json.returncode, as_yaml.returncode) == (0, 0), as_yaml.stderr
    assert json.loads(as_json.stdout) == yaml.safe_load(as_yaml.stdout)
    assert json.loads(as_json.stdout)["apps"], "the examples hold apps"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_use_clicks_variable(run_cli: RunCli, shell: str) -> None:
    done = run_cli("completion", shell)
    assert done.returncode == 0
    assert f"_GITDEPLOY_COMPLETE={shell}_complete" in done.stdout


def test_completion_completes_commands_and_options(run_cli: RunCli) -> None:
    env = {"_GITDEPLOY_COMPLETE": "bash_complete", "COMP_WORDS": "gitdeploy rollout st", "COMP_CWORD": "2"}
    assert run_cli(env=env).stdout.split() == ["plain,status"]
    env = {**env, "COMP_WORDS": "gitdeploy history web --re", "COMP_CWORD": "3"}
    assert set(run_cli(env=env).stdout.split()) == {"plain,--revision", "plain,--repo"}


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"NO_COLOR": "anything"}, {"NO_COLOR": ""}])
def test_no_color_in_any_form_is_no_error(run_cli: RunCli, env: dict[str, str]) -> None:
    done = run_cli("--help", env=env)
    assert done.returncode == 0 and "\x1b[" not in done.stdout


def test_a_piped_table_is_whole_lines_without_trailing_spaces(run_cli: RunCli) -> None:
    # `gitdeploy validate examples/ | awk ...`: one line per app, however wide the rows
    done = run_cli("validate", str(EXAMPLES))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()[:-1]  # the table, then a summary line
    apps = json.loads(run_cli("validate", str(EXAMPLES), "-o", "json").stdout)["apps"]
    assert len(lines) == 1 + len(apps)  # a header, then a line per app: nothing wrapped
    assert all(line == line.rstrip() for line in lines)
    assert lines[0].split()[0] == "APP"
    assert [line.split()[0] for line in lines[1:]] == [f"{a['namespace']}/{a['name']}" for a in apps]
