"""What held a failed revision's pods, in one line (:func:`summarise_pod_states`), case by case."""

from __future__ import annotations

import pytest

from gitdeploy.core.podstates import ContainerState, PodState, summarise_pod_states

PULL = ContainerState("web", "nginx:nope", waiting="ImagePullBackOff")
ERR_PULL = ContainerState("web", "nginx:nope", waiting="ErrImagePull")
CRASH = ContainerState("web", "app:2", waiting="CrashLoopBackOff", exit_code=137)
EXITED = ContainerState("web", "app:2", exit_code=2)
CREATING = ContainerState("web", "app:2", waiting="ContainerCreating")
CONFIG = ContainerState("web", "app:2", waiting="CreateContainerConfigError")
SIDECAR_OK = ContainerState("proxy", "envoy:1", ready=True)


@pytest.mark.parametrize(
    ("pods", "summary"),
    [
        ([], ""),
        ([PodState("a", ready=True, containers=(SIDECAR_OK,))], ""),
        ([PodState("a", containers=(PULL,))], "1 pod ImagePullBackOff (container web, image nginx:nope)"),
        (
            [PodState("a", containers=(ERR_PULL,)), PodState("b", containers=(PULL,))],
            "1 pod ErrImagePull (container web, image nginx:nope), "
            "1 pod ImagePullBackOff (container web, image nginx:nope)",
        ),
        (
            [PodState(n, containers=(CRASH,)) for n in "abc"],
            "3 pods CrashLoopBackOff (container web, exit code 137)",
        ),
        ([PodState("a", containers=(SIDECAR_OK, EXITED))], "1 pod exited (container web, exit code 2)"),
        ([PodState("a", containers=(CONFIG,))], "1 pod CreateContainerConfigError (container web)"),
        ([PodState("a", containers=(CREATING,))], "1 pod ContainerCreating (container web)"),
        (
            [PodState("a", containers=(CREATING, CONFIG))],
            "1 pod CreateContainerConfigError (container web)",
        ),  # the waiting reason that says more wins over ContainerCreating
        (
            [PodState("a", unschedulable="0/3 nodes are available: 3 Insufficient cpu.")] * 2
            + [PodState("b", containers=(PULL,))],
            "2 pods Unschedulable (0/3 nodes are available: 3 Insufficient cpu.), "
            "1 pod ImagePullBackOff (container web, image nginx:nope)",
        ),
        ([PodState("a", unschedulable="")], "1 pod Unschedulable"),
        ([PodState("a", unschedulable="x" * 500)], "1 pod Unschedulable (" + "x" * 159 + "…)"),
        ([PodState("a")], ""),  # not ready, but nothing says why
    ],
)
def test_summaries(pods: list[PodState], summary: str) -> None:
    assert summarise_pod_states(pods) == summary
