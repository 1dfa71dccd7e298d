"""The remote of the config repository: where the tracked ref points, and fetching it into the mirror.

Where the ref points costs one ``git ls-remote`` (none for a tracked commit sha); a fetch is one
``git fetch`` and one ``for-each-ref`` (the fetched commit, its parents and the previous head). A
remote that cannot be reached is a :class:`~gitdeploy.errors.TransientError` whose ``retry_after``
grows with :attr:`Remote.failures`; a ref that is not there is a :class:`RefNotFoundError`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from gitdeploy.core.commits import shorten_sha
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.source.gitcmd import GitFailure, compute_backoff, translate_remote_failure
from gitdeploy.source.mirror import CommitNotFoundError, Mirror, tracking_ref
from gitdeploy.source.urls import RepoUrl, UrlKind, is_full_sha

_FETCH_OPTIONS = (
    "--no-tags",
    "--no-recurse-submodules",
    "--no-write-fetch-head",
    "--no-show-forced-updates",  # Mirror.descends decides that, usually without a process
    "--quiet",
)


class RefNotFoundError(PermanentError):
    """The tracked branch, tag or commit does not exist on the remote (or no longer does)."""


class Remote:
    """The tracked ``ref`` of the repository at ``url`` (None: the remote's default branch)."""

    def __init__(self, url: RepoUrl, ref: str | None, mirror: Mirror) -> None:
        self.url = url
        self.ref = ref
        self.mirror = mirror
        self.full_ref: str | None = None
        """The full ref the tracked one resolved to at the last ``ls-remote`` (None before)."""
        self.failures = 0
        """How many polls in a row failed with a transient error (drives the backoff)."""
        self.maintenance_pending = False
        """Whether a fetch for a push left git's automatic housekeeping to the next poll."""

    @property
    def head(self) -> str | None:
        """The commit the tracked ref pointed to at the last successful poll (kept across restarts)."""
        if self.full_ref is not None:
            candidates = [self.full_ref]
        elif self.ref is None:
            candidates = ["HEAD"]
        elif is_full_sha(self.ref) or self.ref.startswith("refs/"):
            candidates = [self.ref]
        else:
            candidates = [f"refs/heads/{self.ref}", f"refs/tags/{self.ref}"]
        for candidate in candidates:
            sha = self.mirror.read_ref(tracking_ref(candidate))
            if sha is not None:
                return sha
        return None

    def resolve(self) -> tuple[str, str]:
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
                raise self.ref_missing("HEAD", "the remote has no default branch")
            self.full_ref = full_ref
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
            raise self.ref_missing(self.ref, None)
        if len(present) > 1:
            raise PermanentError(
                f"ref {self.ref!r} is both a branch and a tag on {self.url.display}",
                hint=f"track refs/heads/{self.ref} or refs/tags/{self.ref} explicitly",
            )
        full_ref = present[0]
        self.full_ref = full_ref
        return full_ref, found.get(f"{full_ref}^{{}}", found[full_ref])

    def ref_missing(self, ref: str, why: str | None) -> RefNotFoundError:
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
            out = self.mirror.runner.run_remote("ls-remote", self.url.url, options, patterns)
        except GitFailure as failure:
            raise translate_remote_failure(
                failure, action="read", display_url=self.url.display, failures=self.failures + 1
            ) from None
        return out.decode("utf-8", errors="replace")

    def _check_local_source(self) -> None:
        if self.url.kind is UrlKind.LOCAL and not os.path.exists(self.url.url):
            raise TransientError(
                f"cannot read {self.url.display}: no such directory",
                hint="check the path; keeping the last synced commit and retrying",
                retry_after=compute_backoff(self.failures + 1),
            )

    def fetch_commit(self, sha: str) -> str:
        """Fetch commit ``sha`` into the mirror (unless it is there) and keep it."""
        options = _FETCH_OPTIONS
        if not self.mirror.has_commit(sha):
            self._fetch(options, (sha,), tolerate_missing=True)
        if not self.mirror.has_commit(sha):
            # Servers that refuse fetching by sha: fetch every branch and tag, then look.
            self._fetch(
                options,
                ("+refs/heads/*:refs/gitdeploy/all/heads/*", "+refs/tags/*:refs/gitdeploy/all/tags/*"),
            )
        if not self.mirror.has_commit(sha):
            raise self.ref_missing(sha, "no branch or tag of the remote reaches it")
        self.mirror.keep_commit(sha)
        return sha

    def fetch_named_ref(
        self, full_ref: str, *, for_push: bool = False
    ) -> tuple[str, tuple[str, ...] | None, str | None]:
        """Fetch a branch or tag: the commit it names now, that commit's parents (None when not
        known cheaply) and the commit the tracking ref holds; one ``git fetch``, one
        ``git for-each-ref``. A fetch for a push leaves git's automatic housekeeping (a check
        after every fetch) to the next poll without news."""
        fetched = f"refs/gitdeploy/fetched/{full_ref}"
        track = tracking_ref(full_ref)
        options = (*_FETCH_OPTIONS, "--no-auto-maintenance") if for_push else _FETCH_OPTIONS
        self._fetch(options, (f"+{full_ref}:{fetched}",))
        self.maintenance_pending |= for_push
        refs = self._read_refs(fetched, track)
        previous = refs[track][0] if track in refs else None
        if fetched in refs:
            head, parents = refs[fetched]
            return head, parents, previous
        sha = self.mirror.read_ref(fetched)  # a tag of a tag: let git peel it
        if sha is None:
            raise CommitNotFoundError(f"{full_ref} of {self.url.display} does not name a commit")
        return sha, None, previous

    def _read_refs(self, *refs: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        """The commit each of ``refs`` names (through one annotated tag) and its parents, from one
        ``git for-each-ref``; refs that are missing or name something else are left out."""
        fields = ("objecttype", "objectname", "parent")
        row = "%00".join(["%(refname)", *(f"%({f})" for f in fields), *(f"%(*{f})" for f in fields)])
        out = self.mirror.runner.run("for-each-ref", f"--format={row}", "--", *refs).decode()
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
            try:
                self.mirror.runner.run_remote("fetch", self.url.url, options, refspecs)
            except GitFailure as failure:
                if "cannot lock ref" not in failure.stderr:
                    raise
                # another process fetched into the same mirror (two runs on one --state-dir):
                # its ref moved under this fetch, which reads it again once
                self.mirror.runner.run_remote("fetch", self.url.url, options, refspecs)
        except GitFailure as failure:
            missing = any(m in failure.stderr.lower() for m in ("not our ref", "couldn't find remote ref"))
            if missing and tolerate_missing:
                return
            if missing:
                raise self.ref_missing(self.ref or "HEAD", "it disappeared while fetching") from None
            raise translate_remote_failure(
                failure,
                action="fetch",
                display_url=self.url.display,
                failures=self.failures + 1,
                local_dir=str(self.mirror.path),
            ) from None
