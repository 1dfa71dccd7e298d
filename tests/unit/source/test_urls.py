"""Parsing, safety rules and redaction of config repository addresses (pure, no git)."""

from __future__ import annotations

import pytest

from gitdeploy.errors import PermanentError
from gitdeploy.source.urls import (
    UrlKind,
    check_ref_name,
    is_full_sha,
    normalise_repo_path,
    parse_repo_url,
)


@pytest.mark.parametrize(
    ("text", "kind", "display"),
    [
        ("/srv/config", UrlKind.LOCAL, "/srv/config"),
        ("/srv/../srv/config/", UrlKind.LOCAL, "/srv/config"),
        ("file:///srv/config.git", UrlKind.FILE, "file:///srv/config.git"),
        ("https://git.example.com/org/config.git", UrlKind.HTTPS, "https://git.example.com/org/config.git"),
        (
            "https://bot:tok3n-abc@git.example.com/o/c.git",
            UrlKind.HTTPS,
            "https://***@git.example.com/o/c.git",
        ),
        (
            "https://tok3n-abcdef@git.example.com/o/c.git",
            UrlKind.HTTPS,
            "https://***@git.example.com/o/c.git",
        ),
        ("https://git.example.com/o/c.git?token=abc", UrlKind.HTTPS, "https://git.example.com/o/c.git?***"),
        ("ssh://git@git.example.com:2222/o/c.git", UrlKind.SSH, "ssh://git@git.example.com:2222/o/c.git"),
        ("ssh://git:pw1234@git.example.com/o/c.git", UrlKind.SSH, "ssh://git:***@git.example.com/o/c.git"),
        ("git@github.com:org/config.git", UrlKind.SSH, "git@github.com:org/config.git"),
    ],
)
def test_accepted_addresses(text: str, kind: UrlKind, display: str) -> None:
    url = parse_repo_url(text)
    assert (url.kind, url.display) == (kind, display)
    assert str(url) == display
    assert "tok3n" not in repr(url) and "pw1234" not in repr(url)


def test_relative_paths_resolve_against_the_base_dir() -> None:
    assert parse_repo_url("config", base_dir="/srv").url == "/srv/config"
    assert parse_repo_url("./a:b", base_dir="/srv").kind is UrlKind.LOCAL


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("ext::sh -c 'id'", "ext::"),
        ("EXT::sh", "EXT::"),
        ("fd::3", "fd::"),
        ("::x", "::"),
        ("ext://sh", "ext://"),
        ("-uhttps://x", "option"),
        ("--upload-pack=id", "option"),
        ("http://example.com/x.git", "unauthenticated"),
        ("git://example.com/x.git", "unauthenticated"),
        ("ftp://example.com/x.git", "unsupported"),
        ("ssh://-oProxyCommand=id/x", "option"),
        ("-oProxyCommand=id:x", "option"),
        ("https://example.com/x\nfoo", "control characters"),
        ("file://otherhost/x", "local path"),
        ("user:pw@host:path", "password"),
        ("", "empty"),
    ],
)
def test_refused_addresses(text: str, why: str) -> None:
    with pytest.raises(PermanentError, match=why):
        parse_repo_url(text)


def test_redact_replaces_the_url_and_each_spelling_of_the_secret() -> None:
    url = parse_repo_url("https://bot:p%40ss-word@git.example.com/o/c.git")
    text = (
        "fatal: unable to access 'https://bot:p%40ss-word@git.example.com/o/c.git/': "
        "password p@ss-word rejected for bot:p%40ss-word"
    )
    redacted = url.redact(text)
    assert "p%40ss-word" not in redacted and "p@ss-word" not in redacted
    assert "https://***@git.example.com/o/c.git" in redacted


def test_cache_key_ignores_credentials() -> None:
    one = parse_repo_url("https://a:secret1@git.example.com/org/config.git")
    two = parse_repo_url("https://b:secret2@git.example.com/org/config.git")
    assert one.cache_key == two.cache_key
    assert one.cache_key.startswith("config-") and "secret" not in one.cache_key


@pytest.mark.parametrize("ref", ["main", "release/2024.1", "refs/heads/main", "v1.2.3", "a" * 40])
def test_good_refs(ref: str) -> None:
    assert check_ref_name(ref) == ref


@pytest.mark.parametrize(
    "ref",
    ["", "-x", "--upload-pack=x", "a..b", "a b", "x@{1}", "HEAD~1", "a^", "a:b", "/a", "a/", "a.lock", "@"],
)
def test_bad_refs(ref: str) -> None:
    with pytest.raises(PermanentError):
        check_ref_name(ref)


def test_full_sha() -> None:
    assert is_full_sha("0" * 40) and is_full_sha("f" * 64)
    assert not is_full_sha("abc1234") and not is_full_sha("G" * 40)


@pytest.mark.parametrize(("path", "clean"), [("", ""), ("./deploy//prod/", "deploy/prod"), ("a/./b", "a/b")])
def test_normalise_repo_path(path: str, clean: str) -> None:
    assert normalise_repo_path(path) == clean


@pytest.mark.parametrize("path", ["/etc", "../x", "a/../../x", ".git/config", "-x/y", "a\nb"])
def test_unsafe_repo_paths(path: str) -> None:
    with pytest.raises(PermanentError):
        normalise_repo_path(path)
