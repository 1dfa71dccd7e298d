"""Commit metadata and per-path history, read with ``git log`` from the mirror.

``git log -- <path>`` lists the commits that changed a path (git's default history
simplification), so a plan or history can say which commit last changed an app's manifest,
not merely which commit was the head when it was deployed.
"""

from __future__ import annotations

import threading

from gitdeploy.core.commits import CommitInfo
from gitdeploy.source.gitcmd import GitRunner

# Fields separated by NUL, records introduced by RS (0x1e); messages cannot hold NUL.
_FORMAT = "%x1e%H%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%s%x00%B"
_LOG_OPTIONS = (
    "-c",
    "log.showSignature=false",
    "-c",
    "i18n.logOutputEncoding=UTF-8",
    "log",
    "--no-color",
    "--no-decorate",
    "--no-show-signature",
    f"--format=tformat:{_FORMAT}",
)


def _commit_info(fields: list[str]) -> CommitInfo:
    sha, an, ae, at, cn, ce, ct, subject, message = fields
    return CommitInfo(
        sha=sha,
        author_name=an,
        author_email=ae,
        authored_at=float(at),
        committer_name=cn,
        committer_email=ce,
        committed_at=float(ct),
        subject=subject,
        message=message.rstrip("\n"),
    )


def parse_log_output(out: bytes) -> list[CommitInfo]:
    """Parse the output of ``git log --format=<_FORMAT>`` into commits, newest first."""
    return [
        _commit_info(record.split("\x00", 8))
        for record in out.decode("utf-8", errors="replace").split("\x1e")[1:]
    ]


class ChangeWalk:
    """Which commit last changed each path at ``at_sha``, from one walk of history for all paths.

    ``git log -1 -- <path>`` costs a process per path, which 10,000 apps deploying for the first
    time would pay 10,000 times. This walk reads ``git log --name-only`` newest first, in chunks that
    grow eightfold, and remembers the first commit that names each path; a path is looked for only
    as far back as needed, so attributing the head commit's files reads one small chunk.

    It follows every parent in date order (no history simplification); merges are listed with
    the files they changed against every parent (``--cc``). Thread-safe.
    """

    FIRST_CHUNK = 1
    """The head commit alone first: after a push, the pass that deploys it asks for the files that
    commit changed, and a first chunk of 16 read, in a young repo, the commit that added every
    manifest too (30,000 paths: 32 ms and a dict of them per push and replica, against 2 ms)."""

    def __init__(self, runner: GitRunner, at_sha: str, root: str = "") -> None:
        self._runner = runner
        self.at_sha = at_sha
        self._root = root
        self._found: dict[str, CommitInfo] = {}
        self._read = 0
        self._chunk = self.FIRST_CHUNK
        self._done = False
        self._lock = threading.Lock()

    def last_change(self, path: str) -> CommitInfo | None:
        with self._lock:
            while path not in self._found and not self._done:
                self._read_chunk()
            return self._found.get(path)

    def _read_chunk(self) -> None:
        global_opts, log = _LOG_OPTIONS[:4], _LOG_OPTIONS[4:]
        args = [*global_opts, *log, "-z", "--name-only", "--no-renames", "--cc"]
        args += [f"--skip={self._read}", f"--max-count={self._chunk}", "--end-of-options", self.at_sha]
        out = self._runner.run(*args, *(("--", self._root) if self._root else ()))
        records = out.decode("utf-8", errors="surrogateescape").split("\x1e")[1:]
        for record in records:
            fields = record.split("\x00")
            text = [f.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for f in fields[:9]]
            commit = _commit_info(text)
            for name in fields[9:]:
                name = name.lstrip("\n")
                if name:
                    self._found.setdefault(name, commit)
        self._read += len(records)
        self._done = len(records) < self._chunk
        self._chunk *= 8


def read_commit(runner: GitRunner, sha: str) -> CommitInfo:
    """Return the metadata of commit ``sha`` (which must exist in the mirror)."""
    global_opts, log = _LOG_OPTIONS[:4], _LOG_OPTIONS[4:]
    out = runner.run(*global_opts, *log, "-1", "--no-walk", "--end-of-options", sha)
    return parse_log_output(out)[0]


def read_path_history(runner: GitRunner, path: str, at_sha: str, max_count: int) -> list[CommitInfo]:
    """Return up to ``max_count`` commits reachable from ``at_sha`` that changed ``path``, newest first."""
    global_opts, log = _LOG_OPTIONS[:4], _LOG_OPTIONS[4:]
    out = runner.run(*global_opts, *log, f"--max-count={max_count}", "--end-of-options", at_sha, "--", path)
    return parse_log_output(out)
