"""API faults: a stalled, cut or failing API server fails a pass transiently; nothing hangs.

gitdeploy talks to the embedded cluster through a :class:`~tests.fixtures.faultproxy.FaultProxy`.
While the fault is on, a pass returns with a transient error (the app is retried with backoff);
once it is off, the app converges without a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.core.history.records import AppRecord, Outcome
from gitdeploy.core.models import AppKey
from gitdeploy.errors import TransientError
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import controller_for, settle
from tests.fixtures.manifests import deployment
from tests.fixtures.waiting import returns

pytestmark = pytest.mark.usefixtures("isolated_git_config")

T = TypeVar("T")
WEB = AppKey("shop", "web")


@pytest.fixture
def controller(
    git_remote: GitRemote, proxied: Cluster, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, proxied, fake_clock, tmp_path / "state") as made:
        yield made


def record(cluster: Cluster) -> AppRecord:
    stored = cluster.read_app_record("shop", "web")
    assert stored is not None
    return AppRecord.from_json(stored.payload)


@pytest.mark.parametrize(
    ("fault", "status", "said"),
    [
        pytest.param(Fault.STALL, 0, "did not answer in time", id="stall"),
        pytest.param(Fault.CLOSE, 0, "broke off", id="close-mid-response"),
        pytest.param(Fault.ANSWER, 500, "answered 500", id="answer-500"),
        pytest.param(Fault.ANSWER, 429, "answered 429", id="answer-429"),
    ],
)
def test_an_api_fault_fails_a_pass_transiently_and_the_app_converges_after_it(
    git_remote: GitRemote,
    controller: Controller,
    api_fault_proxy: FaultProxy,
    fake_clock: FakeClock,
    fault: Fault,
    status: int,
    said: str,
) -> None:
    cluster = controller.cluster
    git_remote.commit_and_push("v1", {"apps/web.yaml": deployment("web", "shop", "nginx:1", replicas=4)})
    settle(controller, fake_clock)
    # Given a new commit, when the API fails while gitdeploy passes over the app
    git_remote.commit_and_push("v2", {"apps/web.yaml": deployment("web", "shop", "nginx:2", replicas=4)})
    controller.poll()
    api_fault_proxy.set(fault, status=status)
    returns(controller.reconcile_due)
    # Then the pass returned: the app is to be retried with backoff, and says why
    assert api_fault_proxy.requests[fault] > 0
    report = controller.reports[WEB]
    assert report.message.startswith("error: ") and said in report.message, report.message
    assert controller.failures[WEB] == 1 and controller.next_due_in() is not None
    # When the fault ends, the app converges without a restart
    api_fault_proxy.set(Fault.PASS)
    reports = settle(controller, fake_clock)
    assert reports[WEB].sync == "Synced" and reports[WEB].health == "Healthy"
    assert [(e.revision, e.outcome) for e in record(cluster).revisions] == [
        (1, Outcome.COMPLETE),
        (2, Outcome.COMPLETE),
    ]


def test_a_stalled_watch_ends_with_a_transient_error(api_fault_proxy: FaultProxy, proxied: Cluster) -> None:
    # Given a watch whose server never answers (its server-side timeout never arrives)
    api_fault_proxy.set(Fault.STALL)
    # Then the client gives up a read timeout after the server should have ended it
    with pytest.raises(TransientError, match="did not answer in time"):
        returns(lambda: list(proxied.watch_app_records("shop", timeout_seconds=1)))
    # and once the API answers, the same watch works
    api_fault_proxy.set(Fault.PASS)
    assert returns(lambda: list(proxied.watch_app_records("shop", timeout_seconds=1))) == []


@pytest.mark.parametrize("fault", [Fault.ANSWER, Fault.STALL, Fault.CLOSE])
def test_a_hook_log_the_api_cannot_fetch_is_a_note_never_an_error(
    api_fault_proxy: FaultProxy, proxied: Cluster, fault: Fault
) -> None:
    # Given a node whose logs the API server cannot reach (a real one answers 500: the kubelet is
    # unreachable), When gitdeploy reads a failed hook's log, Then it gets a note saying why, so the
    # hook's failure is still decided and recorded
    api_fault_proxy.set(fault)
    log = returns(lambda: proxied.read_pod_log("shop", "web-abc-hook-pre"))
    assert log.startswith("(the log could not be read: ") and log.endswith(")\n"), log
