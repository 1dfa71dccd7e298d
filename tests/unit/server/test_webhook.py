"""Webhook verification, parsing and matching: one table per concern, real HMACs, no HTTP."""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.parse
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import pytest

from gitdeploy.server.webhook import (
    Ignored,
    Provider,
    PushEvent,
    Rejected,
    Verdict,
    github_signature,
    normalize_repo_url,
    parse_delivery,
    push_matches,
)

SECRET = b"It's a Secret to Everybody"
AFTER = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"


def github_push(ref: str = "refs/heads/main", after: str = AFTER, **extra: Any) -> dict[str, Any]:
    """A trimmed GitHub push payload with the fields GitHub documents for ``repository``."""
    payload: dict[str, Any] = {
        "ref": ref,
        "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
        "after": after,
        "deleted": False,
        "repository": {
            "full_name": "acme/deploy",
            "html_url": "https://github.com/acme/deploy",
            "url": "https://github.com/acme/deploy",
            "git_url": "git://github.com/acme/deploy.git",
            "ssh_url": "git@github.com:acme/deploy.git",
            "clone_url": "https://github.com/acme/deploy.git",
            "svn_url": "https://github.com/acme/deploy",
        },
        "commits": [{"id": after, "message": "bump web to 1.2"}],
    }
    payload.update(extra)
    return payload


def gitlab_push(ref: str = "refs/heads/main", after: str = AFTER, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "object_kind": "push",
        "event_name": "push",
        "ref": ref,
        "before": "95790bf891e76fee5e1747ab589903a6a1f80f22",
        "after": after,
        "checkout_sha": after,
        "project": {
            "path_with_namespace": "acme/deploy",
            "web_url": "https://gitlab.example.com/acme/deploy",
            "git_ssh_url": "git@gitlab.example.com:acme/deploy.git",
            "git_http_url": "https://gitlab.example.com/acme/deploy.git",
        },
        "repository": {
            "url": "git@gitlab.example.com:acme/deploy.git",
            "homepage": "https://gitlab.example.com/acme/deploy",
            "git_http_url": "https://gitlab.example.com/acme/deploy.git",
            "git_ssh_url": "git@gitlab.example.com:acme/deploy.git",
        },
    }
    payload.update(extra)
    return payload


def encode(payload: object) -> bytes:
    return json.dumps(payload).encode()


def github_headers(body: bytes, event: str = "push", secret: bytes = SECRET) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "X-Hub-Signature-256": github_signature(body, secret),
        "Content-Type": "application/json",
    }


def gitlab_headers(event: str = "Push Hook", token: str = SECRET.decode()) -> dict[str, str]:
    return {"X-Gitlab-Event": event, "X-Gitlab-Token": token, "X-Gitlab-Event-UUID": "b8ec4a3e"}


@dataclass(frozen=True)
class Case:
    name: str
    headers: dict[str, str]
    body: bytes
    expected: type[PushEvent] | type[Ignored] | type[Rejected]
    status: HTTPStatus | None = None
    branch: str = "main"
    urls: tuple[str, ...] = field(default_factory=tuple)


GH_BODY = encode(github_push())
GL_BODY = encode(gitlab_push())
GH_FORM = urllib.parse.urlencode({"payload": GH_BODY.decode()}).encode()

CASES = [
    Case(
        "github push, valid signature",
        github_headers(GH_BODY),
        GH_BODY,
        PushEvent,
        branch="main",
        urls=(
            "https://github.com/acme/deploy.git",
            "git@github.com:acme/deploy.git",
            "https://github.com/acme/deploy",
            "git://github.com/acme/deploy.git",
        ),
    ),
    Case(
        "github push, header names in lower case and upper-case hex",
        {k.lower(): v.upper() if k.endswith("256") else v for k, v in github_headers(GH_BODY).items()},
        GH_BODY,
        PushEvent,
    ),
    Case(
        "github push, form-encoded payload",
        {**github_headers(GH_FORM), "Content-Type": "application/x-www-form-urlencoded"},
        GH_FORM,
        PushEvent,
    ),
    Case(
        "github push to a branch with slashes",
        github_headers(b := encode(github_push(ref="refs/heads/release/2024.1"))),
        b,
        PushEvent,
        branch="release/2024.1",
    ),
    Case(
        "github signature made with another secret",
        github_headers(GH_BODY, secret=b"not the secret"),
        GH_BODY,
        Rejected,
        HTTPStatus.UNAUTHORIZED,
    ),
    Case(
        "github signature of another body",
        github_headers(encode(github_push(after="f" * 40))),
        GH_BODY,
        Rejected,
        HTTPStatus.UNAUTHORIZED,
    ),
    Case(
        "github signature missing",
        {"X-GitHub-Event": "push"},
        GH_BODY,
        Rejected,
        HTTPStatus.UNAUTHORIZED,
    ),
    Case(
        "github legacy sha1 signature only",
        {
            "X-GitHub-Event": "push",
            "X-Hub-Signature": "sha1=" + hmac.new(SECRET, GH_BODY, hashlib.sha1).hexdigest(),
        },
        GH_BODY,
        Rejected,
        HTTPStatus.UNAUTHORIZED,
    ),
    Case(
        "github signature without the sha256= prefix",
        {"X-GitHub-Event": "push", "X-Hub-Signature-256": github_signature(GH_BODY, SECRET)[7:]},
        GH_BODY,
        Rejected,
        HTTPStatus.UNAUTHORIZED,
    ),
    Case(
        "unsigned ping is refused",
        {"X-GitHub-Event": "ping"},
        b'{"zen": "Keep it logically awesome."}',
        Rejected,
        HTTPStatus.UNAUTHORIZED,
    ),
    Case(
        "signed ping is answered OK",
        github_headers(p := b'{"zen": "Keep it logically awesome.", "hook_id": 1}', event="ping"),
        p,
        Ignored,
        HTTPStatus.OK,
    ),
    Case(
        "github pull_request event ignored",
        github_headers(p := b'{"action": "opened"}', event="pull_request"),
        p,
        Ignored,
        HTTPStatus.ACCEPTED,
    ),
    Case(
        "github tag push ignored",
        github_headers(b := encode(github_push(ref="refs/tags/v1.0"))),
        b,
        Ignored,
        HTTPStatus.ACCEPTED,
    ),
    Case(
        "github branch deletion ignored",
        github_headers(b := encode(github_push(after="0" * 40, deleted=True))),
        b,
        Ignored,
        HTTPStatus.ACCEPTED,
    ),
    Case(
        "github malformed JSON, correctly signed",
        github_headers(b'{"ref": "refs/heads/main",'),
        b'{"ref": "refs/heads/main",',
        Rejected,
        HTTPStatus.BAD_REQUEST,
    ),
    Case(
        "github JSON that is not an object",
        github_headers(b"[1, 2]"),
        b"[1, 2]",
        Rejected,
        HTTPStatus.BAD_REQUEST,
    ),
    Case(
        "github push without after",
        github_headers(b := encode({"ref": "refs/heads/main", "repository": {}})),
        b,
        Rejected,
        HTTPStatus.BAD_REQUEST,
    ),
    Case(
        "github push whose after is not a commit id",
        github_headers(b := encode(github_push(after="main; rm -rf /"))),
        b,
        Rejected,
        HTTPStatus.BAD_REQUEST,
    ),
    Case(
        "github push naming no repository URL",
        github_headers(b := encode(github_push(repository={"full_name": "acme/deploy"}))),
        b,
        Rejected,
        HTTPStatus.BAD_REQUEST,
    ),
    Case(
        "gitlab push, right token",
        gitlab_headers(),
        GL_BODY,
        PushEvent,
        urls=(
            "https://gitlab.example.com/acme/deploy.git",
            "git@gitlab.example.com:acme/deploy.git",
            "https://gitlab.example.com/acme/deploy",
        ),
    ),
    Case("gitlab wrong token", gitlab_headers(token="guess"), GL_BODY, Rejected, HTTPStatus.UNAUTHORIZED),
    Case(
        "gitlab token that only starts like the secret",
        gitlab_headers(token=SECRET.decode()[:5]),
        GL_BODY,
        Rejected,
        HTTPStatus.UNAUTHORIZED,
    ),
    Case("gitlab token missing", {"X-Gitlab-Event": "Push Hook"}, GL_BODY, Rejected, HTTPStatus.UNAUTHORIZED),
    Case(
        "gitlab tag push hook ignored",
        gitlab_headers(event="Tag Push Hook"),
        encode(gitlab_push(ref="refs/tags/v1")),
        Ignored,
        HTTPStatus.ACCEPTED,
    ),
    Case(
        "gitlab merge request hook ignored",
        gitlab_headers(event="Merge Request Hook"),
        b'{"object_kind": "merge_request"}',
        Ignored,
        HTTPStatus.ACCEPTED,
    ),
    Case("gitlab malformed JSON", gitlab_headers(), b"\xff\xfe not json", Rejected, HTTPStatus.BAD_REQUEST),
    Case(
        "gitlab branch deletion (after is all zeros) ignored",
        gitlab_headers(),
        encode(gitlab_push(after="0" * 40)),
        Ignored,
        HTTPStatus.ACCEPTED,
    ),
    Case(
        "neither provider",
        {"Content-Type": "application/json"},
        GH_BODY,
        Rejected,
        HTTPStatus.BAD_REQUEST,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_parse_delivery(case: Case) -> None:
    verdict = parse_delivery(case.headers, case.body, SECRET)

    assert type(verdict) is case.expected, verdict
    if isinstance(verdict, PushEvent):
        assert verdict.branch == case.branch
        assert verdict.after == AFTER
        if case.urls:
            assert verdict.repo_urls == case.urls
    else:
        assert verdict.status == case.status, verdict.reason
        assert verdict.reason


def test_push_event_records_provider_and_delivery_id() -> None:
    github = parse_delivery(github_headers(GH_BODY), GH_BODY, SECRET)
    gitlab = parse_delivery(gitlab_headers(), GL_BODY, SECRET)

    assert isinstance(github, PushEvent) and isinstance(gitlab, PushEvent)
    assert (github.provider, github.delivery_id) == (Provider.GITHUB, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert (gitlab.provider, gitlab.delivery_id) == (Provider.GITLAB, "b8ec4a3e")


def test_body_over_the_limit_is_refused_before_the_signature_is_computed() -> None:
    verdict = parse_delivery(github_headers(GH_BODY), GH_BODY, SECRET, max_body_bytes=len(GH_BODY) - 1)

    assert isinstance(verdict, Rejected)
    assert verdict.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE


def test_body_exactly_at_the_limit_is_accepted() -> None:
    verdict = parse_delivery(github_headers(GH_BODY), GH_BODY, SECRET, max_body_bytes=len(GH_BODY))

    assert isinstance(verdict, PushEvent)


def test_an_empty_secret_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="secret"):
        parse_delivery({"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256="}, b"", b"")


def test_github_signature_matches_the_documented_example() -> None:
    # The worked example of GitHub's "Validating webhook deliveries" page.
    assert github_signature(b"Hello, World!", SECRET) == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_parse_delivery_result_is_always_one_of_three_types() -> None:
    outcomes: list[Verdict] = [parse_delivery(c.headers, c.body, SECRET) for c in CASES]

    assert all(isinstance(v, PushEvent | Ignored | Rejected) for v in outcomes)


# -- URL normalisation and matching -----------------------------------------------------------

SAME_REPO = [
    "https://github.com/acme/deploy",
    "https://github.com/acme/deploy.git",
    "https://github.com/acme/deploy/",
    "https://github.com/acme/deploy.git/",
    "https://GitHub.COM/acme/deploy",
    "https://github.com/Acme/Deploy",
    "http://github.com/acme/deploy",
    "https://user:token@github.com/acme/deploy.git",
    "https://github.com:443/acme/deploy",
    "git://github.com/acme/deploy.git",
    "ssh://git@github.com/acme/deploy.git",
    "ssh://git@github.com:22/acme/deploy.git",
    "git@github.com:acme/deploy.git",
    "git@github.com:/acme/deploy.git",
    "github.com:acme/deploy",
    "github.com/acme/deploy",
    "  https://github.com/acme/deploy  ",
]

OTHER_REPOS = [
    "https://github.com/acme/deploy-staging",
    "https://github.com/acme/deployments",
    "https://github.com/other/deploy",
    "https://gitlab.com/acme/deploy",
    "git@gitlab.com:acme/deploy.git",
    "https://github.com/acme",
    "https://github.com/acme/deploy/sub",
]


@pytest.mark.parametrize("url", SAME_REPO)
def test_forms_of_one_repository_normalise_alike(url: str) -> None:
    assert normalize_repo_url(url) == "github.com/acme/deploy"


@pytest.mark.parametrize("url", OTHER_REPOS)
def test_other_repositories_normalise_differently(url: str) -> None:
    assert normalize_repo_url(url) != "github.com/acme/deploy"


def test_gitlab_subgroups_keep_their_full_path() -> None:
    assert normalize_repo_url("git@gitlab.example.com:acme/platform/deploy.git") == (
        "gitlab.example.com/acme/platform/deploy"
    )
    assert normalize_repo_url("https://gitlab.example.com/acme/platform/deploy") == (
        "gitlab.example.com/acme/platform/deploy"
    )


GH = "https://github.com/acme/deploy"


def push(*urls: str, branch: str = "main") -> PushEvent:
    return PushEvent(repo_urls=urls, branch=branch, after=AFTER)


@pytest.mark.parametrize(
    ("event", "tracked_url", "tracked_branch", "matches"),
    [
        (push("https://github.com/acme/deploy.git"), "git@github.com:acme/deploy.git", "main", True),
        (push("git@github.com:acme/deploy.git"), "https://github.com/acme/deploy", "refs/heads/main", True),
        (push("https://x.test/a", GH), "ssh://git@github.com/acme/deploy", "main", True),
        (push("https://github.com/acme/deploy.git"), "https://github.com/acme/deploy.git", "develop", False),
        (push("https://github.com/acme/deploy.git"), "https://github.com/acme/deploy.git", "Main", False),
        (push(GH, branch="main2"), "https://github.com/acme/deploy", "main", False),
        (push("https://github.com/acme/other.git"), "https://github.com/acme/deploy.git", "main", False),
        (push("https://gitlab.com/acme/deploy.git"), "https://github.com/acme/deploy.git", "main", False),
        (push(), "https://github.com/acme/deploy.git", "main", False),
    ],
)
def test_push_matches(event: PushEvent, tracked_url: str, tracked_branch: str, matches: bool) -> None:
    assert push_matches(event, tracked_url, tracked_branch) is matches


def test_a_parsed_github_push_matches_each_configured_form() -> None:
    event = parse_delivery(github_headers(GH_BODY), GH_BODY, SECRET)

    assert isinstance(event, PushEvent)
    for url in SAME_REPO:
        assert push_matches(event, url, "main"), url
    for url in OTHER_REPOS:
        assert not push_matches(event, url, "main"), url
