"""Running git for the source layer: one locked-down environment, redaction, error translation.

Every git command the source layer runs goes through :class:`GitRunner`, which

* passes arguments as a list (no shell), with ``--end-of-options`` or ``--`` where a value
  could be mistaken for an option, and keeps GitPython's unsafe-protocol and unsafe-option
  guards on for every command that talks to a remote;
* restricts transports with ``GIT_ALLOW_PROTOCOL`` (file, https, ssh), never prompts for
  credentials (``GIT_TERMINAL_PROMPT=0``, ssh ``BatchMode``), reads pathspecs literally and
  ignores replace refs, and kills network commands after a timeout;
* redacts credentials from every message it produces, and turns failures into the project's
  two errors: :class:`~gitdeploy.errors.TransientError` (network, remote unreachable) and
  :class:`~gitdeploy.errors.PermanentError` (unknown ref, bad credentials, unsafe input).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import git
from git.exc import GitCommandError, GitCommandNotFound, UnsafeOptionError, UnsafeProtocolError

from gitdeploy.core.commits import Author
from gitdeploy.errors import GitdeployError, PermanentError, TransientError

#: Options git must never receive from a user-supplied value, per command (GitPython's lists).
UNSAFE_REMOTE_OPTIONS: Mapping[str, Sequence[str]] = {
    "ls-remote": git.Git.unsafe_git_ls_remote_options,
    "fetch": git.Remote.unsafe_git_fetch_options,
    "push": git.Remote.unsafe_git_push_options,
}

BACKOFF_BASE_SECONDS = 5.0
BACKOFF_CAP_SECONDS = 300.0

# stderr fragments (git runs with LC_ALL=C) that mean "retrying will not help".
_PERMANENT_MARKERS: tuple[tuple[str, str], ...] = (
    ("authentication failed", "check the credentials for this repository (token, ssh key)"),
    ("permission denied", "check that the ssh key or token may read this repository"),
    ("could not read username", "give credentials: a credential helper, an ssh key, or a token in the URL"),
    ("repository not found", "check the repository URL and that the credentials may read it"),
    ("host key verification failed", "add the server's host key to known_hosts"),
    ("transport '", "use a local path, file://, https:// or ssh://"),
    ("protocol '", "use a local path, file://, https:// or ssh://"),
)


class _RedactingFilter(logging.Filter):
    """Redacts registered credentials from GitPython's own debug log lines (which show argv)."""

    def __init__(self) -> None:
        super().__init__()
        self.redactors: list[Callable[[str], str]] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if self.redactors:
            text = record.getMessage()
            for redact in list(self.redactors):
                text = redact(text)
            record.msg, record.args = text, ()
        return True


_GITPYTHON_LOG_FILTER = _RedactingFilter()
logging.getLogger("git.cmd").addFilter(_GITPYTHON_LOG_FILTER)


def register_log_redaction(redact: Callable[[str], str]) -> None:
    """Make GitPython's ``git.cmd`` debug log redact what ``redact`` redacts (idempotent)."""
    if redact not in _GITPYTHON_LOG_FILTER.redactors:
        _GITPYTHON_LOG_FILTER.redactors.append(redact)


def compute_backoff(
    failures: int, *, base: float = BACKOFF_BASE_SECONDS, cap: float = BACKOFF_CAP_SECONDS
) -> float:
    """Return the delay before the next attempt after ``failures`` consecutive failures.

    Doubles from ``base`` and stops at ``cap``: 5, 10, 20, 40, 80, 160, 300, 300, ...

    >>> [compute_backoff(n) for n in (1, 2, 3, 7, 20)]
    [5.0, 10.0, 20.0, 300.0, 300.0]
    """
    if failures <= 0:
        return 0.0
    return min(cap, base * 2.0 ** min(failures - 1, 32))


@dataclass(frozen=True)
class GitFailure(Exception):
    """A git command exited non-zero. ``stderr`` is already redacted."""

    command: str
    status: int
    stderr: str

    def __str__(self) -> str:
        return f"git {self.command} failed ({self.status}): {self.stderr.strip()}"


def build_git_environment() -> dict[str, str]:
    """Return the environment additions every git command of the source layer runs with."""
    env = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": "file:https:ssh",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_ASKPASS": os.environ.get("GIT_ASKPASS", ""),
    }
    if not env["GIT_ASKPASS"]:
        del env["GIT_ASKPASS"]
    if "GIT_SSH_COMMAND" not in os.environ and "GIT_SSH" not in os.environ:
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    return env


class GitRunner:
    """Runs git commands against one bare repository (the mirror), safely and redacted."""

    def __init__(
        self,
        git_dir: str,
        *,
        redact: Callable[[str], str],
        network_timeout: float = 120.0,
    ) -> None:
        self.git_dir = git_dir
        self.redact = redact
        register_log_redaction(redact)
        self.network_timeout = network_timeout
        self.env = build_git_environment()
        self._git = git.Git(git_dir)
        # GIT_DIR for GitPython's long-lived cat-file readers (every other command passes
        # --git-dir): no repository discovery from the working directory.
        self._git.update_environment(**self.env, GIT_DIR=git_dir)
        self._objects_lock = threading.Lock()
        #: How many times each git subcommand ran (for tests and benchmarks: "a no-change poll
        #: costs one ls-remote"). Lookups through :meth:`object_header` start no process and
        #: are not counted.
        self.command_counts: Counter[str] = Counter()

    def object_header(self, sha: str) -> tuple[str, int] | None:
        """The type and size of object ``sha`` (a full object name), or None when it is missing.

        Asked of one long-lived ``git cat-file --batch-check`` (GitPython's), so a lookup costs
        microseconds instead of a process. It sees objects fetched after it started: git looks
        for new packs when an object is not found. Only full object names are looked up here,
        never refs, which move.
        """
        with self._objects_lock:
            try:
                _, kind, size = self._git.get_object_header(sha)
            except (ValueError, OSError) as problem:
                self._lookup_failed(problem)
                return None
        return _text(kind), int(size)

    def object_data(self, sha: str) -> tuple[str, bytes] | None:
        """The type and contents of object ``sha``, or None when it is missing; from a long-lived
        ``git cat-file --batch``, as :meth:`object_header`."""
        with self._objects_lock:
            try:
                _, kind, _, data = self._git.get_object_data(sha)
            except (ValueError, OSError) as problem:
                self._lookup_failed(problem)
                return None
        return _text(kind), data

    def _lookup_failed(self, problem: Exception) -> None:
        if "missing" not in str(problem):  # the reader died: a new one starts at the next lookup
            self._git.clear_cache()

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> bytes:
        """Run ``git --git-dir=<mirror> <args>`` and return stdout; raise :class:`GitFailure`."""
        status, out, err = self.run_unchecked(*args, stdin=stdin, env=env, timeout=timeout)
        if status != 0:
            raise GitFailure(_subcommand_of(args), status, err)
        return out

    def run_text(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """Like :meth:`run`, decoded as UTF-8 (undecodable bytes replaced)."""
        return self.run(*args, env=env).decode("utf-8", errors="replace")

    def run_unchecked(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes, str]:
        """Run git and return ``(status, stdout, redacted stderr)`` whatever the status."""
        command = [git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git", f"--git-dir={self.git_dir}", *args]
        self.command_counts[_subcommand_of(args)] += 1
        try:
            if stdin is None:
                return self._execute(command, None, env, timeout)
            with tempfile.TemporaryFile() as stream:
                stream.write(stdin)
                stream.seek(0)
                return self._execute(command, stream, env, timeout)
        except GitCommandNotFound as exc:
            raise PermanentError(
                "the git executable was not found", hint="install git (2.30 or newer) on this machine"
            ) from exc

    def _execute(
        self,
        command: list[str],
        stream: BinaryIO | None,
        env: Mapping[str, str] | None,
        timeout: float | None,
    ) -> tuple[int, bytes, str]:
        status, out, err = self._git.execute(
            command,
            istream=stream,
            with_extended_output=True,
            with_exceptions=False,
            stdout_as_string=False,
            strip_newline_in_stdout=False,
            kill_after_timeout=timeout,
            env=env,
        )
        return int(status), out, self.redact(err)

    def run_remote(
        self,
        subcommand: str,
        url: str,
        options: Sequence[str] = (),
        operands: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        """Run a command that talks to ``url`` (ls-remote, fetch, push) with GitPython's guards on.

        Runs ``git <subcommand> <options> -- <url> <operands>``. GitPython's unsafe-protocol guard
        checks the URL and its unsafe-option guard checks the options; operands (refspecs,
        patterns) may not look like options either.
        """
        try:
            git.Git.check_unsafe_protocols(url)
            git.Git.check_unsafe_options(
                options=list(options), unsafe_options=list(UNSAFE_REMOTE_OPTIONS.get(subcommand, ()))
            )
            if url.startswith("-") or any(op.startswith("-") for op in operands):
                raise UnsafeOptionError("a URL, ref or refspec may not start with '-'")
        except (UnsafeProtocolError, UnsafeOptionError) as exc:
            raise PermanentError(
                f"refusing to run git {subcommand}: {self.redact(str(exc))}",
                hint="use a local path, file://, https:// or ssh:// address and plain ref names",
            ) from None
        return self.run(subcommand, *options, "--", url, *operands, env=env, timeout=self.network_timeout)

    def close(self) -> None:
        with self._objects_lock:
            self._git.clear_cache()


def _text(value: str | bytes) -> str:
    """GitPython annotates ``str`` where it passes git's bytes through."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def _subcommand_of(args: Sequence[str]) -> str:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] == "-c" else 1
    return args[i] if i < len(args) else ""


_LOCAL_DISK_MARKERS = ("no space left on device", "read-only file system", "disk quota exceeded")
"""What git says when it cannot write locally: the fault is the state dir's disk, not the remote."""


def translate_remote_failure(
    failure: GitFailure, *, action: str, display_url: str, failures: int, local_dir: str = ""
) -> GitdeployError:
    """Turn a failed ls-remote/fetch/push into a permanent or transient error with a clear message.

    ``failures`` counts consecutive failures including this one, for the backoff. ``local_dir`` is
    where git writes (the mirror): a full or read-only disk there is named, with what to do.
    """
    detail = _summarise_stderr(failure.stderr)
    lowered = failure.stderr.lower()
    if local_dir and any(marker in lowered for marker in _LOCAL_DISK_MARKERS):
        retry_after = compute_backoff(failures)
        return TransientError(
            f"cannot {action} {display_url} into {local_dir}: {detail}; free space on that disk or make "
            "it writable (--state-dir or GITDEPLOY_STATE_DIR choose another directory)",
            hint=f"keeping the last synced commit and retrying in {retry_after:g} s",
            retry_after=retry_after,
        )
    for marker, hint in _PERMANENT_MARKERS:
        if marker in lowered:
            return PermanentError(f"cannot {action} {display_url}: {detail}", hint=hint)
    if "timed out" in lowered or failure.status < 0:
        detail = detail or "the command timed out"
    retry_after = compute_backoff(failures)
    return TransientError(
        f"cannot {action} {display_url}: {detail or f'git {failure.command} exited {failure.status}'}",
        hint=(
            f"the remote may be unreachable; keeping the last synced commit and retrying in {retry_after:g} s"
        ),
        retry_after=retry_after,
    )


def _summarise_stderr(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("hint:")]
    important = [ln for ln in lines if ln.startswith(("fatal:", "error:", "remote:", "ssh:"))] or lines
    return "; ".join(ln.removeprefix("fatal: ").removeprefix("error: ") for ln in important[:3])


def configured_author() -> Author | None:
    """The user's own git identity (``user.name``/``user.email`` as their git config gives it), or
    None when either is unset or git is missing."""
    found = []
    for key in ("user.name", "user.email"):
        try:
            found.append(str(git.Git().config("--get", key)).strip())
        except (GitCommandError, GitCommandNotFound):
            return None
    return Author(found[0], found[1]) if all(found) else None
