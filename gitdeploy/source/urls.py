"""Config repository addresses: parsing, the safety rules, and redaction of credentials.

Accepted forms:

* a local path (``/srv/config``, ``./config``) and ``file://`` URLs;
* ``https://`` URLs, with or without credentials (``https://user:token@host/org/repo.git``);
* ``ssh://`` URLs and the scp-like form ``git@host:org/repo.git``.

Refused, with a :class:`~gitdeploy.errors.PermanentError` that says why:

* remote helpers that run commands or use file descriptors (``ext::``, ``fd::``, any
  ``<transport>::address``) and ``ext://``;
* anything that git would read as an option (a URL, host, user, ref or path starting with ``-``);
* control characters (newlines, NUL) anywhere;
* unauthenticated transports (``http://``, ``git://``): whoever sits on the network path could
  change what gets deployed. Use https or ssh.

Credentials embedded in a URL never appear in a message, a log line or a ``repr``: everything
shows :attr:`RepoUrl.display`, and any text coming back from git goes through
:meth:`RepoUrl.redact`.
"""

from __future__ import annotations

import enum
import hashlib
import os
import posixpath
import re
import urllib.parse
from dataclasses import dataclass, field

from gitdeploy.errors import PermanentError

REDACTED = "***"

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_TRANSPORT_HELPER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9+.-]*|)::")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# git's rule for the scp-like form: "host:path" where no slash comes before the first colon.
_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+):(?P<path>.*)$")
_FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# Characters and sequences git refuses in ref names (git-check-ref-format(1)).
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(?:/|$)")


class UrlKind(enum.Enum):
    LOCAL = "local"
    FILE = "file"
    HTTPS = "https"
    SSH = "ssh"


@dataclass(frozen=True)
class RepoUrl:
    """A parsed, checked repository address.

    ``url`` is what git is given and may hold credentials, so it is left out of ``repr``; use
    ``display`` (credentials replaced by ``***``) for everything a person or a log sees.
    """

    url: str = field(repr=False)
    display: str
    kind: UrlKind
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def __str__(self) -> str:
        return self.display

    @property
    def cache_key(self) -> str:
        """A short stable name for this repository without its credentials (mirror directory)."""
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", posixpath.basename(self.display.rstrip("/")))
        stem = stem.removesuffix(".git").strip(".-") or "repo"
        digest = hashlib.sha256(self.display.encode()).hexdigest()[:12]
        return f"{stem[:40]}-{digest}"

    def redact(self, text: str) -> str:
        """Return ``text`` with this URL's credentials replaced by ``***``.

        The whole URL is replaced by its display form first, then each secret on its own, in both
        the percent-encoded and the decoded spelling (git prints either).
        """
        if not self.secrets:
            return text
        text = text.replace(self.url, self.display)
        for secret in self.secrets:
            for spelling in {secret, urllib.parse.unquote(secret)}:
                if spelling:
                    text = text.replace(spelling, REDACTED)
        return text


def parse_repo_url(text: str, *, base_dir: str | None = None) -> RepoUrl:
    """Parse and check a repository address; raise :class:`PermanentError` if it is unsafe.

    A relative local path is resolved against ``base_dir`` (default: the working directory).

    >>> parse_repo_url("https://bot:s3cret@git.example.com/org/config.git").display
    'https://***@git.example.com/org/config.git'
    >>> parse_repo_url("git@github.com:org/config.git").kind
    <UrlKind.SSH: 'ssh'>
    """
    if not isinstance(text, str) or not text.strip():
        raise PermanentError("the config repository address is empty", hint="give a path or an URL")
    if _CONTROL_CHARS.search(text):
        raise PermanentError(
            "the config repository address contains control characters",
            hint="remove newlines and other invisible characters from the address",
        )
    text = text.strip()
    if text.startswith("-"):
        raise _unsafe("it starts with '-', so git would read it as an option")
    helper = _TRANSPORT_HELPER.match(text)
    if helper:
        return _raise_unsafe_transport(f"{helper.group(1)}::")
    scheme_match = _SCHEME.match(text)
    if scheme_match:
        scheme = scheme_match.group(1).lower()
        if scheme == "ext":
            return _raise_unsafe_transport("ext://")
        if scheme == "file":
            return _parse_file_url(text)
        if scheme == "https":
            return _parse_network_url(text, UrlKind.HTTPS)
        if scheme in ("ssh", "git+ssh", "ssh+git"):
            return _parse_network_url(text, UrlKind.SSH)
        if scheme in ("http", "git"):
            raise PermanentError(
                f"refusing the unauthenticated {scheme}:// transport for the config repository",
                hint="anyone on the network path could change what gets deployed; use https:// or ssh://",
            )
        raise PermanentError(
            f"unsupported transport {scheme}:// for the config repository",
            hint="use a local path, file://, https:// or ssh:// (or the scp-like user@host:path)",
        )
    scp = _SCP_LIKE.match(text)
    if scp and not _looks_like_local_path(text):
        return _parse_scp_like(text, scp)
    return _parse_local_path(text, base_dir)


def _unsafe(why: str) -> PermanentError:
    return PermanentError(
        f"refusing the config repository address: {why}",
        hint="use a local path, file://, https:// or ssh:// address",
    )


def _raise_unsafe_transport(transport: str) -> RepoUrl:
    raise PermanentError(
        f"refusing the {transport} transport: git remote helpers like ext:: and fd:: can run "
        "commands or read file descriptors",
        hint="use a local path, file://, https:// or ssh:// address",
    )


def _looks_like_local_path(text: str) -> bool:
    # "./a:b" and "/a:b" are paths; so is anything whose first colon follows a slash.
    colon, slash = text.find(":"), text.find("/")
    return text.startswith((".", "/", "~")) or (slash != -1 and slash < colon)


def _parse_local_path(text: str, base_dir: str | None) -> RepoUrl:
    path = os.path.expanduser(text)
    if not os.path.isabs(path):
        path = os.path.join(base_dir or os.getcwd(), path)
    path = os.path.normpath(path)
    return RepoUrl(url=path, display=path, kind=UrlKind.LOCAL)


def _parse_file_url(text: str) -> RepoUrl:
    parts = urllib.parse.urlsplit(text)
    if parts.netloc not in ("", "localhost"):
        raise _unsafe("file:// URLs must name a local path (file:///path/to/repo)")
    if parts.query or parts.fragment:
        raise _unsafe("file:// URLs take no query or fragment")
    path = urllib.parse.unquote(parts.path)
    if not path.startswith("/"):
        raise _unsafe("file:// URLs need an absolute path (file:///path/to/repo)")
    url = "file://" + urllib.parse.quote(os.path.normpath(path))
    return RepoUrl(url=url, display=url, kind=UrlKind.FILE)


def _parse_network_url(text: str, kind: UrlKind) -> RepoUrl:
    try:
        parts = urllib.parse.urlsplit(text)
        _ = parts.port  # raises on a malformed port
    except ValueError as exc:
        raise _unsafe(f"it is not a valid URL ({exc})") from None
    host = parts.hostname or ""
    if not host:
        raise _unsafe("the URL has no host")
    if host.startswith("-") or (parts.username or "").startswith("-"):
        raise _unsafe("the host or user starts with '-', so ssh would read it as an option")
    if parts.fragment:
        raise _unsafe("repository URLs take no fragment ('#...')")
    userinfo, _, hostport = parts.netloc.rpartition("@")
    secrets: list[str] = []
    if kind is UrlKind.HTTPS:
        # With https, the user part is often the token itself: hide all of it.
        if userinfo:
            secrets.append(userinfo)
            secrets.extend(p for p in userinfo.split(":", 1) if len(p) >= 4)
        shown_userinfo = REDACTED if userinfo else ""
    else:
        user, sep, password = userinfo.partition(":")
        if sep and password:
            secrets.append(password)
            shown_userinfo = f"{user}:{REDACTED}"
        else:
            shown_userinfo = userinfo
    query = parts.query
    if query:
        secrets.append(query)
        query = REDACTED
    netloc = f"{shown_userinfo}@{hostport}" if shown_userinfo else hostport
    display = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    return RepoUrl(url=text, display=display, kind=kind, secrets=tuple(dict.fromkeys(secrets)))


def _parse_scp_like(text: str, match: re.Match[str]) -> RepoUrl:
    user, host, path = match.group("user") or "", match.group("host"), match.group("path")
    if host.startswith("-") or user.startswith("-"):
        raise _unsafe("the host or user starts with '-', so ssh would read it as an option")
    if not path:
        raise _unsafe("the scp-like address has no path after ':'")
    if ":" in user:
        raise _unsafe("scp-like addresses cannot carry a password; use an ssh key")
    return RepoUrl(url=text, display=text, kind=UrlKind.SSH)


def is_full_sha(ref: str) -> bool:
    """Whether ``ref`` is a full commit id (40 hex digits, or 64 for sha256 repositories)."""
    return bool(_FULL_SHA.match(ref))


def check_ref_name(ref: str) -> str:
    """Return ``ref`` if it is a safe branch, tag, full ref or commit name; raise otherwise.

    >>> check_ref_name("release/2024.1")
    'release/2024.1'
    """
    if not ref or ref != ref.strip():
        raise PermanentError(f"invalid ref {ref!r}", hint="give a branch, tag or full commit sha")
    if ref.startswith("-"):
        raise PermanentError(
            f"refusing ref {ref!r}: it starts with '-', so git would read it as an option",
            hint="give a branch, tag or full commit sha",
        )
    if is_full_sha(ref):
        return ref
    if _BAD_REF.search(ref) or ref.endswith((".", "/")) or ref.startswith("/") or ref == "@":
        raise PermanentError(
            f"invalid ref {ref!r}: git does not allow this name",
            hint="see git-check-ref-format(1); give a branch, tag or full commit sha",
        )
    return ref


def normalise_repo_path(path: str, *, what: str = "path") -> str:
    """Return ``path`` as a clean repository-relative POSIX path ('' for the root); raise if unsafe.

    >>> normalise_repo_path("./deploy//prod/")
    'deploy/prod'
    """
    if _CONTROL_CHARS.search(path):
        raise PermanentError(f"the {what} {path!r} contains control characters")
    if path.startswith("/"):
        raise PermanentError(
            f"the {what} {path!r} is absolute", hint="give a path relative to the repository root"
        )
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PermanentError(f"the {what} {path!r} leaves the repository", hint="remove '..' from it")
    if parts and parts[0].startswith("-"):
        raise PermanentError(f"the {what} {path!r} starts with '-'", hint="rename the directory")
    if parts and parts[0] == ".git":
        raise PermanentError(f"the {what} {path!r} is inside .git")
    return "/".join(parts)
