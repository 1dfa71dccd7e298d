"""Table-driven tests for the live plan's baseline (:mod:`gitdeploy.core.planning.livebaseline`)
and its verdicts."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gitdeploy.core.hashing import TEMPLATE_HASH_LABEL
from gitdeploy.core.history.records import AppRecord, CommitRef, Outcome, Pin, RevisionEntry
from gitdeploy.core.models import App, ImageChangeTrigger, PodTemplate, Triggers
from gitdeploy.core.observed import APP_LABEL, ObservedReplicaSet
from gitdeploy.core.planning.changes import ChangeKind, DesiredSnapshot, plan_changes
from gitdeploy.core.planning.livebaseline import RunningApp, find_drift, live_inputs
from gitdeploy.core.scaling.replicasets import ReplicaSetState
from tests.fixtures.rollouts import load_app

DIGEST = "registry.local/web@sha256:" + "a" * 64


def manifest(image: str, *, replicas: int = 2) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: shop}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: web, image: "{image}"}}]
"""


def app(image: str, *, replicas: int = 2, trigger: bool = False) -> App:
    loaded = load_app(manifest(image, replicas=replicas))
    if not trigger:
        return loaded
    follows = ImageChangeTrigger(True, ("web",), "shop", "web", "prod")
    return dataclasses.replace(loaded, triggers=Triggers(True, (follows,)))


def replica_set(
    running: App, revision: int, *, replicas: int = 2, wanted: int | None = 2, image: str | None = None
) -> ObservedReplicaSet:
    """A ReplicaSet as gitdeploy makes it: the app's template plus gitdeploy's labels."""
    template = running.template.to_dict()
    template["metadata"]["labels"] |= {TEMPLATE_HASH_LABEL: running.template_hash, APP_LABEL: "web"}
    if image is not None:
        template["spec"]["containers"][0]["image"] = image
    state = ReplicaSetState(
        f"web-{running.template_hash}", running.template_hash, revision, float(revision), replicas,
        desired_replicas_annotation=wanted,
    )  # fmt: skip
    return ObservedReplicaSet(
        "shop", "web", state, template=PodTemplate(json.dumps(template, sort_keys=True))
    )


def entry(revision: int, ran: App, outcome: Outcome = Outcome.COMPLETE) -> RevisionEntry:
    images = tuple((c.name, c.image) for c in ran.template.containers)
    commit = CommitRef(f"{revision:040x}", "Ada", f"revision {revision}")
    return RevisionEntry(
        revision, ran.template_hash, f"web-{ran.template_hash}", commit, images=images, outcome=outcome
    )


V1, V2 = app("nginx:1.25"), app("nginx:1.26")


@pytest.mark.parametrize(
    ("replica_sets", "revisions", "drift"),
    [
        ([replica_set(V1, 1)], [entry(1, V1)], ()),
        (
            [replica_set(V1, 1, replicas=5)],
            [entry(1, V1)],
            (f"ReplicaSet web-{V1.template_hash} has 5 replica(s), revision 1 wants 2 (scaled by hand?)",),
        ),
        # mid-rollout the counts differ on purpose: no drift
        ([replica_set(V1, 1, replicas=1), replica_set(V2, 2, replicas=2)], [entry(1, V1)], ()),
        (
            [replica_set(V1, 1, replicas=1), replica_set(V2, 2)],
            [entry(1, V1), entry(2, V2)],
            (f"old ReplicaSet web-{V1.template_hash} still has 1 replica(s) after revision 2 completed",),
        ),
        (
            [replica_set(V1, 1, image="nginx:hotfix")],
            [entry(1, V1)],
            (
                f"container web of ReplicaSet web-{V1.template_hash} runs nginx:hotfix, "
                "revision 1 deployed nginx:1.25 (edited by hand?)",
            ),
        ),
        (
            [],
            [entry(1, V1)],
            ("the record has revisions up to 1, but no ReplicaSet exists (deleted by hand?)",),
        ),
    ],
    ids=["in-sync", "scaled-by-hand", "mid-rollout", "old-rs-left", "image-edited", "rs-deleted"],
)
def test_drift(
    replica_sets: list[ObservedReplicaSet], revisions: list[RevisionEntry], drift: tuple[str, ...]
) -> None:
    running = RunningApp(V1.key, tuple(replica_sets), AppRecord(revisions=tuple(revisions)))
    assert find_drift(running) == drift


def plan_live(
    running: RunningApp, head: App, *, pinned: bool = False
) -> tuple[ChangeKind, str, tuple[str, ...]]:
    inputs = live_inputs("cluster", [running], [head], pins_holding=frozenset({head.key} if pinned else ()))
    plan = plan_changes(inputs.baseline, DesiredSnapshot(inputs.head_apps), earlier=inputs.earlier)
    if not plan.apps:
        return ChangeKind.UNCHANGED, "", ()
    (only,) = plan.apps
    return only.kind, only.reason, only.notes


PIN = Pin(1, V1.template_hash, "digest", reason="revision 2 failed: crash", by="gitdeploy (autoRollback)")


@pytest.mark.parametrize(
    ("running", "head", "pinned", "kind", "reason_has", "note"),
    [
        (
            RunningApp(V1.key, (replica_set(V1, 1),), AppRecord((entry(1, V1),))),
            V1, False, ChangeKind.UNCHANGED, "", "",
        ),
        (
            RunningApp(V1.key, (replica_set(V1, 1),), AppRecord((entry(1, V1),))),
            V2, False, ChangeKind.ROLLOUT, "web image nginx:1.25 -> nginx:1.26", "runs revision 1 (Complete)",
        ),
        (
            RunningApp(V1.key, (replica_set(V1, 1),), AppRecord((entry(1, V1),))),
            app("nginx:1.25", replicas=4), False, ChangeKind.SCALE, "replicas 2 -> 4", "",
        ),
        # revision 3 brought 1's template back after 2 failed; the pin holds while git is unchanged
        (
            RunningApp(V1.key, (replica_set(V1, 3), replica_set(V2, 2, replicas=0)),
                       AppRecord((entry(1, V1), entry(2, V2, Outcome.FAILED), entry(3, V1)), pin=PIN)),
            V2, True, ChangeKind.MANUAL, "pinned: rolled back to revision 1 by gitdeploy (autoRollback)",
            "to roll forward: `gitdeploy deploy shop/web --latest`, or push a change to apps/app.yaml",
        ),
        (
            RunningApp(V1.key, (replica_set(V1, 3), replica_set(V2, 2, replicas=0)),
                       AppRecord((entry(1, V1), entry(2, V2, Outcome.FAILED), entry(3, V1)), pin=PIN)),
            app("nginx:1.27"), False, ChangeKind.ROLLOUT, "nginx:1.25 -> nginx:1.27",
            "the rollback to revision 1 ends: the manifest changed since",
        ),
        # git goes back to a template a Complete revision ran: a rollback naming that revision
        (
            RunningApp(V1.key, (replica_set(V2, 2), replica_set(V1, 1, replicas=0)),
                       AppRecord((entry(1, V1), entry(2, V2)))),
            V1, False, ChangeKind.ROLLBACK, "back to the template of revision 1, commit", "",
        ),
        # an image trigger put a digest into the container: git's tag for it is no change
        (
            RunningApp(V1.key, (replica_set(app(DIGEST), 1),), AppRecord()),
            app("nginx:1.25", trigger=True), False, ChangeKind.UNCHANGED, "", "",
        ),
        (
            RunningApp(V1.key, (replica_set(app(DIGEST), 1),), AppRecord()),
            app("nginx:1.25", replicas=3, trigger=True), False, ChangeKind.SCALE, "replicas 2 -> 3",
            f"image trigger: container web keeps {DIGEST} (git says nginx:1.25)",
        ),
    ],
    ids=["in-sync", "rollout", "scale", "pinned", "pin-ends", "rollback", "trigger-kept", "trigger-scale"],
)  # fmt: skip
def test_live_verdicts(
    running: RunningApp, head: App, pinned: bool, kind: ChangeKind, reason_has: str, note: str
) -> None:
    got_kind, reason, notes = plan_live(running, head, pinned=pinned)
    assert got_kind is kind
    assert reason_has in reason
    assert not note or note in notes


def test_an_app_only_in_the_cluster_is_removed_and_one_not_deployed_is_added() -> None:
    running = RunningApp(V1.key, (replica_set(V1, 1),), AppRecord((entry(1, V1),)))
    other = load_app(manifest("busybox").replace("name: web", "name: api"))
    inputs = live_inputs("cluster", [running], [other])
    plan = plan_changes(inputs.baseline, DesiredSnapshot(inputs.head_apps))
    assert [(str(a.key), a.kind) for a in plan.apps] == [
        ("shop/api", ChangeKind.ADD),
        ("shop/web", ChangeKind.REMOVE),
    ]
