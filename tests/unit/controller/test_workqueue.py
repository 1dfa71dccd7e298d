"""The due queue's slices: what a pass takes first, and how much of what is due."""

from __future__ import annotations

import threading

import pytest

from gitdeploy.controller.workqueue import DueQueue, first_slice
from gitdeploy.core.models import AppKey
from gitdeploy.errors import PermanentError


def keys(*names: str) -> list[AppKey]:
    return [AppKey(*name.split("/")) for name in names]


@pytest.mark.parametrize(
    ("due", "routine", "size", "taken"),
    [
        # nothing routine: sorted, cut after the size, the last namespace finished
        (["b/1", "a/2", "a/1"], [], 5, ["a/1", "a/2", "b/1"]),
        (["b/1", "a/2", "a/1"], [], 1, ["a/1", "a/2"]),
        (["b/1", "a/2", "a/1"], [], 2, ["a/1", "a/2"]),
        (["b/1", "a/2", "a/1"], [], 3, ["a/1", "a/2", "b/1"]),
        # what was asked for goes first, wherever it is in the order, in a pass of its own
        (["a/1", "a/2", "z/9"], ["a/1", "a/2"], 1, ["z/9"]),
        (["a/1", "a/2", "z/9"], ["a/1", "a/2"], 5, ["z/9"]),
        (["a/1", "a/2", "a/3", "b/1"], ["a/1", "a/3", "b/1"], 2, ["a/2"]),
        # only routine apps
        (["c/1", "b/1", "b/2", "a/1"], ["c/1", "b/1", "b/2", "a/1"], 2, ["a/1", "b/1", "b/2"]),
        ([], [], 3, []),
        # a size below one still takes something
        (["a/1"], [], 0, ["a/1"]),
    ],
)
def test_first_slice_of_apps_due_at_one_time(
    due: list[str], routine: list[str], size: int, taken: list[str]
) -> None:
    assert first_slice(dict.fromkeys(keys(*due), 0.0), set(keys(*routine)), size) == keys(*taken)


@pytest.mark.parametrize(
    ("due", "size", "taken"),
    [
        # the longest waiting first, whatever its name
        ({"z/1": 0.0, "a/1": 2.0, "a/2": 2.0}, 1, ["z/1"]),
        ({"z/1": 0.0, "a/1": 2.0, "a/2": 2.0}, 2, ["z/1", "a/1", "a/2"]),
        # the namespace is finished only with the apps due at the same time
        ({"a/1": 0.0, "a/2": 1.0, "b/1": 1.0}, 1, ["a/1"]),
        ({"a/2": 1.0, "a/1": 1.0, "a/3": 3.0, "b/1": 2.0}, 1, ["a/1", "a/2"]),
    ],
)
def test_first_slice_of_apps_due_at_other_times(due: dict[str, float], size: int, taken: list[str]) -> None:
    due_at = {AppKey(*name.split("/")): at for name, at in due.items()}
    assert first_slice(due_at, set(), size) == keys(*taken)


def test_apps_in_rollout_starve_none(queue: DueQueue) -> None:
    """Given apps due long ago and apps in rollout due again and again, the long waiting go first."""
    waiting = keys("z/1", "z/2")
    queue.add_all(waiting, 0.0)
    for step in range(1, 4):
        queue.add(AppKey("a", "1"), float(step))
        taken = queue.take(float(step), size=1)
        assert taken == (waiting if step == 1 else keys("a/1"))


@pytest.fixture
def queue() -> DueQueue:
    return DueQueue(threading.RLock())


def test_a_resync_waits_behind_what_was_asked_for(queue: DueQueue) -> None:
    """Given every app due by the resync, when a commit changes one, then the next slice takes it first."""
    for key in keys("a/1", "a/2", "b/1", "b/2"):
        queue.add_if_absent(key, 0.0)
    assert queue.take(1.0, size=1) == keys("a/1", "a/2") and queue.cut_short
    queue.add(AppKey("b", "2"), 1.0, new_input=True)
    assert queue.take(1.0, size=5) == keys("b/2") and queue.cut_short
    assert queue.take(1.0, size=5) == keys("b/1") and not queue.cut_short
    assert queue.routine == set() and queue.due == {}


def test_routine_adds_never_demote(queue: DueQueue) -> None:
    """An app asked for stays ahead when the resync adds it too; a routine one asked for moves ahead."""
    a1, b1, c1 = keys("a/1", "b/1", "c/1")
    queue.add(c1, 0.0)
    queue.add_if_absent(c1, 0.0)
    queue.add_all([c1, a1, b1], 0.0, routine=True)
    assert queue.routine == {a1, b1}
    queue.hurry(b1, 0.0)  # a rollout's progress is news too
    assert queue.take(0.0, size=1) == [b1] and queue.take(0.0, size=1) == [c1]
    assert queue.take(0.0, size=1) == [a1]


def test_take_without_a_size_takes_everything_due_in_order(queue: DueQueue) -> None:
    queue.add_all(keys("b/1", "a/1"), 0.0, routine=True)
    queue.add(AppKey("c", "1"), 5.0)
    assert queue.take(1.0) == keys("a/1", "b/1") and not queue.cut_short
    assert queue.take(1.0, only=keys("c/1")) == keys("c/1") and queue.due == {}


def test_a_held_app_leaves_the_routine_ones(queue: DueQueue) -> None:
    key = AppKey("a", "1")
    queue.add_if_absent(key, 0.0)
    queue.failed(key, 0.0, PermanentError("forbidden"))
    assert key not in queue.routine and key not in queue.due
    queue.add_if_absent(key, 0.0)  # the resync does not try a held app again
    assert key not in queue.due
