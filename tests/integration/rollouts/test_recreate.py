"""Recreate rollouts of a DeploymentConfig with pre/mid/post hooks and each failure policy."""

from __future__ import annotations

from gitdeploy.core.history.records import Outcome
from gitdeploy.core.rollout import AppPhase, Step
from tests.fixtures.rolloutapps import worker
from tests.fixtures.rollouts import World, commit, load_app


def timeline(world: World) -> list[str]:
    """Hook starts, scaling and outcome events, in order, in short form."""
    short = []
    for reason, message in world.events(load_app(worker())):
        if reason == "HookStarted":
            short.append(message.split()[1] + "-hook")  # "Running pre hook of ..." → "pre-hook"
        elif reason == "ScalingReplicaSet":
            for scale in message.split("; "):  # Scaled up replica set worker-<hash> to N[; Scaled ...]
                words = scale.split()
                short.append(f"{words[1]} {words[4]} {words[6]}")
        elif reason in ("RolloutComplete", "HookFailed", "ProgressDeadlineExceeded"):
            short.append(reason)
    return short


def test_recreate_runs_pre_then_old_down_then_mid_then_first_replica_then_all_then_post(world: World) -> None:
    v1 = load_app(worker())
    world.roll(v1, commit("v1", 1))
    assert world.pods(v1).available == 2
    old = f"worker-{v1.template_hash}"

    old_pods_when_mid_started: list[int] = []

    def watch(w: World) -> None:
        started = any(r == "HookStarted" and "mid hook" in m and "revision 2" in m for r, m in w.events(v1))
        if started and not old_pods_when_mid_started:
            old_pods_when_mid_started.append(w.pods(v1).by_hash.get(v1.template_hash, 0))

    v2 = load_app(worker("example/worker:2.0"))
    new = f"worker-{v2.template_hash}"
    before = len(timeline(world))
    world.roll(v2, commit("v2", 2), between_passes=watch, check=world.recreate_invariant(v2))

    assert timeline(world)[before:] == [
        "pre-hook",
        f"down {old} 0",
        "mid-hook",
        f"up {new} 1",
        f"up {new} 2",
        "post-hook",
        "RolloutComplete",
    ]
    assert old_pods_when_mid_started == [0]
    assert world.violations == []
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE
    assert sorted((h.phase, h.outcome, h.attempts) for h in entry.hooks) == [
        ("mid", "Succeeded", 1),
        ("post", "Succeeded", 1),
        ("pre", "Succeeded", 1),
    ]
    assert all("completed successfully" in h.log for h in entry.hooks)


def test_old_pods_in_their_grace_period_hold_back_the_mid_hook_and_the_new_pods(world: World) -> None:
    # Given revision 1 whose pods take 45 s to stop once they are deleted
    v1 = load_app(worker(grace_seconds=45))
    world.roll(v1, commit("v1", 1))
    # When revision 2 rolls out
    v2 = load_app(worker("example/worker:2.0", grace_seconds=45))
    mid_started: list[tuple[float, int]] = []
    scaled_down: list[float] = []

    def note(w: World) -> None:
        if not scaled_down and w.replica_sets(v2).get(f"worker-{v1.template_hash}") == 0:
            scaled_down.append(w.clock.now())
        pods = w.adapter.list_app_pods("jobs", "worker")
        mid = any(p.role == "hook-mid" and p.revision == 2 for p in pods)
        if mid and not mid_started:
            mid_started.append((w.clock.now(), w.pods(v1).by_hash.get(v1.template_hash, 0)))

    steps = world.roll(v2, commit("v2", 2), check=world.recreate_invariant(v2), between_passes=note)
    # Then the rollout waited for the terminating pods: the mid hook started after the last one
    # was gone, 45 s after the scale-down, and no new pod ever ran beside an old one
    assert world.violations == []
    assert any(s.message == "waiting for old pods to stop" for s in steps)
    [(mid_at, old_pods_then)] = mid_started
    assert old_pods_then == 0
    assert mid_at - scaled_down[0] >= 45
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE


RESTRICTED_WORKER = """\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {name: worker, namespace: jobs}
spec:
  replicas: 2
  selector: {app: worker}
  template:
    metadata: {labels: {app: worker}}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: worker
        image: example/worker:IMAGE
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  strategy:
    type: Recreate
    recreateParams:
      pre: {failurePolicy: Abort, execNewPod: {containerName: worker, command: [/bin/drain]}}
      mid: {failurePolicy: Abort, execNewPod: {containerName: worker, command: [/bin/migrate]}}
  triggers: [{type: ConfigChange}]
"""


def test_hooks_run_in_a_namespace_that_enforces_pod_security_restricted(world: World) -> None:
    # Given a namespace that enforces Pod Security "restricted" and an app whose template complies
    world.core.create_namespace(
        {"metadata": {"name": "jobs", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    )
    v1 = load_app(RESTRICTED_WORKER.replace("IMAGE", "1.0"))
    world.roll(v1, commit("v1", 1))
    # When a new revision rolls out with pre and mid hooks
    v2 = load_app(RESTRICTED_WORKER.replace("IMAGE", "2.0"))
    world.roll(v2, commit("v2", 2))
    # Then its hook pods were admitted and the rollout completed
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE, entry
    assert sorted((h.phase, h.outcome) for h in entry.hooks) == [("mid", "Succeeded"), ("pre", "Succeeded")]


def failed(step: Step) -> bool:
    return step.phase == AppPhase.FAILED


def test_pre_hook_abort_fails_the_rollout_before_anything_is_scaled(world: World) -> None:
    v1 = load_app(worker())
    world.roll(v1, commit("v1", 1))
    # When the pre hook of revision 2 fails (its image crashes) with policy Abort
    v2 = load_app(worker("example/worker:crash"))
    world.roll(v2, commit("v2", 2), until=failed)
    # Then revision 2 is Failed and revision 1 still runs untouched
    entry = world.record(v2).entry(2)
    assert entry is not None and (entry.outcome, entry.reason) == (Outcome.FAILED, "HookFailed")
    assert [(h.phase, h.outcome) for h in entry.hooks] == [("pre", "Failed")]
    assert "exited with code 1" in entry.hooks[0].log
    assert world.replica_sets(v2) == {f"worker-{v1.template_hash}": 2, f"worker-{v2.template_hash}": 0}


def test_mid_hook_retry_runs_again_until_it_succeeds(world: World) -> None:
    v1 = load_app(worker())
    world.roll(v1, commit("v1", 1))
    # Given an image whose first run of the mid hook fails
    world.set_crashing_images("example/worker:flaky")
    v2 = load_app(worker("example/worker:flaky", pre_policy="Ignore"))

    def fix_after_first_mid_failure(w: World) -> None:
        pods = w.adapter.list_app_pods("jobs", "worker")
        if any(p.role == "hook-mid" and p.phase == "Failed" for p in pods):
            w.set_crashing_images()

    world.roll(v2, commit("v2", 2), between_passes=fix_after_first_mid_failure)
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.outcome is Outcome.COMPLETE
    hooks = {h.phase: (h.outcome, h.attempts) for h in entry.hooks}
    assert hooks == {"pre": ("Ignored", 1), "mid": ("Succeeded", 2), "post": ("Succeeded", 1)}


def test_mid_hook_retry_gives_up_at_the_deadline(world: World) -> None:
    v1 = load_app(worker())
    world.roll(v1, commit("v1", 1))
    world.set_crashing_images("example/worker:broken")
    v2 = load_app(worker("example/worker:broken", pre_policy="Ignore"))
    world.roll(v2, commit("v2", 2), until=failed, tick=5.0)
    entry = world.record(v2).entry(2)
    assert entry is not None and (entry.outcome, entry.reason) == (Outcome.FAILED, "HookFailed")
    mid = next(h for h in entry.hooks if h.phase == "mid")
    assert mid.outcome == "Failed" and mid.attempts >= 3
    # the old revision was already scaled down: Recreate has downtime; nothing new was started
    assert world.replica_sets(v2) == {f"worker-{v1.template_hash}": 0, f"worker-{v2.template_hash}": 0}


def test_first_replica_must_become_ready_before_scaling_up(world: World) -> None:
    v1 = load_app(worker(replicas=3))
    world.roll(v1, commit("v1", 1))
    v2 = load_app(worker("example/worker:unready", replicas=3))
    world.roll(v2, commit("v2", 2), until=failed, tick=5.0)
    entry = world.record(v2).entry(2)
    assert entry is not None and entry.reason == "ProgressDeadlineExceeded"
    assert "first replica" in entry.message
    assert world.replica_sets(v2)[f"worker-{v2.template_hash}"] == 1


def test_auto_rollback_after_a_failed_recreate_brings_the_old_revision_back(world: World) -> None:
    v1 = load_app(worker(auto_rollback=True))
    world.roll(v1, commit("v1", 1))
    v2 = load_app(
        worker("example/worker:crash", auto_rollback=True, pre_policy="Ignore", mid_policy="Ignore")
    )
    world.roll(v2, commit("v2", 2), tick=5.0)
    record = world.record(v2)
    assert [(e.revision, e.outcome) for e in record.revisions] == [
        (1, Outcome.COMPLETE),
        (2, Outcome.FAILED),
        (3, Outcome.COMPLETE),
    ]
    assert world.replica_sets(v2) == {f"worker-{v1.template_hash}": 2, f"worker-{v2.template_hash}": 0}
    assert world.pods(v2).available == 2
