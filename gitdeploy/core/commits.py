"""Pure values that describe the config repository: commits, files at a commit, changes, polls.

These are what :mod:`gitdeploy.source` hands to the layers above it. They carry no behaviour
beyond small derived properties, so the controller, history and planner can use them without
importing anything that does I/O.

Paths are always POSIX paths relative to the repository root (``deploy/web/app.yaml``), the
form a user sees in a pull request, even when the source tracks a sub-path of the repository.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

#: How many leading hex digits of a sha messages show.
SHORT_SHA_LENGTH = 12


def shorten_sha(sha: str) -> str:
    """Return the abbreviated form of ``sha`` used in messages and logs.

    >>> shorten_sha("0123456789abcdef0123456789abcdef01234567")
    '0123456789ab'
    """
    return sha[:SHORT_SHA_LENGTH]


@dataclass(frozen=True)
class Author:
    """A person as git records them: a name and an e-mail address."""

    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


@dataclass(frozen=True)
class CommitInfo:
    """The metadata of one commit that history, plans and status show.

    Times are seconds since the epoch (git stores whole seconds).
    ``subject`` is the first paragraph of the message on one line; ``message`` is all of it.
    """

    sha: str
    author_name: str
    author_email: str
    authored_at: float
    committer_name: str
    committer_email: str
    committed_at: float
    subject: str
    message: str

    @property
    def short_sha(self) -> str:
        return shorten_sha(self.sha)

    @property
    def author(self) -> Author:
        return Author(self.author_name, self.author_email)


class ChangeType(enum.Enum):
    """How a file differs between two commits (renames show as a delete plus an add)."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"


@dataclass(frozen=True)
class FileChange:
    """One manifest file that differs between two commits.

    ``old_blob`` is ``None`` for an added file, ``new_blob`` is ``None`` for a deleted one.
    For a symlink the blobs are those of the file it points to, so a change of the target shows
    as a change of the link too.
    """

    path: str
    change_type: ChangeType
    old_blob: str | None
    new_blob: str | None


@dataclass(frozen=True)
class FileEntry:
    """A manifest file at a commit, without its contents.

    ``blob_sha`` names the contents; it is the sha of the target when ``path`` is a symlink, and
    ``link_target`` then holds the repository path of that target.
    """

    path: str
    blob_sha: str
    size: int
    link_target: str | None = None


@dataclass(frozen=True)
class SourceFile:
    """A manifest file at a commit with its contents, read from the git object database."""

    path: str
    blob_sha: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class PollResult:
    """What one poll of the config repository found.

    ``head`` is the commit the tracked ref points to now; ``previous`` the commit it pointed to at
    the poll before (``None`` on the very first poll of this mirror). ``changed`` is true when they
    differ. ``forced`` is true when ``head`` does not descend from ``previous``: the ref was
    force-pushed or reset. The previous commit is kept in the mirror, so its files stay readable.
    """

    ref: str
    head: str
    previous: str | None
    forced: bool = False

    @property
    def changed(self) -> bool:
        return self.head != self.previous


@dataclass(frozen=True)
class SignatureCheck:
    """The outcome of checking a commit's signature against the trusted keys.

    ``reason`` says why in words a user can act on (shown in app status when not verified).
    """

    sha: str
    verified: bool
    reason: str
