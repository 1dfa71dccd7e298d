"""Rolling updates on the embedded cluster, step by step, with the Kubernetes controller's arithmetic."""

from __future__ import annotations

from gitdeploy.core.history.records import Outcome
from gitdeploy.core.rollout import AppPhase, Step
from tests.fixtures.rolloutapps import nginx
from tests.fixtures.rollouts import World, commit, load_app


def test_a_rolling_update_of_3_replicas_scales_one_pod_at_a_time(world: World) -> None:
    # Given nginx-deployment running 3 replicas of nginx:1.14.2
    v1 = load_app(nginx())
    world.roll(v1, commit("Deploy nginx", 1))
    assert world.pods(v1).available == 3
    first = world.record(v1).revisions
    assert [(e.revision, e.outcome) for e in first] == [(1, Outcome.COMPLETE)]

    # When the image changes to nginx:1.16.1 (default maxSurge and maxUnavailable, 25%)
    v2 = load_app(nginx("nginx:1.16.1"))
    before = len(world.scaling_story(v2, v2.template_hash))
    world.roll(v2, commit("Bump nginx to 1.16.1", 2), check=world.invariants(v2))

    # Then the new ReplicaSet grows and the old one shrinks one pod at a time
    story = world.scaling_story(v2, v2.template_hash)[before:]
    assert story == ["new→1", "old→2", "new→2", "old→1", "new→3", "old→0"]
    # and at every instant at least 3 pods were available and at most 4 existed
    assert world.violations == []
    # and revision 2 names the commit that caused it
    record = world.record(v2)
    assert [(e.revision, e.outcome, e.commit.subject) for e in record.revisions] == [
        (1, Outcome.COMPLETE, "Deploy nginx"),
        (2, Outcome.COMPLETE, "Bump nginx to 1.16.1"),
    ]
    assert record.revisions[1].images == (("nginx", "nginx:1.16.1"),)
    # and the events are about an object that exists: the app record
    stored = world.adapter.read_app_record("demo", "nginx-deployment")
    assert stored is not None
    events = world.adapter.list_events("demo")
    ours = [e["involvedObject"] for e in events if e["source"]["component"] == "gitdeploy"]
    about = {(o["kind"], o["name"], o["uid"]) for o in ours}
    assert about == {("ConfigMap", "gitdeploy.nginx-deployment", stored.uid)}
    assert world.replica_sets(v2) == {
        f"nginx-deployment-{v1.template_hash}": 0,
        f"nginx-deployment-{v2.template_hash}": 3,
    }


def test_each_step_writes_each_replica_set_once_creation_included(world: World) -> None:
    # Given 8 replicas of nginx:1.14.2 running (maxSurge and maxUnavailable 25%: 2 and 2)
    v1 = load_app(nginx(replicas=8))
    world.roll(v1, commit("Deploy nginx", 1))

    # When the image changes
    v2 = load_app(nginx("nginx:1.16.1", replicas=8))
    before = len(world.scaling_story(v2, v2.template_hash))
    world.cluster.stats.reset()
    world.roll(v2, commit("Bump nginx to 1.16.1", 2), check=world.invariants(v2))

    # Then the old ReplicaSet first went to 6, and the new one was created with the 4 pods of the
    # first wave (not with 2, then scaled to 4); each later step wrote each ReplicaSet once
    story = world.scaling_story(v2, v2.template_hash)[before:]
    assert story == ["old→6", "new→4", "old→2", "new→8", "old→0"]
    writes = {verb: world.cluster.stats.count(verb, "replicasets") for verb in ("create", "patch", "update")}
    # four scales, and the Complete phase on the new ReplicaSet
    assert writes == {"create": 1, "patch": 5, "update": 0}
    # and at every instant at least 6 pods were available and at most 10 existed
    assert world.violations == []
    assert world.replica_sets(v2) == {
        f"nginx-deployment-{v1.template_hash}": 0,
        f"nginx-deployment-{v2.template_hash}": 8,
    }


def failed(step: Step) -> bool:
    return step.phase == AppPhase.FAILED


def test_a_stuck_rollout_stops_growing_keeps_availability_and_fails_at_its_deadline(world: World) -> None:
    # Given 3 healthy replicas with a 60 s progress deadline
    deadline = "  progressDeadlineSeconds: 60\n"
    v1 = load_app(nginx(extra=deadline))
    world.roll(v1, commit("Deploy nginx", 1))

    # When the image cannot be pulled
    broken = load_app(nginx("nginx:missing", extra=deadline))
    started = world.clock.now()
    world.roll(broken, commit("Typo in the tag", 2), check=world.invariants(broken), until=failed)

    # Then the new ReplicaSet stopped at one pod, and availability never dropped below 3
    assert world.violations == []
    assert world.replica_sets(broken) == {
        f"nginx-deployment-{v1.template_hash}": 3,
        f"nginx-deployment-{broken.template_hash}": 1,
    }
    # and it failed once the deadline passed without progress, not before
    assert 60 < world.clock.now() - started <= 62
    entry = world.record(broken).entry(2)
    assert entry is not None and entry.outcome is Outcome.FAILED
    assert entry.reason == "ProgressDeadlineExceeded"
    assert any(reason == "ProgressDeadlineExceeded" for reason, _ in world.events(broken))
    # and a Deployment (no autoRollback by default) stays where it is, old pods serving, nothing rewritten
    for _ in range(30):
        step = world.pass_once(broken, commit("Typo in the tag", 2))
        assert (step.phase, step.record, step.actions) == (AppPhase.FAILED, None, ())
        world.clock.advance(1.0)
    assert world.pods(broken).available == 3


def test_auto_rollback_returns_to_the_last_complete_revision_and_pins_it(world: World) -> None:
    auto = "  progressDeadlineSeconds: 30\n"
    header = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nginx-deployment\n  namespace: demo\n"
    annotated = '  annotations: {"gitdeploy.io/auto-rollback": "true"}\n'

    def manifest(image: str) -> str:
        return nginx(image, extra=auto).replace(header, header + annotated)

    # Given revision 1 running, with automatic rollback on
    v1 = load_app(manifest("nginx:1.14.2"))
    assert v1.auto_rollback
    world.roll(v1, commit("Deploy nginx", 1))

    # When revision 2 cannot become available
    broken = load_app(manifest("nginx:missing"))
    world.roll(broken, commit("Typo in the tag", 2), check=world.invariants(broken))

    # Then gitdeploy rolled back to revision 1's template as revision 3 and settled there
    record = world.record(broken)
    assert [(e.revision, e.outcome, e.template_hash) for e in record.revisions] == [
        (1, Outcome.COMPLETE, v1.template_hash),
        (2, Outcome.FAILED, broken.template_hash),
        (3, Outcome.COMPLETE, v1.template_hash),
    ]
    assert (
        record.revisions[2].cause,
        record.revisions[2].rolled_back_from,
        record.revisions[2].rolled_back_to,
    ) == (
        "AutoRollback",
        2,
        1,
    )
    assert world.replica_sets(broken) == {
        f"nginx-deployment-{v1.template_hash}": 3,
        f"nginx-deployment-{broken.template_hash}": 0,
    }
    assert world.violations == []
    assert record.pin is not None and record.pin.revision == 1
    # and the same commit does not roll forward again (pinned)
    again = world.pass_once(broken, commit("Typo in the tag", 2))
    assert (again.phase, again.actions) == (AppPhase.COMPLETE, ())

    # When a fix is committed, it rolls forward and the pin is gone
    fixed = load_app(manifest("nginx:1.16.1"))
    world.roll(fixed, commit("Fix the tag", 3))
    record = world.record(fixed)
    assert (record.latest_revision, record.revisions[-1].outcome, record.pin) == (4, Outcome.COMPLETE, None)


def test_scaling_a_stuck_rollout_shares_the_new_replicas_in_proportion(world: World) -> None:
    surge = "  strategy: {rollingUpdate: {maxSurge: 3, maxUnavailable: 2}}\n"
    # Given 10 replicas, maxSurge 3, maxUnavailable 2, and a rollout stuck on an unresolvable image
    v1 = load_app(nginx(replicas=10, extra=surge))
    world.roll(v1, commit("Deploy", 1))
    stuck = load_app(nginx("nginx:missing", replicas=10, extra=surge))
    world.roll(
        stuck,
        commit("Bad tag", 2),
        limit_seconds=60,
        until=lambda s: s.requeue_after == 1.0 and not s.actions,
    )
    old, new = f"nginx-deployment-{v1.template_hash}", f"nginx-deployment-{stuck.template_hash}"
    assert world.replica_sets(stuck) == {old: 8, new: 5}

    # When the app is scaled to 15
    bigger = load_app(nginx("nginx:missing", replicas=15, extra=surge))
    step = world.pass_once(bigger, commit("Scale to 15", 3))

    # Then 3 replicas went to the old ReplicaSet and 2 to the new one, and no revision was made
    assert world.replica_sets(bigger) == {old: 11, new: 7}
    assert step.revision == 2 and world.record(bigger).latest_revision == 1


def test_rollover_cancels_the_rollout_in_flight(world: World) -> None:
    v1 = load_app(nginx())
    world.roll(v1, commit("v1", 1))
    # Given revision 2 half-way
    v2 = load_app(nginx("nginx:1.16.1"))
    for _ in range(8):
        world.pass_once(v2, commit("v2", 2))
        world.clock.advance(1.0)
    assert len([n for n, r in world.replica_sets(v2).items() if r]) == 2

    # When revision 3 arrives before it completes
    v3 = load_app(nginx("nginx:1.17.0"))
    world.roll(v3, commit("v3", 3), check=world.invariants(v3))

    # Then revision 2 is Cancelled, revision 3 Complete, and only revision 3 runs
    record = world.record(v3)
    assert [(e.revision, e.outcome) for e in record.revisions] == [
        (1, Outcome.COMPLETE),
        (2, Outcome.CANCELLED),
        (3, Outcome.COMPLETE),
    ]
    running = {n: r for n, r in world.replica_sets(v3).items() if r}
    assert running == {f"nginx-deployment-{v3.template_hash}": 3}
    assert world.violations == []


def test_a_replicas_only_change_scales_without_a_new_revision(world: World) -> None:
    v1 = load_app(nginx())
    world.roll(v1, commit("v1", 1))
    bigger = load_app(nginx(replicas=5))
    world.roll(bigger, commit("Scale to 5", 2))
    assert world.replica_sets(bigger) == {f"nginx-deployment-{v1.template_hash}": 5}
    assert world.pods(bigger).available == 5
    assert world.record(bigger).latest_revision == 1


def test_paused_app_starts_no_rollout_until_resumed(world: World) -> None:
    v1 = load_app(nginx())
    world.roll(v1, commit("v1", 1))
    paused = load_app(nginx("nginx:1.16.1", extra="  paused: true\n"))
    step = world.pass_once(paused, commit("v2 paused", 2))
    assert step.phase == AppPhase.PAUSED and step.actions == ()
    assert list(world.replica_sets(paused)) == [f"nginx-deployment-{v1.template_hash}"]
    resumed = load_app(nginx("nginx:1.16.1"))
    world.roll(resumed, commit("resume", 3))
    assert world.record(resumed).latest_revision == 2


def test_revision_history_limit_deletes_the_oldest_replica_sets(world: World) -> None:
    limit = "  revisionHistoryLimit: 1\n"
    for n, tag in enumerate(["1.14.2", "1.15.0", "1.16.1", "1.17.0"], start=1):
        app = load_app(nginx(f"nginx:{tag}", extra=limit))
        world.roll(app, commit(f"nginx {tag}", n))
    names = set(world.replica_sets(app))
    assert len(names) == 2 and f"nginx-deployment-{app.template_hash}" in names
    assert world.record(app).latest_revision == 4


def test_omitted_replicas_keep_the_live_count(world: World) -> None:
    manifest = nginx().replace("  replicas: 3\n", "")
    v1 = load_app(manifest)
    world.roll(v1, commit("v1", 1))
    assert world.pods(v1).total == 1
    # When an autoscaler scales the ReplicaSet to 4
    world.apps.patch_namespaced_replica_set_scale(
        f"nginx-deployment-{v1.template_hash}", "demo", {"spec": {"replicas": 4}}
    )
    world.roll(v1, commit("v1", 1))
    assert world.replica_sets(v1) == {f"nginx-deployment-{v1.template_hash}": 4}
    # Then a new template rolls out at that size
    v2 = load_app(manifest.replace("1.14.2", "1.16.1"))
    world.roll(v2, commit("v2", 2))
    assert world.replica_sets(v2)[f"nginx-deployment-{v2.template_hash}"] == 4


def slow_to_stop(image: str, policy: str = "") -> str:
    """nginx whose pods take 20 s to stop once deleted, with ``podReplacementPolicy`` if given."""
    extra = f"  podReplacementPolicy: {policy}\n" if policy else ""
    grace = "    spec:\n      terminationGracePeriodSeconds: 20\n      containers:"
    return nginx(image, extra=extra).replace("    spec:\n      containers:", grace)


def test_termination_complete_counts_terminating_pods_against_max_surge(world: World) -> None:
    # Given 3 pods that take 20 s to stop, and podReplacementPolicy: TerminationComplete
    v1 = load_app(slow_to_stop("nginx:1.14.2", "TerminationComplete"))
    world.roll(v1, commit("Deploy nginx", 1))
    # When the image changes (25%/25%: at most 4 pods)
    v2 = load_app(slow_to_stop("nginx:1.16.1", "TerminationComplete"))
    world.roll(v2, commit("Bump nginx", 2), check=world.invariants(v2))
    # Then at no instant did more than 4 pods exist, terminating ones included
    assert world.violations == []
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE
    assert world.pods(v2).by_hash[v2.template_hash] == world.pods(v2).total == 3


def test_by_default_a_pod_is_replaced_as_soon_as_its_termination_starts(world: World) -> None:
    # Given the same app without the field (the Deployment controller's TerminationStarted)
    v1 = load_app(slow_to_stop("nginx:1.14.2"))
    world.roll(v1, commit("Deploy nginx", 1))
    most: list[int] = []

    def count(w: World) -> None:
        most.append(sum(w.pods(v1).by_hash.values()))

    # When the image changes
    v2 = load_app(slow_to_stop("nginx:1.16.1"))
    world.roll(v2, commit("Bump nginx", 2), check=count)
    # Then terminating pods overlapped their replacements (more than replicas + maxSurge existed),
    # and the rollout finished as soon as the new pods were available
    assert max(most) > 4
    assert world.record(v2).entry(2) is not None
