"""The reconcile loop against a real git repository and the embedded cluster, on a fake clock."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from gitdeploy.clock import FakeClock
from gitdeploy.cluster.adapter import Cluster
from gitdeploy.controller.loop import Controller
from gitdeploy.core.history.records import AppRecord, Outcome
from gitdeploy.core.models import AppKey
from gitdeploy.localcluster import LocalCluster
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import SETTINGS, controller_for, settle
from tests.fixtures.manifests import deployment as shared_deployment
from tests.fixtures.rbac import service_account_client


def deployment(name: str, image: str = "nginx:1.25", replicas: int = 2) -> str:
    """The shared one-container Deployment, in namespace shop, of 2 replicas unless told."""
    return shared_deployment(name, "shop", image, replicas)


@pytest.fixture(autouse=True)
def _no_machine_git_config(isolated_git_config: None) -> None:
    """git runs without the machine's configuration."""


@pytest.fixture
def adapter(kube_client: Any) -> Cluster:
    return Cluster(kube_client, "embedded")


@pytest.fixture
def as_gitdeploy(embedded_cluster: LocalCluster) -> Iterator[Cluster]:
    """gitdeploy connected as its ServiceAccount, deploy/rbac.yaml's Role bound in shop only."""
    account = service_account_client(embedded_cluster, ["shop"])
    try:
        yield Cluster(account, "embedded")
    finally:
        account.close()


@pytest.fixture
def controller(
    git_remote: GitRemote, adapter: Cluster, fake_clock: FakeClock, tmp_path: Path
) -> Iterator[Controller]:
    with controller_for(git_remote, adapter, fake_clock, tmp_path / "state") as made:
        yield made


def record_of(adapter: Cluster, name: str) -> AppRecord:
    stored = adapter.read_app_record("shop", name)
    assert stored is not None
    return AppRecord.from_json(stored.payload)


def test_three_commits_make_three_revisions_named_after_git_log(
    git_remote: GitRemote, controller: Controller, adapter: Cluster, fake_clock: FakeClock
) -> None:
    subjects = ["Deploy web 1.25", "Bump web to 1.26", "Bump web to 1.27"]
    authors = [("Ada", "ada@example.com"), ("Grace", "grace@example.com"), ("Linus", "linus@example.com")]
    shas = []
    for subject, author, tag in zip(subjects, authors, ["1.25", "1.26", "1.27"], strict=True):
        git_remote.write_files({"apps/web.yaml": deployment("web", f"nginx:{tag}")})
        shas.append(git_remote.commit_all(subject, author=author))
        git_remote.push()
        reports = settle(controller, fake_clock)
        assert reports[AppKey("shop", "web")].sync == "Synced"

    log = git_remote.run_git("log", "--format=%H|%an|%s", "-3", "--", "apps/web.yaml").splitlines()
    expected = [tuple(line.split("|")) for line in reversed(log)]
    record = record_of(adapter, "web")
    assert [(e.commit.sha, e.commit.author, e.commit.subject) for e in record.revisions] == expected
    assert [e.revision for e in record.revisions] == [1, 2, 3]
    assert [e.commit.sha for e in record.revisions] == shas
    assert record.status is not None and (record.status.sync, record.status.health) == ("Synced", "Healthy")


def test_a_revert_reuses_the_old_replica_set_as_a_new_revision(
    git_remote: GitRemote, controller: Controller, adapter: Cluster, fake_clock: FakeClock
) -> None:
    git_remote.commit_and_push("v1", {"apps/web.yaml": deployment("web", "nginx:1.25")})
    settle(controller, fake_clock)
    git_remote.commit_and_push("v2", {"apps/web.yaml": deployment("web", "nginx:1.26")})
    settle(controller, fake_clock)
    names_before = {rs.name for rs in adapter.list_replica_sets("shop", "web")}
    git_remote.run_git("revert", "--no-edit", "HEAD")
    git_remote.push()
    settle(controller, fake_clock)

    replica_sets = adapter.list_replica_sets("shop", "web")
    assert {rs.name for rs in replica_sets} == names_before  # no new ReplicaSet
    record = record_of(adapter, "web")
    latest = record.revisions[-1]
    assert (latest.revision, latest.outcome, latest.returns_to) == (3, Outcome.COMPLETE, 1)
    assert latest.template_hash == record.revisions[0].template_hash
    assert latest.commit.subject.startswith('Revert "v2"')


def test_one_invalid_app_does_not_stop_the_others(
    git_remote: GitRemote, controller: Controller, adapter: Cluster, fake_clock: FakeClock
) -> None:
    git_remote.commit_and_push(
        "two apps", {"apps/web.yaml": deployment("web"), "apps/api.yaml": deployment("api", "api:1")}
    )
    settle(controller, fake_clock)
    # When one commit breaks api's manifest and bumps web
    broken = deployment("api", "api:2").replace("replicas: 2", 'replicas: "two"')
    git_remote.commit_and_push(
        "break api, bump web", {"apps/web.yaml": deployment("web", "nginx:1.26"), "apps/api.yaml": broken}
    )
    reports = settle(controller, fake_clock)
    # Then web rolled out, api is InvalidManifest with file:line, and still runs revision 1
    assert reports[AppKey("shop", "web")].sync == "Synced"
    api = reports[AppKey("shop", "api")]
    assert api.sync == "InvalidManifest" and "apps/api.yaml:5" in api.message
    assert record_of(adapter, "web").latest_revision == 2
    assert record_of(adapter, "api").latest_revision == 1
    stored = record_of(adapter, "api").status
    assert stored is not None and stored.sync == "InvalidManifest"
    assert [rs.state.replicas for rs in adapter.list_replica_sets("shop", "api")] == [2]


def test_after_a_restart_an_app_in_a_file_that_does_not_parse_is_not_pruned(
    git_remote: GitRemote, controller: Controller, adapter: Cluster, fake_clock: FakeClock, tmp_path: Path
) -> None:
    git_remote.commit_and_push(
        "two apps", {"apps/web.yaml": deployment("web"), "apps/api.yaml": deployment("api", "api:1")}
    )
    settle(controller, fake_clock)
    # Given api's file stops parsing while gitdeploy is down, and it comes back with prune
    git_remote.commit_and_push("break api", {"apps/api.yaml": "kind: Deployment\nmetadata: {name: api\n"})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "restarted") as repo:
        restarted = Controller(repo, adapter, fake_clock, workers=2, prune=True)
        reports = settle(restarted, fake_clock)
    # Then api (its last known file is in git, but says nothing) is invalid, not an orphan, and runs
    api = reports[AppKey("shop", "api")]
    assert api.sync == "InvalidManifest" and api.message.startswith("apps/api.yaml:3:1: invalid YAML"), api
    assert [rs.state.replicas for rs in adapter.list_replica_sets("shop", "api")] == [2]
    assert adapter.read_app_record("shop", "api") is not None
    # And once the file parses again, api is an app like any other
    git_remote.commit_and_push("fix api", {"apps/api.yaml": deployment("api", "api:1")})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "restarted") as repo:
        reports = settle(Controller(repo, adapter, fake_clock, workers=2, prune=True), fake_clock)
    assert reports[AppKey("shop", "api")].sync == "Synced"


def test_a_new_app_that_is_invalid_from_the_start_is_reported(
    git_remote: GitRemote, controller: Controller, adapter: Cluster, fake_clock: FakeClock
) -> None:
    broken = deployment("api").replace("replicas: 2", 'replicas: "two"')
    git_remote.commit_and_push(
        "two apps, one broken", {"apps/web.yaml": deployment("web"), "apps/api.yaml": broken}
    )
    reports = settle(controller, fake_clock)
    api = reports[AppKey("shop", "api")]
    assert (api.sync, api.health) == ("InvalidManifest", "Missing")
    assert "apps/api.yaml:5" in api.message
    assert reports[AppKey("shop", "web")].sync == "Synced"
    assert adapter.list_replica_sets("shop", "api") == []


def test_an_unreachable_repo_touches_nothing(
    git_remote: GitRemote,
    controller: Controller,
    fake_clock: FakeClock,
    embedded_cluster: LocalCluster,
) -> None:
    git_remote.commit_and_push("v1", {"apps/web.yaml": deployment("web")})
    settle(controller, fake_clock)
    before = embedded_cluster.stats.snapshot()
    shutil.rmtree(git_remote.bare)
    assert controller.poll() is False
    assert controller.reconcile_due() == []
    report = controller.reports[AppKey("shop", "web")]
    assert report.sync == "SourceUnavailable" and controller.head is not None
    assert controller.head[:7] in report.message
    assert embedded_cluster.stats.snapshot() == before


def test_no_change_poll_makes_no_api_call_and_a_pass_lists_once_per_namespace(
    git_remote: GitRemote, controller: Controller, fake_clock: FakeClock, embedded_cluster: LocalCluster
) -> None:
    files = {f"apps/app{i}.yaml": deployment(f"app{i}", replicas=1) for i in range(12)}
    git_remote.commit_and_push("twelve apps", files)
    settle(controller, fake_clock)

    before = embedded_cluster.stats.snapshot()
    assert controller.poll() is False
    assert controller.reconcile_due() == []
    assert embedded_cluster.stats.snapshot() == before

    controller.mark_due()
    reports = controller.reconcile_due()
    assert len(reports) == 12 and all(r.sync == "Synced" for r in reports)
    after = embedded_cluster.stats.snapshot()
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert delta == {("list", "replicasets"): 1, ("list", "configmaps"): 1}


_WEB2 = deployment("web", "nginx:2")
_DB16 = deployment("db", "postgres:16")
_BAD_API = deployment("api").replace("replicas: 2", 'replicas: "two"')
_BROKEN_DB = deployment("db").replace("replicas: 2", "replicas: -1")
_THREE = {f"apps/{name}.yaml": deployment(name) for name in ("web", "api", "db")}

# (commit subject, files to write (None: delete), apps, invalid apps, orphaned apps, apps made due:
# the changed ones, and every orphan, since whether it may be pruned depends on the whole commit)
# fmt: off
_DESIRED_STEPS: list[tuple[str, dict[str, str | None], set[str], set[str], set[str], set[str]]] = [
    ("three apps", {**_THREE}, {"web", "api", "db"}, set(), set(), {"web", "api", "db"}),
    ("bump web", {"apps/web.yaml": _WEB2}, {"web", "api", "db"}, set(), set(), {"web"}),
    ("docs only", {"README.md": "# hi\n"}, {"web", "api", "db"}, set(), set(), set()),
    ("break api, last good kept", {"apps/api.yaml": _BAD_API}, {"web", "api", "db"}, {"api"}, set(), {"api"}),
    ("remove api while invalid", {"apps/api.yaml": None}, {"web", "db"}, set(), {"api"}, {"api"}),
    ("break db", {"apps/db.yaml": _BROKEN_DB}, {"web", "db"}, {"db"}, {"api"}, {"db", "api"}),
    ("fix db", {"apps/db.yaml": _DB16}, {"web", "db"}, set(), {"api"}, {"db", "api"}),
    ("db's YAML breaks: kept", {"apps/db.yaml": "kind: ["}, {"web", "db"}, {"db"}, {"api"}, {"db", "api"}),
    ("still broken", {"apps/db.yaml": "kind: [ ["}, {"web", "db"}, {"db"}, {"api"}, {"db", "api"}),
    ("db's YAML fixed", {"apps/db.yaml": deployment("db")}, {"web", "db"}, set(), {"api"}, {"db", "api"}),
    ("remove web", {"apps/web.yaml": None}, {"db"}, set(), {"api", "web"}, {"web", "api"}),
    ("web again", {"apps/web.yaml": _WEB2}, {"db", "web"}, set(), {"api", "web"}, {"web", "api"}),
]
# fmt: on


def test_a_new_head_updates_apps_problems_and_orphans_and_makes_only_changed_apps_due(
    git_remote: GitRemote, controller: Controller
) -> None:
    for subject, files, apps, invalid, orphaned, due in _DESIRED_STEPS:
        # Given the loop at the previous commit, with nothing due
        controller.due.clear()
        # When one commit changes these files, and the loop polls
        git_remote.commit_and_push_changes(subject, files)
        assert controller.poll(), subject
        # Then it knows which apps git has, which are invalid or gone, and which to look at again
        names = (
            {k.name for k in controller.apps},
            {k.name for k in controller.problems},
            {k.name for k in controller.orphans},
            {k.name for k in controller.due},
        )
        assert names == (apps | invalid, invalid, orphaned, due), subject


def test_replica_sets_an_earlier_gitdeploy_let_the_record_own_are_released(
    git_remote: GitRemote, controller: Controller, adapter: Cluster, fake_clock: FakeClock, kube_client: Any
) -> None:
    # Given web deployed, its ReplicaSet then turned into what an earlier gitdeploy made: owned by
    # the record (deleting the record would delete it) and labelled app=web (adoptable)
    git_remote.commit_and_push("web", {"apps/web.yaml": deployment("web")})
    settle(controller, fake_clock)
    [made] = adapter.list_replica_sets("shop", "web")
    stored = adapter.read_app_record("shop", "web")
    assert stored is not None
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gitdeploy.web", "uid": stored.uid,
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    apps = client.AppsV1Api(kube_client)
    apps.patch_namespaced_replica_set(
        made.name, "shop", {"metadata": {"ownerReferences": [owner], "labels": {"app": "web"}}}
    )
    # When the loop passes over the app again (a commit scales it)
    git_remote.commit_and_push("scale web", {"apps/web.yaml": deployment("web", replicas=3)})
    settle(controller, fake_clock)
    # Then the ReplicaSet is released, and deleting the record no longer deletes it
    raw: Any = apps.read_namespaced_replica_set(made.name, "shop")
    assert raw.metadata.owner_references is None and "app" not in raw.metadata.labels
    client.CoreV1Api(kube_client).delete_namespaced_config_map("gitdeploy.web", "shop")
    assert [rs.name for rs in adapter.list_replica_sets("shop", "web")] == [made.name]
    assert len(client.CoreV1Api(kube_client).list_namespaced_pod("shop", label_selector="app=web").items) == 3


@pytest.mark.parametrize(
    "configured", [frozenset(), frozenset({"shop"})], ids=["namespaces-of-git", "--namespace"]
)
def test_under_the_namespaced_role_a_restarted_gitdeploy_prunes_an_app_removed_while_it_was_down(
    git_remote: GitRemote,
    controller: Controller,
    adapter: Cluster,
    fake_clock: FakeClock,
    tmp_path: Path,
    as_gitdeploy: Cluster,
    caplog: pytest.LogCaptureFixture,
    configured: frozenset[str],
) -> None:
    git_remote.commit_and_push(
        "two apps", {"apps/web.yaml": deployment("web"), "apps/api.yaml": deployment("api", "api:1")}
    )
    settle(controller, fake_clock)
    # Given gitdeploy runs as the ServiceAccount of deploy/, its Role bound in namespace shop only
    # And api was removed from git while gitdeploy was down
    git_remote.commit_and_push_changes("remove api", {"apps/api.yaml": None})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "restarted") as repo:
        restarted = Controller(repo, as_gitdeploy, fake_clock, workers=2, prune=True, namespaces=configured)
        reports = settle(restarted, fake_clock)
    # Then its resync listed shop's records (no cluster-wide list), found api and pruned it
    assert AppKey("shop", "api") not in restarted.orphans
    assert adapter.list_replica_sets("shop", "api") == [] and adapter.read_app_record("shop", "api") is None
    assert reports[AppKey("shop", "web")].sync == "Synced"
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]


def test_a_namespace_without_the_role_is_an_error_that_names_the_permission_and_the_role(
    git_remote: GitRemote,
    adapter: Cluster,
    fake_clock: FakeClock,
    tmp_path: Path,
    as_gitdeploy: Cluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given gitdeploy is told to manage shop and billing, but the Role is bound in shop only
    git_remote.commit_and_push("web", {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web")})
    adapter.ensure_namespace("shop")  # the administrator made it (gitdeploy's Role cannot)
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        managed = frozenset({"shop", "billing"})
        reports = settle(
            Controller(repo, as_gitdeploy, fake_clock, workers=2, namespaces=managed), fake_clock
        )
    # Then shop's app deploys, and the resync says loudly what billing lacks and how to grant it
    assert reports[AppKey("shop", "web")].sync == "Synced"
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, errors
    assert 'cannot list resource "configmaps"' in errors[0] and 'in the namespace "billing"' in errors[0]
    assert "deploy/rbac.yaml" in errors[0] and "kubectl apply" in errors[0]


def test_an_app_whose_namespace_cannot_be_listed_gets_a_report_saying_so_never_none(
    git_remote: GitRemote,
    adapter: Cluster,
    fake_clock: FakeClock,
    tmp_path: Path,
    embedded_cluster: LocalCluster,
) -> None:
    # Given an app in shop, where gitdeploy's Role is not bound
    git_remote.commit_and_push(
        "web",
        {"gitdeploy.yaml": SETTINGS, "apps/web.yaml": deployment("web")},
    )
    adapter.ensure_namespace("shop")
    account = service_account_client(embedded_cluster, ["billing"])
    with account, ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        controller = Controller(repo, Cluster(account, "embedded"), fake_clock, workers=2)
        controller.poll()
        # When a pass lists the namespace and is refused
        reports = {r.key: r for r in controller.reconcile_due()}
    # Then the app's report says so and is not settled (a `sync` cannot pass it as Synced)
    report = reports[AppKey("shop", "web")]
    assert not report.settled
    assert report.message.startswith("error: ") and 'in the namespace "shop"' in report.message
