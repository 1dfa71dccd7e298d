"""How the loop retries a failed pass over an app (real git, the embedded cluster behind the fault
proxy, a fake clock): a transient error backs off with a growing delay; a permanent one is
surfaced and attempted once per input (the app's manifest, the commit, its image), not again
until that input changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.core.models import AppKey
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import controller_for, settle
from tests.fixtures.manifests import deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")

WEB = AppKey("shop", "web")


@pytest.fixture
def controller(
    git_remote: GitRemote, proxied: Cluster, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, proxied, fake_clock, tmp_path / "state") as made:
        git_remote.commit_and_push("v1", {"apps/web.yaml": deployment("web", "shop", "nginx:1")})
        settle(made, fake_clock)
        yield made


def commit_image(git_remote: GitRemote, controller: Controller, image: str) -> None:
    git_remote.commit_and_push(image, {"apps/web.yaml": deployment("web", "shop", image)})
    assert controller.poll()


def test_a_permanent_error_is_attempted_once_per_input_and_again_when_the_input_changes(
    git_remote: GitRemote, controller: Controller, api_fault_proxy: FaultProxy, fake_clock: FakeClock
) -> None:
    # Given the API refuses gitdeploy's writes (403: a permission is missing)
    api_fault_proxy.set(Fault.ANSWER, status=403, writes_only=True)
    # When a commit changes the app, the pass over it fails, and says why
    commit_image(git_remote, controller, "nginx:2")
    assert [r.key for r in controller.reconcile_due()] == [WEB]
    assert api_fault_proxy.answered[403] == 1
    report = controller.reports[WEB]
    assert report.message.startswith("error: ") and "lacks a permission" in report.message, report.message
    assert "until" in report.message and not report.settled
    # Then no later pass tries again while nothing changed: not after a backoff, not at the resync
    for _ in range(4):
        fake_clock.advance(400.0)
        assert WEB not in [r.key for r in controller.reconcile_due()]
    assert api_fault_proxy.answered[403] == 1
    assert controller.reports[WEB] == report
    # When the input changes (a new commit of the app), it is attempted once more
    commit_image(git_remote, controller, "nginx:3")
    assert [r.key for r in controller.reconcile_due()] == [WEB]
    assert api_fault_proxy.answered[403] == 2
    fake_clock.advance(400.0)
    assert WEB not in [r.key for r in controller.reconcile_due()]
    # And once the permission is there, the next change of the app converges
    api_fault_proxy.set(Fault.PASS)
    commit_image(git_remote, controller, "nginx:4")
    reports = settle(controller, fake_clock)
    assert (reports[WEB].sync, reports[WEB].health) == ("Synced", "Healthy")


def test_a_transient_error_is_retried_with_a_growing_delay(
    git_remote: GitRemote, controller: Controller, api_fault_proxy: FaultProxy, fake_clock: FakeClock
) -> None:
    # Given the API answers 500 to gitdeploy's writes
    api_fault_proxy.set(Fault.ANSWER, status=500, writes_only=True)
    commit_image(git_remote, controller, "nginx:2")
    # When the app's pass fails again and again
    delays: list[float] = []
    for attempt in range(1, 6):
        assert [r.key for r in controller.reconcile_due()] == [WEB]
        assert api_fault_proxy.answered[500] == attempt
        wait = controller.next_due_in()
        assert wait is not None
        delays.append(wait)
        fake_clock.advance(wait)
    # Then each retry waits at least as long as the one before, and the delay grows
    assert delays == sorted(delays) and delays[-1] >= 4 * delays[0], delays
    assert "retrying in" in controller.reports[WEB].message
    # And once the API answers again, the app converges without a new commit
    api_fault_proxy.set(Fault.PASS)
    reports = settle(controller, fake_clock)
    assert (reports[WEB].sync, reports[WEB].health) == ("Synced", "Healthy")
