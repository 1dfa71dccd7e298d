"""Which image an ImageChange-triggered container runs (the table of gitdeploy.core.imagetriggers)."""

from __future__ import annotations

import dataclasses
import doctest
import json

import pytest

from gitdeploy.core import imagetriggers
from gitdeploy.core.hashing import canonical_template, template_hash
from gitdeploy.core.imagetriggers import ImageDecision, comparable, decide_images, replace_images
from gitdeploy.core.models import (
    App,
    AppKey,
    AppKind,
    ImageChangeTrigger,
    Location,
    PodTemplate,
    Selector,
    Strategy,
    StrategyType,
    Triggers,
)

A = "r.example/web@sha256:" + "a" * 64
B = "r.example/web@sha256:" + "b" * 64
GIT = "r.example/web:latest"
TAG = "shop/web:prod"
CC, IC = "ConfigChange", "ImageChange"


def template(image: str, *, side: str = "busybox:1", env: str = "", rs_labels: bool = False) -> PodTemplate:
    added = {"gitdeploy.io/app": "web", "gitdeploy.io/template-hash": "x"}  # what a ReplicaSet adds
    labels = {"app": "web"} | (added if rs_labels else {})
    web = {"name": "web", "image": image} | ({"env": [{"name": "MODE", "value": env}]} if env else {})
    return canonical_template(
        {"metadata": {"labels": labels}, "spec": {"containers": [web, {"name": "side", "image": side}]}}
    )


def as_stored(written: PodTemplate) -> tuple[PodTemplate, str]:
    """The template a real API server returns for one gitdeploy wrote, with its defaults filled in,
    and the hash gitdeploy gave it (of the template as written, without the ReplicaSet's labels)."""
    body = json.loads(written.canonical_json)
    for container in body["spec"]["containers"]:
        container |= {"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log"}
    body["spec"] |= {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
    }
    return canonical_template(body), template_hash(comparable(written))


def app(*, automatic: bool = True, env: str = "", triggers: bool = True) -> App:
    tmpl = template(GIT, env=env)
    trigger = ImageChangeTrigger(automatic, ("web",), "shop", "web", "prod")
    return App(
        kind=AppKind.DEPLOYMENT_CONFIG,
        api_version="apps.openshift.io/v1",
        key=AppKey("shop", "web"),
        location=Location("apps/web.yaml", 1),
        template=tmpl,
        template_hash=template_hash(tmpl),
        selector=Selector((("app", "web"),)),
        strategy=Strategy(StrategyType.ROLLING),
        triggers=Triggers(True, (trigger,) if triggers else ()),
    )


def web_image(decision: ImageDecision) -> str:
    return next(c.image for c in decision.app.template.containers if c.name == "web")


manual = app(automatic=False)

# (case, app, tag image, suspended, running template, -> web image, cause, waiting)
CASES: list[tuple[str, App, str | None, bool, PodTemplate | None, str, str, tuple[str, ...]]] = [
    ("tag moved: follow it", app(), B, False, template(A, rs_labels=True), B, IC, ()),
    ("tag unmoved: nothing changes", app(), A, False, template(A, rs_labels=True), A, CC, ()),
    ("suspended: keep the running image", app(), B, True, template(A, rs_labels=True), A, CC, ()),
    ("manual trigger: keep the running image", manual, B, False, template(A), A, CC, ()),
    ("no tag image yet: keep the running image", app(), None, False, template(A), A, CC, ()),
    ("manifest and tag changed: ConfigChange", app(env="x"), B, False, template(A), B, CC, ()),
    ("manifest changed, suspended: running image", app(env="x"), B, True, template(A), A, CC, ()),
    ("other container changed: ConfigChange", app(), B, False, template(A, side="busybox:2"), B, CC, ()),
    ("never ran, tag image: follow it", app(), B, False, None, B, CC, ()),
    ("never ran, no tag image: wait", app(), None, False, None, GIT, CC, (TAG,)),
    ("never ran, suspended: git's image", app(), B, True, None, GIT, CC, ()),
    ("never ran, manual trigger: git's image", manual, None, False, None, GIT, CC, ()),
    ("no triggers: git's template as is", app(triggers=False), B, False, template(A), GIT, CC, ()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "given", "tag_image", "suspended", "running", "image", "cause", "waiting"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_decide_images(
    case: str,
    given: App,
    tag_image: str | None,
    suspended: bool,
    running: PodTemplate | None,
    image: str,
    cause: str,
    waiting: tuple[str, ...],
) -> None:
    images = {TAG: tag_image} if tag_image is not None else {}
    stored, running_hash = as_stored(running) if running is not None else (None, "")
    decision = decide_images(given, images, suspended=suspended, running=stored, running_hash=running_hash)
    assert (web_image(decision), decision.cause, decision.waiting_for) == (image, cause, waiting), case
    assert decision.app.template_hash == template_hash(decision.app.template)
    assert [c.image for c in decision.app.template.containers if c.name == "side"] == ["busybox:1"]


def test_the_hash_covers_the_resolved_image_and_matches_the_running_template() -> None:
    running = template(A, rs_labels=True)
    running_hash = template_hash(comparable(running))
    followed = decide_images(app(), {TAG: B}, suspended=False, running=running, running_hash=running_hash)
    kept = decide_images(app(), {TAG: A}, suspended=False, running=running, running_hash=running_hash)
    assert followed.app.template_hash != kept.app.template_hash != app().template_hash
    # unchanged tag: exactly the template that runs, so no new revision
    assert kept.app.template == comparable(template(A, rs_labels=True))
    assert followed.followed == (TAG,) and kept.followed == (TAG,)


def test_only_named_containers_are_replaced_and_the_rest_is_untouched() -> None:
    base = template(GIT, env="prod")
    replaced = replace_images(base, {"web": B, "missing": A})
    body, before = json.loads(replaced.canonical_json), json.loads(base.canonical_json)
    before["spec"]["containers"][0]["image"] = B
    assert body == before


def test_an_app_without_triggers_is_returned_as_is() -> None:
    plain = app(triggers=False)
    assert decide_images(plain, {TAG: B}, suspended=False, running=None, running_hash="") == ImageDecision(
        plain
    )
    assert dataclasses.replace(plain) == plain


def test_docstring_examples() -> None:
    result = doctest.testmod(imagetriggers)
    assert result.attempted > 0 and result.failed == 0
