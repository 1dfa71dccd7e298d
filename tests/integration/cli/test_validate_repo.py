"""`gitdeploy validate --repo URL --ref REF`: manifests at a commit, read without a checkout."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.cli import EXAMPLES, RunCli
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.signing import create_signing_key, needs_gpg, remove_signing_key


def _example_files() -> dict[str, str]:
    return {
        str(path.relative_to(EXAMPLES)): path.read_text() for path in EXAMPLES.rglob("*") if path.is_file()
    }


def test_validates_a_branch_and_a_tag_of_a_remote(run_cli: RunCli, git_remote: GitRemote) -> None:
    git_remote.commit_and_push("Add the examples", _example_files())
    git_remote.create_tag("v1")
    broken = (EXAMPLES / "apps" / "api.yaml").read_text().replace("replicas: 4", "replicas: -4")
    git_remote.commit_and_push("Break api", {"apps/api.yaml": broken})

    good = run_cli("validate", "--repo", git_remote.url, "--ref", "v1", "-o", "json")
    assert good.returncode == 0, good.stderr
    assert len(json.loads(good.stdout)["apps"]) == 9

    bad = run_cli("validate", "--repo", git_remote.url, "--ref", "main", "-o", "json")
    assert bad.returncode == 1
    (error,) = json.loads(bad.stdout)["errors"]
    assert (error["file"], error["line"], error["app"]) == ("apps/api.yaml", 9, "demo/api")


def test_unknown_ref_and_unsafe_url_are_clear_errors(run_cli: RunCli, git_remote: GitRemote) -> None:
    git_remote.commit_and_push("Add the examples", _example_files())
    missing = run_cli("validate", "--repo", git_remote.url, "--ref", "no-such-branch")
    assert missing.returncode == 1
    assert "no-such-branch" in missing.stderr and "Traceback" not in missing.stderr
    unsafe = run_cli("validate", "--repo", "ext::sh -c 'touch pwned'")
    assert unsafe.returncode == 1
    assert "ext::" in unsafe.stderr


def test_path_and_repo_together_is_a_usage_error(run_cli: RunCli) -> None:
    done = run_cli("validate", "examples", "--repo", ".")
    assert done.returncode == 2


@needs_gpg
def test_trusted_key_refuses_an_unsigned_head(run_cli: RunCli, git_remote: GitRemote, tmp_path: Path) -> None:
    key = create_signing_key("reviewer", tmp_path)
    try:
        git_remote.commit_and_push("Unsigned change", _example_files())
        done = run_cli("validate", "--repo", git_remote.url, "--trusted-key", str(key.public_key_file))
        assert done.returncode == 1
        assert "sign" in done.stderr.lower() and "Traceback" not in done.stderr
    finally:
        remove_signing_key(key)
