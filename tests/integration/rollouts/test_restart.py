"""gitdeploy killed after every single write of a rollout (a canary's too), restarted each time:
same end state.

A crashing cluster adapter lets each "process" make exactly one successful write (ReplicaSet, pod,
record or event), then dies; a new runner with nothing in memory takes over. The rollout must still end as an
uninterrupted one does: same ReplicaSets and sizes, same revisions and outcomes, no duplicate, and the
rolling invariants hold at every instant.
"""

from __future__ import annotations

from typing import Any

from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.rollouts import RolloutRunner
from gitdeploy.core.history.records import CommitRef
from gitdeploy.core.models import App
from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.canaries import canary_bounds
from tests.fixtures.rolloutapps import nginx, worker
from tests.fixtures.rollouts import World, commit, load_app


class Crash(Exception):
    """The process died."""


class CrashingCluster(Cluster):
    """The real adapter, except that the process dies right after its first successful write."""

    def __init__(self, api: Any) -> None:
        super().__init__(api, "embedded")


def _crash_after_one_write(name: str) -> Any:
    original = getattr(Cluster, name)

    def wrapper(self: CrashingCluster, *args: Any, **kwargs: Any) -> Any:
        original(self, *args, **kwargs)
        raise Crash

    return wrapper


for _verb in (
    "ensure_namespace",
    "write_app_record",
    "create_replica_set",
    "scale_replica_set",
    "delete_replica_set",
    "create_pod",
    "delete_pod",
    "record_event",
):
    setattr(CrashingCluster, _verb, _crash_after_one_write(_verb))


def roll_with_crashes(world: World, app: App, change: CommitRef, check: Any = None) -> int:
    """Roll ``app`` to ``change`` with a crash after every write; returns how many restarts it took."""
    restarts = 0
    world.manage(app.namespace)
    for _ in range(3000):
        adapter = CrashingCluster(world.gitdeploy_api)  # as gitdeploy's ServiceAccount
        runner = RolloutRunner(adapter, world.clock)  # a new process: empty memory
        try:
            step = runner.reconcile(app, change)
        except Crash:
            restarts += 1
            if check is not None:
                check(world)
            continue
        if check is not None:
            check(world)
        if step.requeue_after is None:
            return restarts
        world.clock.advance(min(step.requeue_after or 0.0, 1.0))
        if check is not None:
            check(world)
    raise AssertionError("the rollout never settled")


def end_state(world: World, app: App) -> tuple[dict[str, int], list[tuple[int, str, str, str]]]:
    record = world.record(app)
    return world.replica_sets(app), [
        (e.revision, e.outcome.value, e.template_hash, e.commit.subject) for e in record.revisions
    ]


def test_rolling_update_survives_a_crash_after_every_write(world: World) -> None:
    v1, v2 = load_app(nginx()), load_app(nginx("nginx:1.16.1"))
    restarts = roll_with_crashes(world, v1, commit("v1", 1))
    restarts += roll_with_crashes(world, v2, commit("v2", 2), check=world.invariants(v2))
    assert restarts >= 10  # every write of both rollouts was followed by a crash
    assert world.violations == []
    assert end_state(world, v2) == (
        {f"nginx-deployment-{v1.template_hash}": 0, f"nginx-deployment-{v2.template_hash}": 3},
        [(1, "Complete", v1.template_hash, "v1"), (2, "Complete", v2.template_hash, "v2")],
    )
    assert world.pods(v2).available == 3
    # Events are best effort: they come after the write they describe, so these crashes lost them.


def test_recreate_with_hooks_survives_a_crash_after_every_write(world: World) -> None:
    v1, v2 = load_app(worker()), load_app(worker("example/worker:2.0"))
    roll_with_crashes(world, v1, commit("v1", 1))
    roll_with_crashes(world, v2, commit("v2", 2))
    replica_sets, revisions = end_state(world, v2)
    assert replica_sets == {f"worker-{v1.template_hash}": 0, f"worker-{v2.template_hash}": 2}
    assert revisions == [(1, "Complete", v1.template_hash, "v1"), (2, "Complete", v2.template_hash, "v2")]
    entry = world.record(v2).entry(2)
    assert entry is not None
    assert sorted((h.phase, h.outcome, h.attempts) for h in entry.hooks) == [
        ("mid", "Succeeded", 1),
        ("post", "Succeeded", 1),
        ("pre", "Succeeded", 1),
    ]


def test_a_canary_survives_a_crash_after_every_write(world: World) -> None:
    steps = "      - setWeight: 25\n      - pause: {duration: 10s}\n      - setWeight: 75\n"
    v1 = load_app(canary_rollout("nginx:1.25", steps=steps))
    v2 = load_app(canary_rollout("nginx:1.26", steps=steps))
    roll_with_crashes(world, v1, commit("v1", 1))
    restarts = roll_with_crashes(world, v2, commit("v2", 2), check=canary_bounds(v2))
    assert restarts >= 8  # every scale and walk annotation of the canary was followed by a crash
    assert world.violations == []
    assert end_state(world, v2) == (
        {f"web-{v1.template_hash}": 0, f"web-{v2.template_hash}": 4},
        [(1, "Complete", v1.template_hash, "v1"), (2, "Complete", v2.template_hash, "v2")],
    )
    assert world.pods(v2).available == 4
