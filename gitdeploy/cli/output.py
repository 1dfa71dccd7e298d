"""Printing helpers shared by the commands: tables on a terminal, stable JSON or YAML for machines."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

from gitdeploy.cli.context import get_context
from gitdeploy.core.timestamps import format_timestamp

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

MACHINE_FORMATS = ("json", "yaml")


class _YamlDumper(yaml.SafeDumper):
    """``yaml.safe_dump``'s dumper, which also writes a state (a :class:`~enum.StrEnum`, such as
    ``Sync.SYNCED``) as its plain word, as JSON does."""


_YamlDumper.add_multi_representer(StrEnum, lambda dumper, state: dumper.represent_str(state.value))


WIDE = "wide"
"""``-o wide``: the table with its extra columns, lines never cut (as ``kubectl get -o wide``)."""


def output_option(*extra: str) -> Callable[[F], F]:
    """``-o/--output text|json|yaml`` (plus ``extra`` formats), the same on every command."""
    more = " (wide: the table with more columns, never cut)" if WIDE in extra else ""
    return click.option(
        "-o",
        "--output",
        type=click.Choice(["text", *MACHINE_FORMATS, *extra]),
        default="text",
        show_default=True,
        help=f"Output format: a table for people, or JSON/YAML for machines (same fields){more}.",
    )


def console(err: bool = False) -> Console:
    from rich.console import Console  # imported when something prints through it (not tables)

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


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, whole: bool = False) -> None:
    """An aligned table in the style of ``kubectl get``: upper-case headers, no borders. On a
    terminal, fitted to its width (:func:`fit_table`: no header or name is cut or wrapped, the
    widest cells are cut with ``…``); piped, or ``whole`` (``-o wide``, as kubectl's), whole
    lines without trailing spaces, for ``grep``, ``awk`` and ``cut``."""
    upper = [h.upper() for h in headers]
    cells = [[str(c) for c in row] for row in rows]
    if whole or not sys.stdout.isatty():
        click.echo(plain_table(upper, cells), nl=False)
        return
    text = fit_table(upper, cells, shutil.get_terminal_size().columns)
    header, _, body = text.partition("\n")
    color = get_context(click.get_current_context()).color
    click.echo(click.style(header, bold=True) if color else header)
    click.echo(body, nl=False)


def fit_table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """:func:`plain_table` in at most ``width`` columns: the widest cells are cut (with ``…``),
    never below their header, and never the first column (the name); when that is not enough,
    the rightmost columns are left out.

    >>> rows = [["shop/web", "Synced", "revision 3 is complete and all pods are ready"]]
    >>> print(fit_table(["APP", "SYNC", "MESSAGE"], rows, 40), end="")
    APP        SYNC     MESSAGE
    shop/web   Synced   revision 3 is compl…
    >>> print(fit_table(["APP", "SYNC", "MESSAGE"], rows, 20), end="")
    APP        SYNC
    shop/web   Synced
    """
    columns = len(headers)
    while True:
        widths = [max(len(line[i]) for line in [headers, *rows]) for i in range(columns)]
        floor = [max(len(headers[i]), 10) if i else widths[0] for i in range(columns)]
        over = sum(widths) + 3 * (columns - 1) - width
        for i in sorted(range(columns), key=lambda c: widths[c] - floor[c], reverse=True):
            if over <= 0:
                break
            cut = min(over, max(0, widths[i] - floor[i]))
            widths[i] -= cut
            over -= cut
        if over <= 0 or columns == 1:
            break
        columns -= 1
    return plain_table(
        list(headers[:columns]), [[_cut(row[i], widths[i]) for i in range(columns)] for row in rows]
    )


def _cut(cell: str, width: int) -> str:
    return cell if len(cell) <= width else cell[: width - 1] + "…"


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
