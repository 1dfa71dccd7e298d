"""Which image each ImageChange-triggered container runs: the decision, without I/O.

For every container named by an ImageChange trigger of an app (worked examples below; the same
cases are table-driven tests in ``tests/unit/core/test_imagetriggers.py``):

1. the trigger is ``automatic``, the app's triggers are not suspended (a rollback suspends them)
   and the stream tag has an image -> the tag's digest-pinned image (``registry/repo@sha256:...``);
2. otherwise the image the app runs now (its newest revision's template), when it has that container;
3. otherwise, when rule 1 would apply but the tag has no image yet, the app waits for the tag;
4. otherwise git's image.

The chosen images are written into the template, and the template hash is computed over the
result, so a moved tag is a new template. The rollout's cause is ``ImageChange`` when the new
template differs from the running one only in triggered containers' images, else ``ConfigChange``.

Worked examples (tag ``web:prod`` holds ``r/web@sha256:B``; the app runs ``r/web@sha256:A``):

==========  =========  ===========  ==================  ============
automatic   suspended  tag image    container image     cause
==========  =========  ===========  ==================  ============
yes         no         B            r/web@sha256:B      ImageChange
yes         yes        B            r/web@sha256:A      (no change)
no          no         B            r/web@sha256:A      (no change)
yes         no         none         r/web@sha256:A      (no change)
==========  =========  ===========  ==================  ============

and for an app that never ran: automatic with no tag image -> waits for ``ns/web:prod``;
suspended or manual -> git's image.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.history.records import Cause
from gitdeploy.core.models import App, ImageChangeTrigger, PodTemplate
from gitdeploy.core.observed import APP_LABEL


def stream_tag_key(trigger: ImageChangeTrigger) -> str:
    """``namespace/stream:tag``, the key of a trigger's tag in the resolved images."""
    return f"{trigger.stream_namespace}/{trigger.stream_tag}"


@dataclass(frozen=True)
class ImageDecision:
    """An app with its triggered containers' images decided, and why it would roll out."""

    app: App
    """The app with the decided images in its template and the template hash over them."""
    cause: Cause = Cause.CONFIG_CHANGE
    waiting_for: tuple[str, ...] = ()
    """Stream tags (``ns/stream:tag``) the app waits for: followed automatically, no image yet, and
    no running container to keep."""
    followed: tuple[str, ...] = ()
    """Stream tags whose images the app takes now (automatic and not suspended)."""


def decide_images(
    app: App,
    tag_images: Mapping[str, str],
    *,
    suspended: bool,
    running: PodTemplate | None,
    running_hash: str,
) -> ImageDecision:
    """Apply the module's rules. ``tag_images`` maps ``ns/stream:tag`` to the tag's current image;
    ``running`` is the newest revision's template (``None`` when the app never ran) and
    ``running_hash`` its template hash.

    Whether only images changed is decided by the hash, not by comparing templates: a real API
    server stores a ReplicaSet's template with its defaults filled in (``imagePullPolicy``,
    ``terminationMessagePath``, ``dnsPolicy``...), so the template that runs never equals git's;
    git's template with the running images is what gitdeploy wrote, and hashes as the running one."""
    triggers = app.triggers.image_change
    if not triggers:
        return ImageDecision(app)
    running_images = {c.name: c.image for c in running.containers} if running is not None else {}
    chosen: dict[str, str] = {}
    waiting: list[str] = []
    followed: list[str] = []
    for trigger in triggers:
        key = stream_tag_key(trigger)
        follow = trigger.automatic and not suspended
        image = tag_images.get(key) if follow else None
        if image is not None and key not in followed:
            followed.append(key)
        for name in trigger.container_names:
            if image is not None:
                chosen[name] = image
            elif name in running_images:
                chosen[name] = running_images[name]
            elif follow and key not in waiting:
                waiting.append(key)
    template = replace_images(app.template, chosen)
    decided = dataclasses.replace(app, template=template, template_hash=template_hash(template))
    cause = Cause.CONFIG_CHANGE
    as_running = replace_images(app.template, {n: running_images[n] for n in chosen if n in running_images})
    only_images = running is not None and template_hash(as_running) == running_hash
    if only_images and decided.template_hash != running_hash:
        cause = Cause.IMAGE_CHANGE
    return ImageDecision(decided, cause, tuple(waiting), tuple(followed))


def replace_images(template: PodTemplate, images: Mapping[str, str]) -> PodTemplate:
    """``template`` (made comparable) with the named containers' images replaced.

    >>> t = PodTemplate('{"spec":{"containers":[{"image":"a:1","name":"web"},{"image":"b","name":"x"}]}}')
    >>> [c.image for c in replace_images(t, {"web": "a@sha256:0f"}).containers]
    ['a@sha256:0f', 'b']
    """
    body = _comparable_dict(template)
    for container in (body.get("spec") or {}).get("containers") or []:
        name = container.get("name")
        if name in images:
            container["image"] = images[name]
    return canonical_template(body)


def comparable(template: PodTemplate) -> PodTemplate:
    """A ReplicaSet's template without the labels gitdeploy adds to it, comparable with git's."""
    return canonical_template(_comparable_dict(template))


def _comparable_dict(template: PodTemplate) -> dict[str, Any]:
    body = json.loads(template.written_json or template.canonical_json)
    labels = (body.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(APP_LABEL, None)
    return dict(body)


def suspension_note(app: str, followed: Sequence[str], *, suspended: bool, reason: str) -> str:
    """What an app's state says of its suspended image triggers, with why and the way out; empty
    when they are not suspended or the app has none (``followed``: its ``ns/stream:tag`` keys).

    >>> for part in suspension_note("ns/web", ["ns/web:prod"], suspended=True, reason="B breaks").split("; "):
    ...     print(part)
    image triggers suspended (B breaks): ns/web:prod not followed
    `gitdeploy deploy ns/web --enable-triggers` resumes them
    >>> suspension_note("shop/api", [], suspended=True, reason="rollback")
    ''
    """
    if not suspended or not followed:
        return ""
    why = f" ({reason})" if reason else ""
    return (
        f"image triggers suspended{why}: {', '.join(followed)} not followed; "
        f"`gitdeploy deploy {app} --enable-triggers` resumes them"
    )


def followed_tags(app: App) -> tuple[str, ...]:
    """The ``ns/stream:tag`` keys of the app's ImageChange triggers, once each, in order."""
    return tuple(dict.fromkeys(stream_tag_key(t) for t in app.triggers.image_change))
