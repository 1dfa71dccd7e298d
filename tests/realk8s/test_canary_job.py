"""A canary's ``analysis`` step with a ``job`` metric (Argo Rollouts' job provider) on the real
control plane, as deploy/'s ServiceAccount in a restricted namespace: the measurement is a pod
built from the Job's template (kwok ends it by its ``EXIT_CODE``, or with success on the attempt
its ``SUCCEED_ON_ATTEMPT`` names), owned by the canary's ReplicaSet and labelled as an analysis
pod. A job whose retry (``backoffLimit: 1``) succeeds walks the canary on to full size; one whose
pods all fail aborts it by itself, the history naming the metric and how its pods ended.
The ReplicaSets never ask for more than replicas + maxSurge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitdeploy.core.observed import POD_ROLE_LABEL
from gitdeploy.core.rollout.analysisjobs import ANALYSIS_ANNOTATION, ANALYSIS_ROLE
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, synced, wait_for
from tests.realk8s.kwok_stages import EXIT_CODE_VAR, SUCCEED_ON_ATTEMPT_VAR
from tests.realk8s.manifests import RESTRICTED_CONTAINER, RESTRICTED_POD, rollout, settings
from tests.realk8s.observed import canary_within_surge, replica_sets_by_tag
from tests.realk8s.podwatch import ReplicaSetWatch

pytestmark = pytest.mark.usefixtures("isolated_git_config")

STEPS: list[dict[str, Any]] = [
    {"setWeight": 50},
    {
        "analysis": {
            "templates": [{"templateName": "smoke-test"}],
            "args": [{"name": "service", "value": "web"}],
        }
    },
]


def smoke_test(namespace: str, exit_code: int, succeed_on_attempt: int | None = None) -> str:
    """An AnalysisTemplate whose one metric runs a Job once: its pod exits with ``exit_code``
    (0 on attempt ``succeed_on_attempt``), retried once (``backoffLimit: 1``)."""
    container = {
        "name": "smoke",
        "image": "registry.test/smoke:1",
        "args": ["http://{{args.service}}/healthz"],
        "env": [{"name": EXIT_CODE_VAR, "value": str(exit_code)}]
        + (
            [{"name": SUCCEED_ON_ATTEMPT_VAR, "value": str(succeed_on_attempt)}] if succeed_on_attempt else []
        ),
        "securityContext": RESTRICTED_CONTAINER,
    }
    job = {
        "backoffLimit": 1,
        "activeDeadlineSeconds": 120,
        "template": {
            "spec": {"restartPolicy": "Never", "securityContext": RESTRICTED_POD, "containers": [container]}
        },
    }
    body = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": "smoke-test", "namespace": namespace},
        "spec": {
            "args": [{"name": "service"}],
            "metrics": [{"name": "smoke", "provider": {"job": {"spec": job}}}],
        },
    }
    return json.dumps(body, indent=1) + "\n"


def _analysis_pods(control_plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    found: Any = control_plane.get_json("pods", "-n", namespace, "-l", f"{POD_ROLE_LABEL}={ANALYSIS_ROLE}")
    return list(found["items"])


def _pods_told(control_plane: ControlPlane, namespace: str) -> str:
    """The analysis pods as they are (name, phase, container states): what a failure shows."""
    return json.dumps(
        [
            (
                p["metadata"]["name"],
                p["status"].get("phase"),
                p["spec"].get("nodeName"),
                p["status"].get("containerStatuses"),
            )
            for p in _analysis_pods(control_plane, namespace)
        ],
        indent=1,
    )


def _last(gitdeploy: RunCli, namespace: str) -> dict[str, Any]:
    entries: list[dict[str, Any]] = json.loads(
        gitdeploy("history", "web", "-n", namespace, "-o", "json").stdout
    )
    return entries[-1]


def _deploy(
    git_remote: GitRemote, namespace: str, version: str, exit_code: int, succeed_on: int | None = None
) -> None:
    files = {
        "gitdeploy.yaml": settings(namespace),
        "apps/web.yaml": rollout("web", f"registry.test/web:{version}", 2, STEPS, grace=1),
        "apps/analysis.yaml": smoke_test(namespace, exit_code, succeed_on),
    }
    git_remote.commit_and_push(f"web {version}", files)


def test_a_job_that_succeeds_on_its_retry_walks_the_canary_on(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
) -> None:
    namespace = managed_namespace("jobok")

    # Given web's first revision at full size
    _deploy(git_remote, namespace, "1", 3, 2)
    synced(gitdeploy, git_remote, timeout="90s")
    # When a commit starts a canary whose analysis step runs the smoke job: its first pod exits
    # 3, the retry (backoffLimit 1) exits 0
    _deploy(git_remote, namespace, "2", 3, 2)
    with ReplicaSetWatch(namespace, control_plane.admin_kubeconfig, check=canary_within_surge) as watched:
        try:
            synced(gitdeploy, git_remote, timeout="150s")
        except AssertionError as failed:
            raise AssertionError(f"{failed}\nanalysis pods: {_pods_told(control_plane, namespace)}") from None

    # Then the canary walked on to full size, revision 2 Complete
    assert replica_sets_by_tag(control_plane, namespace) == {"1": 0, "2": 2}
    last = _last(gitdeploy, namespace)
    assert (last["revision"], last["outcome"]) == (2, "Complete"), last
    # and the job ran as two pods, owned by the canary's ReplicaSet, kept for their logs
    first, pod = sorted(_analysis_pods(control_plane, namespace), key=lambda p: p["metadata"]["name"])
    assert first["status"]["phase"] == "Failed" and pod["status"]["phase"] == "Succeeded", pod["status"]
    assert pod["metadata"]["name"] == first["metadata"]["name"] + "-retry2"
    assert pod["metadata"]["annotations"][ANALYSIS_ANNOTATION] == "2:1:smoke:1"
    assert pod["spec"]["containers"][0]["args"] == ["http://web/healthz"]
    (owner,) = pod["metadata"]["ownerReferences"]
    assert owner["kind"] == "ReplicaSet" and owner["controller"] is False
    assert not watched.failures


def test_a_job_that_fails_aborts_the_canary_by_itself(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
) -> None:
    namespace = managed_namespace("jobfail")

    def aborted() -> bool:
        gitdeploy("sync", "--repo", git_remote.url, timeout=120)  # exit 1 once the revision failed
        last = _last(gitdeploy, namespace)
        return bool(last["revision"] == 2 and last["outcome"] == "Failed")

    # Given web's first revision at full size
    _deploy(git_remote, namespace, "1", 3)
    synced(gitdeploy, git_remote, timeout="90s")
    # When a commit starts a canary whose analysis step runs the smoke job, which exits 3
    _deploy(git_remote, namespace, "2", 3)
    with ReplicaSetWatch(namespace, control_plane.admin_kubeconfig, check=canary_within_surge) as watched:
        wait_for("the job to abort the canary", aborted, timeout=180)

    # Then the revision failed by itself, naming the metric and how its pods ended
    pods = sorted(_analysis_pods(control_plane, namespace), key=lambda p: p["metadata"]["name"])
    assert [p["status"]["phase"] for p in pods] == ["Failed", "Failed"]
    message = _last(gitdeploy, namespace)["message"]
    assert "aborted by analysis smoke-test" in message, message
    retried = pods[1]["metadata"]["name"]
    failed = f"Failed pod {retried} Failed (exit code 3, Error), 2 pods failed (backoffLimit 1)"
    assert f"measurements of smoke: {failed}" in message, message
    wait_for(
        "the stable back",
        lambda: replica_sets_by_tag(control_plane, namespace) == {"1": 2, "2": 0},
        timeout=60,
    )
    assert not watched.failures
