"""Bad commits while apps run, with and without prune: only the broken app's status changes.

The loop runs against a real git repository and the embedded cluster on a fake clock; a restart is
a new :class:`Controller` on a new mirror (as ``gitdeploy sync`` is on every call).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import AppReport, Controller
from gitdeploy.core.models import AppKey
from gitdeploy.core.records import AppRecord
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle
from tests.fixtures.manifests import deployment as shared_deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")

SETTINGS = "paths: [apps]\ndefaultNamespace: shop\n"
PRUNE_SETTINGS = SETTINGS + "prune: true\n"
NAMES = ("web", "api", "db")


def deployment(name: str, image: str = "nginx:1.25") -> str:
    return shared_deployment(name, "shop", image, 2)


def selector_mismatch(name: str) -> str:
    """Parses, but the selector no longer matches the template labels (line 6)."""
    return deployment(name).replace(f"matchLabels: {{app: {name}}}", f"matchLabels: {{app: {name}-v2}}")


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    return Cluster(kube_client, "embedded")


class Loop:
    """Start, restart and settle controllers on the same remote and cluster."""

    def __init__(self, remote: GitRemote, adapter: Cluster, clock: FakeClock, root: Path) -> None:
        self.remote, self.adapter, self.clock, self.root = remote, adapter, clock, root
        self.starts = 0
        self.controller: Controller | None = None

    def restart(self, **options: Any) -> Controller:
        self.starts += 1
        repo = ConfigRepo(self.remote.url, state_dir=self.root / f"state{self.starts}")
        self.controller = Controller(repo, self.adapter, self.clock, workers=2, **options)
        return self.controller

    def settle(self) -> dict[AppKey, AppReport]:
        assert self.controller is not None
        return settle(self.controller, self.clock)

    def running(self) -> dict[str, list[int]]:
        """Replicas of every ReplicaSet of each app that has any."""
        out = {}
        for name in NAMES:
            replica_sets = self.adapter.list_replica_sets("shop", name)
            if replica_sets:
                out[name] = sorted(rs.state.replicas for rs in replica_sets)
        return out

    def status(self, name: str) -> tuple[str, str, str]:
        stored = self.adapter.read_app_record("shop", name)
        assert stored is not None, f"the record of {name} is gone"
        status = AppRecord.from_json(stored.payload).status
        assert status is not None
        return status.sync, status.location, status.message


@pytest.fixture
def loop(git_remote: GitRemote, adapter: Cluster, fake_clock: FakeClock, tmp_path: Path) -> Iterator[Loop]:
    yield Loop(git_remote, adapter, fake_clock, tmp_path)


def start_three_apps(loop: Loop, settings: str = SETTINGS, **options: Any) -> None:
    files = {f"apps/{name}.yaml": deployment(name) for name in NAMES}
    loop.remote.commit_and_push("three apps", {"gitdeploy.yaml": settings, **files})
    loop.restart(**options)
    reports = loop.settle()
    assert {k.name: r.sync for k, r in reports.items()} == dict.fromkeys(NAMES, "Synced")


@pytest.mark.parametrize("restart", [False, True], ids=["running", "restarted"])
@pytest.mark.parametrize(
    ("settings", "options"),
    [(SETTINGS, {}), (PRUNE_SETTINGS, {}), (SETTINGS, {"prune": True})],
    ids=["no-prune", "prune-setting", "prune-flag"],
)
def test_a_manifest_made_invalid_is_invalid_never_orphaned_nor_pruned(
    loop: Loop, settings: str, options: dict[str, Any], restart: bool
) -> None:
    # Given three apps running
    start_three_apps(loop, settings, **options)
    before = loop.running()
    # When a commit makes api's manifest invalid but parseable (and gitdeploy restarts, or not)
    loop.remote.commit_and_push("api: new selector", {"apps/api.yaml": selector_mismatch("api")})
    if restart:
        loop.restart(**options)
    reports = loop.settle()
    # Then api is InvalidManifest with file:line, keeps running, and the others are untouched
    api = reports[AppKey("shop", "api")]
    assert api.sync == "InvalidManifest" and "apps/api.yaml:6" in api.message, api
    sync, location, message = loop.status("api")
    assert sync == "InvalidManifest" and "apps/api.yaml:6" in message, (sync, location, message)
    assert loop.running() == before
    assert [loop.status(name)[0] for name in ("web", "db")] == ["Synced", "Synced"]
