"""Verification and parsing of git push webhooks (GitHub and GitLab), with no I/O.

:func:`parse_delivery` turns one HTTP delivery (headers and the raw body) into exactly one of:

* :class:`PushEvent`: an authentic push to a branch, naming every clone URL the payload gives;
* :class:`Ignored`: authentic but nothing to do (a ``ping``, a tag push, a deleted branch, another
  event type), answered with a 2xx so the sender does not mark the hook as failing;
* :class:`Rejected`: not authentic (401), too large (413) or malformed (400).

The signature is checked before the body is parsed, with a constant-time comparison, so nothing of
an unauthenticated body is ever interpreted; :func:`check_headers` refuses a delivery that cannot
be authentic from its headers alone, before the server reads its body. :func:`push_matches` then
says whether a push concerns the tracked repository and branch.

A push only ever *triggers a fetch*: the loop re-reads the branch from git and never trusts the
payload's ``after`` (DESIGN.md, level-based reconciliation); ``after`` only tells the poll that
the branch is worth fetching at once, without asking the remote first. So a replayed or
forged-but-signed delivery can at worst cause one needless poll, and URL matching errs on the side
of matching.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from http import HTTPStatus
from typing import Any, Final

DEFAULT_MAX_BODY_BYTES: Final = 5 * 1024 * 1024
"""Largest delivery accepted. GitHub push payloads list at most 20 commits; 5 MiB leaves room for
commits touching thousands of files while bounding the memory one request can take."""

_BRANCH_PREFIX: Final = "refs/heads/"
_SHA: Final = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_ZERO_SHA: Final = re.compile(r"^0+$")
_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_LIKE: Final = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.*)$")

# Payload fields that hold an address of the repository, by provider.
_GITHUB_URL_FIELDS: Final = ("clone_url", "ssh_url", "html_url", "git_url", "svn_url", "url")
_GITLAB_URL_FIELDS: Final = (
    "git_http_url",
    "git_ssh_url",
    "web_url",
    "http_url",
    "ssh_url",
    "url",
    "homepage",
)


class Provider(StrEnum):
    GITHUB = "github"
    GITLAB = "gitlab"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class PushEvent:
    """An authentic push to a branch.

    ``repo_urls`` holds every address of the repository the payload names (https, ssh, web), so
    the tracked URL matches whatever form it was configured in. ``after`` is the new head commit
    as the sender saw it: a hint (for logs, and to fetch at once), never what gets deployed.
    """

    repo_urls: tuple[str, ...]
    branch: str
    after: str
    provider: Provider = Provider.UNKNOWN
    delivery_id: str = ""
    """The sender's id of this delivery (``X-GitHub-Delivery``, ``X-Gitlab-Event-UUID``), for logs."""


@dataclass(frozen=True)
class Ignored:
    """An authentic delivery that asks for nothing (a ping, a tag push, another event type)."""

    status: HTTPStatus
    reason: str
    provider: Provider = Provider.UNKNOWN


@dataclass(frozen=True)
class Rejected:
    """A delivery refused: 401 bad or missing signature, 413 too large, 400 malformed."""

    status: HTTPStatus
    reason: str
    provider: Provider = Provider.UNKNOWN


Verdict = PushEvent | Ignored | Rejected


def parse_delivery(
    headers: Mapping[str, str],
    body: bytes,
    secret: bytes,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Verdict:
    """Verify one webhook delivery and say what it asks for.

    ``headers`` may use any case for names. ``secret`` is the shared secret configured on the
    hook (GitHub: the HMAC key; GitLab: the token); it must not be empty.

    >>> parse_delivery({"X-GitHub-Event": "push"}, b"{}", b"s3cret").status
    <HTTPStatus.UNAUTHORIZED: 401>
    """
    refused = check_headers(headers, secret)
    if refused is not None:
        return refused
    if len(body) > max_body_bytes:
        return Rejected(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body larger than {max_body_bytes} bytes")
    lowered = {name.lower(): value for name, value in headers.items()}
    if "x-github-event" in lowered:
        return _parse_github(lowered, body, secret)
    return _parse_gitlab(lowered, body)  # check_headers let only these two through


_GITHUB_SIGNATURE: Final = re.compile(r"^sha256=[0-9a-f]{64}$", re.IGNORECASE)


def check_headers(headers: Mapping[str, str], secret: bytes) -> Rejected | None:
    """Refuse a delivery from its headers alone, before its body is read: no provider header
    (400), a GitHub delivery without a well-formed ``X-Hub-Signature-256`` (401), a GitLab one
    whose ``X-Gitlab-Token`` is missing or wrong (401). None: the body is worth reading (a GitHub
    signature can only be checked against it)."""
    if not secret:
        raise ValueError("a webhook secret is required; an empty one would accept anything")
    lowered = {name.lower(): value for name, value in headers.items()}
    if "x-github-event" in lowered:
        if not _GITHUB_SIGNATURE.match(lowered.get("x-hub-signature-256", "").strip()):
            return Rejected(
                HTTPStatus.UNAUTHORIZED, "missing or malformed X-Hub-Signature-256 header", Provider.GITHUB
            )
        return None
    if "x-gitlab-event" in lowered:
        token = lowered.get("x-gitlab-token", "")
        if not token:
            return Rejected(HTTPStatus.UNAUTHORIZED, "missing X-Gitlab-Token header", Provider.GITLAB)
        if not hmac.compare_digest(token.encode("utf-8", "replace"), secret):
            return Rejected(
                HTTPStatus.UNAUTHORIZED, "X-Gitlab-Token does not match the secret", Provider.GITLAB
            )
        return None
    return Rejected(
        HTTPStatus.BAD_REQUEST, "not a GitHub or GitLab delivery (no X-GitHub-Event or X-Gitlab-Event header)"
    )


def github_signature(body: bytes, secret: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``: ``sha256=`` and a hex HMAC."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def _parse_github(headers: Mapping[str, str], body: bytes, secret: bytes) -> Verdict:
    provider = Provider.GITHUB
    signature = headers["x-hub-signature-256"].strip()  # present and well-formed: check_headers
    expected = github_signature(body, secret)
    if not hmac.compare_digest(signature.lower().encode("ascii", "replace"), expected.encode("ascii")):
        return Rejected(HTTPStatus.UNAUTHORIZED, "X-Hub-Signature-256 does not match the body", provider)

    event = headers["x-github-event"].strip().lower()
    if event == "ping":
        return Ignored(HTTPStatus.OK, "pong", provider)
    if event != "push":
        return Ignored(HTTPStatus.ACCEPTED, _only_pushes(event), provider)

    payload = _load_json(body, headers.get("content-type", ""), form_field="payload")
    if isinstance(payload, Rejected):
        return Rejected(payload.status, payload.reason, provider)
    if payload.get("deleted") is True:
        return Ignored(HTTPStatus.ACCEPTED, "branch deletion ignored", provider)
    repository = payload.get("repository")
    urls = _urls_of(repository, _GITHUB_URL_FIELDS)
    return _push_from(payload, urls, provider, headers.get("x-github-delivery", ""))


def _parse_gitlab(headers: Mapping[str, str], body: bytes) -> Verdict:
    """A GitLab delivery whose token :func:`check_headers` found right."""
    provider = Provider.GITLAB
    event = headers["x-gitlab-event"].strip()
    if event != "Push Hook":
        return Ignored(HTTPStatus.ACCEPTED, _only_pushes(event), provider)

    payload = _load_json(body, headers.get("content-type", ""), form_field=None)
    if isinstance(payload, Rejected):
        return Rejected(payload.status, payload.reason, provider)
    if payload.get("object_kind", "push") != "push":
        return Ignored(HTTPStatus.ACCEPTED, f"object_kind {payload.get('object_kind')!r} ignored", provider)
    urls = _urls_of(payload.get("project"), _GITLAB_URL_FIELDS) + _urls_of(
        payload.get("repository"), _GITLAB_URL_FIELDS
    )
    return _push_from(payload, _unique(urls), provider, headers.get("x-gitlab-event-uuid", ""))


def _load_json(body: bytes, content_type: str, form_field: str | None) -> dict[str, Any] | Rejected:
    """The JSON object of the body; GitHub may also send it form-encoded in a ``payload`` field."""
    raw: str | bytes = body
    if form_field and content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        try:
            fields = urllib.parse.parse_qs(body.decode("utf-8"), strict_parsing=True)
        except (UnicodeDecodeError, ValueError):
            return Rejected(HTTPStatus.BAD_REQUEST, "malformed form-encoded body")
        values = fields.get(form_field)
        if not values:
            return Rejected(HTTPStatus.BAD_REQUEST, f"form-encoded body without a {form_field!r} field")
        raw = values[0]
    try:
        payload = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as err:
        return Rejected(HTTPStatus.BAD_REQUEST, f"body is not JSON: {err}")
    if not isinstance(payload, dict):
        return Rejected(HTTPStatus.BAD_REQUEST, "body is JSON but not an object")
    return payload


def _only_pushes(event: str) -> str:
    return f"event {event[:100]!r} ignored: only push events trigger a fetch"


def _push_from(
    payload: Mapping[str, Any], urls: tuple[str, ...], provider: Provider, delivery: str
) -> Verdict:
    ref = payload.get("ref")
    after = payload.get("after")
    if not isinstance(ref, str) or not isinstance(after, str):
        return Rejected(HTTPStatus.BAD_REQUEST, "push payload without string 'ref' and 'after'", provider)
    after = after.lower()
    if not _SHA.match(after):
        return Rejected(HTTPStatus.BAD_REQUEST, f"'after' is not a commit id: {after[:80]!r}", provider)
    if not ref.startswith(_BRANCH_PREFIX):
        reason = f"{ref[:200]!r} is not a branch: only branch pushes trigger a fetch"
        return Ignored(HTTPStatus.ACCEPTED, reason, provider)
    if _ZERO_SHA.match(after):
        return Ignored(HTTPStatus.ACCEPTED, "branch deletion ignored", provider)
    if not urls:
        return Rejected(HTTPStatus.BAD_REQUEST, "push payload names no repository URL", provider)
    return PushEvent(
        repo_urls=urls,
        branch=ref[len(_BRANCH_PREFIX) :],
        after=after,
        provider=provider,
        delivery_id=delivery[:200],
    )


def _urls_of(section: object, fields: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(section, Mapping):
        return ()
    return _unique(tuple(v for f in fields if isinstance(v := section.get(f), str) and v.strip()))


def _unique(items: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# -- matching -----------------------------------------------------------------------------------


def normalize_repo_url(url: str) -> str:
    """A comparison key for a repository address: ``host/path``, lower-case, no scheme or ``.git``.

    The https, ssh (``ssh://`` and scp-like ``git@host:path``), ``git://`` and web forms of one
    repository give the same key; credentials and ports are dropped (ssh and https of one host
    often differ only in port). The path is lower-cased too, as GitHub and GitLab treat it: a
    wrong match only costs one needless fetch, a missed one delays a deployment until the next poll.

    >>> normalize_repo_url("git@GitHub.com:Acme/Deploy.git")
    'github.com/acme/deploy'
    >>> normalize_repo_url("https://user:token@github.com:443/acme/deploy/")
    'github.com/acme/deploy'
    """
    text = url.strip()
    if _SCHEME.match(text):
        parts = urllib.parse.urlsplit(text)
        host = parts.hostname or ""
        path = parts.path
    elif (scp := _SCP_LIKE.match(text)) is not None:
        host = scp.group("host")
        path = scp.group("path")
    else:
        host, _, path = text.partition("/")
    path = urllib.parse.unquote(path).strip("/")
    while path.endswith("/") or path.endswith(".git"):
        path = path.removesuffix(".git").rstrip("/")
    host = host.strip("[]").lower()
    return f"{host}/{path}".lower() if host else path.lower()


def normalize_branch(branch: str) -> str:
    """A branch name without a leading ``refs/heads/`` (branch names are case-sensitive)."""
    return branch.removeprefix(_BRANCH_PREFIX)


def push_matches(event: PushEvent, repo_url: str, branch: str) -> bool:
    """Whether ``event`` is a push to the tracked ``branch`` of the repository at ``repo_url``."""
    if event.branch != normalize_branch(branch):
        return False
    tracked = normalize_repo_url(repo_url)
    return any(normalize_repo_url(url) == tracked for url in event.repo_urls)
