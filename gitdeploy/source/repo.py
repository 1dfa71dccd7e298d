"""The config repository: a bare mirror in the state directory, polled, read without checkout.

:class:`ConfigRepo` is the one object the controller and the CLI use. It keeps a bare mirror
under ``<state_dir>/source/`` that is created once and then only fetched into, and reads every
commit straight from that mirror's object database. Its parts:

* :mod:`~gitdeploy.source.mirror` — the mirror and its refs (``refs/gitdeploy/...``);
* :mod:`~gitdeploy.source.remote` — where the tracked ref points on the remote, and fetches;
* :mod:`~gitdeploy.source.polling` — a poll: fetch only when the ref moved, verify, move the
  tracking ref (and what a poll costs in git processes);
* :mod:`~gitdeploy.source.signatures` — commit signatures against the trusted keys;
* :mod:`~gitdeploy.source.manifestfiles` — the manifest files of a commit, listed, read and diffed;
* :mod:`~gitdeploy.source.history` and :mod:`~gitdeploy.source.writer` — history and commits.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

from gitdeploy.core.commits import (
    Author,
    CommitInfo,
    FileChange,
    FileEntry,
    PollResult,
    SignatureCheck,
    SourceFile,
)
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.errors import TransientError
from gitdeploy.source import history, trees, writer
from gitdeploy.source.manifestfiles import ManifestFiles
from gitdeploy.source.mirror import CommitNotFoundError, Mirror
from gitdeploy.source.polling import Poller
from gitdeploy.source.remote import RefNotFoundError, Remote
from gitdeploy.source.signatures import CommitVerifier, TrustedKeys, UnverifiedCommitError
from gitdeploy.source.urls import RepoUrl, check_ref_name, normalise_repo_path, parse_repo_url

__all__ = ["CommitNotFoundError", "ConfigRepo", "RefNotFoundError", "UnverifiedCommitError"]


class ConfigRepo:
    """A config repository tracked at one ref, optionally below a sub-path (monorepos).

    ``url_or_path`` is a local path or a ``file://``, ``https://``, ``ssh://`` or scp-like
    address (see :mod:`gitdeploy.source.urls` for the safety rules). ``ref`` is a branch, a tag,
    a full ref (``refs/heads/x``) or a full commit sha; ``None`` follows the remote's default
    branch. ``subpath`` limits every read to that directory. The mirror lives under
    ``state_dir``. With ``trusted_keys``, a head whose signature does not verify is refused.
    """

    def __init__(
        self,
        url_or_path: str,
        *,
        ref: str | None = "main",
        subpath: str = "",
        state_dir: str | os.PathLike[str],
        limits: trees.SourceLimits | None = None,
        trusted_keys: TrustedKeys | None = None,
        network_timeout: float = 120.0,
    ) -> None:
        self.url: RepoUrl = parse_repo_url(url_or_path)
        self.ref = check_ref_name(ref) if ref is not None else None
        self.subpath = normalise_repo_path(subpath, what="sub-path")
        self.limits = limits or trees.SourceLimits()
        self.trusted_keys = trusted_keys
        self.mirror_path = Path(state_dir) / "source" / f"{self.url.cache_key}.git"
        self._mirror = Mirror(self.url, self.mirror_path, network_timeout)
        self._runner = self._mirror.runner
        self._remote = Remote(self.url, self.ref, self._mirror)
        self._verifier = CommitVerifier(self._mirror, trusted_keys)
        self._poller = Poller(self._remote, self._verifier)
        # Polls and the per-commit caches are serialised; reads of different commits are cheap.
        self._lock = threading.RLock()
        self._files = ManifestFiles(self._mirror, self.subpath, self.limits, self._lock)
        self._walks: OrderedDict[str, history.ChangeWalk] = OrderedDict()

    def __repr__(self) -> str:
        return f"ConfigRepo({self.url.display!r}, ref={self.ref!r}, subpath={self.subpath!r})"

    def __enter__(self) -> ConfigRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the git helper processes this object started."""
        self._mirror.close()

    # -- polling (polling.py, remote.py, signatures.py) ------------------------------------

    @property
    def git_command_counts(self) -> dict[str, int]:
        """How many times each git subcommand ran for this source so far."""
        return dict(self._runner.command_counts)

    @property
    def consecutive_failures(self) -> int:
        """How many polls in a row failed with a transient error (drives the backoff)."""
        return self._remote.failures

    def poll(self, pushed: str | None = None) -> PollResult:
        """Find where the tracked ref points now, fetching only when it moved.

        ``pushed`` is the commit a verified push event named for the tracked branch: a hint,
        never what gets synced. When the mirror lacks that commit, the branch is fetched at once
        (no ``ls-remote`` first) and the poll syncs whatever the fetch brought, so a delivery that
        is replayed or arrives out of order behaves as a normal poll.

        Raises :class:`~gitdeploy.errors.TransientError` (with a growing ``retry_after``) when the
        remote cannot be reached, :class:`RefNotFoundError` when the ref does not exist,
        :class:`UnverifiedCommitError` when commit verification is on and the head fails it.
        In every error case the last synced commit stays as it was.
        """
        try:
            with self._lock:
                result = self._poller.poll_once(pushed)
        except TransientError:
            self._remote.failures += 1
            raise
        self._remote.failures = 0
        return result

    @property
    def head(self) -> str | None:
        """The commit the tracked ref pointed to at the last successful poll (kept across restarts)."""
        return self._remote.head

    def verify_commit(self, sha: str) -> SignatureCheck:
        """Check commit ``sha`` against the trusted keys (results are remembered per sha)."""
        return self._verifier.verify_commit(sha)

    # -- reading commits (mirror.py, manifestfiles.py, history.py) -------------------------

    def resolve_commit(self, rev: str) -> str:
        """Return the full sha of ``rev`` (a sha, or a ref of the mirror); raise if it is not here."""
        return self._mirror.resolve_commit(rev)

    def is_ancestor(self, old_sha: str, new_sha: str) -> bool:
        """Whether ``old_sha`` is ``new_sha`` or one of its ancestors (false after a force-push)."""
        old, new = self.resolve_commit(old_sha), self.resolve_commit(new_sha)
        return old == new or self._mirror.descends(new, None, old)

    def recent_commits(self, sha: str, limit: int) -> frozenset[str]:
        """Commit ``sha`` and its ancestors, the ``limit`` newest of them: a commit among them is
        older than ``sha`` with no ``git merge-base`` of its own (see :meth:`is_ancestor`)."""
        return self._mirror.recent_commits(self.resolve_commit(sha), limit)

    def list_files(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[FileEntry]:
        """The manifest files at commit ``sha``, not read (see :meth:`ManifestFiles.list_files`)."""
        return self._files.list_files(sha, suffixes)

    def file_problems(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[Diagnostic]:
        """The manifest files at ``sha`` that :meth:`list_files` leaves out, and why."""
        return self._files.file_problems(sha, suffixes)

    def files_at(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[SourceFile]:
        """Read every manifest file at commit ``sha`` from the object database (no checkout)."""
        return self._files.files_at(sha, suffixes)

    def read_blobs(self, blob_shas: Sequence[str]) -> dict[str, bytes]:
        """Read the given blobs (for example the new blobs of :meth:`changed_files`) in one go."""
        return self._files.read_blobs(blob_shas)

    def changed_files(
        self, old_sha: str, new_sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES
    ) -> list[FileChange]:
        """The manifest files that differ between two commits (see :meth:`ManifestFiles.changed_files`)."""
        return self._files.changed_files(old_sha, new_sha, suffixes)

    def commit(self, sha: str) -> CommitInfo:
        """Return the metadata of commit ``sha``: sha, author, dates, committer, subject, message."""
        return history.read_commit(self._runner, self.resolve_commit(sha))

    def path_history(self, path: str, *, at_sha: str | None = None, max_count: int = 20) -> list[CommitInfo]:
        """Return the commits that changed ``path`` (repository-relative), newest first.

        Walks back from ``at_sha`` (default: the head of the last poll).
        """
        start = at_sha or self.head
        if start is None:
            raise CommitNotFoundError("no commit to start from", hint="poll the source first")
        clean = normalise_repo_path(path, what="path")
        if max_count < 1:
            return []
        return history.read_path_history(self._runner, clean, self.resolve_commit(start), max_count)

    def last_change(self, path: str, at_sha: str | None = None) -> CommitInfo | None:
        """Return the most recent commit at or before ``at_sha`` that changed ``path``, if any."""
        commits = self.path_history(path, at_sha=at_sha, max_count=1)
        return commits[0] if commits else None

    def attribute(self, path: str, at_sha: str) -> CommitInfo | None:
        """Like :meth:`last_change` for a file present at ``at_sha``, but every path of one commit
        shares one walk of history (:class:`~gitdeploy.source.history.ChangeWalk`): attributing
        the 10,000 files of a first deploy costs a few ``git log`` processes, not 10,000."""
        with self._lock:
            walk = self._walks.get(at_sha)
            if walk is None:
                walk = history.ChangeWalk(self._runner, self.resolve_commit(at_sha), self.subpath)
                self._walks[at_sha] = walk
                while len(self._walks) > 2:
                    self._walks.popitem(last=False)
        return walk.last_change(normalise_repo_path(path, what="path"))

    # -- writing ---------------------------------------------------------------------------

    def write_commit(
        self,
        branch: str,
        files: Mapping[str, bytes | None],
        message: str,
        author: Author,
        base_sha: str,
        *,
        committer: Author | None = None,
        authored_at: float | None = None,
        push: bool = True,
    ) -> str:
        """Commit ``files`` on top of ``base_sha`` and push to ``branch``; never force-pushes.

        Raises :class:`~gitdeploy.source.writer.BranchMovedError` when ``branch`` exists and
        no longer points at ``base_sha``. Returns the new commit's sha.
        """
        return writer.write_commit(
            self._runner,
            self.url,
            branch=branch,
            files=files,
            message=message,
            author=author,
            base_sha=self.resolve_commit(base_sha),
            committer=committer,
            authored_at=authored_at,
            root=self.subpath,
            push=push,
        )
