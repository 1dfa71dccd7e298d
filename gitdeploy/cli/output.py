"""Printing helpers shared by the commands: tables on a terminal, stable JSON for machines."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitdeploy.cli.context import get_context


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
    """An aligned table in the style of ``kubectl get``: upper-case headers, no borders."""
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for header in headers:
        table.add_column(header.upper(), overflow="fold")
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))  # cells are data, never markup
    console().print(table)


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False))
