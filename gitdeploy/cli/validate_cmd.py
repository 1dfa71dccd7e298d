"""``gitdeploy validate``: check manifests the way the loop will read them."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from gitdeploy.cli.context import get_context
from gitdeploy.cli.output import MACHINE_FORMATS, console, output_option, print_data, print_table
from gitdeploy.cli.trust import load_trusted_keys, trusted_key_option
from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.core.diagnostics import Diagnostic, printable
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import LoadResult, load_directory, load_files
from gitdeploy.source.repo import ConfigRepo


def _path(prefix: str, file: str) -> str:
    return os.path.normpath(os.path.join(prefix, file)) if prefix else file


def _display(prefix: str, file: str) -> str:
    """The path for a terminal: on one line, whatever characters its name holds."""
    return printable(_path(prefix, file))


def _load_path(path: Path) -> tuple[LoadResult, str]:
    if path.is_file():
        result = load_files([ManifestFile(path.name, path.read_bytes())])
        return result, str(path.parent) if str(path.parent) != "." else ""
    return load_directory(path), str(path) if str(path) != "." else ""


def _diagnostic_json(d: Diagnostic, prefix: str) -> dict[str, Any]:
    return {**asdict(d), "file": _path(prefix, d.file)}


def render(result: LoadResult, prefix: str, output: str) -> None:
    if output in MACHINE_FORMATS:
        print_data(
            {
                "apps": [
                    {
                        "kind": app.kind.value,
                        "namespace": app.namespace,
                        "name": app.name,
                        "file": _path(prefix, app.location.file),
                        "line": app.location.line,
                        "template_hash": app.template_hash,
                        "triggers": app.triggers.names(),
                        "strategy": app.strategy.type.value,
                    }
                    for app in result.apps
                ],
                "errors": [_diagnostic_json(d, prefix) for d in result.diagnostics],
            },
            output,
        )
        return
    err = console(err=True)
    for d in result.diagnostics:
        # Messages quote the user's YAML: build styled Text, never parse them as rich markup.
        line = Text.assemble(
            (f"{_display(prefix, d.file)}:{d.line}:{d.column}:", "red"),
            f" {d.app}:" if d.app else "",
            f" {printable(d.message)}",
            (f" ({printable(d.hint)})", "dim") if d.hint else "",
        )
        err.print(line, highlight=False)
    if result.apps:
        print_table(
            ["app", "kind", "strategy", "triggers", "hash", "file"],
            [
                (
                    str(app.key),
                    app.kind.value,
                    app.strategy.type.value,
                    ",".join(app.triggers.names()) or "(manual)",
                    app.template_hash + ("*" if app.triggers.image_change else ""),
                    f"{_display(prefix, app.location.file)}:{app.location.line}",
                )
                for app in result.apps
            ],
        )
        if any(app.triggers.image_change for app in result.apps):
            click.echo(
                "* the hash of the template as git has it: its ImageChange triggers set the images "
                "from the image streams, so the hash on the cluster differs once they resolve",
                err=True,  # stdout stays the table and its summary, for pipes
            )
    summary = f"{len(result.apps)} app(s) valid"
    if result.invalid_apps:
        summary += f", {len(result.invalid_apps)} invalid ({', '.join(str(k) for k in result.invalid_apps)})"
    if result.image_streams:
        summary += f", {len(result.image_streams)} image stream(s)"
    if result.analysis_templates:
        summary += f", {len(result.analysis_templates)} analysis template(s)"
    if result.ignored:
        kinds = sorted({i.kind for i in result.ignored})
        summary += f", {len(result.ignored)} document(s) ignored ({', '.join(kinds)})"
    if result.diagnostics:
        summary += f"; {len(result.diagnostics)} problem(s)"
    click.echo(summary, err=bool(result.diagnostics))


def _load_repo(
    state_dir: Path, repo: str, ref: str | None, subpath: str, keys: tuple[str, ...]
) -> LoadResult:
    trusted = load_trusted_keys(keys, state_dir)
    with ConfigRepo(repo, ref=ref, subpath=subpath, state_dir=state_dir, trusted_keys=trusted) as source:
        head = source.poll().head
        return DesiredStateReader(source).load(head)


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path), required=False)
@click.option("--repo", help="Validate a git repository (URL or path) at --ref, without a checkout.")
@click.option(
    "--ref", default=None, help="Branch, tag or commit to read with --repo (default: the default branch)."
)
@click.option(
    "--path", "subpath", default="", help="With --repo: the directory of the repo that holds the config."
)
@trusted_key_option
@output_option()
@click.pass_context
def validate(
    ctx: click.Context,
    path: Path | None,
    repo: str | None,
    ref: str | None,
    subpath: str,
    trusted_keys: tuple[str, ...],
    output: str,
) -> None:
    """Check the manifests under PATH (a directory or one file), or of a git repo at a ref.

    Touches no cluster. Prints every problem as `file:line:col: app: message (hint)` and exits 1
    when any is found.

    \b
    Examples:
      gitdeploy validate examples/
      gitdeploy validate apps/web.yaml -o json
      gitdeploy validate --repo https://git.example.com/config.git --ref main
      gitdeploy validate --repo . --ref v1.2.0 --path deploy
    """
    if repo is not None and path is not None:
        raise click.UsageError("give either PATH or --repo, not both")
    if repo is not None:
        result, prefix = _load_repo(get_context(ctx).state_dir, repo, ref, subpath, trusted_keys), ""
    else:
        result, prefix = _load_path(path or Path("."))
    render(result, prefix, output)
    ctx.exit(1 if result.diagnostics else 0)
