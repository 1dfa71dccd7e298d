"""Image reference parsing and formatting: table-driven cases, including the module's worked examples."""

from __future__ import annotations

import pytest

from gitdeploy.errors import PermanentError
from gitdeploy.images.reference import (
    ImageReference,
    InvalidImageReferenceError,
    format_image_reference,
    format_pinned_reference,
    parse_image_reference,
    validate_digest,
)

D1 = "sha256:" + "a" * 64
D2 = "sha256:" + "0123456789abcdef" * 4
D512 = "sha512:" + "b" * 128

VALID: list[tuple[str, str, str, str | None, str | None]] = [
    # text, registry, repository, tag, digest
    ("nginx", "docker.io", "library/nginx", "latest", None),
    ("nginx:1.25", "docker.io", "library/nginx", "1.25", None),
    ("library/nginx", "docker.io", "library/nginx", "latest", None),
    ("bitnami/redis:7", "docker.io", "bitnami/redis", "7", None),
    ("docker.io/nginx", "docker.io", "library/nginx", "latest", None),
    ("index.docker.io/nginx:1", "docker.io", "library/nginx", "1", None),
    ("docker.io/library/nginx:latest", "docker.io", "library/nginx", "latest", None),
    ("quay.io/org/app:1.2", "quay.io", "org/app", "1.2", None),
    ("127.0.0.1:5000/app:1", "127.0.0.1:5000", "app", "1", None),
    ("localhost/app", "localhost", "app", "latest", None),
    ("localhost:5000/team/app", "localhost:5000", "team/app", "latest", None),
    ("[::1]:5000/app:2", "[::1]:5000", "app", "2", None),
    ("registry.example.com:443/a/b/c:x_y.Z-1", "registry.example.com:443", "a/b/c", "x_y.Z-1", None),
    ("my-registry.local/app", "my-registry.local", "app", "latest", None),
    ("a__b/c.d_e-f--g", "docker.io", "a__b/c.d_e-f--g", "latest", None),
    ("app:0", "docker.io", "library/app", "0", None),
    ("app:_x", "docker.io", "library/app", "_x", None),
    (f"app@{D1}", "docker.io", "library/app", None, D1),
    (f"127.0.0.1:5000/app@{D2}", "127.0.0.1:5000", "app", None, D2),
    (f"ghcr.io/o/a:v1@{D1}", "ghcr.io", "o/a", "v1", D1),
    (f"ghcr.io/o/a@{D512}", "ghcr.io", "o/a", None, D512),
    ("localhost:5000", "docker.io", "library/localhost", "5000", None),  # no slash: a name and a tag
]


@pytest.mark.parametrize(("text", "registry", "repository", "tag", "digest"), VALID)
def test_parse_image_reference_valid(
    text: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    ref = parse_image_reference(text)
    assert ref == ImageReference(registry, repository, tag, digest)


@pytest.mark.parametrize("text", [case[0] for case in VALID])
def test_formatted_reference_parses_back_to_itself(text: str) -> None:
    ref = parse_image_reference(text)
    assert parse_image_reference(format_image_reference(ref)) == ref
    assert str(ref) == format_image_reference(ref)


INVALID: list[tuple[str, str]] = [
    # text, a fragment the message must contain
    ("", "empty"),
    (" nginx", "whitespace"),
    ("ng inx", "whitespace"),
    ("Nginx", "component 'Nginx'"),
    ("nginx:", "tag ''"),
    ("nginx:-bad", "tag '-bad'"),
    ("nginx:" + "x" * 129, "max 128"),
    ("nginx@", "not algorithm:hex"),
    ("nginx@sha256:abc", "64 lowercase hex"),
    ("nginx@sha256:" + "A" * 64, "64 lowercase hex"),
    ("nginx@md5:" + "a" * 32, "algorithm 'md5'"),
    ("nginx@sha512:" + "a" * 64, "128 lowercase hex"),
    ("127.0.0.1:99999/app", "port 99999"),
    ("-bad.host/app", "registry host '-bad.host'"),
    ("/app", "component ''"),
    ("a//b", "component ''"),
    ("team/app/", "component ''"),
    ("registry.io/", "repository name is empty"),
    ("a_-b", "component 'a_-b'"),
    ("quay.io/" + "a" * 250, "longer than 255"),
]


@pytest.mark.parametrize(("text", "fragment"), INVALID)
def test_parse_image_reference_invalid(text: str, fragment: str) -> None:
    with pytest.raises(InvalidImageReferenceError) as caught:
        parse_image_reference(text)
    error = caught.value
    assert isinstance(error, PermanentError)
    assert isinstance(error, ValueError)
    assert fragment in error.message
    assert f"'{text}'" in error.message
    assert "repository[:tag]" in error.hint


@pytest.mark.parametrize(
    ("text", "digest", "expected"),
    [
        ("nginx:1.25", D1, f"docker.io/library/nginx@{D1}"),
        ("127.0.0.1:5000/app:1", D2, f"127.0.0.1:5000/app@{D2}"),
        (f"quay.io/o/a:v1@{D1}", None, f"quay.io/o/a@{D1}"),
        (f"quay.io/o/a:v1@{D1}", D2, f"quay.io/o/a@{D2}"),
    ],
)
def test_format_pinned_reference(text: str, digest: str | None, expected: str) -> None:
    assert format_pinned_reference(parse_image_reference(text), digest) == expected


def test_format_pinned_reference_needs_a_digest() -> None:
    with pytest.raises(PermanentError, match="not pinned"):
        format_pinned_reference(parse_image_reference("nginx:1"))


def test_format_pinned_reference_rejects_a_malformed_digest() -> None:
    with pytest.raises(InvalidImageReferenceError):
        format_pinned_reference(parse_image_reference("nginx:1"), "sha256:nothex")


def test_reference_without_tag_or_digest_is_refused() -> None:
    with pytest.raises(InvalidImageReferenceError, match="neither tag nor digest"):
        ImageReference("docker.io", "library/nginx", tag=None)


@pytest.mark.parametrize(("text", "expected"), [("nginx:1", "1"), (f"nginx@{D1}", D1), (f"nginx:1@{D1}", D1)])
def test_manifest_reference_prefers_the_digest(text: str, expected: str) -> None:
    assert parse_image_reference(text).manifest_reference == expected


def test_validate_digest_returns_a_valid_digest() -> None:
    assert validate_digest(D1) == D1
    assert validate_digest(D512) == D512
