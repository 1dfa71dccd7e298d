"""Options shared by every command, resolved once in the top-level group."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import click


def default_state_dir() -> Path:
    """``$GITDEPLOY_STATE_DIR``, else ``$XDG_STATE_HOME/gitdeploy``, else ``~/.local/state/gitdeploy``."""
    explicit = os.environ.get("GITDEPLOY_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "gitdeploy"


@dataclass(frozen=True)
class CliContext:
    state_dir: Path
    kubeconfig: str | None
    kube_context: str | None
    debug: bool
    color: bool


def get_context(ctx: click.Context) -> CliContext:
    obj = ctx.find_root().obj
    assert isinstance(obj, CliContext)
    return obj
