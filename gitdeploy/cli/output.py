"""Printing helpers shared by the commands: tables on a terminal, stable JSON or YAML for machines."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gitdeploy.cli.context import get_context
from gitdeploy.core.timestamps import format_timestamp

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


_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_TIME_SUFFIXES = ("At", "Time", "Timestamp")


def camel_case(key: str) -> str:
    """A field name as Kubernetes spells its fields: ``template_hash`` → ``templateHash``. Names
    that are not snake_case identifiers (``app.kubernetes.io/name``, ``MY_VAR``) are data, kept.

    >>> camel_case("template_hash"), camel_case("started_at"), camel_case("MY_VAR"), camel_case("a.b_c")
    ('templateHash', 'startedAt', 'MY_VAR', 'a.b_c')
    """
    if not _SNAKE.fullmatch(key):
        return key
    first, *rest = key.split("_")
    return first + "".join(word.capitalize() for word in rest)


def is_time_field(key: str) -> bool:
    """Whether a (camelCase) field holds a point in time (``startedAt``, ``lastTransitionTime``)."""
    return key.endswith(_TIME_SUFFIXES)


def machine_form(value: Any, key: str = "") -> Any:
    """``value`` in the one style of every ``-o json|yaml``, as Kubernetes writes its objects:
    field names in camelCase, times in RFC 3339 (UTC, whole seconds: ``2026-11-25T02:37:06Z``).

    A time is a :class:`~datetime.datetime`, or seconds since the epoch under a time field
    (:func:`is_time_field`), as gitdeploy's records hold them; ``None`` stays ``null``.

    >>> machine_form({"started_at": 1_700_000_000.0, "hooks": [{"exit_code": 1}], "finished_at": None})
    {'startedAt': '2023-11-14T22:13:20Z', 'hooks': [{'exitCode': 1}], 'finishedAt': None}
    """
    if isinstance(value, Mapping):
        return {camel_case(str(k)): machine_form(v, camel_case(str(k))) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [machine_form(item) for item in value]
    if isinstance(value, datetime):
        return format_timestamp(value.timestamp())
    if isinstance(value, int | float) and not isinstance(value, bool) and is_time_field(key):
        return format_timestamp(float(value))
    return value


def print_json(value: Any) -> None:
    click.echo(json.dumps(machine_form(value), indent=2, sort_keys=False))


def print_data(value: Any, output: str) -> None:
    """``value`` (plain lists, dicts, strings, numbers) as ``json`` or ``yaml``; same fields in both,
    in one style (:func:`machine_form`)."""
    if output == "yaml":
        value = machine_form(value)
        text = yaml.dump(value, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True, width=1000)
        click.echo(text, nl=False)
    else:
        print_json(value)
