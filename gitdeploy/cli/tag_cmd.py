"""``gitdeploy tag SOURCE NS/STREAM:TAG``: move an image stream tag by hand, like ``oc tag``."""

from __future__ import annotations

import re

import click

from gitdeploy.cli.context import get_context
from gitdeploy.cli.image_options import image_settings, registry_options
from gitdeploy.cli.output import MACHINE_FORMATS, output_option, print_data
from gitdeploy.cli.target import open_cluster
from gitdeploy.clock import SystemClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.cluster.records import stream_state_name
from gitdeploy.errors import ConflictError, PermanentError
from gitdeploy.images.reference import format_pinned_reference, parse_image_reference
from gitdeploy.images.registry import RegistryClient
from gitdeploy.images.streams import TagEvent, TagHistory, histories_from_json, histories_to_json

_WRITE_ATTEMPTS = 3


_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_STREAM = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def parse_stream_tag(text: str, namespace: str) -> tuple[str, str, str]:
    """``[NS/]STREAM:TAG`` -> (namespace, stream, tag); a registry image (its host is no namespace
    name, a digest no tag) is refused, so ``--source auto`` never looks it up in the cluster."""
    where, _, rest = text.rpartition("/")
    stream, sep, tag = rest.partition(":")
    if (
        not sep
        or not _STREAM.fullmatch(stream)
        or not _TAG.fullmatch(tag)
        or (where and not _NAMESPACE.fullmatch(where))
    ):
        raise PermanentError(
            f"{text!r} is not an image stream tag", hint="write NAMESPACE/STREAM:TAG, e.g. shop/web:prod"
        )
    return where or namespace, stream, tag


def _stream_histories(
    cluster: Cluster, namespace: str, stream: str
) -> tuple[tuple[TagHistory, ...], str | None]:
    stored = cluster.read_stream_state(namespace, stream)
    if stored is None:
        return (), None
    return histories_from_json(stored.payload), stored.resource_version


def _stream_tag_image(cluster: Cluster, source: str, namespace: str) -> TagEvent | None:
    """The image another stream tag holds, when ``source`` names one the cluster knows."""
    try:
        ns, stream, tag = parse_stream_tag(source, namespace)
    except PermanentError:
        return None
    histories, _ = _stream_histories(cluster, ns, stream)
    history = next((h for h in histories if h.tag == tag), None)
    return history.latest if history is not None else None


def _resolve_source(ctx: click.Context, cluster: Cluster, source: str, namespace: str, kind: str) -> TagEvent:
    now = SystemClock().now()
    if kind in ("auto", "istag"):
        found = _stream_tag_image(cluster, source, namespace)
        if found is not None:
            return TagEvent(found.digest, found.image, now)
        if kind == "istag":
            raise PermanentError(
                f"image stream tag {source} has no image in the cluster",
                hint="check the name with `kubectl get configmap -l gitdeploy.io/imagestream`, "
                "or give a registry image (registry/repo@sha256:... or registry/repo:tag)",
            )
    reference = parse_image_reference(source)
    if reference.digest is None:
        settings = image_settings(ctx)
        with RegistryClient(
            docker_config=settings.docker_config, insecure_hosts=settings.insecure_registries
        ) as registry:
            digest = registry.resolve_digest(reference)
    else:
        digest = reference.digest
    return TagEvent(digest, format_pinned_reference(reference, digest), now)


@click.command("tag")
@click.argument("source")
@click.argument("target", metavar="NS/STREAM:TAG")
@click.option("-n", "--namespace", default="default", show_default=True, help="Namespace when not in TARGET.")
@click.option(
    "--source",
    "kind",
    type=click.Choice(["auto", "docker", "istag"]),
    default="auto",
    show_default=True,
    help="What SOURCE is: a registry image (docker), another stream tag (istag), or auto "
    "(a stream tag when the cluster has it, else a registry image).",
)
@output_option()
@registry_options
@click.pass_context
def tag(ctx: click.Context, source: str, target: str, namespace: str, kind: str, output: str) -> None:
    """Point an image stream tag at SOURCE; apps whose ImageChange triggers follow it roll out.

    SOURCE is registry/repo@sha256:... (taken as is), registry/repo:tag (resolved in its registry
    now) or [NS/]STREAM:TAG of another image stream. The move is kept in the tag's history in the
    cluster, and holds until git changes the tag's `from` in the ImageStream manifest.

    Exit codes: 0 moved (or already there), 1 refused (the source cannot be resolved, the tag
    cannot be written; the message says why).

    \b
    Examples:
      gitdeploy tag quay.io/acme/web@sha256:4f2c... shop/web:prod
      gitdeploy tag 127.0.0.1:5000/web:1.4 shop/web:prod --insecure-registry 127.0.0.1:5000
      gitdeploy tag shop/web:staging shop/web:prod
    """
    ns, stream, tag_name = parse_stream_tag(target, namespace)
    cluster = open_cluster(get_context(ctx))
    event = _resolve_source(ctx, cluster, source, namespace, kind)
    previous = None
    for attempt in range(_WRITE_ATTEMPTS):
        histories, version = _stream_histories(cluster, ns, stream)
        history = next((h for h in histories if h.tag == tag_name), TagHistory(tag_name))
        previous = history.latest
        moved = history.move_by_hand(event)
        others = tuple(h for h in histories if h.tag != tag_name)
        try:
            cluster.write_stream_state(ns, stream, histories_to_json((*others, moved)), version)
            break
        except ConflictError:
            if attempt + 1 == _WRITE_ATTEMPTS:
                raise
    was = previous.image if previous is not None else "no image"
    if output in MACHINE_FORMATS:
        print_data(
            {
                "tag": f"{ns}/{stream}:{tag_name}",
                "image": event.image,
                "digest": event.digest,
                "previous": previous.image if previous is not None else None,
                "configmap": stream_state_name(stream),
            },
            output,
        )
        return
    if previous is not None and previous.digest == event.digest:
        click.echo(f"image stream tag {ns}/{stream}:{tag_name} already points at {event.image}")
        return
    click.echo(
        f"image stream tag {ns}/{stream}:{tag_name} -> {event.image} (was {was}); "
        "apps whose ImageChange triggers follow it roll out at once under `gitdeploy run` "
        "(or at the next `gitdeploy sync`)"
    )
