"""Undoing a hand edit of the current ReplicaSet's pod template (pure): what a pass finds
(:func:`check_template`) and what it adds to its step (:func:`plan_template_repair`): the
recorded template written back at once, then, once the revision is complete, the pods made from
the edited template replaced within the app's bounds, one pass at a time."""

from __future__ import annotations

import dataclasses

import pytest

from gitdeploy.core.observed import ObservedReplicaSet
from gitdeploy.core.rollout import DEFAULT_REQUEUE_SECONDS, AppPhase, Step
from gitdeploy.core.rollout.drift import DRIFT_CORRECTED
from gitdeploy.core.rollout.templatedrift import (
    REPLACING_PODS_ANNOTATION,
    TEMPLATE_DIGEST_ANNOTATION,
    TemplatePod,
    template_digest,
    template_fingerprint,
)
from gitdeploy.core.rollout.templaterepair import (
    TemplateCheck,
    TemplateRepair,
    check_template,
    plan_template_repair,
)
from gitdeploy.core.scaling.progress import DeploymentStatus
from tests.fixtures.rolloutpass import V1, V2, make_app, make_target, rs, rs_name, snap, thash, tmpl

EDITED = "nginx:9"
TARGET = make_target(make_app(V2))
NAME = rs_name(V2)
DIGEST = ((TEMPLATE_DIGEST_ANNOTATION, template_digest(tmpl(V2))),)


def current(*marks: tuple[str, str], template: str = V2) -> ObservedReplicaSet:
    """Revision 2, 3 pods, all ready, its template ``template`` (edited when not nginx:2)."""
    return dataclasses.replace(rs(V2, 2, 3, annotations=marks), template=tmpl(template))


def step_of(phase: AppPhase, requeue: float | None = None) -> Step:
    return Step(phase, f"{phase.value.lower()}", 2, DeploymentStatus(), requeue_after=requeue)


def pods(stale: int, good: int = 0, *, ready: bool = True) -> list[TemplatePod]:
    edited, kept = template_fingerprint(tmpl(EDITED)), template_fingerprint(tmpl(V2))
    return [TemplatePod(f"{NAME}-old{n}", edited, ready) for n in range(stale)] + [
        TemplatePod(f"{NAME}-new{n}", kept, True) for n in range(good)
    ]


def test_no_replica_set_of_the_target_yet_is_nothing_to_repair() -> None:
    check = check_template(TARGET, snap(rs(V1, 1, 3)))
    assert check == TemplateCheck(None) and not check.wants_pods
    step = step_of(AppPhase.PROGRESSING)
    assert plan_template_repair(TARGET, check, step, None) == (step, None)


def test_a_replica_set_listed_without_its_template_is_not_checked() -> None:
    bare = dataclasses.replace(current(*DIGEST), template=None)
    assert check_template(TARGET, snap(bare)) == TemplateCheck(None)


def test_an_untouched_template_with_its_digest_is_left_alone() -> None:
    check = check_template(TARGET, snap(current(*DIGEST)))
    assert check.rs is not None and check.drift is None and not check.wants_pods
    step = step_of(AppPhase.COMPLETE)
    assert plan_template_repair(TARGET, check, step, None) == (step, None)


def test_a_replica_set_of_an_earlier_gitdeploy_gets_the_digest_of_its_template() -> None:
    check = check_template(TARGET, snap(current()))
    step = step_of(AppPhase.COMPLETE)
    repaired, repair = plan_template_repair(TARGET, check, step, None)
    assert repaired == step
    assert repair == TemplateRepair(NAME, thash(V2), digest=template_digest(tmpl(V2)))


@pytest.mark.parametrize(("requeue", "expected"), [(None, DEFAULT_REQUEUE_SECONDS), (0.5, 0.5), (30.0, 1.0)])
def test_an_edited_template_is_written_back_and_told(requeue: float | None, expected: float) -> None:
    check = check_template(TARGET, snap(current(*DIGEST, template=EDITED)))
    assert check.wants_pods

    step, repair = plan_template_repair(TARGET, check, step_of(AppPhase.PROGRESSING, requeue), None)

    assert repair == TemplateRepair(NAME, thash(V2), restore=TARGET.template, replacing=True)
    assert step.message == "progressing; restoring its pod template, changed by hand"
    assert step.requeue_after == expected  # soon, to replace the pods
    (told,) = step.events
    assert (told.reason, told.warning) == (DRIFT_CORRECTED, True)
    assert told.message == (
        f"{NAME}: its pod template was changed by hand (container web image: nginx:2 -> nginx:9); "
        "restored the template of revision 2; pods made from the edited one go"
    )


REPLACING = (*DIGEST, (REPLACING_PODS_ANNOTATION, "true"))


@pytest.mark.parametrize(
    ("phase", "listed"),
    [
        pytest.param(AppPhase.PROGRESSING, pods(1, 2), id="a rollout in progress: its pods wait"),
        pytest.param(AppPhase.COMPLETE, None, id="the pods not listed"),
    ],
)
def test_pods_are_replaced_only_once_the_revision_is_complete(
    phase: AppPhase, listed: list[TemplatePod] | None
) -> None:
    check = check_template(TARGET, snap(current(*REPLACING)))
    step = step_of(phase)
    assert plan_template_repair(TARGET, check, step, listed) == (step, None)


@pytest.mark.parametrize(
    ("listed", "going"),
    [
        pytest.param(pods(2, 1), (f"{NAME}-old0",), id="all ready: one at a time"),
        pytest.param(pods(2, 1, ready=False), (f"{NAME}-old0", f"{NAME}-old1"), id="not ready: all at once"),
    ],
)
def test_pods_of_the_edited_template_are_replaced_within_the_bounds(
    listed: list[TemplatePod], going: tuple[str, ...]
) -> None:
    check = check_template(TARGET, snap(current(*REPLACING)))

    step, repair = plan_template_repair(TARGET, check, step_of(AppPhase.COMPLETE), listed)

    assert repair == TemplateRepair(NAME, thash(V2), delete_pods=going)
    assert step.message == "complete; replacing 2 pod(s) made from a pod template changed by hand"
    assert step.requeue_after == DEFAULT_REQUEUE_SECONDS


def test_once_no_pod_of_the_edited_template_is_left_the_mark_goes() -> None:
    check = check_template(TARGET, snap(current(*REPLACING)))
    step = step_of(AppPhase.COMPLETE)
    assert plan_template_repair(TARGET, check, step, pods(0, 3)) == (
        step,
        TemplateRepair(NAME, thash(V2), replacing=False),
    )
