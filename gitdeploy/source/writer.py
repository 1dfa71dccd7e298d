"""Writing to the config repository: one commit that sets files to given contents, then a push.

Used by ``rollback --git-revert``. The commit is built in the mirror without a checkout: blobs
are written to the object database, a temporary index is filled from the base commit and
updated, and ``git commit-tree`` makes the commit. The push is a plain fast-forward push (never
``--force``, never a ``+`` refspec): if the branch moved away from ``base_sha`` it is refused
before pushing, and git refuses it too if it moves between that check and the push.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping

from gitdeploy.core.commits import Author, shorten_sha
from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.source.gitcmd import GitFailure, GitRunner, translate_remote_failure
from gitdeploy.source.urls import RepoUrl, check_ref_name, is_full_sha, normalise_repo_path

log = logging.getLogger("gitdeploy.source")


class BranchMovedError(TransientError):
    """The branch is no longer where the caller read it; re-read it and decide again."""


def write_commit(
    runner: GitRunner,
    url: RepoUrl,
    *,
    branch: str,
    files: Mapping[str, bytes | None],
    message: str,
    author: Author,
    base_sha: str,
    committer: Author | None = None,
    authored_at: float | None = None,
    root: str = "",
    push: bool = True,
) -> str:
    """Create a commit on top of ``base_sha`` that sets ``files`` (``None`` deletes), push it.

    ``branch`` may exist on the remote (it must then point at ``base_sha``) or be new (it is
    created at the new commit). Paths are repository-relative and must lie under ``root``.
    Returns the new commit's sha. With ``push=False`` the commit exists only in the mirror.
    """
    branch = check_ref_name(branch)
    if is_full_sha(branch) or branch.startswith("refs/"):
        raise PermanentError(f"invalid branch name {branch!r}", hint="give a short branch name like 'main'")
    if not files:
        raise PermanentError("nothing to write: no files given")
    if not message.strip():
        raise PermanentError("a commit needs a message")
    index_lines = _write_blobs(runner, files, root)
    if push:
        _check_branch_unmoved(runner, url, branch, base_sha)
    tree = _build_tree(runner, base_sha, index_lines)
    base_tree = runner.run_text("rev-parse", "--verify", "--end-of-options", f"{base_sha}^{{tree}}").strip()
    if tree == base_tree:
        raise PermanentError(
            f"the files already have these contents at {shorten_sha(base_sha)}; nothing to commit"
        )
    sha = _create_commit(runner, tree, base_sha, message, author, committer or author, authored_at)
    if push:
        _push_commit(runner, url, branch, sha, base_sha)
    log.info(
        "[source] wrote commit %s on %s (%s)", shorten_sha(sha), branch, url.display, extra={"commit": sha}
    )
    return sha


def _write_blobs(runner: GitRunner, files: Mapping[str, bytes | None], root: str) -> list[str]:
    lines: list[str] = []
    for raw_path, data in sorted(files.items()):
        path = normalise_repo_path(raw_path, what="file path")
        if not path or not (not root or path.startswith(root + "/")):
            raise PermanentError(
                f"refusing to write {raw_path!r}: it is outside the tracked path {root or '/'}",
                hint="gitdeploy writes only the manifests it tracks",
            )
        if data is None:
            lines.append(f"0 {'0' * 40}\t{path}")
        else:
            blob = runner.run("hash-object", "-w", "--stdin", stdin=data).decode().strip()
            lines.append(f"100644 {blob}\t{path}")
    return lines


def _build_tree(runner: GitRunner, base_sha: str, index_lines: list[str]) -> str:
    fd, index_path = tempfile.mkstemp(prefix="gitdeploy-index-", dir=runner.git_dir)
    os.close(fd)
    os.unlink(index_path)  # git wants to create the index itself
    env = {"GIT_INDEX_FILE": index_path}
    try:
        runner.run("read-tree", "--end-of-options", base_sha, env=env)
        runner.run("update-index", "--index-info", stdin=("\n".join(index_lines) + "\n").encode(), env=env)
        return runner.run_text("write-tree", env=env).strip()
    finally:
        if os.path.exists(index_path):
            os.unlink(index_path)


def _create_commit(
    runner: GitRunner,
    tree: str,
    parent: str,
    message: str,
    author: Author,
    committer: Author,
    authored_at: float | None,
) -> str:
    env = {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
    }
    if authored_at is not None:
        env["GIT_AUTHOR_DATE"] = f"@{int(authored_at)} +0000"
        env["GIT_COMMITTER_DATE"] = f"@{int(authored_at)} +0000"
    out = runner.run(
        "-c", "commit.gpgSign=false", "commit-tree", tree, "-p", parent, "-F", "-",
        stdin=message.encode(), env=env,
    )  # fmt: skip
    return out.decode().strip()


def _read_remote_branch(runner: GitRunner, url: RepoUrl, branch: str) -> str | None:
    try:
        out = runner.run_remote("ls-remote", url.url, (), (f"refs/heads/{branch}",))
    except GitFailure as failure:
        raise translate_remote_failure(failure, action="read", display_url=url.display, failures=1) from None
    for line in out.decode().splitlines():
        sha, _, name = line.partition("\t")
        if name == f"refs/heads/{branch}":
            return sha
    return None


def _check_branch_unmoved(runner: GitRunner, url: RepoUrl, branch: str, base_sha: str) -> None:
    current = _read_remote_branch(runner, url, branch)
    if current is not None and current != base_sha:
        raise BranchMovedError(
            f"branch {branch} of {url.display} moved to {shorten_sha(current)} "
            f"(expected {shorten_sha(base_sha)}); nothing was pushed",
            hint="re-read the branch and try again; gitdeploy never force-pushes",
            retry_after=0.0,
        )


def _push_commit(runner: GitRunner, url: RepoUrl, branch: str, sha: str, base_sha: str) -> None:
    try:
        runner.run_remote("push", url.url, ("--no-verify",), (f"{sha}:refs/heads/{branch}",))
    except GitFailure as failure:
        lowered = failure.stderr.lower()
        if "non-fast-forward" in lowered or "rejected" in lowered or "fetch first" in lowered:
            raise BranchMovedError(
                f"push to {branch} of {url.display} was refused: the branch moved away from "
                f"{shorten_sha(base_sha)}",
                hint="re-read the branch and try again; gitdeploy never force-pushes",
                retry_after=0.0,
            ) from None
        raise translate_remote_failure(
            failure, action="push to", display_url=url.display, failures=1
        ) from None
