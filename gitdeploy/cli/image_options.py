"""Registry options shared by ``run``, ``sync`` and ``tag``: where credentials are, which registries
may be plain HTTP, and (for the loop) how often scheduled image stream tags are checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitdeploy.cli.durations import Duration
from gitdeploy.controller.imagetriggers import DEFAULT_IMAGE_INTERVAL, ImageSettings

_KEY = "gitdeploy.images"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta.setdefault(_KEY, {})[param.name] = value
    return value


def _interval(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    return _remember(ctx, param, Duration().convert(value, param, ctx))


def registry_options(command: Any) -> Any:
    """``--registry-config`` and ``--insecure-registry`` (values kept in the click context)."""
    command = click.option(
        "--insecure-registry",
        "insecure_registries",
        multiple=True,
        metavar="HOST[:PORT]",
        expose_value=False,
        callback=_remember,
        help="A registry that may be reached over plain HTTP (repeatable; loopback always may).",
    )(command)
    return click.option(
        "--registry-config",
        type=click.Path(path_type=Path),
        default=None,
        expose_value=False,
        callback=_remember,
        help="Docker config.json (or its directory) with registry credentials "
        "[default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json].",
    )(command)


def image_interval_option(command: Any) -> Any:
    """``--image-interval``, for ``run`` (a one-pass command checks the image streams once)."""
    return click.option(
        "--image-interval",
        default=f"{DEFAULT_IMAGE_INTERVAL:.0f}s",
        show_default=True,
        expose_value=False,
        callback=_interval,
        help="How often image stream tags with importPolicy.scheduled are checked in their registry.",
    )(command)


def image_settings(ctx: click.Context) -> ImageSettings:
    """The options :func:`registry_options` and :func:`image_interval_option` stored, as settings."""
    given = ctx.meta.get(_KEY, {})
    config: Path | None = given.get("registry_config")
    if config is not None and config.is_dir():
        config = config / "config.json"
    return ImageSettings(
        docker_config=config,
        insecure_registries=tuple(given.get("insecure_registries") or ()),
        interval_seconds=float(given.get("image_interval") or DEFAULT_IMAGE_INTERVAL),
    )
