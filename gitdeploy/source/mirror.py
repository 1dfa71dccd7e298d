"""The bare mirror of the config repository under the state directory, and its refs.

The mirror is created once (in a staging directory renamed into place, so a crash never leaves a
half-made one) and then only fetched into. Refs in it (all under ``refs/gitdeploy/``, nothing else
is kept):

* ``track/<full ref>``: the commit the tracked ref pointed to at the last successful poll;
* ``fetched/<full ref>``: what the last fetch brought, before verification;
* ``keep/<sha>``: commits that must stay readable though no remote ref reaches them any more
  (the previous head after a force-push, a tracked commit sha).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path

from gitdeploy.core.commits import shorten_sha
from gitdeploy.errors import PermanentError
from gitdeploy.source.gitcmd import GitRunner
from gitdeploy.source.urls import RepoUrl, check_ref_name, is_full_sha

_KNOWN_HEADS = 256


class CommitNotFoundError(PermanentError):
    """A commit asked for is not in the mirror (never fetched, or not a commit)."""


def tracking_ref(full_ref: str) -> str:
    """The mirror's ref that holds where ``full_ref`` pointed at the last successful poll."""
    if is_full_sha(full_ref):
        return f"refs/gitdeploy/keep/{full_ref}"
    return f"refs/gitdeploy/track/{full_ref}"


class Mirror:
    """The mirror's object database: its git runner, its refs, and the commits known to be in it."""

    def __init__(self, url: RepoUrl, path: Path, network_timeout: float) -> None:
        self.url = url
        self.path = path
        self._ensure()
        self.runner = GitRunner(str(path), redact=url.redact, network_timeout=network_timeout)
        self._heads: OrderedDict[str, None] = OrderedDict()

    def close(self) -> None:
        self.runner.close()

    def _ensure(self) -> None:
        if (self.path / "HEAD").exists():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".init-", dir=self.path.parent))
        try:
            runner = GitRunner(str(staging), redact=self.url.redact)
            status, _, err = runner.run_unchecked("init", "--bare", "--quiet", str(staging))
            if status != 0:
                raise PermanentError(f"cannot create the mirror in {self.path.parent}: {err.strip()}")
            for key, value in (
                ("transfer.fsckObjects", "true"),
                ("core.logAllRefUpdates", "always"),
                ("gc.reflogExpire", "never"),
                ("gc.reflogExpireUnreachable", "never"),
            ):
                runner.run("config", key, value)
            runner.close()
            try:
                staging.rename(self.path)
            except OSError:
                if not (self.path / "HEAD").exists():
                    raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    def read_ref(self, rev: str) -> str | None:
        """The commit ``rev`` names in the mirror, or None."""
        status, out, _ = self.runner.run_unchecked(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"
        )
        return out.decode().strip() if status == 0 else None

    def has_commit(self, sha: str) -> bool:
        return self.read_ref(sha) is not None

    def keep_commit(self, sha: str) -> None:
        self.runner.run("update-ref", "-m", "gitdeploy keep", f"refs/gitdeploy/keep/{sha}", sha)

    def remember_head(self, sha: str) -> None:
        """Remember a commit that was a synced head: the mirror keeps it (a tracking or keep ref
        reaches it), so :meth:`resolve_commit` needs no git process for it."""
        self._heads[sha] = None
        self._heads.move_to_end(sha)
        while len(self._heads) > _KNOWN_HEADS:
            self._heads.popitem(last=False)

    def resolve_commit(self, rev: str) -> str:
        """Return the full sha of ``rev`` (a sha, or a ref of the mirror); raise if it is not here."""
        rev = check_ref_name(rev)
        if rev in self._heads:
            return rev
        sha = self.read_ref(rev)
        if sha is None:
            raise CommitNotFoundError(
                f"commit {rev} is not in the mirror of {self.url.display}",
                hint="poll the source first; the commit may have been force-pushed away before a fetch",
            )
        return sha

    def recent_commits(self, head: str, limit: int) -> frozenset[str]:
        """``head`` and its ancestors, the ``limit`` newest of them (one ``git rev-list``)."""
        out = self.runner.run("rev-list", f"--max-count={limit}", "--end-of-options", head)
        return frozenset(out.decode().split())

    def descends(self, head: str, parents: tuple[str, ...] | None, previous: str) -> bool:
        """Whether ``head`` descends from ``previous``: at once when it is a parent, else one
        ``git merge-base``."""
        if parents is not None and previous in parents:
            return True
        status, _, err = self.runner.run_unchecked("merge-base", "--is-ancestor", previous, head)
        if status in (0, 1):
            return status == 0
        raise CommitNotFoundError(
            f"cannot compare {shorten_sha(previous)} and {shorten_sha(head)}: {err.strip()}"
        )
