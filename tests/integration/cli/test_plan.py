"""`gitdeploy plan` through the installed command, on real git repos with a base and a feature branch.

Each test: Given a ``main`` branch (the base) and a ``feature`` branch made from it, When plan runs
with ``--base main --head feature``, Then it says per app what merging will do.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from markdown_it import MarkdownIt

from tests.fixtures.argorollouts import canary_rollout
from tests.fixtures.cli import RunCli
from tests.fixtures.gitrepo import GitRemote


def deployment(
    name: str,
    image: str = "nginx:1.25",
    *,
    replicas: int = 3,
    strategy: str = "",
    extra_spec: str = "",
    namespace: str = "demo",
) -> str:
    return (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        f"  name: {name}\n"
        f"  namespace: {namespace}\n"
        "spec:\n"
        f"  replicas: {replicas}\n"
        f"{strategy}"
        f"{extra_spec}"
        "  selector:\n"
        f"    matchLabels: {{app: {name}}}\n"
        "  template:\n"
        "    metadata:\n"
        f"      labels: {{app: {name}}}\n"
        "    spec:\n"
        "      containers:\n"
        f"      - name: {name}\n"
        f"        image: {image}\n"
    )


def deployment_config(name: str, image: str, *, triggers: str) -> str:
    return (
        "apiVersion: apps.openshift.io/v1\n"
        "kind: DeploymentConfig\n"
        "metadata:\n"
        f"  name: {name}\n"
        "  namespace: demo\n"
        "spec:\n"
        "  replicas: 2\n"
        f"  selector: {{app: {name}}}\n"
        "  template:\n"
        "    metadata:\n"
        f"      labels: {{app: {name}}}\n"
        "    spec:\n"
        "      containers:\n"
        f"      - name: {name}\n"
        f"        image: {image}\n"
        "  strategy:\n"
        "    type: Rolling\n"
        f"  triggers: {triggers}\n"
    )


def settings(prune: bool) -> str:
    return f"apiVersion: gitdeploy.io/v1alpha1\nkind: RepoSettings\nprune: {str(prune).lower()}\n"


BASE_FILES = {
    "gitdeploy.yaml": settings(prune=False),
    "apps/web.yaml": deployment("web"),
    "apps/db.yaml": deployment("db", "postgres:16", replicas=1),
}


def start_feature(git_remote: GitRemote, files: dict[str, str] | None = None) -> None:
    """Push the base to ``main`` and switch the working clone to a new branch ``feature``."""
    git_remote.commit_and_push("Add web and db", files or BASE_FILES)
    git_remote.run_git("checkout", "--quiet", "-b", "feature")


def plan_json(run_cli: RunCli, git_remote: GitRemote, *extra: str) -> tuple[int, dict[str, Any]]:
    done = run_cli(
        "plan", "--repo", git_remote.url, "--base", "main", "--head", "feature", "-o", "json", *extra
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def by_app(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["app"]: a for a in report["apps"]}


def test_image_bump_is_a_rollout_with_the_image_diff(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    sha = git_remote.commit_and_push(
        "Bump web to 1.26", {"apps/web.yaml": deployment("web", "nginx:1.26")}, "feature"
    )

    code, report = plan_json(run_cli, git_remote)

    assert code == 0
    assert report["summary"]["rollout"] == 1 and report["changed"] and report["valid"]
    (web,) = report["apps"]
    assert (web["app"], web["change"], web["file"], web["line"]) == (
        "demo/web",
        "rollout",
        "apps/web.yaml",
        1,
    )
    assert web["templateChanges"] == [
        {"scope": "container web", "field": "image", "before": "nginx:1.25", "after": "nginx:1.26"}
    ]
    assert web["templateHash"]["before"] != web["templateHash"]["after"]
    strategy = web["strategy"]
    assert (strategy["type"], strategy["replicas"], strategy["surgePods"], strategy["unavailablePods"]) == (
        "RollingUpdate",
        3,
        1,
        0,
    )
    assert [(c["sha"], c["subject"], c["author"]) for c in web["commits"]] == [
        (sha, "Bump web to 1.26", "Ada Author")
    ]

    text = run_cli("plan", "--repo", git_remote.url, "--base", "main", "--head", "feature")
    assert text.returncode == 0, text.stderr
    assert "rollout demo/web (apps/web.yaml:1)" in text.stdout
    assert "container web  image: nginx:1.25 -> nginx:1.26" in text.stdout
    assert (
        "rollout: RollingUpdate, maxSurge 25% (1 pod), maxUnavailable 25% (0 pods) of 3 replicas"
        in text.stdout
    )
    assert f"{sha[:12]} Ada Author: Bump web to 1.26" in text.stdout
    assert "Plan: 1 rollout; 0 app(s) unchanged, 1 file(s) the change does not touch." in text.stdout


def test_replicas_change_is_a_scale_without_a_new_revision(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    git_remote.commit_and_push("Scale web to 5", {"apps/web.yaml": deployment("web", replicas=5)}, "feature")

    code, report = plan_json(run_cli, git_remote)

    assert code == 0
    (web,) = report["apps"]
    assert web["change"] == "scale"
    assert web["replicas"] == {"before": 3, "after": 5}
    assert web["templateChanges"] == [] and web["strategy"] is None
    assert web["templateHash"]["before"] == web["templateHash"]["after"]
    assert web["settingsChanges"] == [{"field": "replicas", "before": "3", "after": "5"}]


def test_strategy_change_is_settings_only(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    recreate = deployment("web", strategy="  strategy:\n    type: Recreate\n")
    git_remote.commit_and_push("web: Recreate", {"apps/web.yaml": recreate}, "feature")

    code, report = plan_json(run_cli, git_remote)

    assert code == 0
    (web,) = report["apps"]
    assert web["change"] == "settings"
    changes = {c["field"]: (c["before"], c["after"]) for c in web["settingsChanges"]}
    assert changes["strategy"] == ("RollingUpdate", "Recreate")
    assert changes["strategy.maxSurge"] == ("25%", None)
    assert web["strategy"] is None


@pytest.mark.parametrize("prune", [True, False])
def test_added_and_removed_apps_say_whether_prune_is_on(
    run_cli: RunCli, git_remote: GitRemote, prune: bool
) -> None:
    start_feature(git_remote, {**BASE_FILES, "gitdeploy.yaml": settings(prune)})
    git_remote.remove_file("apps/db.yaml")
    git_remote.write_file("apps/cache.yaml", deployment("cache", "redis:7", replicas=2))
    git_remote.commit_all("Replace db with cache")
    git_remote.push("feature")

    code, report = plan_json(run_cli, git_remote)

    assert code == 0
    apps = by_app(report)
    assert set(apps) == {"demo/cache", "demo/db"}
    assert apps["demo/cache"]["change"] == "add"
    assert apps["demo/cache"]["strategy"]["replicas"] == 2
    assert "redis:7" in apps["demo/cache"]["reason"]
    removed = apps["demo/db"]
    assert (removed["change"], removed["prune"], removed["file"]) == ("remove", prune, "apps/db.yaml")
    assert ("deleted from the cluster (prune is on)" in removed["reason"]) is prune
    assert ("keeps running, no longer managed (prune is off)" in removed["reason"]) is not prune
    assert [c["subject"] for c in removed["commits"]] == ["Replace db with cache"]


def test_invalid_head_exits_1_with_the_validate_lines(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    broken = deployment("web", "nginx:1.26").replace("replicas: 3", "replicas: three")
    git_remote.commit_and_push("Break web", {"apps/web.yaml": broken}, "feature")

    code, report = plan_json(run_cli, git_remote, "--detailed-exitcode")

    assert code == 1
    assert report["valid"] is False
    (web,) = report["apps"]
    assert web["change"] == "invalid"
    (error,) = web["errors"]
    assert (error["file"], error["line"], error["column"]) == ("apps/web.yaml", 7, 3)
    validate = run_cli("validate", "--repo", git_remote.url, "--ref", "feature")
    assert validate.returncode == 1
    assert error["text"] in validate.stderr.splitlines()
    assert error["text"].startswith("apps/web.yaml:7:3: demo/web: spec.replicas must be an integer")

    text = run_cli("plan", "--repo", git_remote.url, "--base", "main", "--head", "feature")
    assert text.returncode == 1
    assert f"  {error['text']}" in text.stdout.splitlines()


def test_unparsable_file_is_invalid_not_removed(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    git_remote.commit_and_push("Oops", {"apps/web.yaml": deployment("web") + "  bad: [unclosed\n"}, "feature")

    code, report = plan_json(run_cli, git_remote)

    assert code == 1
    (web,) = report["apps"]
    assert web["change"] == "invalid" and web["prune"] is None
    assert web["errors"][0]["file"] == "apps/web.yaml" and web["errors"][0]["line"] > 1


def test_revert_is_a_rollback_naming_the_commit_of_the_template(
    run_cli: RunCli, git_remote: GitRemote
) -> None:
    added = git_remote.commit_and_push("Add web and db", BASE_FILES)
    git_remote.commit_and_push("Scale web to 4", {"apps/web.yaml": deployment("web", replicas=4)})
    bump = git_remote.commit_and_push(
        "Bump web to 1.26", {"apps/web.yaml": deployment("web", "nginx:1.26", replicas=4)}
    )
    git_remote.run_git("checkout", "--quiet", "-b", "feature")
    git_remote.run_git("revert", "--no-edit", bump)
    git_remote.push("feature")

    code, report = plan_json(run_cli, git_remote)

    assert code == 0
    (web,) = report["apps"]
    assert web["change"] == "rollback"
    # The template came in with the first commit; "Scale web to 4" only changed replicas.
    assert (web["rollbackTo"]["sha"], web["rollbackTo"]["subject"]) == (added, "Add web and db")
    assert web["templateChanges"] == [
        {"scope": "container web", "field": "image", "before": "nginx:1.26", "after": "nginx:1.25"}
    ]
    assert f'commit {added[:12]} "Add web and db" by Ada Author' in web["reason"]
    assert [c["subject"] for c in web["commits"]] == ['Revert "Bump web to 1.26"']


def test_deployment_config_without_config_change_is_manual(run_cli: RunCli, git_remote: GitRemote) -> None:
    manual_triggers = (
        "[{type: ImageChange, imageChangeParams: {automatic: false, containerNames: [api],"
        " from: {kind: ImageStreamTag, name: 'api:latest'}}}]"
    )
    stream = (
        "apiVersion: image.openshift.io/v1\nkind: ImageStream\nmetadata: {name: api, namespace: demo}\n"
        "spec:\n  tags:\n  - name: latest\n    from: {kind: DockerImage, name: 'example/api:latest'}\n"
    )
    start_feature(
        git_remote,
        {
            **BASE_FILES,
            "apps/api.yaml": deployment_config("api", "example/api:1", triggers=manual_triggers),
            "apps/streams.yaml": stream,
        },
    )
    git_remote.commit_and_push(
        "api 2",
        {"apps/api.yaml": deployment_config("api", "example/api:2", triggers=manual_triggers)},
        "feature",
    )

    code, report = plan_json(run_cli, git_remote)

    assert code == 0, report["errors"]  # the stream lives in an untouched file and is still found
    (api,) = report["apps"]
    assert api["change"] == "manual"
    assert api["manualReasons"] == ["no ConfigChange trigger"]
    assert api["templateChanges"][0]["after"] == "example/api:2"
    assert api["strategy"]["type"] == "Rolling"


def test_new_file_duplicating_an_untouched_app_is_invalid(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    git_remote.commit_and_push("Copy web", {"apps/web-copy.yaml": deployment("web", "nginx:1.27")}, "feature")

    code, report = plan_json(run_cli, git_remote)

    assert code == 1
    (web,) = report["apps"]
    assert web["change"] == "invalid"
    assert "defined more than once: apps/web-copy.yaml:1, apps/web.yaml:1" in web["reason"]
    assert web["errors"][0]["text"] == (
        "apps/web.yaml:1:1: demo/web: defined more than once: "
        "apps/web-copy.yaml:1, apps/web.yaml:1 (keep one definition; until then neither deploys)"
    )


def test_markdown_renders_a_summary_table_and_one_section_per_app(
    run_cli: RunCli, git_remote: GitRemote
) -> None:
    start_feature(git_remote)
    git_remote.commit_and_push(
        "Bump web, scale db",
        {
            "apps/web.yaml": deployment("web", "nginx:1.26|<b>"),
            "apps/db.yaml": deployment("db", "postgres:16", replicas=2),
        },
        "feature",
    )
    done = run_cli("plan", "--repo", git_remote.url, "--base", "main", "--head", "feature", "-o", "markdown")
    assert done.returncode == 0, done.stderr

    rendered = MarkdownIt("commonmark").enable("table").render(done.stdout)

    summary_table = rendered[rendered.index("<table>") : rendered.index("</table>")]
    headers = re.findall(r"<th[^>]*>(.*?)</th>", summary_table)
    assert headers == [
        "invalid",
        "add",
        "remove",
        "manual",
        "rollback",
        "rollout",
        "scale",
        "settings",
        "unchanged",
    ]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", summary_table)
    assert cells[:8] == ["0", "0", "0", "0", "0", "1", "1", "0"]
    sections = re.findall(r"<details>\s*<summary>(.*?)</summary>(.*?)</details>", rendered, re.S)
    assert [s[0].split("</code>")[0] for s in sections] == [
        "<b>rollout</b> <code>demo/web",
        "<b>scale</b> <code>demo/db",
    ]
    web_body = sections[0][1]
    # The body is markdown again (a real table), and the odd image value stays literal in its cell.
    assert "<td><code>image</code></td>" in web_body
    assert "<td><code>nginx:1.26|&lt;b&gt;</code></td>" in web_body
    assert "<strong>Rollout</strong>: RollingUpdate" in web_body
    assert "<b>" not in web_body.replace("<b>rollout", "")


def test_exit_codes(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    git_remote.commit_and_push("Only a README", {"README.md": "# config\n"}, "feature")
    base = ("plan", "--repo", git_remote.url, "--base", "main", "--head", "feature")

    same = run_cli(*base, "--detailed-exitcode")
    assert same.returncode == 0, same.stderr
    assert "Plan: no changes" in same.stdout

    git_remote.commit_and_push("Bump", {"apps/web.yaml": deployment("web", "nginx:1.26")}, "feature")
    assert run_cli(*base).returncode == 0
    assert run_cli(*base, "--detailed-exitcode").returncode == 2

    missing = run_cli("plan", "--repo", git_remote.url, "--base", "no-such-branch", "--head", "feature")
    assert missing.returncode == 1
    assert "no-such-branch" in missing.stderr and "Traceback" not in missing.stderr


def test_json_shape_is_stable(run_cli: RunCli, git_remote: GitRemote) -> None:
    start_feature(git_remote)
    git_remote.commit_and_push("Bump", {"apps/web.yaml": deployment("web", "nginx:1.26")}, "feature")

    _, report = plan_json(run_cli, git_remote)

    assert set(report) == {
        "version", "base", "head", "live", "valid", "changed", "summary", "untouchedFiles", "apps", "errors"
    }  # fmt: skip
    assert report["live"] is False
    assert report["version"] == 2
    assert report["base"]["ref"] == "main" and len(report["base"]["sha"]) == 40
    assert set(report["summary"]) == {
        "invalid", "add", "remove", "manual", "rollback", "rollout", "scale", "settings", "drift", "unchanged"
    }  # fmt: skip
    assert set(report["apps"][0]) == {
        "app", "namespace", "name", "kind", "change", "reason", "file", "line", "templateHash", "replicas",
        "templateChanges", "settingsChanges", "strategy", "rollbackTo", "manualReasons", "prune",
        "errors", "commits", "drift", "notes",
    }  # fmt: skip
    assert (report["apps"][0]["drift"], report["apps"][0]["notes"]) == ([], [])


def test_ci_checkout_plans_head_against_the_remote_tracking_base(
    run_cli: RunCli, git_remote: GitRemote
) -> None:
    """As a PR job runs it: in a clone, HEAD (the change) against refs/remotes/origin/main."""
    start_feature(git_remote)
    git_remote.commit_all("nothing yet")
    git_remote.write_file("apps/web.yaml", deployment("web", "nginx:1.26"))
    git_remote.commit_all("Bump web")
    git_remote.run_git("fetch", "--quiet", "origin")

    done = run_cli(
        "plan", "--repo", str(git_remote.work), "--base", "refs/remotes/origin/main", "--head", "HEAD",
        "-o", "json", "--detailed-exitcode",
    )  # fmt: skip

    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    assert report["head"]["sha"] == git_remote.head_sha()
    assert [(a["app"], a["change"]) for a in report["apps"]] == [("demo/web", "rollout")]
    assert [c["subject"] for c in report["apps"][0]["commits"]] == ["Bump web"]


def test_path_limits_the_plan_to_a_directory_of_a_monorepo(run_cli: RunCli, git_remote: GitRemote) -> None:
    # No gitdeploy.yaml here: under --path it is not found yet (DesiredStateReader looks at the repo root).
    apps = {f"deploy/{path}": text for path, text in BASE_FILES.items() if path.startswith("apps/")}
    start_feature(git_remote, {**apps, "other/apps/web.yaml": deployment("web", "other:1")})
    git_remote.commit_and_push(
        "Scale db and other web",
        {
            "deploy/apps/db.yaml": deployment("db", "postgres:16", replicas=2),
            "other/apps/web.yaml": deployment("web", "other:2"),
        },
        "feature",
    )

    code, report = plan_json(run_cli, git_remote, "--path", "deploy")

    assert code == 0
    (db,) = report["apps"]
    assert (db["change"], db["file"]) == ("scale", "deploy/apps/db.yaml")


def test_a_rollout_change_shows_the_canary_timeline_with_pods(run_cli: RunCli, git_remote: GitRemote) -> None:
    steps = (
        "      - setWeight: 25\n      - pause: {duration: 90s}\n      - setWeight: 75\n      - pause: {}\n"
    )
    start_feature(git_remote, {"apps/web.yaml": canary_rollout("nginx:1.25", replicas=4, steps=steps)})
    git_remote.commit_and_push(
        "web 1.26", {"apps/web.yaml": canary_rollout("nginx:1.26", replicas=4, steps=steps)}, "feature"
    )

    code, report = plan_json(run_cli, git_remote)

    assert code == 0, report
    timeline = [
        "1. setWeight 25 → canary 1, stable 3",
        "2. pause 1m30s",
        "3. setWeight 75 → canary 3, stable 1",
        "4. pause until promoted (`gitdeploy rollout promote`)",
        "then full size → canary 4, stable 0",
    ]
    (web,) = report["apps"]
    assert (web["change"], web["strategy"]["type"], web["strategy"]["steps"]) == (
        "rollout",
        "Canary",
        timeline,
    )
    on_abort = "on abort: back to the stable at once, within maxSurge and maxUnavailable"
    assert web["strategy"]["onAbort"] == on_abort
    text = run_cli("plan", "--repo", git_remote.url, "--base", "main", "--head", "feature")
    assert "4 steps, timed pauses 1m30s in all, 1 pause until promoted" in text.stdout
    assert "\n".join(f"    {line}" for line in [*timeline, on_abort]) in text.stdout
