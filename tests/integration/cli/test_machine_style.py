"""One style for every ``-o json`` and ``-o yaml``, as Kubernetes writes its objects: field names in
camelCase, times in RFC 3339 with a zone. The walk covers every command that has ``--output``: a
new one fails :func:`test_the_walk_covers_every_command_with_machine_output` until it is added."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import click
import pytest
import yaml

from gitdeploy.cli.main import cli
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.imagestreams import pinned_image as image
from tests.fixtures.imagestreams import pinned_stream
from tests.fixtures.imagetriggers import web_config
from tests.fixtures.shopweb import SETTINGS, sync_and_wait, web

SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")
TIME_FIELD = re.compile(r".*(?:At|Time|Timestamp)$")


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


def _with_output() -> set[str]:
    """Every command path (``cluster status``) that takes ``-o/--output``."""
    found: set[str] = set()

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))
        elif any("--output" in p.opts for p in command.params):
            found.add(" ".join(path))

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        walk(command, (name,))
    return found


def _walk(value: Any, where: str = "") -> Iterator[tuple[str, str, Any]]:
    """``(path, key, value)`` of every field of a parsed JSON document."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield f"{where}.{key}", str(key), inner
            yield from _walk(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _walk(inner, f"{where}[{index}]")


def style_problems(document: Any) -> list[str]:
    """What in ``document`` breaks the style: a snake_case key, a time that is no RFC 3339 time
    with a zone, or seconds since the epoch left as a number."""
    problems = []
    for path, key, value in _walk(document):
        if SNAKE.fullmatch(key):
            problems.append(f"{path}: snake_case key")
        if TIME_FIELD.fullmatch(key) and value is not None:
            if not (isinstance(value, str) and RFC3339.fullmatch(value)):
                problems.append(f"{path}: {value!r} is no RFC 3339 time")
            elif datetime.fromisoformat(value).tzinfo is None:
                problems.append(f"{path}: {value!r} has no zone")
        if isinstance(value, float) and 1e9 < value < 1e11:
            problems.append(f"{path}: {value!r} looks like seconds since the epoch")
    return problems


def test_the_style_check_finds_what_breaks_the_style() -> None:
    bad = {"apps": [{"template_hash": "x", "startedAt": 1_700_000_000.5, "finishedAt": "2026-11-25 02:37"}]}
    assert style_problems(bad) == [
        ".apps[0].template_hash: snake_case key",
        ".apps[0].startedAt: 1700000000.5 is no RFC 3339 time",
        ".apps[0].startedAt: 1700000000.5 looks like seconds since the epoch",
        ".apps[0].finishedAt: '2026-11-25 02:37' is no RFC 3339 time",
    ]
    good = {"apps": [{"templateHash": "x", "startedAt": "2026-11-25T02:37:06Z", "finishedAt": None}]}
    assert style_problems(good) == []


def _invocations(git_remote: GitRemote, first: str) -> dict[str, list[str]]:
    """One machine-output command line per command with ``--output`` (after the scenario)."""
    return {
        "validate": ["validate", str(git_remote.work / "apps")],
        "plan": ["plan", "--repo", git_remote.url, "--base", first, "--head", "main"],
        "plan --live": ["plan", "--repo", git_remote.url, "--live"],
        "cluster status": ["cluster", "status"],
        "status": ["status"],
        "history": ["history", "shop/web"],
        "history --revision": ["history", "shop/web", "--revision", "2"],
        "prune": ["prune"],
    }


WALKED = {"validate", "plan", "cluster status", "status", "history", "prune", "tag", "sync", "rollback"}
"""The commands whose machine output the scenario below checks."""


def test_the_walk_covers_every_command_with_machine_output() -> None:
    assert _with_output() <= WALKED, f"add these to the scenario: {_with_output() - WALKED}"


def _parsed(run_cli: RunCli, args: list[str], output: str) -> Any:
    done = run_cli(*args, "-o", output)
    assert done.returncode in (0, 1), f"{args}: {done.stderr}"  # plan --live of a pinned app: 0 or 1
    assert done.stdout.strip(), f"{args} printed nothing: {done.stderr}"
    return json.loads(done.stdout) if output == "json" else yaml.safe_load(done.stdout)


def test_every_machine_output_is_camel_case_with_rfc3339_times(
    git_remote: GitRemote, run_cli: RunCli, cluster: None
) -> None:
    # Given web following its image stream: deployed (sync -o json), a tag moved (tag -o json),
    # deployed again, then rolled back (rollback -o json); and a commit adding api, not deployed yet
    first = git_remote.commit_and_push(
        "web follows its image stream",
        {
            "gitdeploy.yaml": SETTINGS,
            "apps/stream.yaml": pinned_stream(image("A")),
            "apps/web.yaml": web_config(),
        },
    )
    synced = _parsed(run_cli, ["sync", "--repo", git_remote.url, "--wait", "--timeout", "60s"], "json")
    documents = {"sync": synced}
    documents["tag"] = _parsed(run_cli, ["tag", image("B"), "shop/web:prod"], "json")
    sync_and_wait(run_cli, git_remote)
    documents["rollback"] = _parsed(run_cli, ["rollback", "shop/web", "-m", "B is slow"], "json")
    sync_and_wait(run_cli, git_remote)
    api = web("nginx:1.25").replace("web", "api")
    git_remote.commit_and_push("Add api", {"apps/api.yaml": api})

    # When every command prints its JSON and its YAML
    for name, args in _invocations(git_remote, first).items():
        as_json = _parsed(run_cli, args, "json")
        assert as_json == _parsed(run_cli, args, "yaml"), f"{name}: JSON and YAML differ"
        documents[name] = as_json

    assert {name.split(" --")[0] for name in documents} == WALKED
    # Then no key is snake_case, and every time is RFC 3339 with a zone
    for name, document in documents.items():
        assert style_problems(document) == [], f"`gitdeploy {name} -o json`: {style_problems(document)}"
    # and the walk saw what it checks: times, and keys that used to be snake_case
    revisions = documents["history"]
    assert [r["revision"] for r in revisions] == [1, 2, 3]
    assert all(RFC3339.fullmatch(r["startedAt"]) and r["startedAt"].endswith("Z") for r in revisions)
    assert revisions[2]["rolledBackTo"] == 1 and revisions[2]["replicaSet"] == revisions[0]["replicaSet"]
    assert documents["status"][0]["triggersSuspended"] is True
    assert documents["history --revision"]["templateHash"] == revisions[1]["templateHash"]
    assert "templateChanges" in documents["plan"]["apps"][0]
    assert "podStartSeconds" in documents["cluster status"]["config"]
