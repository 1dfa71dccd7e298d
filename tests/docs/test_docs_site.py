"""The documentation site: ``mkdocs build --strict`` succeeds, and the CLI reference lists every
command, argument and option of the ``gitdeploy`` click tree with the help ``--help`` prints.

The build runs the real ``mkdocs`` command on the repository's ``mkdocs.yml``: its strict mode fails
on a broken link or anchor and on a page left out of ``nav`` (the ``validation`` settings), and its
hook (``docs/hooks/reference.py``) generates the CLI reference. The check below walks the click tree
itself, not the hook's output, so a command or option the generator drops fails it.
"""

from __future__ import annotations

import html
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from gitdeploy.cli.main import cli

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs")]  # one build per worker


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built by ``mkdocs build --strict`` into a temporary directory."""
    out = tmp_path_factory.mktemp("site")
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("mkdocs is not installed: run scripts/setup (pip install -e '.[dev]')")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO_ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stdout}\n{built.stderr}"
    return out


def test_site_builds_strictly_with_every_page(site: Path) -> None:
    """Every Markdown page under docs/ became a page of the site (none was left out of nav)."""
    pages = sorted(
        p.relative_to(REPO_ROOT / "docs").with_suffix("")
        for p in (REPO_ROOT / "docs").rglob("*.md")
        if "hooks" not in p.parts
    )
    assert pages
    for page in pages:
        built = site / page / "index.html" if page.name != "index" else site / page.parent / "index.html"
        assert built.is_file(), f"docs/{page}.md was not built into the site"


def _commands(command: click.Command, ctx: click.Context) -> Iterator[tuple[click.Command, click.Context]]:
    """Every command of the click tree, lazily loaded ones included, as the command line loads them."""
    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{ctx.command_path} lists {name} but cannot load it"
            if not sub.hidden:
                sub_ctx = click.Context(sub, info_name=name, parent=ctx, **sub.context_settings)
                yield from _commands(sub, sub_ctx)


def _text(fragment: str) -> str:
    """The words of an HTML fragment: tags dropped, entities decoded, white space collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _section(page: str, anchor: str) -> str | None:
    """The text of the section whose heading has id ``anchor``, up to the next command heading."""
    start = page.find(f'id="{anchor}"')
    if start < 0:
        return None
    ends = [m.start() for m in re.finditer(r'<h[2-4] id="gitdeploy', page[start + 1 :])]
    end = start + 1 + ends[0] if ends else len(page)
    return _text(page[start:end])


def missing_from_reference(page: str) -> list[str]:
    """What of the click tree the CLI reference page (HTML) lacks, one line each."""
    missing = []
    root = click.Context(cli, info_name="gitdeploy", **cli.context_settings)
    for command, ctx in _commands(cli, root):
        section = _section(page, ctx.command_path.replace(" ", "-"))
        if section is None:
            missing.append(f"command {ctx.command_path}")
            continue
        wanted = [" ".join(command.get_usage(ctx).split())]
        wanted += [" ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].replace("`", "").split())]
        for param in command.get_params(ctx):
            if isinstance(param, click.Argument):
                wanted.append(param.make_metavar(ctx))
            elif isinstance(param, click.Option) and not param.hidden:
                wanted += [*param.opts, *param.secondary_opts]
                if param.help:
                    wanted.append(" ".join(param.help.replace("`", "").split()))
        missing += [f"{ctx.command_path}: {w!r}" for w in wanted if w not in section]
    return missing


def test_cli_reference_lists_every_command_option_and_help(site: Path) -> None:
    page = (site / "reference" / "cli" / "index.html").read_text()
    assert missing_from_reference(page) == []


def test_the_check_fails_when_an_option_is_missing(site: Path) -> None:
    """The check above can fail: drop one option of one command from the page and it says so."""
    page = (site / "reference" / "cli" / "index.html").read_text()
    start = page.index('id="gitdeploy-rollout-promote"')
    end = page.index('id="gitdeploy-rollout-status"')
    tampered = page[:start] + page[start:end].replace("--full", "--fool") + page[end:]
    assert "gitdeploy rollout promote: '--full'" in missing_from_reference(tampered)
    assert (
        missing_from_reference(page.replace('id="gitdeploy-tag"', 'id="gone"'))[0] == "command gitdeploy tag"
    )


def _property_names(node: object) -> Iterator[str]:
    """Every property name a JSON schema declares, wherever it is (``$defs`` included)."""
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            yield key
            yield from _property_names(value)
        for key, value in node.items():
            if key != "properties":
                yield from _property_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from _property_names(item)


def test_manifest_reference_lists_every_schema_field(site: Path) -> None:
    """Each field a schema in schemas/ declares is named in the manifest reference, generated from them."""
    page = _text((site / "reference" / "manifests" / "index.html").read_text())
    for schema in sorted((REPO_ROOT / "schemas").glob("*.schema.json")):
        names = set(_property_names(json.loads(schema.read_text())))
        assert names, schema
        missing = sorted(name for name in names if not re.search(rf"\b{re.escape(name)}\b", page))
        assert missing == [], f"{schema.name}: fields missing from docs/reference/manifests.md: {missing}"
