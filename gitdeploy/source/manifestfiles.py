"""The manifest files of a commit, read from the mirror's object database without a checkout.

Reading a new head after a poll costs one ``diff-tree``: its file listing is the previous
listing with the diff applied (no ``ls-tree`` of the whole tree), the sizes of new blobs come
from a long-lived ``cat-file`` process, and commits that were heads resolve without git. The
listings and trees of the last few commits are cached.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

from gitdeploy.core.commits import FileChange, FileEntry, SourceFile, shorten_sha
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.errors import PermanentError
from gitdeploy.source import trees
from gitdeploy.source.mirror import Mirror

_TREE_CACHE_SIZE = 4
_OBJECT_NAME = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


class ManifestFiles:
    """The manifest files below ``subpath`` at the mirror's commits, within ``limits``.

    ``lock`` serialises the caches with the source's polls."""

    def __init__(
        self, mirror: Mirror, subpath: str, limits: trees.SourceLimits, lock: threading.RLock
    ) -> None:
        self.mirror = mirror
        self.subpath = subpath
        self.limits = limits
        self._lock = lock
        self._trees: OrderedDict[str, dict[str, trees.TreeEntry]] = OrderedDict()
        self._listings: OrderedDict[tuple[str, tuple[str, ...]], trees.Listing] = OrderedDict()

    def list_files(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[FileEntry]:
        """List the manifest files at commit ``sha`` without reading them (cached per commit).

        One ``git ls-tree`` per commit (none for a commit :meth:`changed_files` reached from a
        listed one); symlinks are resolved and the limits enforced here: a file that breaks them
        is left out, and :meth:`file_problems` says why.
        """
        return self._listing(self.mirror.resolve_commit(sha), tuple(suffixes)).sorted_entries()

    def file_problems(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[Diagnostic]:
        """The manifest files at commit ``sha`` that :meth:`list_files` leaves out, and why
        (a symlink that leaves the tracked path, a file over the size limit), by path."""
        problems = self._listing(self.mirror.resolve_commit(sha), tuple(suffixes)).problems
        return [problems[path] for path in sorted(problems)]

    def files_at(self, sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES) -> list[SourceFile]:
        """Read every manifest file at commit ``sha`` from the object database (no checkout)."""
        entries = self.list_files(sha, suffixes)
        blobs = trees.read_blobs(self.mirror.runner, (e.blob_sha for e in entries))
        return [SourceFile(path=e.path, blob_sha=e.blob_sha, data=blobs[e.blob_sha]) for e in entries]

    def read_blobs(self, blob_shas: Sequence[str]) -> dict[str, bytes]:
        """Read the given blobs (for example the new blobs of :meth:`changed_files`) in one go."""
        for blob in blob_shas:
            if not _OBJECT_NAME.match(blob):
                raise PermanentError(f"invalid blob id {blob!r}")
        return trees.read_blobs(self.mirror.runner, blob_shas)

    def changed_files(
        self, old_sha: str, new_sha: str, suffixes: Sequence[str] = trees.MANIFEST_SUFFIXES
    ) -> list[FileChange]:
        """Return the manifest files that differ between two commits, from one tree diff.

        Symlinks count as the file they point to. The listing of ``new_sha`` is used (and
        cached) to find symlinks whose target changed and to enforce the safety rules.
        """
        old, new = self.mirror.resolve_commit(old_sha), self.mirror.resolve_commit(new_sha)
        if old == new:
            return []
        raw = trees.diff_trees(self.mirror.runner, old, new, self.subpath)
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

    def _listing(self, sha: str, suffixes: tuple[str, ...]) -> trees.Listing:
        """The listing of commit ``sha``, from the cache or read from its tree."""
        with self._lock:
            listing = self._listings.get((sha, suffixes))
            if listing is None:
                listing = trees.list_manifests(
                    self.mirror.runner,
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
        found = self.mirror.runner.object_header(blob_sha)
        return found[1] if found is not None and found[0] == "blob" else None

    def _read_tree(self, sha: str) -> dict[str, trees.TreeEntry]:
        if sha in self._trees:
            self._trees.move_to_end(sha)
            return self._trees[sha]
        tree = trees.read_tree(self.mirror.runner, sha, self.subpath)
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
        status, _, _ = self.mirror.runner.run_unchecked("cat-file", "-e", f"{sha}:{path}")
        return status == 0
