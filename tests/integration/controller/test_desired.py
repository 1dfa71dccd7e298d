"""Desired state at a commit: only files whose blob changed are parsed again."""

from __future__ import annotations

from pathlib import Path

from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.source.repo import ConfigRepo
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
