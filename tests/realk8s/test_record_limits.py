"""The app record within the API's limits on the real control plane (issue 18: "an app with 100
revisions whose hooks print long, non-ASCII, coloured logs: the record stays within the API's limits
and the app keeps rolling out").

kube-apiserver refuses a ConfigMap whose data passes 1 MiB; gitdeploy keeps its record under
900 KiB (docs/guides/rollouts.md) and keeps of each hook the last 4 KiB of UTF-8 of its log, colour codes
and control characters removed. The hook logs here come the way a cluster serves them: kube-apiserver
asks the node's kubelet endpoint, which kwok plays (``--pod-log``, see kwok_logs).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from gitdeploy.core.observed import record_name
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.waiting import eventually
from tests.realk8s.controlplane import ControlPlane
from tests.realk8s.gitdeploy_cli import ManagedNamespace, Run, history
from tests.realk8s.kwok_logs import CHATTY_CONTAINER, chatty_log
from tests.realk8s.kwok_stages import RUN_FOR_VAR
from tests.realk8s.manifests import RESTRICTED_POD, container, deployment_config, settings

pytestmark = pytest.mark.usefixtures("isolated_git_config")

API_LIMIT_BYTES = 1024 * 1024
"""kube-apiserver's bound on a ConfigMap's data (keys and values)."""
RECORD_BOUND_BYTES = 900 * 1024
"""The bound the docs promise for the stored record (docs/guides/rollouts.md)."""
LOG_TAIL_BYTES = 4096
REVISIONS = 100
KEPT_REVISIONS = 100
"""The docs: the revision log keeps at most 100 revisions; the oldest go first."""
APP = "chatty"
RECORD_KEY = "record.json"


def build_hook() -> dict[str, Any]:
    """A hook in the app's container; its pod prints chatty_log() (kwok serves it) and exits 0 soon."""
    env = [{"name": RUN_FOR_VAR, "value": "100ms"}]
    return {
        "failurePolicy": "Abort",
        "execNewPod": {"containerName": APP, "command": ["/bin/build"], "env": env},
    }


def manifest(version: int) -> dict[str, str]:
    strategy = {
        "type": "Recreate",
        "recreateParams": {"timeoutSeconds": 60, "pre": build_hook(), "mid": build_hook()},
    }
    return {f"apps/{APP}.yaml": deployment_config(APP, f"registry.test/{APP}:{version}", 0, strategy)}


def clean_tail(text: str) -> str:
    """What the docs promise a revision keeps: the last 4 KiB of UTF-8, cut at a character."""
    return text.encode()[-LOG_TAIL_BYTES:].decode("utf-8", "ignore")


@pytest.fixture
def admin_core(control_plane: ControlPlane) -> Iterator[client.CoreV1Api]:
    configuration = client.Configuration()
    config.load_kube_config(
        config_file=str(control_plane.admin_kubeconfig), client_configuration=configuration
    )  # type: ignore[no-untyped-call]
    with client.ApiClient(configuration) as api:
        yield client.CoreV1Api(api)


def test_kubectl_logs_reach_kwok_through_the_api_server_as_admin_and_as_gitdeploy(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    gitdeploy_kubeconfig: Path,
    admin_core: client.CoreV1Api,
) -> None:
    namespace = managed_namespace("logs")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "talker", "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": RESTRICTED_POD,
            "containers": [
                container(CHATTY_CONTAINER, "registry.test/talker:1"),
                container("quiet", "registry.test/q:1"),
            ],
        },
    }
    control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(pod))

    def bound() -> object:
        spec: Any = control_plane.get_json("pod", "talker", "-n", namespace)["spec"]
        return spec.get("nodeName")

    eventually(bound, "talker bound to a node")
    last_three = "".join(chatty_log().splitlines(keepends=True)[-3:])  # no carriage return in them
    for kubeconfig in (control_plane.admin_kubeconfig, gitdeploy_kubeconfig):
        tail = control_plane.kubectl(
            "logs", "talker", "-n", namespace, "-c", CHATTY_CONTAINER, "--tail", "3", kubeconfig=kubeconfig
        )
        assert tail.stdout == last_three, kubeconfig
    answer: Any = admin_core.read_namespaced_pod_log(
        "talker", namespace, container=CHATTY_CONTAINER, _preload_content=False
    )
    whole = answer.data
    assert whole == chatty_log().encode()  # byte for byte: colours, carriage returns, UTF-8
    quiet = control_plane.kubectl("logs", "talker", "-n", namespace, "-c", "quiet", check=False)
    assert quiet.returncode != 0 and "no logs found" in quiet.stderr, quiet.stderr


def test_a_hundred_revisions_with_long_coloured_hook_logs_stay_within_the_api_limits(
    control_plane: ControlPlane,
    managed_namespace: ManagedNamespace,
    git_remote: GitRemote,
    gitdeploy: RunCli,
    runs: Any,
    admin_core: client.CoreV1Api,
) -> None:
    began = time.monotonic()
    namespace = managed_namespace("limits")
    commits = {
        1: git_remote.commit_and_push("chatty 1", {"gitdeploy.yaml": settings(namespace)} | manifest(1))
    }
    run: Run = runs(
        "limits", "--repo", git_remote.url, "-n", namespace, "--interval", "0.1s", "--no-leader-elect"
    )
    largest = 0

    def completed(revision: int) -> bool:
        nonlocal largest
        try:
            data = admin_core.read_namespaced_config_map(record_name(APP), namespace).data or {}
        except client.ApiException:
            return False
        largest = max(largest, sum(len(k.encode()) + len(v.encode()) for k, v in data.items()))
        entries = json.loads(data.get(RECORD_KEY) or "{}").get("revisions") or []
        return any(e["revision"] == revision and e["outcome"] == "Complete" for e in entries)

    for revision in range(1, REVISIONS + 2):
        if revision > 1:
            commits[revision] = git_remote.commit_and_push(f"chatty {revision}", manifest(revision))
        done = functools.partial(completed, revision)
        try:
            eventually(done, f"revision {revision} Complete")
        except AssertionError as late:
            raise AssertionError(f"{late}; gitdeploy run's log ends:\n{run.log[-3000:]}") from late
    elapsed = time.monotonic() - began

    data = admin_core.read_namespaced_config_map(record_name(APP), namespace).data or {}
    stored = data[RECORD_KEY]
    assert largest < API_LIMIT_BYTES
    assert len(stored.encode()) <= RECORD_BOUND_BYTES, len(stored.encode())
    assert "pass failed" not in run.log, run.log

    listed = history(gitdeploy, f"{namespace}/{APP}")
    assert [(e["revision"], e["commit"]["sha"]) for e in listed] == [
        (n, commits[n]) for n in range(REVISIONS + 2 - len(listed), REVISIONS + 2)
    ]
    assert len(listed) == min(REVISIONS + 1, KEPT_REVISIONS)
    text = gitdeploy("history", f"{namespace}/{APP}")
    assert text.returncode == 0 and commits[REVISIONS + 1][:7] in text.stdout, text.stdout + text.stderr

    logs = [h["log"] for e in listed for h in e["hooks"] if h["log"]]
    newest = listed[-1]["hooks"]
    assert sorted(h["phase"] for h in newest) == ["mid", "pre"]
    assert all(h["outcome"] == "Succeeded" for h in newest)
    assert [h["log"] for h in newest] == [clean_tail(chatty_log(coloured=False))] * 2
    assert len(logs) < 2 * len(listed), "the oldest revisions should have given up their logs first"
    for log in logs:
        assert len(log.encode()) <= LOG_TAIL_BYTES
        assert "\x1b" not in log and "\r" not in log and "\ufffd" not in log
    print(f"\n{REVISIONS + 1} revisions in {elapsed:.0f} s; the record peaked at {largest} bytes")
