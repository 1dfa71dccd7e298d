"""Printing helpers shared by the commands: tables on a terminal, stable JSON or YAML for machines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, TypeVar

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitdeploy.cli.context import get_context

F = TypeVar("F", bound=Callable[..., Any])

MACHINE_FORMATS = ("json", "yaml")


class _YamlDumper(yaml.SafeDumper):
    """``yaml.safe_dump``'s dumper, which also writes a state (a :class:`~enum.StrEnum`, such as
    ``Sync.SYNCED``) as its plain word, as JSON does."""


_YamlDumper.add_multi_representer(StrEnum, lambda dumper, state: dumper.represent_str(state.value))


def output_option(*extra: str) -> Callable[[F], F]:
    """``-o/--output text|json|yaml`` (plus ``extra`` formats), the same on every command."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice(["text", *MACHINE_FORMATS, *extra]),
        default="text",
        show_default=True,
        help="Output format: a table for people, or JSON/YAML for machines (same fields).",
    )


def console(err: bool = False) -> Console:
    ctx = get_context(click.get_current_context())
    stream = sys.stderr if err else sys.stdout
    return Console(
        file=stream,
        no_color=not ctx.color,
        force_terminal=ctx.color,
        highlight=False,
        soft_wrap=True,
        width=None if stream.isatty() else 200,
    )


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """An aligned table in the style of ``kubectl get``: upper-case headers, no borders. On a
    terminal, fitted to its width (no header or cell is wrapped: the widest cells are cut with
    ``…``); piped, whole lines without trailing spaces, for ``grep``, ``awk`` and ``cut``."""
    if not sys.stdout.isatty():
        click.echo(
            plain_table([h.upper() for h in headers], [[str(c) for c in row] for row in rows]), nl=False
        )
        return
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for header in headers:
        table.add_column(header.upper(), no_wrap=True, overflow="ellipsis")
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))  # cells are data, never markup
    console().print(table)


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns three spaces apart as kubectl prints them, each line without trailing spaces.

    >>> print(plain_table(["APP", "SYNC"], [["shop/web", "Synced"], ["a", "OutOfSync"]]), end="")
    APP        SYNC
    shop/web   Synced
    a          OutOfSync
    """
    lines = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "".join(
        "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False))


def print_data(value: Any, output: str) -> None:
    """``value`` (plain lists, dicts, strings, numbers) as ``json`` or ``yaml``; same fields in both."""
    if output == "yaml":
        text = yaml.dump(value, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True, width=1000)
        click.echo(text, nl=False)
    else:
        print_json(value)
