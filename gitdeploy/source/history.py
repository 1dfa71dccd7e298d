"""Commit metadata and per-path history, read with ``git log`` from the mirror.

``git log -- <path>`` lists the commits that changed a path (git's default history
simplification), so a plan or history can say which commit last changed an app's manifest,
not merely which commit was the head when it was deployed.
"""

from __future__ import annotations

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


def parse_log_output(out: bytes) -> list[CommitInfo]:
    """Parse the output of ``git log --format=<_FORMAT>`` into commits, newest first."""
    commits: list[CommitInfo] = []
    for record in out.decode("utf-8", errors="replace").split("\x1e")[1:]:
        sha, an, ae, at, cn, ce, ct, subject, message = record.split("\x00", 8)
        commits.append(
            CommitInfo(
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
        )
    return commits


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
