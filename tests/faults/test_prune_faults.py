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
from gitdeploy.controller.orphans import PruneGate, Seen, confirm_held_prunes, list_held_prunes, plan_orphan
from gitdeploy.core.history.records import AppRecord
from gitdeploy.core.models import AppKey
from gitdeploy.core.pruning import PruneLimit
from gitdeploy.errors import StaleReadError
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.loop import settle
from tests.fixtures.manifests import deployment as shared_deployment

pytestmark = pytest.mark.usefixtures("isolated_git_config")

SETTINGS = "paths: [apps]\ndefaultNamespace: shop\nallowedNamespaces: [shop]\n"
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


def revisions(loop: Loop) -> dict[str, int]:
    out = {}
    for name in NAMES:
        stored = loop.adapter.read_app_record("shop", name)
        if stored is not None:
            out[name] = AppRecord.from_json(stored.payload).latest_revision
    return out


# (what the commit does to gitdeploy.yaml, the file:line and words the error must name)
BAD_SETTINGS = [
    ("paths: [apps\ndefaultNamespace: shop\nprune: true\n", "gitdeploy.yaml:2", "invalid YAML"),
    ("paths: [apps]\ndefaultNamespace: shop\nprune: yes please\n", "gitdeploy.yaml:3", "prune"),
    ("paths: [appz]\ndefaultNamespace: shop\nprune: true\n", "gitdeploy.yaml:1", "paths entry 'appz'"),
    ("paths: [apps, extra]\ndefaultNamespace: shop\nprune: true\n", "gitdeploy.yaml:1", "'extra'"),
    (
        "paths: [apps]\ndefaultNamespace: shop\nprune: true\npruneLimit: lots\n",
        "gitdeploy.yaml:4",
        "pruneLimit",
    ),
]


@pytest.mark.parametrize("restart", [False, True], ids=["running", "restarted"])
@pytest.mark.parametrize(("settings", "where", "what"), BAD_SETTINGS, ids=lambda v: str(v)[:24])
def test_settings_that_cannot_be_used_fail_closed(
    loop: Loop, settings: str, where: str, what: str, restart: bool
) -> None:
    # Given three apps running with prune on
    start_three_apps(loop, PRUNE_SETTINGS)
    before, history = loop.running(), revisions(loop)
    # When one commit breaks gitdeploy.yaml, bumps web, removes db and adds an app in kube-system
    intruder = shared_deployment("intruder", "kube-system", "evil:666", 1)
    loop.remote.commit_and_push_changes(
        "bad settings",
        {
            "gitdeploy.yaml": settings,
            "apps/web.yaml": deployment("web", "nginx:2"),
            "apps/db.yaml": None,
            "apps/intruder.yaml": intruder,
            "elsewhere/outside.yaml": deployment("outside"),
        },
    )
    if restart:
        loop.restart()
    reports = loop.settle()
    # Then nothing of the commit applies: no rollout, no prune, no new app
    assert loop.running() == before
    assert revisions(loop) == history
    assert loop.adapter.list_replica_sets("kube-system") == []
    assert loop.adapter.list_replica_sets("shop", "outside") == []
    # And every app says why, with the file:line, in its report and in its record
    for name in NAMES:
        report = reports[AppKey("shop", name)]
        assert report.sync == "InvalidSettings" and where in report.message and what in report.message
        sync, _, message = loop.status(name)
        assert sync == "InvalidSettings" and where in message, message
    # And once gitdeploy.yaml is fixed, the commit's changes apply
    loop.remote.commit_and_push_changes("fix settings", {"gitdeploy.yaml": PRUNE_SETTINGS})
    reports = loop.settle()
    assert {k.name: r.sync for k, r in reports.items() if k.namespace == "shop"} == {
        "web": "Synced",
        "api": "Synced",
        "db": "Orphaned",
    }
    assert reports[AppKey("kube-system", "intruder")].sync == "InvalidManifest"
    assert revisions(loop) == {"web": 2, "api": 1, "db": 1}
    # But db is pruned only at a commit whose every file validates
    db = reports[AppKey("shop", "db")]
    assert "not pruned while apps/intruder.yaml:3 do not validate" in db.message, db
    loop.remote.commit_and_push_changes("drop the intruder", {"apps/intruder.yaml": None})
    assert loop.settle()[AppKey("shop", "db")].phase == "Pruned"
    assert revisions(loop) == {"web": 2, "api": 1}


def test_a_moved_directory_is_an_error_that_touches_nothing(loop: Loop) -> None:
    # Given three apps under apps/, with prune on
    start_three_apps(loop, PRUNE_SETTINGS)
    before = loop.running()
    # When the directory moves and gitdeploy.yaml still says apps
    loop.remote.run_git("mv", "apps", "services")
    loop.remote.commit_all("move apps to services")
    loop.remote.push()
    reports = loop.settle()
    # Then nothing is pruned, and the error names the setting and what to do
    assert loop.running() == before
    web = reports[AppKey("shop", "web")]
    assert web.sync == "InvalidSettings", web
    assert "gitdeploy.yaml:1" in web.message and "paths entry 'apps' matches no manifest" in web.message
    assert "fix the directory name or remove the entry" in web.message


def test_a_tracked_path_that_is_gone_is_an_error_that_touches_nothing(
    git_remote: GitRemote, adapter: Cluster, fake_clock: FakeClock, tmp_path: Path
) -> None:
    files = {f"deploy/apps/{name}.yaml": deployment(name) for name in NAMES}
    git_remote.commit_and_push("three apps", {"deploy/gitdeploy.yaml": PRUNE_SETTINGS, **files})
    with ConfigRepo(git_remote.url, subpath="deploy", state_dir=tmp_path / "state") as repo:
        controller = Controller(repo, adapter, fake_clock, workers=2, prune=True)
        settle(controller, fake_clock)
        # When the tracked directory is renamed
        git_remote.run_git("mv", "deploy", "deployment")
        git_remote.commit_all("rename deploy")
        git_remote.push()
        reports = settle(controller, fake_clock)
    # Then every app keeps running and says why
    for name in NAMES:
        report = reports[AppKey("shop", name)]
        assert report.sync == "InvalidSettings" and "'deploy' does not exist" in report.message, report
        assert "--path" in report.message
        assert [rs.state.replicas for rs in adapter.list_replica_sets("shop", name)] == [2]


EIGHT = [f"app{i}" for i in range(8)]


def start_eight_apps(loop: Loop, settings: str = PRUNE_SETTINGS, **options: Any) -> None:
    files = {f"apps/{name}.yaml": deployment(name) for name in EIGHT}
    loop.remote.commit_and_push("eight apps", {"gitdeploy.yaml": settings, **files})
    loop.restart(**options)
    loop.settle()


def remove(loop: Loop, names: list[str], subject: str = "remove apps") -> str:
    return loop.remote.commit_and_push_changes(
        subject, dict.fromkeys((f"apps/{n}.yaml" for n in names), None)
    )


def left(loop: Loop) -> list[str]:
    """The apps with an app record or a ReplicaSet in the cluster."""
    records = {r.app for r in loop.adapter.list_app_records("shop")}
    return sorted(records | {rs.app for rs in loop.adapter.list_replica_sets("shop")})


def confirm(loop: Loop) -> None:
    """What ``gitdeploy prune --confirm`` does, and what ``run``'s watch of records then tells the
    loop (the confirmed records changed)."""
    assert loop.controller is not None
    confirm_held_prunes(loop.adapter, list_held_prunes(loop.adapter, "shop"))
    for stored in loop.adapter.list_app_records("shop"):
        loop.controller.notice(AppKey(stored.namespace, stored.app), stored.resource_version)


def held_events(loop: Loop) -> list[str]:
    return [
        e["involvedObject"]["name"] for e in loop.adapter.list_events("shop") if e["reason"] == "PruneHeld"
    ]


def test_prunes_within_the_default_limit_go_ahead(loop: Loop) -> None:
    start_eight_apps(loop)
    remove(loop, EIGHT[:5])  # the default limit: 5 apps, or 10% of them when that is more
    reports = loop.settle()
    assert [reports[AppKey("shop", n)].phase for n in EIGHT[:5]] == ["Pruned"] * 5
    assert left(loop) == EIGHT[5:]


def test_prunes_over_the_limit_are_held_until_a_person_confirms_them(loop: Loop) -> None:
    # Given eight apps with prune on
    start_eight_apps(loop)
    # When one commit removes six of them (the default limit is five)
    head = remove(loop, EIGHT[:6], "remove six apps")
    reports = loop.settle()
    # Then nothing is deleted: each of the six is PruneHeld, says why and what to do, in an event too
    assert left(loop) == EIGHT
    for name in EIGHT[:6]:
        report = reports[AppKey("shop", name)]
        assert report.sync == "PruneHeld" and report.health == "Healthy", report
        assert f"commit {head[:7]} would prune 6 apps, over pruneLimit 5" in report.message
        assert "`gitdeploy prune --confirm`" in report.message
    assert sorted(held_events(loop)) == [f"gitdeploy.{name}" for name in EIGHT[:6]]
    held = list_held_prunes(loop.adapter, "shop")
    assert [(h.key.name, h.commit, h.confirmed) for h in held] == [(n, head, False) for n in EIGHT[:6]]
    # And another pass holds them still, without a second event
    assert loop.controller is not None
    loop.controller.mark_due()
    loop.settle()
    assert left(loop) == EIGHT and len(held_events(loop)) == 6
    # When a person confirms the held prunes of that commit
    confirm(loop)
    reports = loop.settle()
    # Then the six are pruned, and the two others run on
    assert [reports[AppKey("shop", n)].phase for n in EIGHT[:6]] == ["Pruned"] * 6
    assert left(loop) == EIGHT[6:]


def test_a_confirmation_holds_only_for_the_commit_it_names(loop: Loop) -> None:
    start_eight_apps(loop)
    remove(loop, EIGHT[:6])
    loop.settle()
    # When a new commit arrives between the confirmation and the next pass
    confirm_held_prunes(loop.adapter, list_held_prunes(loop.adapter, "shop"))
    newer = loop.remote.commit_and_push("docs", {"README.md": "# config\n"})
    reports = loop.settle()
    # Then the prunes are held again, against the new commit, until that one is confirmed
    assert left(loop) == EIGHT
    assert {reports[AppKey("shop", n)].sync for n in EIGHT[:6]} == {"PruneHeld"}
    again = list_held_prunes(loop.adapter, "shop")
    assert {h.commit for h in again} == {newer} and not any(h.confirmed for h in again)
    confirm(loop)
    loop.settle()
    assert left(loop) == EIGHT[6:]


@pytest.mark.parametrize(
    ("settings", "options"),
    [
        (PRUNE_SETTINGS + "pruneLimit: 6\n", {}),
        (PRUNE_SETTINGS + 'pruneLimit: "75%"\n', {}),
        (PRUNE_SETTINGS + "pruneLimit: 1\n", {"prune_limit": PruneLimit(apps=6)}),
    ],
    ids=["count", "percent", "flag-over-setting"],
)
def test_a_raised_limit_lets_the_prunes_through(loop: Loop, settings: str, options: dict[str, Any]) -> None:
    start_eight_apps(loop, settings, **options)
    remove(loop, EIGHT[:6])
    loop.settle()
    assert left(loop) == EIGHT[6:]


def test_a_lowered_limit_holds_even_one_prune(loop: Loop) -> None:
    start_eight_apps(loop, PRUNE_SETTINGS + "pruneLimit: 0\n")
    remove(loop, EIGHT[:1])
    assert loop.settle()[AppKey("shop", EIGHT[0])].sync == "PruneHeld"
    assert left(loop) == EIGHT


@pytest.mark.parametrize("restart", [False, True], ids=["running", "restarted"])
def test_an_app_that_opts_out_is_never_pruned(loop: Loop, restart: bool) -> None:
    # Given three apps with prune on, web annotated gitdeploy.io/prune: "false"
    start_three_apps(loop, PRUNE_SETTINGS)
    kept = deployment("web").replace(
        "metadata: {name: web, namespace: shop}",
        'metadata: {name: web, namespace: shop, annotations: {gitdeploy.io/prune: "false"}}',
    )
    loop.remote.commit_and_push("keep web", {"apps/web.yaml": kept})
    loop.settle()
    # When web and api leave git (and gitdeploy restarts, or not)
    remove(loop, ["web", "api"])
    if restart:
        loop.restart()
    reports = loop.settle()
    # Then api is pruned; web is Orphaned but keeps running, and says why
    assert reports[AppKey("shop", "api")].phase == "Pruned"
    web = reports[AppKey("shop", "web")]
    assert web.sync == "Orphaned" and 'gitdeploy.io/prune: "false"' in web.message, web
    assert left(loop) == ["db", "web"]
    assert loop.running()["web"] == [2]


def test_a_force_push_back_to_the_last_good_commit_ends_the_refusal(loop: Loop) -> None:
    start_three_apps(loop, PRUNE_SETTINGS)
    good = loop.remote.head_sha()
    loop.remote.commit_and_push("bad settings", {"gitdeploy.yaml": "prune: [\n"})
    assert {r.sync for r in loop.settle().values()} == {"InvalidSettings"}
    loop.remote.reset_hard(good)
    loop.remote.push(force=True)
    assert {k.name: r.sync for k, r in loop.settle().items()} == dict.fromkeys(NAMES, "Synced")
    assert [loop.status(name)[0] for name in NAMES] == ["Synced"] * 3


def test_raising_the_limit_in_git_lets_held_prunes_through(loop: Loop) -> None:
    start_eight_apps(loop)
    remove(loop, EIGHT[:6])
    assert {r.sync for k, r in loop.settle().items() if k.name in EIGHT[:6]} == {"PruneHeld"}
    loop.remote.commit_and_push("allow six", {"gitdeploy.yaml": PRUNE_SETTINGS + "pruneLimit: 6\n"})
    loop.settle()
    assert left(loop) == EIGHT[6:]


def _change_by_hand(loop: Loop, what: str) -> None:
    """What a person does between a pass's read and its prune."""
    if what == "kubectl scale":
        (replica_set,) = loop.adapter.list_replica_sets("shop", "web")
        loop.adapter.scale_replica_set("shop", replica_set.name, 5)
    else:  # kubectl edit configmap gitdeploy.web
        stored = loop.adapter.read_app_record("shop", "web")
        assert stored is not None
        loop.adapter.write_app_record("shop", "web", stored.payload + " ", stored.resource_version)


@pytest.mark.parametrize("what", ["kubectl scale", "record edited"])
def test_a_prune_is_refused_when_the_app_changed_since_its_pass_read_it(loop: Loop, what: str) -> None:
    # Given three apps running with prune on, and a commit that removes web
    start_three_apps(loop, PRUNE_SETTINGS)
    head = remove(loop, ["web"])
    key = AppKey("shop", "web")
    # And a pass that read web's ReplicaSet and record, and decided to prune it
    seen = Seen(
        key,
        loop.adapter.list_replica_sets("shop", "web"),
        loop.adapter.read_app_record("shop", "web"),
        loop.clock.now(),
        head,
    )
    plan = plan_orphan(seen, "not in git", PruneGate(head, True), protected=False)
    assert plan.verdict.phase == "Pruned" and plan.delete and plan.delete_record
    # When a person changes web before that prune is carried out
    _change_by_hand(loop, what)
    assert loop.controller is not None
    # Then the prune made from the outdated read stops where it met the change, and says why
    with pytest.raises(StaleReadError, match=r"\[shop/web\] .* changed since this pass read it"):
        loop.controller.reconciler.pruner.execute(plan)
    if what == "kubectl scale":  # nothing was touched
        assert loop.running()["web"] == [5]
    assert loop.adapter.read_app_record("shop", "web") is not None
    # And the next pass decides again from what it reads: the app left git, so it is pruned
    reports = loop.settle()
    assert reports[key].phase == "Pruned"
    assert left(loop) == ["api", "db"]
