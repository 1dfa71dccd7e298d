"""Hand edits of the labels of gitdeploy's ReplicaSets (issue 21, item 2): ``kubectl label rs
web-<hash> gitdeploy.io/app-`` (or the managed-by label removed, or the template-hash label
changed) hides the ReplicaSet from gitdeploy's label-selected lists. gitdeploy must not lose it:
no second ReplicaSet for the same template, no 409 AlreadyExists loop, no Synced Healthy while it
is hidden; its next pass puts the labels back, with a ``DriftCorrected`` event naming what it
undid. A settled app's pass costs no extra request.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.controller.scheduler import Scheduler
from gitdeploy.core.models import AppKey
from gitdeploy.localcluster import LocalCluster
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import controller_for, settle
from tests.fixtures.manifests import deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")  # git without the machine's configuration

WEB = AppKey("shop", "web")
OWN = {"gitdeploy.io/app": "web", "app.kubernetes.io/managed-by": "gitdeploy"}
EDITS: dict[str, tuple[dict[str, str | None], str]] = {
    "app label removed": ({"gitdeploy.io/app": None}, "gitdeploy.io/app: removed"),
    "managed-by removed": ({"app.kubernetes.io/managed-by": None}, "app.kubernetes.io/managed-by: removed"),
    "template hash changed": ({"gitdeploy.io/template-hash": "edited"}, "gitdeploy.io/template-hash: "),
}
"""(``kubectl label`` as a merge patch of the labels, what the event says was undone)."""


@pytest.fixture
def controller(
    git_remote: GitRemote, kube_client: Any, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, Cluster(kube_client, "embedded"), fake_clock, tmp_path / "state") as made:
        yield made


def _push(git_remote: GitRemote, image: str) -> None:
    git_remote.commit_and_push(image, {"apps/web.yaml": deployment("web", "shop", image, replicas=2)})


def _replica_sets(kube_client: Any) -> dict[str, dict[str, str]]:
    """Every ReplicaSet in shop (whatever its labels): name → labels."""
    found: Any = client.AppsV1Api(kube_client).list_namespaced_replica_set("shop")
    return {str(rs.metadata.name): dict(rs.metadata.labels or {}) for rs in found.items}


def _name_of(kube_client: Any, image: str) -> str:
    found: Any = client.AppsV1Api(kube_client).list_namespaced_replica_set("shop")
    [name] = [rs.metadata.name for rs in found.items if rs.spec.template.spec.containers[0].image == image]
    return str(name)


def _label(kube_client: Any, name: str, labels: dict[str, str | None]) -> None:
    client.AppsV1Api(kube_client).patch_namespaced_replica_set(name, "shop", {"metadata": {"labels": labels}})


def _drift_events(kube_client: Any) -> list[str]:
    found: Any = client.CoreV1Api(kube_client).list_namespaced_event("shop")
    return [str(e.message) for e in found.items if e.reason == "DriftCorrected"]


def _replace_with_foreign(kube_client: Any, name: str) -> None:
    """Delete ReplicaSet ``name`` and create another of that name, not labelled as gitdeploy's,
    whose selector is not gitdeploy's for any template."""
    apps = client.AppsV1Api(kube_client)
    apps.delete_namespaced_replica_set(name, "shop")
    selector = {"app": "other"}
    template = {"metadata": {"labels": selector}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    body: Any = {
        "metadata": {"name": name},
        "spec": {"replicas": 0, "selector": {"matchLabels": selector}, "template": template},
    }
    apps.create_namespaced_replica_set("shop", body)


def _rollout_under_way(
    controller: Controller, fake_clock: FakeClock, git_remote: GitRemote, kube_client: Any
) -> str:
    """Web settled at nginx:1, then one pass of its rollout to nginx:2; the old ReplicaSet's name."""
    _push(git_remote, "nginx:1")
    settle(controller, fake_clock)
    old = _name_of(kube_client, "nginx:1")
    _push(git_remote, "nginx:2")
    controller.poll()
    Scheduler(controller).pass_once()
    return old


def _own_labels(name: str) -> dict[str, str]:
    return {**OWN, "gitdeploy.io/template-hash": name.removeprefix("web-")}


def _assert_restored(kube_client: Any, names: list[str], undone: str, relabelled: str = "") -> None:
    relabelled = relabelled or names[0]
    sets = _replica_sets(kube_client)
    assert sorted(sets) == sorted(names), sets  # no second ReplicaSet for a template
    for name in names:
        assert {k: sets[name].get(k) for k in _own_labels(name)} == _own_labels(name), sets[name]
    [event] = _drift_events(kube_client)
    assert event.startswith(f"{relabelled}: its labels were changed by hand ("), event
    assert undone in event and event.endswith("; restored them"), event


@pytest.mark.parametrize("edit", EDITS)
def test_relabelled_current_replica_set_is_found_by_name_and_relabelled(
    controller: Controller,
    fake_clock: FakeClock,
    git_remote: GitRemote,
    kube_client: Any,
    embedded_cluster: LocalCluster,
    edit: str,
) -> None:
    # Given web settled at nginx:1 in one ReplicaSet
    _push(git_remote, "nginx:1")
    settle(controller, fake_clock)
    name = _name_of(kube_client, "nginx:1")

    # When someone changes its labels by hand, and the next pass looks at web
    labels, undone = EDITS[edit]
    _label(kube_client, name, labels)
    controller.mark_due()
    embedded_cluster.stats.reset()
    [report] = Scheduler(controller).pass_once()
    assert (report.sync, report.health) != ("Synced", "Healthy") or _replica_sets(kube_client)[name].get(
        "gitdeploy.io/app"
    ) == "web", report

    # Then that pass does not say Synced Healthy while the ReplicaSet is hidden, makes no second
    # ReplicaSet and no failed create, and puts the labels back, saying what it undid
    assert embedded_cluster.stats.count("create", "replicasets") == 0
    _assert_restored(kube_client, [name], undone)
    # And the app settles again, undone once
    reports = settle(controller, fake_clock)
    assert (reports[WEB].sync, reports[WEB].health, reports[WEB].revision) == ("Synced", "Healthy", 1)
    assert len(_drift_events(kube_client)) == 1


def test_a_settled_apps_pass_reads_nothing_by_name(
    controller: Controller, fake_clock: FakeClock, git_remote: GitRemote, embedded_cluster: LocalCluster
) -> None:
    # Given web settled, its ReplicaSet labelled as gitdeploy made it
    _push(git_remote, "nginx:1")
    settle(controller, fake_clock)
    # When a pass looks at it again
    controller.mark_due()
    embedded_cluster.stats.reset()
    Scheduler(controller).pass_once()
    # Then it lists, and reads no ReplicaSet by name
    assert embedded_cluster.stats.count("get") == 0, embedded_cluster.stats.snapshot()


def test_a_relabelled_old_replica_set_is_reused_when_git_returns_to_its_template(
    controller: Controller,
    fake_clock: FakeClock,
    git_remote: GitRemote,
    kube_client: Any,
    embedded_cluster: LocalCluster,
) -> None:
    # Given web rolled from nginx:1 to nginx:2, and its old ReplicaSet's app label removed by hand
    _push(git_remote, "nginx:1")
    settle(controller, fake_clock)
    old = _name_of(kube_client, "nginx:1")
    _push(git_remote, "nginx:2")
    settle(controller, fake_clock)
    new = _name_of(kube_client, "nginx:2")
    _label(kube_client, old, {"gitdeploy.io/app": None})

    # When git goes back to nginx:1
    embedded_cluster.stats.reset()
    _push(git_remote, "nginx:1")
    reports = settle(controller, fake_clock)

    # Then the old ReplicaSet is found by name, relabelled and scaled up: no second one, no 409
    assert embedded_cluster.stats.count("create", "replicasets") == 0
    _assert_restored(kube_client, [old, new], "gitdeploy.io/app: removed", old)
    assert (reports[WEB].sync, reports[WEB].health, reports[WEB].revision) == ("Synced", "Healthy", 3)
    found: Any = client.AppsV1Api(kube_client).read_namespaced_replica_set(old, "shop")
    assert found.spec.replicas == 2


def test_the_new_replica_set_relabelled_during_a_rollout_is_found_and_the_rollout_goes_on(
    controller: Controller,
    fake_clock: FakeClock,
    git_remote: GitRemote,
    kube_client: Any,
    embedded_cluster: LocalCluster,
) -> None:
    # Given web at nginx:1, and a rollout to nginx:2 under way (its first pass made the new ReplicaSet)
    old = _rollout_under_way(controller, fake_clock, git_remote, kube_client)
    new = _name_of(kube_client, "nginx:2")

    # When the new ReplicaSet's managed-by label is removed by hand
    _label(kube_client, new, {"app.kubernetes.io/managed-by": None})
    embedded_cluster.stats.reset()
    reports = settle(controller, fake_clock)

    # Then the rollout goes on in that ReplicaSet, relabelled, and completes as revision 2
    # (the revision log does not know its template yet: one create meets 409 and reveals it, no loop)
    assert embedded_cluster.stats.count("create", "replicasets") == 1
    _assert_restored(kube_client, [old, new], "app.kubernetes.io/managed-by: removed", new)
    assert (reports[WEB].sync, reports[WEB].health, reports[WEB].revision) == ("Synced", "Healthy", 2)


def test_a_foreign_replica_set_with_the_name_is_refused_and_left_alone(
    controller: Controller,
    fake_clock: FakeClock,
    git_remote: GitRemote,
    kube_client: Any,
    embedded_cluster: LocalCluster,
) -> None:
    # Given web settled, then its ReplicaSet replaced by hand with another of the same name whose
    # selector is not gitdeploy's for that template
    _push(git_remote, "nginx:1")
    settle(controller, fake_clock)
    name = _name_of(kube_client, "nginx:1")
    _replace_with_foreign(kube_client, name)

    # When a pass looks at web
    controller.mark_due()
    embedded_cluster.stats.reset()
    Scheduler(controller).pass_once()

    # Then it changes nothing of it, creates nothing, and says what is wrong and what to do
    writes = {
        k: n for k, n in embedded_cluster.stats.snapshot().items() if k[0] in ("create", "patch", "delete")
    }
    assert writes == {}, writes
    assert _replica_sets(kube_client) == {name: {}}
    report = controller.reports[WEB]
    assert not report.settled, report
    # and says nothing untrue: web runs none of its pods, so not Synced (the pass could not compare)
    assert report.sync == "Unknown", report
    assert f"ReplicaSet {name} exists but is not the one gitdeploy made" in report.message, report
    assert "rename or delete it" in report.message, report


def test_an_old_replica_set_relabelled_during_a_rollout_is_still_scaled_down(
    controller: Controller, fake_clock: FakeClock, git_remote: GitRemote, kube_client: Any
) -> None:
    # Given a rollout from nginx:1 to nginx:2 under way
    old = _rollout_under_way(controller, fake_clock, git_remote, kube_client)
    # When the old ReplicaSet's app label is removed by hand while it still runs pods
    _label(kube_client, old, {"gitdeploy.io/app": None})
    reports = settle(controller, fake_clock)
    # Then it is relabelled, with an event saying so, and scaled down as the rollout goes on
    found: Any = client.AppsV1Api(kube_client).read_namespaced_replica_set(old, "shop")
    assert (found.spec.replicas, found.metadata.labels.get("gitdeploy.io/app")) == (0, "web")
    assert reports[WEB].revision == 2
    _assert_restored(kube_client, [old, _name_of(kube_client, "nginx:2")], "gitdeploy.io/app: removed", old)


def test_a_foreign_replica_set_with_a_replaced_revisions_name_is_left_alone_and_the_rollout_ends(
    controller: Controller, fake_clock: FakeClock, git_remote: GitRemote, kube_client: Any
) -> None:
    # Given a rollout from nginx:1 to nginx:2 under way
    old = _rollout_under_way(controller, fake_clock, git_remote, kube_client)
    # When the old ReplicaSet is replaced by hand with a foreign one of its name
    _replace_with_foreign(kube_client, old)
    reports = settle(controller, fake_clock)
    # Then the rollout completes, and the foreign one is neither relabelled nor scaled
    assert (reports[WEB].sync, reports[WEB].health, reports[WEB].revision) == ("Synced", "Healthy", 2)
    found: Any = client.AppsV1Api(kube_client).read_namespaced_replica_set(old, "shop")
    assert (found.spec.replicas, found.metadata.labels) == (0, None)
