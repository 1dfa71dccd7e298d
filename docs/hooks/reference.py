"""MkDocs hook: the reference pages' generated parts, made at build time and never committed.

* ``<!-- gitdeploy:cli-reference -->`` becomes every command of the click tree of
  ``gitdeploy.cli.main`` (its lazily loaded commands included): usage, help and every option and
  argument, as ``gitdeploy COMMAND --help`` prints them, so the docs and ``--help`` never disagree.
* ``<!-- gitdeploy:schema-fields NAME -->`` becomes the list of fields of ``schemas/NAME.schema.json``
  (the schema gitdeploy validates manifests against), with their types, constraints and descriptions.

``tests/docs/test_docs_site.py`` builds the site with ``mkdocs build --strict`` and checks the CLI
reference against the click tree.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

CLI_MARKER = "<!-- gitdeploy:cli-reference -->"
SCHEMA_MARKER = re.compile(r"<!-- gitdeploy:schema-fields ([a-z]+) -->")
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def on_page_markdown(markdown: str, **_kwargs: Any) -> str:
    """Replace the markers of a page with the generated reference."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return SCHEMA_MARKER.sub(lambda found: schema_fields(found.group(1)), markdown)


# --- the CLI reference -----------------------------------------------------------------------


def walk_commands(
    command: click.Command, ctx: click.Context
) -> Iterator[tuple[click.Command, click.Context]]:
    """Every command of the tree under ``command`` (itself first), each with its context.

    ``gitdeploy``'s group loads its commands when asked by name (``COMMANDS`` in main.py), so
    each is fetched through ``get_command``, as the command line does.
    """
    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from walk_commands(sub, _context(sub, name, ctx))


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    """The context ``gitdeploy ... NAME --help`` would have (its settings: ``-h`` beside ``--help``)."""
    return click.Context(command, info_name=name, parent=parent, **command.context_settings)


def command_anchor(ctx: click.Context) -> str:
    """The heading id of a command's section: ``gitdeploy-rollout-status``."""
    return ctx.command_path.replace(" ", "-")


def cli_reference() -> str:
    from gitdeploy.cli.main import cli  # imported at build time: the docs read the real tree

    root = _context(cli, "gitdeploy", None)
    sections = [_command_section(command, ctx) for command, ctx in walk_commands(cli, root)]
    return "\n".join(sections)


def _command_section(command: click.Command, ctx: click.Context) -> str:
    depth = len(ctx.command_path.split())
    heading = "#" * min(depth + 1, 4)
    lines = [f"{heading} `{ctx.command_path}` {{#{command_anchor(ctx)}}}", ""]
    lines += ["```text", command.get_usage(ctx), "```", ""]
    lines += _help_markdown(inspect.cleandoc(command.help or ""))
    arguments = [param for param in command.get_params(ctx) if isinstance(param, click.Argument)]
    if arguments:
        lines += ["**Arguments**", ""]
        for argument in arguments:
            required = "required" if argument.required else "optional"
            many = ", repeatable" if argument.nargs == -1 else ""
            lines.append(f"- `{argument.make_metavar(ctx)}` ({required}{many})")
        lines.append("")
    options = [
        record
        for param in command.get_params(ctx)
        if isinstance(param, click.Option) and (record := param.get_help_record(ctx)) is not None
    ]
    if options:
        lines += ["**Options**", ""]
        for flags, text in options:
            lines.append(f"- `{flags}`" + (f": {_escape(' '.join(text.split()))}" if text else ""))
        lines.append("")
    if isinstance(command, click.Group):
        lines += ["**Commands**", ""]
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                anchor = f"{command_anchor(ctx)}-{name}"
                lines.append(f"- [`{name}`](#{anchor}): {_escape(sub.get_short_help_str(1000))}")
        lines.append("")
    return "\n".join(lines)


def _help_markdown(help_text: str) -> list[str]:
    """Click's help as Markdown: a ``\\b`` paragraph (kept as written) becomes a text block."""
    lines: list[str] = []
    for paragraph in re.split(r"\n\s*\n", help_text.strip()):
        if paragraph.startswith("\b"):
            lines += ["```text", paragraph.removeprefix("\b").strip("\n"), "```", ""]
        else:
            lines += [_escape(" ".join(paragraph.split())), ""]
    return lines


def _escape(text: str) -> str:
    """Text that Markdown shows as written: ``*``, ``_``, ``<``, ``[`` ... escaped outside code spans."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        part if part.startswith("`") else re.sub(r"([*_\[\]>\\])", r"\\\1", part).replace("<", "&lt;")
        for part in parts
    )


# --- the manifest fields ---------------------------------------------------------------------


def schema_fields(name: str) -> str:
    """The fields of ``schemas/NAME.schema.json`` as a Markdown list, one per field path."""
    schema = _load(f"{name}.schema.json")
    lines = [f"Fields of `schemas/{name}.schema.json` ({schema.get('title', name)}):", ""]
    for path, node, file, required in _fields(schema, f"{name}.schema.json", "", depth=0):
        facts = [_type_of(node, file)]
        if required:
            facts.append("required")
        facts += _constraints(node)
        text = f"- `{path}` ({', '.join(fact for fact in facts if fact)})"
        description = node.get("description")
        if description:
            text += f": {_escape(description)}"
        lines.append(text)
    return "\n".join(lines) + "\n"


def _load(file: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / file).read_text())
    return loaded


def _resolve(node: dict[str, Any], file: str) -> tuple[dict[str, Any], str]:
    """Follow ``$ref`` (in this file or another of schemas/); the description nearest wins."""
    while "$ref" in node:
        target, _, pointer = node["$ref"].partition("#")
        file = target or file
        resolved: Any = _load(file)
        for key in pointer.strip("/").split("/") if pointer.strip("/") else []:
            resolved = resolved[key]
        merged = {**resolved, **{k: v for k, v in node.items() if k != "$ref"}}
        node = merged
    return node, file


def _fields(
    node: dict[str, Any], file: str, prefix: str, depth: int
) -> Iterator[tuple[str, dict[str, Any], str, bool]]:
    node, file = _resolve(node, file)
    required = set(node.get("required", []))
    for key, child in node.get("properties", {}).items():
        child, child_file = _resolve(child, file)
        path = f"{prefix}.{key}" if prefix else key
        yield path, child, child_file, key in required
        if depth < 12:
            yield from _fields(child, child_file, path, depth + 1)
            items = child.get("items")
            if isinstance(items, dict):
                yield from _fields(items, child_file, f"{path}[]", depth + 1)


def _type_of(node: dict[str, Any], file: str) -> str:
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    choices = node.get("oneOf") or node.get("anyOf")
    if choices:
        return " or ".join(_type_of(_resolve(choice, file)[0], file) for choice in choices)
    kind = node.get("type", "")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(node.get("items"), dict):
        return f"list of {_type_of(_resolve(node['items'], file)[0], file) or 'values'}"
    return str(kind)


def _constraints(node: dict[str, Any]) -> list[str]:
    words = {
        "minimum": "at least {}",
        "maximum": "at most {}",
        "exclusiveMinimum": "above {}",
        "minLength": "at least {} characters",
        "maxLength": "at most {} characters",
        "minItems": "at least {} items",
        "pattern": "matches `{}`",
        "default": "default `{}`",
    }
    facts = [
        _plural(template.format(json.dumps(node[key]) if key == "default" else node[key]))
        for key, template in words.items()
        if key in node
    ]
    if node.get("additionalProperties") is False and "properties" in node:
        facts.append("no other fields")
    return facts


def _plural(fact: str) -> str:
    """``at least 1 characters`` as English has it: ``at least 1 character``."""
    return re.sub(r"\b1 (character|item)s\b", r"1 \1", fact)
