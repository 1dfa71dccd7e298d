"""``gitdeploy rollback --git-revert``: a rollback made as one commit in the config repo.

Instead of pinning, each app's manifest at its target revision's commit is written back into the
file the app lives in at the head of the tracked branch (only the app's own document when the
file holds several), as one commit for all the apps of the command. Git stays the source of
truth: the loop deploys that commit like any other, so nothing is pinned and no trigger is
suspended. The settings the ``--change-*`` flags restore come along with the manifest.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from gitdeploy.controller.desired import DesiredStateReader
from gitdeploy.core.commits import Author, shorten_sha
from gitdeploy.core.history.control import RollbackChoice, SkippedRollback
from gitdeploy.core.history.records import RevisionEntry
from gitdeploy.core.models import App, AppKey
from gitdeploy.errors import PermanentError
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import LoadResult
from gitdeploy.manifests.splice import splice_document
from gitdeploy.source.repo import ConfigRepo


@dataclass(frozen=True)
class RevertedApp:
    key: AppKey
    choice: RollbackChoice
    path: str
    """The repo-relative file written (where the app lives at the head)."""

    @property
    def target(self) -> RevisionEntry:
        return self.choice.target

    def summary(self) -> str:
        return f"{self.key} to revision {self.target.revision} (commit {self.target.commit.short})"


@dataclass
class GitRevert:
    """The commit a ``--git-revert`` makes: build it with :meth:`add`, write it with :meth:`push`."""

    repo: ConfigRepo
    base_sha: str
    apps: list[RevertedApp] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    """New contents by repo-relative path."""
    before: dict[str, bytes] = field(default_factory=dict)
    """Contents at ``base_sha`` of the files in :attr:`files`."""

    def __post_init__(self) -> None:
        self._reader = DesiredStateReader(self.repo)
        self._head = self._reader.load(self.base_sha)
        self._apps_at: dict[str, LoadResult] = {}

    def add(self, key: AppKey, choice: RollbackChoice) -> RevertedApp:
        """Write ``choice.target``'s manifest of ``key`` into the pending commit.

        Apps of one file must be added bottom-up (by :meth:`line_of`, descending) so that the
        lines the loader found earlier documents at stay true.
        """
        target = choice.target
        now = self._find(self._head, key, f"the head ({shorten_sha(self.base_sha)})")
        sha = target.commit.sha
        if sha not in self._apps_at:
            try:
                self._apps_at[sha] = self._reader.load(self.repo.resolve_commit(sha))
            except PermanentError as problem:
                raise PermanentError(
                    f"cannot read commit {target.commit.short} of revision {target.revision}: "
                    f"{problem.message}",
                    hint="check --repo/--base, or pick another revision with --to-revision",
                ) from problem
        then = self._find(
            self._apps_at[sha], key, f"commit {target.commit.short} (revision {target.revision})"
        )
        path = now.location.file
        current = self.files.get(path)
        if current is None:
            current = self._read(self.base_sha, path)
            self.before[path] = current
        older = self._read(sha, then.location.file)
        written = splice_document(
            ManifestFile(path, current),
            now.location.line,
            ManifestFile(then.location.file, older),
            then.location.line,
            key.name,
        )
        if written == current:
            raise SkippedRollback(
                f"skipped rollback: {key}'s manifest in git already is revision {target.revision}'s "
                f"(commit {target.commit.short})"
            )
        self.files[path] = written
        reverted = RevertedApp(key, choice, path)
        self.apps.append(reverted)
        return reverted

    def line_of(self, key: AppKey) -> tuple[str, int]:
        """Where ``key`` lives at the head, to order the apps (``('', 0)`` when it is not there)."""
        app = next((a for a in self._head.apps if a.key == key), None)
        return (app.location.file, app.location.line) if app is not None else ("", 0)

    def message(self, note: str = "", by: str = "") -> str:
        if len(self.apps) == 1:
            subject = f"Roll back {self.apps[0].summary()}"
            body = [f"Revision {self.apps[0].choice.current.revision} ran before."]
        else:
            subject = f"Roll back {len(self.apps)} apps"
            apps = sorted(self.apps, key=lambda a: str(a.key))
            body = [f"- {a.summary()}, from revision {a.choice.current.revision}" for a in apps]
        text = [subject, "", *body]
        if note:
            text += ["", note]
        if by:
            text += ["", f"Rolled-back-by: {by}"]
        return "\n".join(text) + "\n"

    def diff(self) -> str:
        """A unified diff of the files the commit changes."""
        out: list[str] = []
        for path in sorted(self.files):
            out += difflib.unified_diff(
                self.before[path].decode("utf-8", "replace").splitlines(keepends=True),
                self.files[path].decode("utf-8", "replace").splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
            )
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out
        )

    def push(self, branch: str, message: str, author: Author) -> str:
        """Commit on top of the base and push to ``branch`` (fast-forward only); the new sha."""
        return self.repo.write_commit(branch, self.files, message, author, self.base_sha)

    def _find(self, loaded: LoadResult, key: AppKey, where: str) -> App:
        app = next((a for a in loaded.apps if a.key == key), None)
        if app is not None:
            return app
        if key in loaded.invalid_apps:
            raise PermanentError(
                f"{key}'s manifest at {where} is invalid, so its document cannot be located",
                hint="revert its file by hand, or roll back without --git-revert",
            )
        raise PermanentError(
            f"{key} is not in the repo at {where}",
            hint="check --repo/--base/--path; an app removed from git cannot be reverted into it",
        )

    def _read(self, sha: str, path: str) -> bytes:
        entry = next((e for e in self.repo.list_files(sha) if e.path == path), None)
        if entry is None:
            raise PermanentError(f"{path} is not in commit {shorten_sha(sha)}")
        return self.repo.read_blobs([entry.blob_sha])[entry.blob_sha]


__all__ = ["GitRevert", "RevertedApp"]
