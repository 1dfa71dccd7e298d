"""Reading trees from the object database: listing files at a commit, symlinks, tree diffs.

Nothing here checks out files. ``git ls-tree`` lists a commit's tree, ``git cat-file --batch``
reads blobs, and ``git diff-tree`` compares two commits, so any past commit can be read at any
time and at the cost of one process each.

Rules for the files a source reads (all paths are relative to the repository root):

* only regular files and symlinks under the tracked path whose name ends in one of the
  manifest suffixes; no path component may start with ``.`` (``.github/``, ``.yamllint.yml``);
* a symlink is followed inside the tracked path (up to :attr:`SourceLimits.max_symlink_hops`);
  one that leads out of it, is absolute, or points at nothing is that file's problem
  (:attr:`Listing.problems`, a :class:`~gitdeploy.core.diagnostics.Diagnostic`), never read;
* so is a file larger than :attr:`SourceLimits.max_file_bytes`; more manifests than
  :attr:`SourceLimits.max_files` is a :class:`~gitdeploy.errors.PermanentError` for the commit.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from gitdeploy.core.commits import ChangeType, FileChange, FileEntry, shorten_sha
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.errors import PermanentError
from gitdeploy.source.gitcmd import GitRunner

MANIFEST_SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".json")
SYMLINK_MODE = "120000"
SUBMODULE_MODE = "160000"
_ZERO_SHAS = frozenset({"0" * 40, "0" * 64})


@dataclass(frozen=True)
class SourceLimits:
    """Bounds on what one commit may hold before the source refuses it."""

    max_file_bytes: int = 1024 * 1024
    max_files: int = 50_000
    max_symlink_hops: int = 8


@dataclass(frozen=True)
class TreeEntry:
    """One blob in a commit's tree, as ``git ls-tree -r -l`` shows it."""

    mode: str
    sha: str
    size: int


def is_inside(path: str, root: str) -> bool:
    """Whether repository path ``path`` is ``root`` or below it (``root`` '' is the whole repo)."""
    return not root or path == root or path.startswith(root + "/")


def is_manifest_path(path: str, root: str, suffixes: Sequence[str]) -> bool:
    """Whether ``path`` is a manifest the source reads: under ``root``, not hidden, right suffix.

    >>> is_manifest_path("deploy/web.yaml", "deploy", (".yaml",))
    True
    >>> is_manifest_path("deploy/.github/ci.yaml", "deploy", (".yaml",))
    False
    """
    if not is_inside(path, root) or path == root:
        return False
    if any(part.startswith(".") for part in path.split("/")):
        return False
    return path.lower().endswith(tuple(s.lower() for s in suffixes))


def read_tree(runner: GitRunner, sha: str, root: str) -> dict[str, TreeEntry]:
    """List every blob and symlink under ``root`` at commit ``sha`` (one ``git ls-tree``)."""
    args = ["ls-tree", "-r", "-l", "-z", "--full-tree", f"{sha}^{{tree}}"]
    if root:
        args += ["--", root]
    out = runner.run(*args)
    tree: dict[str, TreeEntry] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        header, _, raw_path = record.partition(b"\t")
        mode, kind, obj, size = header.decode("ascii").split()
        path = raw_path.decode("utf-8", errors="surrogateescape")
        if kind != "blob":
            if mode == SUBMODULE_MODE and root and path == root:
                raise PermanentError(f"the tracked path {root!r} is a git submodule at {shorten_sha(sha)}")
            continue
        check_entry_path(path, sha)
        tree[path] = TreeEntry(mode=mode, sha=obj, size=int(size))
    if root and root in tree:
        raise PermanentError(
            f"the tracked path {root!r} is a file or symlink at commit {shorten_sha(sha)}, not a directory",
            hint="point the source at a directory of manifests",
        )
    return tree


def check_entry_path(path: str, sha: str) -> None:
    """Refuse tree entries no checkout could hold (a crafted tree with '..' or empty names)."""
    parts = path.split("/")
    if any(part in ("", ".", "..", ".git") for part in parts):
        raise PermanentError(f"commit {shorten_sha(sha)} holds an unsafe path {path!r}")


FEW_BLOBS = 16
"""Up to this many blobs are read from the runner's long-lived reader, not a new process."""


def read_blobs(runner: GitRunner, shas: Iterable[str]) -> dict[str, bytes]:
    """Read many blobs in one ``git cat-file --batch`` (a few through the long-lived reader);
    raise if one is missing."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    if len(wanted) <= FEW_BLOBS:
        found = {sha: runner.object_data(sha) for sha in wanted}
        if all(item is not None and item[0] == "blob" for item in found.values()):
            return {sha: item[1] for sha, item in found.items() if item is not None}
    out = runner.run("cat-file", "--batch", stdin=("\n".join(wanted) + "\n").encode())
    blobs: dict[str, bytes] = {}
    pos = 0
    for sha in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode("ascii", errors="replace").split()
        if len(header) != 3 or header[1] != "blob":
            raise PermanentError(f"blob {shorten_sha(sha)} is missing from the mirror")
        size = int(header[2])
        blobs[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return blobs


@dataclass(frozen=True)
class Listing:
    """The manifest files at one commit, by path, with symlinks resolved."""

    entries: dict[str, FileEntry]
    has_links: bool
    """Whether a manifest path is a symlink (then a target's change changes the link too)."""
    problems: dict[str, Diagnostic] = field(default_factory=dict)
    """Manifest paths that are not read, and why (a symlink out of the tree, a file too large)."""

    def sorted_entries(self) -> list[FileEntry]:
        return [self.entries[path] for path in sorted(self.entries)]


def list_manifests(
    runner: GitRunner,
    sha: str,
    tree: dict[str, TreeEntry],
    *,
    root: str,
    suffixes: Sequence[str],
    limits: SourceLimits,
) -> Listing:
    """Return the manifest files in ``tree`` with symlinks resolved and the limits enforced."""
    paths = sorted(p for p in tree if is_manifest_path(p, root, suffixes))
    check_file_count(len(paths), sha, root, limits)
    links = [p for p in paths if tree[p].mode == SYMLINK_MODE]
    link_texts = read_blobs(runner, (tree[p].sha for p in links))
    entries: dict[str, FileEntry] = {}
    problems: dict[str, Diagnostic] = {}
    for path in paths:
        entry = tree[path]
        target: str | None = None
        try:
            if entry.mode == SYMLINK_MODE:
                target, entry = resolve_symlink(runner, sha, tree, path, link_texts, root=root, limits=limits)
            check_file_size(path, sha, entry.size, limits)
        except PermanentError as problem:  # this file's diagnostic; the others are read
            problems[path] = Diagnostic(path, 1, 1, "", problem.message, problem.hint)
            continue
        entries[path] = FileEntry(path=path, blob_sha=entry.sha, size=entry.size, link_target=target)
    return Listing(entries, has_links=bool(links), problems=problems)


def apply_diff(
    listing: Listing,
    raw: Sequence[RawChange],
    *,
    sha: str,
    root: str,
    suffixes: Sequence[str],
    limits: SourceLimits,
    size_of: Callable[[str], int | None],
) -> Listing | None:
    """The listing at commit ``sha`` from ``listing`` (an earlier commit's) and the raw diff between
    them, with the same rules and limits as :func:`list_manifests`, without listing the tree.

    Only for plain files: None (list the tree instead) when a symlink or a submodule is on either
    side, the tracked path itself changed, no manifest is left, a file has a problem on either
    side, or ``size_of`` (blob sha to size) does not know a new blob.
    """
    if not raw:
        return listing
    if listing.has_links or listing.problems:
        return None
    entries = dict(listing.entries)
    for change in raw:
        modes = (change.old_mode, change.new_mode)
        if SYMLINK_MODE in modes or SUBMODULE_MODE in modes or change.path == root:
            return None
        if change.new_sha is not None:
            check_entry_path(change.path, sha)
        if not is_manifest_path(change.path, root, suffixes):
            continue
        if change.new_sha is None:
            entries.pop(change.path, None)
            continue
        size = size_of(change.new_sha)
        if size is None or size > limits.max_file_bytes:  # a new problem: list the tree
            return None
        entries[change.path] = FileEntry(path=change.path, blob_sha=change.new_sha, size=size)
    if not entries:
        return None
    check_file_count(len(entries), sha, root, limits)
    return Listing(entries, has_links=False)


def check_file_count(count: int, sha: str, root: str, limits: SourceLimits) -> None:
    if count > limits.max_files:
        raise PermanentError(
            f"commit {shorten_sha(sha)} has {count} manifest files under "
            f"{root or 'the repository root'}, "
            f"more than the limit of {limits.max_files}",
            hint="track a directory of the repo that holds fewer manifest files (--path DIR)",
        )


def check_file_size(path: str, sha: str, size: int, limits: SourceLimits) -> None:
    if size > limits.max_file_bytes:
        raise PermanentError(
            f"{path} at commit {shorten_sha(sha)} is {size} bytes, "
            f"more than the limit of {limits.max_file_bytes}",
            hint="split its documents over several smaller files",
        )


def resolve_symlink(
    runner: GitRunner,
    sha: str,
    tree: dict[str, TreeEntry],
    path: str,
    link_texts: dict[str, bytes],
    *,
    root: str,
    limits: SourceLimits,
) -> tuple[str, TreeEntry]:
    """Follow the symlink at ``path`` to a regular file inside ``root``; raise if it leaves."""
    current, entry = path, tree[path]
    for _ in range(limits.max_symlink_hops):
        if entry.mode != SYMLINK_MODE:
            return current, entry
        text = link_texts.get(entry.sha)
        if text is None:
            text = read_blobs(runner, [entry.sha])[entry.sha]
        link = text.decode("utf-8", errors="surrogateescape")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(current), link))
        if (
            link.startswith("/")
            or resolved == ".."
            or resolved.startswith("../")
            or not is_inside(resolved, root)
        ):
            raise PermanentError(
                f"{path} at commit {shorten_sha(sha)} is a symlink to {link!r}, "
                f"which leaves {root or 'the repository'}",
                hint="gitdeploy reads only files inside the tracked path; copy the file instead",
            )
        target = tree.get(resolved)
        if target is None:
            raise PermanentError(
                f"{path} at commit {shorten_sha(sha)} is a symlink to {link!r}, which is not a file",
                hint="fix or remove the symlink",
            )
        current, entry = resolved, target
    if entry.mode == SYMLINK_MODE:
        raise PermanentError(
            f"{path} at commit {shorten_sha(sha)}: more than {limits.max_symlink_hops} symlinks in a row",
            hint="link to the file directly",
        )
    return current, entry


@dataclass(frozen=True)
class RawChange:
    """One line of ``git diff-tree --raw``."""

    path: str
    old_mode: str
    new_mode: str
    old_sha: str | None
    new_sha: str | None


def diff_trees(runner: GitRunner, old_sha: str, new_sha: str, root: str) -> list[RawChange]:
    """Return every blob that differs between two commits under ``root`` (one ``git diff-tree``)."""
    args = ["diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-commit-id", "--no-ext-diff"]
    args += ["--end-of-options", f"{old_sha}^{{tree}}", f"{new_sha}^{{tree}}"]
    if root:
        args += ["--", root]
    out = runner.run(*args)
    fields = out.split(b"\0")
    changes: list[RawChange] = []
    for i in range(0, len(fields) - 1, 2):
        header = fields[i].decode("ascii").lstrip(":").split()
        path = fields[i + 1].decode("utf-8", errors="surrogateescape")
        old_mode, new_mode, old, new = header[0], header[1], header[2], header[3]
        changes.append(
            RawChange(
                path=path,
                old_mode=old_mode,
                new_mode=new_mode,
                old_sha=None if old in _ZERO_SHAS or old_mode == "000000" else old,
                new_sha=None if new in _ZERO_SHAS or new_mode == "000000" else new,
            )
        )
    return changes


def select_manifest_changes(
    raw: Sequence[RawChange],
    *,
    root: str,
    suffixes: Sequence[str],
    new_manifests: dict[str, FileEntry],
    old_manifests: dict[str, FileEntry] | None,
) -> list[FileChange]:
    """Turn a raw tree diff into manifest changes, following symlinks on both sides.

    ``new_manifests`` is the listing at the new commit (symlinks resolved); ``old_manifests`` the
    one at the old commit, needed only when the diff touches a symlink itself. A symlink whose
    target changed is reported as changed too.
    """
    by_path = {c.path: c for c in raw}
    result: dict[str, FileChange] = {}
    for change in raw:
        if not is_manifest_path(change.path, root, suffixes) or SUBMODULE_MODE in (
            change.old_mode,
            change.new_mode,
        ):
            continue
        old_blob = change.old_sha
        new_blob = change.new_sha
        if change.new_mode == SYMLINK_MODE:
            new_entry = new_manifests.get(change.path)
            new_blob = new_entry.blob_sha if new_entry else None
        if change.old_mode == SYMLINK_MODE:
            old_entry = (old_manifests or {}).get(change.path)
            old_blob = old_entry.blob_sha if old_entry else None
        _add_change(result, change.path, old_blob, new_blob)
    for entry in new_manifests.values():
        if entry.link_target is None or entry.path in result or entry.path in by_path:
            continue
        target_change = by_path.get(entry.link_target)
        if target_change is not None:
            _add_change(result, entry.path, target_change.old_sha, entry.blob_sha)
    return [result[p] for p in sorted(result)]


def _add_change(result: dict[str, FileChange], path: str, old: str | None, new: str | None) -> None:
    if old == new:
        return
    if old is None:
        kind = ChangeType.ADDED
    elif new is None:
        kind = ChangeType.DELETED
    else:
        kind = ChangeType.MODIFIED
    result[path] = FileChange(path=path, change_type=kind, old_blob=old, new_blob=new)
