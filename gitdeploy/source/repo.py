"""The config repository: a bare mirror in the state directory, polled, read without checkout.

:class:`ConfigRepo` is the one object the controller and the CLI use. It keeps a bare mirror
under ``<state_dir>/source/`` that is created once and then only fetched into, and reads every
commit straight from that mirror's object database.

Refs in the mirror (all under ``refs/gitdeploy/``, nothing else is kept):

* ``track/<full ref>``: the commit the tracked ref pointed to at the last successful poll;
* ``fetched/<full ref>``: what the last fetch brought, before verification;
* ``keep/<sha>``: commits that must stay readable though no remote ref reaches them any more
  (the previous head after a force-push, a tracked commit sha).

Cost of a poll: when the tracked ref has not moved, one ``git ls-remote`` and one local
``rev-parse``, no fetch, no tree walk. When it moved, one ``git fetch``, one ``for-each-ref``
(the fetched commit, its parents and the previous head) and one ``update-ref`` more; a
``merge-base`` only when the previous head is not a parent of the new one. A poll for a push
(:meth:`ConfigRepo.poll` with ``pushed``) skips the ``ls-remote``.

Reading a new head after a poll costs one ``diff-tree``: its file listing is the previous
listing with the diff applied (no ``ls-tree`` of the whole tree), the sizes of new blobs come
from a long-lived ``cat-file`` process, and commits that were heads resolve without git.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
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
    shorten_sha,
)
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.source import history, trees, writer
from gitdeploy.source.gitcmd import GitFailure, GitRunner, compute_backoff, translate_remote_failure
from gitdeploy.source.signatures import TrustedKeys, verify_commit_signature
from gitdeploy.source.urls import (
    RepoUrl,
    UrlKind,
    check_ref_name,
    is_full_sha,
    normalise_repo_path,
    parse_repo_url,
)

log = logging.getLogger("gitdeploy.source")

_TREE_CACHE_SIZE = 4
_KNOWN_HEADS = 256
_OBJECT_NAME = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


class RefNotFoundError(PermanentError):
    """The tracked branch, tag or commit does not exist on the remote (or no longer does)."""


class CommitNotFoundError(PermanentError):
    """A commit asked for is not in the mirror (never fetched, or not a commit)."""


class UnverifiedCommitError(PermanentError):
    """``--verify-commits`` is on and the commit's signature does not verify; it is not deployed."""

    def __init__(self, check: SignatureCheck) -> None:
        super().__init__(
            f"not deploying: {check.reason}",
            hint="sign the commit with a trusted key (git commit -S), or add the key with --trusted-key",
        )
        self.check = check


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
        self._ensure_mirror()
        self._runner = GitRunner(
            str(self.mirror_path), redact=self.url.redact, network_timeout=network_timeout
        )
        self._failures = 0
        self._maintenance_pending = False
        self._verified: dict[str, SignatureCheck] = {}
        self._trees: OrderedDict[str, dict[str, trees.TreeEntry]] = OrderedDict()
        self._listings: OrderedDict[tuple[str, tuple[str, ...]], trees.Listing] = OrderedDict()
        self._full_ref: str | None = None
        self._walks: OrderedDict[str, history.ChangeWalk] = OrderedDict()
        self._heads: OrderedDict[str, None] = OrderedDict()
        # Polls and the per-commit caches are serialised; reads of different commits are cheap.
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"ConfigRepo({self.url.display!r}, ref={self.ref!r}, subpath={self.subpath!r})"

    def __enter__(self) -> ConfigRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the git helper processes this object started."""
        self._runner.close()

    # -- polling ---------------------------------------------------------------------------

    @property
    def git_command_counts(self) -> dict[str, int]:
        """How many times each git subcommand ran for this source so far."""
        return dict(self._runner.command_counts)

    @property
    def consecutive_failures(self) -> int:
        """How many polls in a row failed with a transient error (drives the backoff)."""
        return self._failures

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
                result = self._poll_once(pushed)
        except TransientError:
            self._failures += 1
            raise
        self._failures = 0
        return result

    def _poll_once(self, pushed: str | None) -> PollResult:
        if pushed is not None and (branch := self._pushed_branch(pushed)) is not None:
            try:
                head, parents, previous = self._fetch_named_ref(branch, for_push=True)
            except RefNotFoundError:
                pass  # gone since the push: a normal poll says what the remote has now
            else:
                if head != pushed:
                    log.info(
                        "[source] a push named %s, but %s is at %s (a replayed or out-of-order "
                        "delivery); syncing what the branch holds", shorten_sha(pushed), branch,
                        shorten_sha(head),
                    )  # fmt: skip
                return self._advance(branch, head, parents, previous)
        full_ref, remote_sha = self._resolve_remote_ref()
        previous = self._read_local_ref(self._tracking_ref(full_ref))
        if previous is not None and previous == remote_sha:
            self._check_head_signature(previous)
            self._remember_head(previous)
            if self._maintenance_pending:  # the housekeeping that push fetches left out
                self._maintenance_pending = False
                self._runner.run_unchecked("maintenance", "run", "--auto", "--quiet")
            return PollResult(ref=full_ref, head=previous, previous=previous)
        if is_full_sha(full_ref):
            head, parents = self._fetch_commit(full_ref), None
        else:
            head, parents, _ = self._fetch_named_ref(full_ref)
            if head != remote_sha:
                log.info("[source] %s moved again while fetching: %s", full_ref, shorten_sha(head))
        return self._advance(full_ref, head, parents, previous)

    def _pushed_branch(self, pushed: str) -> str | None:
        """The tracked branch to fetch at once for a push of ``pushed``; None for a normal poll.

        Only when an earlier poll resolved the tracked ref to a branch, and the pushed commit is
        not in the mirror yet (otherwise the delivery is a replay, or a poll got there first).
        """
        if not is_full_sha(pushed):
            return None
        branch = self._full_ref or self.ref
        if branch is None or not branch.startswith("refs/heads/"):
            return None
        if self._runner.object_header(pushed) is not None:
            return None
        return branch

    def _advance(
        self, full_ref: str, head: str, parents: tuple[str, ...] | None, previous: str | None
    ) -> PollResult:
        """Verify ``head`` and move the tracking ref to it (keeping ``previous`` after a force-push)."""
        self._check_head_signature(head)
        forced = previous is not None and head != previous and not self._descends(head, parents, previous)
        if forced and previous is not None:
            self._keep_commit(previous)
            log.warning(
                "[source] %s of %s was force-pushed: %s -> %s (not a descendant); the old commit is kept",
                full_ref, self.url.display, shorten_sha(previous), shorten_sha(head),
                extra={"commit": head, "previous_commit": previous},
            )  # fmt: skip
        if head != previous:
            self._runner.run("update-ref", "-m", "gitdeploy poll", self._tracking_ref(full_ref), head)
            shown_previous = shorten_sha(previous) if previous else "(none)"
            log.info(
                "[source] %s of %s moved: %s -> %s",
                full_ref, self.url.display, shown_previous, shorten_sha(head),
                extra={"commit": head},
            )  # fmt: skip
        self._remember_head(head)
        if previous is not None:
            self._remember_head(previous)
        return PollResult(ref=full_ref, head=head, previous=previous, forced=forced)

    def _descends(self, head: str, parents: tuple[str, ...] | None, previous: str) -> bool:
        """Whether ``head`` descends from ``previous``: at once when it is a parent, else one
        ``git merge-base``."""
        if parents is not None and previous in parents:
            return True
        status, _, err = self._runner.run_unchecked("merge-base", "--is-ancestor", previous, head)
        if status in (0, 1):
            return status == 0
        raise CommitNotFoundError(
            f"cannot compare {shorten_sha(previous)} and {shorten_sha(head)}: {err.strip()}"
        )

    def _remember_head(self, sha: str) -> None:
        """Remember a commit that was a synced head: the mirror keeps it (a tracking or keep ref
        reaches it), so :meth:`resolve_commit` needs no git process for it."""
        self._heads[sha] = None
        self._heads.move_to_end(sha)
        while len(self._heads) > _KNOWN_HEADS:
            self._heads.popitem(last=False)

    @property
    def head(self) -> str | None:
        """The commit the tracked ref pointed to at the last successful poll (kept across restarts)."""
        if self._full_ref is not None:
            candidates = [self._full_ref]
        elif self.ref is None:
            candidates = ["HEAD"]
        elif is_full_sha(self.ref) or self.ref.startswith("refs/"):
            candidates = [self.ref]
        else:
            candidates = [f"refs/heads/{self.ref}", f"refs/tags/{self.ref}"]
        for candidate in candidates:
            sha = self._read_local_ref(self._tracking_ref(candidate))
            if sha is not None:
                return sha
        return None

    def _tracking_ref(self, full_ref: str) -> str:
        if is_full_sha(full_ref):
            return f"refs/gitdeploy/keep/{full_ref}"
        return f"refs/gitdeploy/track/{full_ref}"

    def _resolve_remote_ref(self) -> tuple[str, str]:
        """Return (full ref, sha) of the tracked ref on the remote: one ``ls-remote``, or none for a sha."""
        if self.ref is not None and is_full_sha(self.ref):
            return self.ref, self.ref
        if self.ref is None:
            out = self._ls_remote(("--symref",), ("HEAD",))
            full_ref, sha = "HEAD", None
            for line in out.splitlines():
                left, _, name = line.partition("\t")
                if left.startswith("ref: ") and name == "HEAD":
                    full_ref = left.removeprefix("ref: ")
                elif name == "HEAD":
                    sha = left
            if sha is None:
                raise self._ref_missing("HEAD", "the remote has no default branch")
            self._full_ref = full_ref
            return full_ref, sha
        if self.ref.startswith("refs/"):
            candidates = [self.ref]
        else:
            candidates = [f"refs/heads/{self.ref}", f"refs/tags/{self.ref}"]
        patterns = [*candidates, *(f"{c}^{{}}" for c in candidates if c.startswith("refs/tags/"))]
        found: dict[str, str] = {}
        for line in self._ls_remote((), patterns).splitlines():
            sha, _, name = line.partition("\t")
            found[name] = sha
        present = [c for c in candidates if c in found]
        if not present:
            raise self._ref_missing(self.ref, None)
        if len(present) > 1:
            raise PermanentError(
                f"ref {self.ref!r} is both a branch and a tag on {self.url.display}",
                hint=f"track refs/heads/{self.ref} or refs/tags/{self.ref} explicitly",
            )
        full_ref = present[0]
        self._full_ref = full_ref
        return full_ref, found.get(f"{full_ref}^{{}}", found[full_ref])

    def _ref_missing(self, ref: str, why: str | None) -> RefNotFoundError:
        last = self.head
        if last is not None:
            return RefNotFoundError(
                f"ref {ref!r} no longer exists on {self.url.display} (deleted?); "
                f"last synced commit {shorten_sha(last)} stays deployed",
                hint="restore the branch or tag, or point gitdeploy at another ref",
            )
        return RefNotFoundError(
            f"ref {ref!r} does not exist on {self.url.display}" + (f" ({why})" if why else ""),
            hint="check the --ref value (a branch, a tag or a full commit sha)",
        )

    def _ls_remote(self, options: Sequence[str], patterns: Sequence[str]) -> str:
        self._check_local_source()
        try:
            out = self._runner.run_remote("ls-remote", self.url.url, options, patterns)
        except GitFailure as failure:
            raise translate_remote_failure(
                failure, action="read", display_url=self.url.display, failures=self._failures + 1
            ) from None
        return out.decode("utf-8", errors="replace")

    def _check_local_source(self) -> None:
        if self.url.kind is UrlKind.LOCAL and not os.path.exists(self.url.url):
            raise TransientError(
                f"cannot read {self.url.display}: no such directory",
                hint="check the path; keeping the last synced commit and retrying",
                retry_after=compute_backoff(self._failures + 1),
            )

    _FETCH_OPTIONS = (
        "--no-tags",
        "--no-recurse-submodules",
        "--no-write-fetch-head",
        "--no-show-forced-updates",  # _descends decides that, usually without a process
        "--quiet",
    )

    def _fetch_commit(self, sha: str) -> str:
        """Fetch commit ``sha`` into the mirror (unless it is there) and keep it."""
        options = self._FETCH_OPTIONS
        if not self._has_commit(sha):
            self._fetch(options, (sha,), tolerate_missing=True)
        if not self._has_commit(sha):
            # Servers that refuse fetching by sha: fetch every branch and tag, then look.
            self._fetch(
                options,
                ("+refs/heads/*:refs/gitdeploy/all/heads/*", "+refs/tags/*:refs/gitdeploy/all/tags/*"),
            )
        if not self._has_commit(sha):
            raise self._ref_missing(sha, "no branch or tag of the remote reaches it")
        self._keep_commit(sha)
        return sha

    def _fetch_named_ref(
        self, full_ref: str, *, for_push: bool = False
    ) -> tuple[str, tuple[str, ...] | None, str | None]:
        """Fetch a branch or tag: the commit it names now, that commit's parents (None when not
        known cheaply) and the commit the tracking ref holds; one ``git fetch``, one
        ``git for-each-ref``. A fetch for a push leaves git's automatic housekeeping (a check
        after every fetch) to the next poll without news."""
        fetched = f"refs/gitdeploy/fetched/{full_ref}"
        track = self._tracking_ref(full_ref)
        options = (*self._FETCH_OPTIONS, "--no-auto-maintenance") if for_push else self._FETCH_OPTIONS
        self._fetch(options, (f"+{full_ref}:{fetched}",))
        self._maintenance_pending |= for_push
        refs = self._read_refs(fetched, track)
        previous = refs[track][0] if track in refs else None
        if fetched in refs:
            head, parents = refs[fetched]
            return head, parents, previous
        sha = self._read_local_ref(fetched)  # a tag of a tag: let git peel it
        if sha is None:
            raise CommitNotFoundError(f"{full_ref} of {self.url.display} does not name a commit")
        return sha, None, previous

    def _read_refs(self, *refs: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        """The commit each of ``refs`` names (through one annotated tag) and its parents, from one
        ``git for-each-ref``; refs that are missing or name something else are left out."""
        fields = ("objecttype", "objectname", "parent")
        row = "%00".join(["%(refname)", *(f"%({f})" for f in fields), *(f"%(*{f})" for f in fields)])
        out = self._runner.run("for-each-ref", f"--format={row}", "--", *refs).decode()
        found: dict[str, tuple[str, tuple[str, ...]]] = {}
        for line in out.splitlines():
            name, kind, sha, parents, peeled_kind, peeled_sha, peeled_parents = line.split("\0")
            if kind == "tag":
                kind, sha, parents = peeled_kind, peeled_sha, peeled_parents
            if name in refs and kind == "commit":
                found[name] = (sha, tuple(parents.split()))
        return found

    def _fetch(
        self, options: Sequence[str], refspecs: Sequence[str], *, tolerate_missing: bool = False
    ) -> None:
        try:
            self._runner.run_remote("fetch", self.url.url, options, refspecs)
        except GitFailure as failure:
            missing = any(m in failure.stderr.lower() for m in ("not our ref", "couldn't find remote ref"))
            if missing and tolerate_missing:
                return
            if missing:
                raise self._ref_missing(self.ref or "HEAD", "it disappeared while fetching") from None
            raise translate_remote_failure(
                failure,
                action="fetch",
                display_url=self.url.display,
                failures=self._failures + 1,
                local_dir=str(self.mirror_path),
            ) from None

    def _check_head_signature(self, sha: str) -> None:
        if self.trusted_keys is None:
            return
        check = self.verify_commit(sha)
        if not check.verified:
            log.warning("[source] %s", check.reason, extra={"commit": sha})
            raise UnverifiedCommitError(check)

    def verify_commit(self, sha: str) -> SignatureCheck:
        """Check commit ``sha`` against the trusted keys (results are remembered per sha)."""
        if self.trusted_keys is None:
            raise PermanentError(
                "commit verification is not configured", hint="pass --verify-commits --trusted-key FILE"
            )
        if sha not in self._verified:
            self._verified[sha] = verify_commit_signature(
                self._runner, self.resolve_commit(sha), self.trusted_keys
            )
        return self._verified[sha]

    # -- reading commits -------------------------------------------------------------------

    def resolve_commit(self, rev: str) -> str:
        """Return the full sha of ``rev`` (a sha, or a ref of the mirror); raise if it is not here."""
        rev = check_ref_name(rev)
        if rev in self._heads:
            return rev
        sha = self._read_local_ref(rev)
        if sha is None:
            raise CommitNotFoundError(
                f"commit {rev} is not in the mirror of {self.url.display}",
                hint="poll the source first; the commit may have been force-pushed away before a fetch",
            )
        return sha

    def is_ancestor(self, old_sha: str, new_sha: str) -> bool:
        """Whether ``old_sha`` is ``new_sha`` or one of its ancestors (false after a force-push)."""
        old, new = self.resolve_commit(old_sha), self.resolve_commit(new_sha)
        return old == new or self._descends(new, None, old)

    def list_files(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[FileEntry]:
        """List the manifest files at commit ``sha`` without reading them (cached per commit).

        One ``git ls-tree`` per commit (none for a commit :meth:`changed_files` reached from a
        listed one); symlinks are resolved and the limits enforced here: a file that breaks them
        is left out, and :meth:`file_problems` says why.
        """
        return self._listing(self.resolve_commit(sha), tuple(suffixes)).sorted_entries()

    def file_problems(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[Diagnostic]:
        """The manifest files at commit ``sha`` that :meth:`list_files` leaves out, and why
        (a symlink that leaves the tracked path, a file over the size limit), by path."""
        problems = self._listing(self.resolve_commit(sha), tuple(suffixes)).problems
        return [problems[path] for path in sorted(problems)]

    def _listing(self, sha: str, suffixes: tuple[str, ...]) -> trees.Listing:
        """The listing of commit ``sha``, from the cache or read from its tree."""
        with self._lock:
            listing = self._listings.get((sha, suffixes))
            if listing is None:
                listing = trees.list_manifests(
                    self._runner,
                    sha,
                    self._read_tree(sha),
                    root=self.subpath,
                    suffixes=suffixes,
                    limits=self.limits,
                )
            self._cache_listing(sha, suffixes, listing)
            return listing

    def _derive_listing(
        self, old: str, new: str, raw: Sequence[trees.RawChange], suffixes: tuple[str, ...]
    ) -> trees.Listing | None:
        """The listing of ``new`` from the cached listing of ``old`` and their diff (cached too);
        None when ``old``'s is not cached or the diff cannot be applied (see :func:`trees.apply_diff`)."""
        with self._lock:
            listing = self._listings.get((new, suffixes))
            base = self._listings.get((old, suffixes))
            if listing is None and base is not None:
                listing = trees.apply_diff(
                    base,
                    raw,
                    sha=new,
                    root=self.subpath,
                    suffixes=suffixes,
                    limits=self.limits,
                    size_of=self._blob_size,
                )
            if listing is not None:
                self._cache_listing(new, suffixes, listing)
            return listing

    def _cache_listing(self, sha: str, suffixes: tuple[str, ...], listing: trees.Listing) -> None:
        self._listings[(sha, suffixes)] = listing
        self._listings.move_to_end((sha, suffixes))
        while len(self._listings) > _TREE_CACHE_SIZE:
            self._listings.popitem(last=False)

    def _blob_size(self, blob_sha: str) -> int | None:
        found = self._runner.object_header(blob_sha)
        return found[1] if found is not None and found[0] == "blob" else None

    def _read_tree(self, sha: str) -> dict[str, trees.TreeEntry]:
        if sha in self._trees:
            self._trees.move_to_end(sha)
            return self._trees[sha]
        tree = trees.read_tree(self._runner, sha, self.subpath)
        if self.subpath and not tree and not self._path_exists(sha, self.subpath):
            raise PermanentError(
                f"the tracked path {self.subpath!r} does not exist at commit {shorten_sha(sha)}",
                hint="check the --path value, or whether the directory was renamed",
            )
        self._trees[sha] = tree
        while len(self._trees) > _TREE_CACHE_SIZE:
            self._trees.popitem(last=False)
        return tree

    def _path_exists(self, sha: str, path: str) -> bool:
        status, _, _ = self._runner.run_unchecked("cat-file", "-e", f"{sha}:{path}")
        return status == 0

    def files_at(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[SourceFile]:
        """Read every manifest file at commit ``sha`` from the object database (no checkout)."""
        entries = self.list_files(sha, suffixes)
        blobs = trees.read_blobs(self._runner, (e.blob_sha for e in entries))
        return [SourceFile(path=e.path, blob_sha=e.blob_sha, data=blobs[e.blob_sha]) for e in entries]

    def read_blobs(self, blob_shas: Sequence[str]) -> dict[str, bytes]:
        """Read the given blobs (for example the new blobs of :meth:`changed_files`) in one go."""
        for blob in blob_shas:
            if not _OBJECT_NAME.match(blob):
                raise PermanentError(f"invalid blob id {blob!r}")
        return trees.read_blobs(self._runner, blob_shas)

    def changed_files(
        self, old_sha: str, new_sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES
    ) -> list[FileChange]:
        """Return the manifest files that differ between two commits, from one tree diff.

        Symlinks count as the file they point to. The listing of ``new_sha`` is used (and
        cached) to find symlinks whose target changed and to enforce the safety rules.
        """
        old, new = self.resolve_commit(old_sha), self.resolve_commit(new_sha)
        if old == new:
            return []
        raw = trees.diff_trees(self._runner, old, new, self.subpath)
        key = tuple(suffixes)
        derived = self._derive_listing(old, new, raw, key)
        if not raw:
            return []
        new_manifests = (derived or self._listing(new, key)).entries
        old_manifests = None
        if any(c.old_mode == trees.SYMLINK_MODE for c in raw):
            old_manifests = self._listing(old, key).entries
        return trees.select_manifest_changes(
            raw,
            root=self.subpath,
            suffixes=suffixes,
            new_manifests=new_manifests,
            old_manifests=old_manifests,
        )

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

    # -- mirror housekeeping ---------------------------------------------------------------

    def _ensure_mirror(self) -> None:
        if (self.mirror_path / "HEAD").exists():
            return
        self.mirror_path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".init-", dir=self.mirror_path.parent))
        try:
            runner = GitRunner(str(staging), redact=self.url.redact)
            status, _, err = runner.run_unchecked("init", "--bare", "--quiet", str(staging))
            if status != 0:
                raise PermanentError(f"cannot create the mirror in {self.mirror_path.parent}: {err.strip()}")
            for key, value in (
                ("transfer.fsckObjects", "true"),
                ("core.logAllRefUpdates", "always"),
                ("gc.reflogExpire", "never"),
                ("gc.reflogExpireUnreachable", "never"),
            ):
                runner.run("config", key, value)
            runner.close()
            try:
                staging.rename(self.mirror_path)
            except OSError:
                if not (self.mirror_path / "HEAD").exists():
                    raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    def _read_local_ref(self, rev: str) -> str | None:
        status, out, _ = self._runner.run_unchecked(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"
        )
        return out.decode().strip() if status == 0 else None

    def _has_commit(self, sha: str) -> bool:
        return self._read_local_ref(sha) is not None

    def _keep_commit(self, sha: str) -> None:
        self._runner.run("update-ref", "-m", "gitdeploy keep", f"refs/gitdeploy/keep/{sha}", sha)
