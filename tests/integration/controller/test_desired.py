"""Desired state at a commit: only files whose blob changed are parsed again."""

from __future__ import annotations

from pathlib import Path

from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.source.repo import ConfigRepo
from tests.fixtures.argorollouts import TEMPLATE
from tests.fixtures.gitrepo import GitRemote


def _deployment(name: str, image: str = "nginx:1.25") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: main, image: "{image}"}}]
"""


def test_a_commit_touching_one_of_many_apps_parses_one_file(git_remote: GitRemote, tmp_path: Path) -> None:
    git_remote.commit_and_push(
        "Add 40 apps", {f"apps/app{i}.yaml": _deployment(f"app{i}") for i in range(40)}
    )
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        reader = DesiredStateReader(repo)
        first = reader.load(repo.poll().head)
        assert first.ok and len(first.apps) == 40
        assert reader.files_parsed == 40

        git_remote.commit_and_push("Bump app7", {"apps/app7.yaml": _deployment("app7", "nginx:1.26")})
        second = reader.load(repo.poll().head)
        assert reader.files_parsed == 41
        assert {a.name for a in second.apps} == {a.name for a in first.apps}
        before = {a.name: a.template_hash for a in first.apps}
        after = {a.name: a.template_hash for a in second.apps}
        assert [name for name in after if after[name] != before[name]] == ["app7"]

        git_remote.commit_and_push("Docs only", {"README.md": "# config\n"})
        reader.load(repo.poll().head)
        assert reader.files_parsed == 41


def test_settings_file_selects_paths_at_that_commit(git_remote: GitRemote, tmp_path: Path) -> None:
    git_remote.commit_and_push(
        "Apps and settings",
        {
            "gitdeploy.yaml": "paths: [apps]\ndefaultNamespace: shop\n",
            "apps/web.yaml": _deployment("web"),
            "other/ignored.yaml": "not: a manifest\n",
        },
    )
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        result = DesiredStateReader(repo).load(repo.poll().head)
    assert result.ok, [d.render() for d in result.diagnostics]
    assert [str(a.key) for a in result.apps] == ["shop/web"]


def test_incremental_loads_match_a_fresh_load_after_adds_edits_and_removals(
    git_remote: GitRemote, tmp_path: Path
) -> None:
    git_remote.commit_and_push("Add apps", {f"apps/app{i}.yaml": _deployment(f"app{i}") for i in range(5)})
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        reader = DesiredStateReader(repo)
        reader.load(repo.poll().head)
        git_remote.commit_and_push(
            "Edit, add, break",
            {
                "apps/app1.yaml": _deployment("app1", "nginx:1.27"),
                "apps/new.yaml": _deployment("new"),
                "apps/app2.yaml": "kind: [",
            },
        )
        git_remote.remove_file("apps/app3.yaml")
        git_remote.commit_all("Remove app3")
        git_remote.push()
        head = repo.poll().head

        incremental = reader.load(head)
        fresh = DesiredStateReader(repo).load(head)

    assert incremental == fresh
    assert [a.name for a in incremental.apps] == ["app0", "app1", "app4", "new"]
    assert [d.file for d in incremental.diagnostics] == ["apps/app2.yaml"]
    assert reader.files_parsed == 5 + 3


def test_a_settings_change_reloads_every_path(git_remote: GitRemote, tmp_path: Path) -> None:
    git_remote.commit_and_push(
        "Two dirs", {"apps/web.yaml": _deployment("web"), "more/api.yaml": _deployment("api")}
    )
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        reader = DesiredStateReader(repo)
        assert len(reader.load(repo.poll().head).apps) == 2
        git_remote.commit_and_push("Only apps/", {"gitdeploy.yaml": "paths: [apps]\n"})
        narrowed = reader.load(repo.poll().head)
    assert [a.name for a in narrowed.apps] == ["web"]


def test_with_a_sub_path_its_gitdeploy_yaml_is_the_settings_file(
    git_remote: GitRemote, tmp_path: Path
) -> None:
    git_remote.commit_and_push(
        "Prod config in a monorepo",
        {
            "clusters/prod/gitdeploy.yaml": "paths: [apps]\ndefaultNamespace: shop\n",
            "clusters/prod/apps/web.yaml": _deployment("web"),
            "clusters/prod/scratch/ignored.yaml": "not: a manifest\n",
            "clusters/dev/apps/other.yaml": _deployment("other"),
        },
    )
    with ConfigRepo(git_remote.url, subpath="clusters/prod", state_dir=tmp_path / "state") as repo:
        result = DesiredStateReader(repo).load(repo.poll().head)

    assert result.ok, [d.render() for d in result.diagnostics]
    assert [(a.namespace, a.name, a.location.file) for a in result.apps] == [
        ("shop", "web", "clusters/prod/apps/web.yaml")
    ]


_SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n"
_STREAM = """\
apiVersion: image.openshift.io/v1
kind: ImageStream
metadata: {name: base}
spec:
  tags: [{name: latest, from: {kind: DockerImage, name: "registry.example.com/base@sha256:%s"}}]
"""
_TRIGGERED = """\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {name: %s}
spec:
  replicas: 1
  selector: {app: %s}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: main, image: " "}]
  triggers:
  - type: ImageChange
    imageChangeParams: {automatic: true, containerNames: [main], from: {kind: ImageStreamTag, name: "%s"}}
"""


def _triggered(name: str, tag: str = "base:latest") -> str:
    return _TRIGGERED % (name, name, name, tag)


# Each commit: path -> new content, or None to delete it. After each one the incremental load
# must equal a fresh load of the same commit.
_COMMITS: list[tuple[str, dict[str, str | None]]] = [
    ("edit one app", {"apps/a1.yaml": _deployment("a1", "nginx:1.26")}),
    ("a second definition of a2", {"more/a2-copy.yaml": _deployment("a2", "nginx:9")}),
    ("edit the first definition of a2", {"apps/a2.yaml": _deployment("a2", "nginx:1.27")}),
    ("remove the first definition", {"apps/a2.yaml": None}),
    (
        "a file of two apps, one a duplicate",
        {"more/pair.yaml": _deployment("p1") + "---\n" + _deployment("a3")},
    ),
    ("the duplicate leaves the pair", {"more/pair.yaml": _deployment("p1") + "---\n" + _deployment("p2")}),
    ("break a file", {"apps/a4.yaml": "kind: ["}),
    ("an app that is invalid", {"apps/a5.yaml": _deployment("a5").replace("containers", "containerz")}),
    ("fix both", {"apps/a4.yaml": _deployment("a4"), "apps/a5.yaml": _deployment("a5", "nginx:1.28")}),
    ("a trigger on a tag the repo lacks", {"apps/t2.yaml": _triggered("t2", "base:missing")}),
    ("move the stream's digest", {"streams/base.yaml": _STREAM % ("b" * 64)}),
    ("the trigger points at a real tag", {"apps/t2.yaml": _triggered("t2")}),
    ("remove the stream", {"streams/base.yaml": None}),
    ("an ignored kind next to an app", {"apps/svc.yaml": _SERVICE + "---\n" + _deployment("svc")}),
    ("README only", {"README.md": "# config\n"}),
    ("remove several", {"apps/a1.yaml": None, "more/pair.yaml": None, "apps/svc.yaml": None}),
]


def test_incremental_loads_equal_fresh_loads_through_duplicates_streams_and_invalid_apps(
    git_remote: GitRemote, tmp_path: Path
) -> None:
    # Given a repo with apps, an image stream and an app whose ImageChange trigger follows it
    files: dict[str, str | bytes] = {f"apps/a{i}.yaml": _deployment(f"a{i}") for i in range(1, 6)}
    files |= {"streams/base.yaml": _STREAM % ("a" * 64), "apps/t1.yaml": _triggered("t1")}
    git_remote.commit_and_push("Initial", files)
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        reader = DesiredStateReader(repo)
        reader.load(repo.poll().head)
        for message, change in _COMMITS:
            # When one commit changes, adds or removes some files
            git_remote.commit_and_push_changes(message, change)
            head = repo.poll().head
            # Then the reader's result from the tree diff equals a load from scratch
            assert reader.load(head) == DesiredStateReader(repo).load(head), message


def test_analysis_templates_stay_in_an_incremental_load(git_remote: GitRemote, tmp_path: Path) -> None:
    git_remote.commit_and_push(
        "Apps and a template", {"apps/web.yaml": _deployment("web"), "apps/analysis.yaml": TEMPLATE}
    )
    with ConfigRepo(git_remote.url, state_dir=tmp_path / "state") as repo:
        reader = DesiredStateReader(repo)
        first = reader.load(repo.poll().head)
        assert [str(t.key) for t in first.analysis_templates] == ["shop/error-rate"]
        git_remote.commit_and_push("Bump web", {"apps/web.yaml": _deployment("web", "nginx:1.26")})
        second = reader.load(repo.poll().head)
        assert reader.files_parsed == 3
        assert second.analysis_templates == first.analysis_templates
        git_remote.commit_and_push(
            "Edit the template", {"apps/analysis.yaml": TEMPLATE.replace("count: 5", "count: 6")}
        )
        third = reader.load(repo.poll().head)
        assert [m.count for m in third.analysis_templates[0].metrics] == [6, None, None]
