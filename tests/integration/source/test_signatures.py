"""--verify-commits: only commits signed by a trusted key are deployed (needs gpg; skipped without)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitdeploy.source.repo import ConfigRepo, UnverifiedCommitError
from gitdeploy.source.signatures import TrustedKeys
from tests.fixtures.gitrepo import GitRemote
from tests.fixtures.signing import SigningKey, commit_signed, needs_gpg

pytestmark = needs_gpg


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
