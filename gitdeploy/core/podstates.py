"""Why a revision's pods are not ready, in one line: what a failed rollout says about its cause.

The cluster adapter reads the pods of the new ReplicaSet into :class:`PodState` when a revision
fails by its progress deadline; :func:`summarise_pod_states` says what held them, in the words
Kubernetes uses (``ImagePullBackOff``, ``CrashLoopBackOff``, ``Unschedulable``), with the image,
the exit code or the scheduler's message, so that ``history`` says later why it failed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

MAX_DETAIL = 160
"""Characters of a scheduler's message kept in the summary (a cluster of many nodes writes long ones)."""


@dataclass(frozen=True)
class ContainerState:
    """One container of a pod, as its ``containerStatuses`` entry says."""

    container: str
    image: str = ""
    waiting: str = ""
    """``state.waiting.reason`` (``ImagePullBackOff``, ``ErrImagePull``, ``CrashLoopBackOff``,
    ``CreateContainerConfigError``, ``ContainerCreating``...); empty when not waiting."""
    exit_code: int | None = None
    """The exit code of its current termination, else of its last one (``lastState``)."""
    ready: bool = False


@dataclass(frozen=True)
class PodState:
    """A pod of a rollout, as far as it tells why it is not ready."""

    name: str
    ready: bool = False
    unschedulable: str | None = None
    """The scheduler's message when ``PodScheduled`` is False for reason ``Unschedulable``
    ("" if it gave none); None when the pod was scheduled."""
    containers: tuple[ContainerState, ...] = ()


def _problem(pod: PodState) -> str | None:
    """What holds ``pod``, as a short phrase; None for a ready pod or one with nothing to say."""
    if pod.ready:
        return None
    if pod.unschedulable is not None:
        detail = pod.unschedulable.strip().replace("\n", " ")
        if len(detail) > MAX_DETAIL:
            detail = detail[: MAX_DETAIL - 1] + "…"
        return f"Unschedulable ({detail})" if detail else "Unschedulable"
    for c in pod.containers:
        if c.waiting and c.waiting != "ContainerCreating":
            return _waiting(c)
    for c in pod.containers:
        if c.exit_code not in (None, 0) and not c.ready:
            return f"exited (container {c.container}, exit code {c.exit_code})"
    creating = next((c for c in pod.containers if c.waiting), None)
    return f"{creating.waiting} (container {creating.container})" if creating is not None else None


def _waiting(c: ContainerState) -> str:
    if c.waiting in ("ImagePullBackOff", "ErrImagePull", "InvalidImageName"):
        return f"{c.waiting} (container {c.container}, image {c.image})"
    if c.exit_code not in (None, 0):
        return f"{c.waiting} (container {c.container}, exit code {c.exit_code})"
    return f"{c.waiting} (container {c.container})"


def summarise_pod_states(pods: tuple[PodState, ...] | list[PodState]) -> str:
    """One line saying what holds the pods that are not ready, most frequent first; empty
    when none says anything (all ready, or none left).

    >>> pull = ContainerState("web", "nginx:nope", waiting="ImagePullBackOff")
    >>> summarise_pod_states([PodState("web-1", containers=(pull,)), PodState("web-2", containers=(pull,))])
    '2 pods ImagePullBackOff (container web, image nginx:nope)'
    >>> crash = ContainerState("web", "app:2", waiting="CrashLoopBackOff", exit_code=1)
    >>> summarise_pod_states([PodState("a", containers=(crash,)), PodState("b", unschedulable="0/3 nodes")])
    '1 pod CrashLoopBackOff (container web, exit code 1), 1 pod Unschedulable (0/3 nodes)'
    >>> summarise_pod_states([PodState("a", ready=True)])
    ''
    """
    counts = Counter(problem for problem in map(_problem, pods) if problem is not None)
    return ", ".join(
        f"{n} pod{'s' if n != 1 else ''} {problem}"
        for problem, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )
