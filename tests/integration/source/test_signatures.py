"""--verify-commits: only commits signed by a trusted key are deployed (needs gpg; skipped without)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitdeploy.source.repo import ConfigRepo, UnverifiedCommitError
from gitdeploy.source.signatures import TrustedKeys
from tests.fixtures.gitrepo import GitRemote

pytestmark = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed")


@dataclass(frozen=True)
class SigningKey:
    home: str
    fingerprint: str
    public_key_file: Path


def run_gpg(home: str, *args: str) -> str:
    proc = subprocess.run(
        ["gpg", "--homedir", home, "--batch", "--no-tty", "--quiet", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return proc.stdout


def create_signing_key(name: str, out_dir: Path) -> SigningKey:
    """A throwaway ed25519 key without passphrase in its own short-path GnuPG home."""
    home = tempfile.mkdtemp(prefix="gd-gpg-")
    run_gpg(
        home,
        "--passphrase",
        "",
        "--quick-gen-key",
        f"{name} <{name}@example.com>",
        "ed25519",
        "sign",
        "never",
    )
    colons = run_gpg(home, "--with-colons", "--list-secret-keys")
    fingerprint = next(line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:"))
    public = out_dir / f"{name}.asc"
    public.write_text(run_gpg(home, "--armor", "--export", fingerprint))
    return SigningKey(home, fingerprint, public)


@pytest.fixture(scope="module")
def signing_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SigningKey, SigningKey]]:
    out = tmp_path_factory.mktemp("keys")
    keys = (create_signing_key("trusted", out), create_signing_key("stranger", out))
    yield keys
    for key in keys:
        subprocess.run(["gpgconf", "--homedir", key.home, "--kill", "all"], check=False, capture_output=True)
        shutil.rmtree(key.home, ignore_errors=True)


def commit_signed(remote: GitRemote, key: SigningKey, message: str, files: dict[str, str | bytes]) -> str:
    remote.write_files(files)
    sha = remote.commit_all(
        message,
        extra_args=(f"-S{key.fingerprint}",),
        env={
            "GNUPGHOME": key.home,
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "gpg.program",
            "GIT_CONFIG_VALUE_0": "gpg",
        },
    )
    remote.push()
    return sha


def test_only_commits_signed_by_a_trusted_key_are_deployed(
    git_remote: GitRemote, state_dir: Path, signing_keys: tuple[SigningKey, SigningKey]
) -> None:
    trusted, stranger = signing_keys
    keys = TrustedKeys.from_key_files([trusted.public_key_file], state_dir=state_dir)
    assert keys.fingerprints == {trusted.fingerprint}
    good = commit_signed(git_remote, trusted, "signed", {"a.yaml": "a: 1\n"})
    with ConfigRepo(git_remote.url, state_dir=state_dir, trusted_keys=keys) as repo:
        assert repo.poll().head == good
        assert repo.verify_commit(good).verified

        # An unsigned commit is refused, and stays refused on the next poll
        git_remote.commit_and_push("unsigned", {"a.yaml": "a: 2\n"})
        for _ in range(2):
            with pytest.raises(UnverifiedCommitError, match="is not signed") as info:
                repo.poll()
            assert repo.head == good
        assert not info.value.check.verified

        # A commit signed by a key that is not trusted is refused too
        commit_signed(git_remote, stranger, "stranger", {"a.yaml": "a: 3\n"})
        with pytest.raises(UnverifiedCommitError, match="not trusted"):
            repo.poll()
        assert repo.head == good

        # A new trusted commit on top is deployed again
        fixed = commit_signed(git_remote, trusted, "signed again", {"a.yaml": "a: 4\n"})
        assert repo.poll().head == fixed
