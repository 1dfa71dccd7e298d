"""How a pass reads the cluster: lists of each due app's own objects when few apps of a namespace
are due, one list per kind of the whole namespace when many are (real git, embedded cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import PER_APP_LISTS_BELOW, Controller, lists_per_app
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import AppKey
from gitdeploy.localcluster import LocalCluster
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle
from tests.fixtures.manifests import deployment

APPS = [f"app{i}" for i in range(8)]
"""Eight apps in one namespace: two due are read one by one (2 × 4 ≤ 8), three through the namespace."""


@pytest.mark.parametrize(
    ("due", "apps_in_namespace", "per_app"),
    [
        (1, 833, True),
        (208, 833, True),
        (209, 833, False),
        (833, 833, False),
        (1, PER_APP_LISTS_BELOW, True),
        (1, PER_APP_LISTS_BELOW - 1, False),
        (2, 8, True),
        (3, 8, False),
        (1, 0, False),  # apps that left git (orphans): the namespace
    ],
)
def test_when_a_pass_lists_per_app(due: int, apps_in_namespace: int, per_app: bool) -> None:
    assert lists_per_app(due, apps_in_namespace) is per_app


def manifest(name: str, image: str, hooked: bool = False) -> str:
    if hooked:
        return f"""\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {{name: {name}, namespace: shop}}
spec:
  replicas: 1
  selector: {{app: {name}}}
  triggers: [{{type: ConfigChange}}]
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: main, image: "{image}"}}]
  strategy:
    type: Recreate
    recreateParams:
      pre: {{failurePolicy: Ignore, execNewPod: {{containerName: main, command: [/bin/true]}}}}
"""
    return deployment(name, "shop", image)


pytestmark = pytest.mark.usefixtures("isolated_git_config")  # git without the machine's configuration


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    git_remote.commit_and_push("apps", {f"apps/{name}.yaml": manifest(name, "nginx:1") for name in APPS})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        controller = Controller(repo, Cluster(kube_client, "embedded"), fake_clock, workers=2)
        settle(controller, fake_clock)
        yield controller


def first_pass_lists(
    controller: Controller, cluster: LocalCluster, git_remote: GitRemote, changes: dict[str, str]
) -> dict[str, int]:
    """Commit ``changes`` (app → manifest), then run the pass that sees them: its lists by resource."""
    git_remote.commit_and_push("change", {f"apps/{name}.yaml": text for name, text in changes.items()})
    assert controller.poll()
    cluster.stats.reset()
    controller.reconcile_due()
    return {resource: n for (verb, resource), n in cluster.stats.snapshot().items() if verb == "list"}


@pytest.mark.parametrize(
    ("changed", "expected_lists"),
    [
        (["app3"], {"replicasets": 1, "configmaps": 1}),
        (["app3", "app5"], {"replicasets": 2, "configmaps": 2}),
        (["app1", "app3", "app5"], {"replicasets": 1, "configmaps": 1}),
    ],
)
def test_few_due_apps_are_read_one_by_one_and_many_through_the_namespace(
    controller: Controller,
    embedded_cluster: LocalCluster,
    git_remote: GitRemote,
    fake_clock: FakeClock,
    changed: list[str],
    expected_lists: dict[str, int],
) -> None:
    # Given eight apps running in one namespace
    # When some of their manifests change
    lists = first_pass_lists(
        controller, embedded_cluster, git_remote, {name: manifest(name, "nginx:2") for name in changed}
    )
    # Then the pass that sees the change reads them with these lists
    assert lists == expected_lists
    # And they roll out as usual
    settle(controller, fake_clock)
    for name in changed:
        (running,) = [rs for rs in controller.cluster.list_replica_sets("shop", name) if rs.state.replicas]
        assert running.template is not None and "nginx:2" in running.template.canonical_json
        assert controller.reports[AppKey("shop", name)].sync == "Synced"


def test_a_due_app_with_hooks_also_lists_its_own_hook_pods(
    controller: Controller, embedded_cluster: LocalCluster, git_remote: GitRemote, fake_clock: FakeClock
) -> None:
    lists = first_pass_lists(controller, embedded_cluster, git_remote, {"app2": manifest("app2", "x", True)})
    assert lists == {"replicasets": 1, "configmaps": 1, "pods": 1}
    settle(controller, fake_clock)
    stored = controller.cluster.read_app_record("shop", "app2")
    assert stored is not None
    latest = AppRecord.from_json(stored.payload).revisions[-1]
    assert [(hook.phase, hook.outcome) for hook in latest.hooks] == [("pre", "Succeeded")]
    assert controller.reports[AppKey("shop", "app2")].sync == "Synced"


def test_a_pass_over_every_app_reads_the_namespace_and_gets_nothing(
    controller: Controller, embedded_cluster: LocalCluster
) -> None:
    controller.mark_due()
    embedded_cluster.stats.reset()
    reports = controller.reconcile_due()
    assert len(reports) == len(APPS)
    assert embedded_cluster.stats.snapshot() == {("list", "replicasets"): 1, ("list", "configmaps"): 1}


def test_a_replica_sharing_the_apps_reads_its_share_through_the_namespace(
    controller: Controller, embedded_cluster: LocalCluster
) -> None:
    """``run --sharding``: a replica's pass over all of its apps (its resync) lists the namespace,
    as one replica's pass over every app does, rather than two requests per app."""
    two = [AppKey("shop", "app1"), AppKey("shop", "app6")]
    # Given the eight apps shared by four replicas, When this one passes over its two
    controller.pool.sharing = lambda: 4
    embedded_cluster.stats.reset()
    assert len(controller.reconcile_due(two)) == 2
    # Then it reads them through the namespace
    assert embedded_cluster.stats.snapshot() == {("list", "replicasets"): 1, ("list", "configmaps"): 1}
    # ... where one replica alone reads two due apps of eight one by one
    controller.pool.sharing = lambda: 1
    embedded_cluster.stats.reset()
    assert len(controller.reconcile_due(two)) == 2
    assert embedded_cluster.stats.snapshot() == {("list", "replicasets"): 2, ("list", "configmaps"): 2}


class Share:
    """A sharded replica's part (what :class:`~gitdeploy.controller.shards.ShardGate` answers):
    it owns app0 to app3 by the hash, holds app7 still (not yet released), leads or not."""

    def __init__(self, leads: bool) -> None:
        self.leads = leads

    def mine(self, key: AppKey) -> bool:
        return key.name in {"app0", "app1", "app2", "app3"}

    def held(self) -> list[AppKey]:
        return [AppKey("shop", "app7")]

    def finds_orphans(self) -> bool:
        return self.leads

    def looks_at(self, key: AppKey) -> bool:
        return self.mine(key) or key in self.held()


@pytest.mark.parametrize(
    ("share", "passed", "lists"),
    [
        (None, APPS, {"replicasets": 1, "configmaps": 2}),
        (Share(leads=False), ["app0", "app1", "app2", "app3", "app7"], {"replicasets": 1, "configmaps": 1}),
        (Share(leads=True), ["app0", "app1", "app2", "app3", "app7"], {"replicasets": 1, "configmaps": 2}),
    ],
    ids=["one replica", "a sharded replica", "the sharded leader"],
)
def test_a_sharded_resync_looks_at_this_replicas_apps_and_the_leader_alone_finds_orphans(
    controller: Controller,
    embedded_cluster: LocalCluster,
    fake_clock: FakeClock,
    share: Share | None,
    passed: list[str],
    lists: dict[str, int],
) -> None:
    controller.shard_scope = share
    controller.pool.sharing = lambda: 1 if share is None else 2
    fake_clock.advance(controller.resync_seconds + 1)
    embedded_cluster.stats.reset()
    reports = controller.reconcile_due()
    assert sorted(r.key.name for r in reports) == passed
    assert {resource: n for (verb, resource), n in embedded_cluster.stats.snapshot().items()} == lists


@pytest.mark.parametrize(
    ("share", "noticed"),
    [(None, APPS), (Share(leads=False), ["app0", "app1", "app2", "app3", "app7"])],
    ids=["one replica", "a sharded replica"],
)
def test_a_sharded_replica_passes_over_a_record_changed_by_another_only_when_the_app_is_its_own(
    controller: Controller, share: Share | None, noticed: list[str]
) -> None:
    controller.shard_scope = share
    assert not controller.reconcile_due()  # settled: nothing due
    found = [name for name in APPS if controller.notice(AppKey("shop", name), "changed elsewhere")]
    assert found == noticed
    assert sorted(r.key.name for r in controller.reconcile_due()) == noticed


@pytest.mark.parametrize("watched", [True, False], ids=["records watched", "no record watch yet"])
def test_a_restart_finds_the_app_that_left_git_meanwhile_from_the_record_watch_without_a_list(
    controller: Controller,
    embedded_cluster: LocalCluster,
    git_remote: GitRemote,
    kube_client: Any,
    fake_clock: FakeClock,
    tmp_path: Path,
    watched: bool,
) -> None:
    # Given the eight apps deployed, and app7 removed from git while gitdeploy was not running
    git_remote.commit_and_push_changes("app7 leaves", {"apps/app7.yaml": None})
    cluster = Cluster(kube_client, "embedded")
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "restarted") as repo:
        restarted = Controller(repo, cluster, fake_clock, workers=2)
        if watched:  # what the record watch keeps once it listed the namespace
            restarted.watch_cache.replace_records("shop", cluster.list_app_records("shop"))
        assert restarted.poll()
        # When the restarted controller's first pass looks for apps that left git
        embedded_cluster.stats.reset()
        restarted.reconcile_due()
        # Then app7 is an orphan, found in the watch cache when it holds the namespace's records
        assert AppKey("shop", "app7") in restarted.source.orphans
        lists = embedded_cluster.stats.snapshot()
        assert lists[("list", "configmaps")] == (1 if watched else 2)  # the pass's read, and the resync's


def recreate(name: str, image: str) -> str:
    """A Deployment of one pod with the Recreate strategy (its pods are counted while it is not at rest)."""
    return deployment(name, "shop", image).replace(
        "spec:\n  replicas: 1\n", "spec:\n  replicas: 1\n  strategy: {type: Recreate}\n", 1
    )


def test_recreate_apps_at_rest_are_not_counted_and_one_rolling_out_is(
    controller: Controller, embedded_cluster: LocalCluster, git_remote: GitRemote, fake_clock: FakeClock
) -> None:
    # Given eight apps of which three are Recreate, at rest on their manifests' templates
    git_remote.commit_and_push("recreate", {f"apps/{n}.yaml": recreate(n, "nginx:1") for n in APPS[:3]})
    assert controller.poll()
    settle(controller, fake_clock)
    # When a pass goes over every app (the resync)
    controller.mark_due()
    embedded_cluster.stats.reset()
    assert len(controller.reconcile_due()) == len(APPS)
    # Then it lists no pod: counting them would change nothing
    assert embedded_cluster.stats.snapshot() == {("list", "replicasets"): 1, ("list", "configmaps"): 1}

    # When a commit changes the image of one of them
    lists = first_pass_lists(controller, embedded_cluster, git_remote, {"app0": recreate("app0", "nginx:2")})
    # Then its pass counts its pods, and it rolls out
    assert lists == {"replicasets": 1, "configmaps": 1, "pods": 1}
    settle(controller, fake_clock)
    assert controller.reports[AppKey("shop", "app0")].sync == "Synced"
