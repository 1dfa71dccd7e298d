"""The registry client's protocol logic against scripted HTTP exchanges (httpx.MockTransport, no network).

What a real registry cannot easily show in a test lives here: bearer-token challenges and caching,
rate limits, server errors, missing digest headers, HEAD not allowed, the HTTPS-only rule.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.images.registry import (
    MANIFEST_MEDIA_TYPES,
    ImageNotFoundError,
    RegistryClient,
    RegistryCredentials,
    is_loopback_host,
    load_docker_credentials,
    normalize_registry_host,
    parse_retry_after,
    parse_www_authenticate,
)

DIGEST = "sha256:" + "d" * 64
SECRET = "hunter2-very-secret"
CHALLENGE = 'Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="{scope}"'

Handler = Callable[[httpx.Request], httpx.Response]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_client(
    handler: Handler, *, credentials: dict[str, RegistryCredentials] | None = None, clock: Clock | None = None
) -> tuple[RegistryClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    client = RegistryClient(
        credentials=credentials or {},
        transport=httpx.MockTransport(record),
        monotonic=clock or Clock(),
    )
    return client, seen


def bearer_registry(*, token_lifetime: int | None = 300, needs_user: bool = False) -> Handler:
    """A registry on registry.example.com with a token server on auth.example.com."""
    issued = 0

    def handle(request: httpx.Request) -> httpx.Response:
        nonlocal issued
        if request.url.host == "auth.example.com":
            if needs_user and request.headers.get("Authorization") != basic("alice", SECRET):
                return httpx.Response(401)
            issued += 1
            body: dict[str, object] = {"token": f"tok-{issued}"}
            if token_lifetime is not None:
                body["expires_in"] = token_lifetime
            return httpx.Response(200, json=body)
        if request.headers.get("Authorization", "").startswith("Bearer tok-"):
            return httpx.Response(200, headers={"Docker-Content-Digest": DIGEST})
        scope = "repository:team/app:pull"
        return httpx.Response(401, headers={"WWW-Authenticate": CHALLENGE.format(scope=scope)})

    return handle


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# --- pure helpers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "scheme", "params"),
    [
        (
            'Bearer realm="https://a/token",service="reg",scope="repository:x/y:pull,push"',
            "bearer",
            {"realm": "https://a/token", "service": "reg", "scope": "repository:x/y:pull,push"},
        ),
        ('Basic realm="Registry Realm"', "basic", {"realm": "Registry Realm"}),
        ("bearer realm=https://a/t, service=reg", "bearer", {"realm": "https://a/t", "service": "reg"}),
        ('Bearer realm="a\\"b"', "bearer", {"realm": 'a"b'}),
    ],
)
def test_parse_www_authenticate(header: str, scheme: str, params: dict[str, str]) -> None:
    assert parse_www_authenticate(header) == (scheme, params)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, 7.0), ("12", 12.0), ("0", 1.0), ("999999", 3600.0), ("soon", 7.0)]
)
def test_parse_retry_after(value: str | None, expected: float) -> None:
    assert parse_retry_after(value, 7.0) == expected


@pytest.mark.parametrize(
    ("key", "host"),
    [
        ("https://index.docker.io/v1/", "docker.io"),
        ("registry-1.docker.io", "docker.io"),
        ("http://127.0.0.1:5000", "127.0.0.1:5000"),
        ("Quay.IO", "quay.io"),
        ("https://ghcr.io/v2/", "ghcr.io"),
    ],
)
def test_normalize_registry_host(key: str, host: str) -> None:
    assert normalize_registry_host(key) == host


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("localhost:5000", True),
        ("127.0.0.1:5000", True),
        ("127.9.9.9", True),
        ("[::1]:5000", True),
        ("::1", True),
        ("10.0.0.1:5000", False),
        ("registry.example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_is_loopback_host(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


# --- docker config ------------------------------------------------------------------------------------


def test_load_docker_credentials_reads_auth_and_username_password(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    encoded = base64.b64encode(f"alice:{SECRET}:with-colon".encode()).decode()
    config.write_text(
        json.dumps(
            {
                "auths": {
                    "https://index.docker.io/v1/": {"auth": encoded},
                    "127.0.0.1:5000": {"username": "bob", "password": SECRET},
                    "empty.example.com": {},
                },
                "credsStore": "desktop",
            }
        )
    )
    found = load_docker_credentials(config)
    assert found == {
        "docker.io": RegistryCredentials("alice", f"{SECRET}:with-colon", str(config)),
        "127.0.0.1:5000": RegistryCredentials("bob", SECRET, str(config)),
    }
    assert SECRET not in repr(found)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"auths": {"r.example.com": {"auth": "!!!"}}}), "auths.r.example.com.auth"),
        (json.dumps({"auths": {"r.example.com": {"auth": base64.b64encode(b"nocolon").decode()}}}), "base64"),
    ],
)
def test_load_docker_credentials_reports_broken_files(tmp_path: Path, content: str, fragment: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(content)
    with pytest.raises(PermanentError, match=fragment) as caught:
        load_docker_credentials(config)
    assert "nocolon" not in str(caught.value)


def test_load_docker_credentials_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PermanentError, match="does not exist"):
        load_docker_credentials(tmp_path / "nope.json")


def test_load_docker_credentials_missing_default_file_means_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-such-dir"))
    assert load_docker_credentials() == {}


# --- resolving ------------------------------------------------------------------------------------------


def test_head_with_digest_header_and_accept_list() -> None:
    client, seen = make_client(lambda r: httpx.Response(200, headers={"Docker-Content-Digest": DIGEST}))
    with client:
        assert client.resolve_digest("quay.io/team/app:1.0") == DIGEST
    (request,) = seen
    assert request.method == "HEAD"
    assert str(request.url) == "https://quay.io/v2/team/app/manifests/1.0"
    assert request.headers["Accept"].split(", ") == list(MANIFEST_MEDIA_TYPES)
    assert "Authorization" not in request.headers


def test_docker_hub_goes_to_registry_1() -> None:
    client, seen = make_client(lambda r: httpx.Response(200, headers={"Docker-Content-Digest": DIGEST}))
    with client:
        client.resolve_digest("nginx")
    assert str(seen[0].url) == "https://registry-1.docker.io/v2/library/nginx/manifests/latest"


def test_pinned_reference_needs_no_request() -> None:
    client, seen = make_client(lambda r: httpx.Response(500))
    with client:
        assert client.resolve_digest(f"quay.io/team/app@{DIGEST}") == DIGEST
    assert seen == []


@pytest.mark.parametrize("head_status", [200, 405])
def test_get_fallback_hashes_the_body(head_status: int) -> None:
    body = b'{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}'

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "HEAD":
            return httpx.Response(head_status)
        return httpx.Response(200, content=body)

    client, seen = make_client(handle)
    with client:
        assert client.resolve_digest("quay.io/team/app:1") == "sha256:" + hashlib.sha256(body).hexdigest()
    assert [r.method for r in seen] == ["HEAD", "GET"]


def test_malformed_digest_header_is_permanent() -> None:
    client, _ = make_client(lambda r: httpx.Response(200, headers={"Docker-Content-Digest": "sha256:zz"}))
    with client, pytest.raises(PermanentError, match="malformed digest"):
        client.resolve_digest("quay.io/team/app:1")


@pytest.mark.parametrize(
    ("status", "headers", "error", "retry_after"),
    [
        (429, {"Retry-After": "42"}, TransientError, 42.0),
        (429, {}, TransientError, 30.0),
        (503, {}, TransientError, 10.0),
        (502, {"Retry-After": "3"}, TransientError, 3.0),
    ],
)
def test_rate_limits_and_server_errors_are_transient(
    status: int, headers: dict[str, str], error: type[TransientError], retry_after: float
) -> None:
    client, _ = make_client(lambda r: httpx.Response(status, headers=headers))
    with client, pytest.raises(error) as caught:
        client.resolve_digest("quay.io/team/app:1")
    assert caught.value.retry_after == retry_after


def test_unknown_tag_is_image_not_found() -> None:
    client, _ = make_client(lambda r: httpx.Response(404))
    expected = re.escape("tag '9.9' not found in registry quay.io")
    with client, pytest.raises(ImageNotFoundError, match=expected):
        client.resolve_digest("quay.io/team/app:9.9")


def test_other_client_errors_are_permanent() -> None:
    client, _ = make_client(lambda r: httpx.Response(400))
    with client, pytest.raises(PermanentError, match="HTTP 400"):
        client.resolve_digest("quay.io/team/app:1")


def test_timeouts_are_transient() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    client, _ = make_client(handle)
    with client, pytest.raises(TransientError, match="timed out"):
        client.resolve_digest("quay.io/team/app:1")


def test_plain_http_is_never_tried_for_remote_hosts() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("tls failed", request=request)

    client, seen = make_client(handle)
    with client, pytest.raises(TransientError, match="unreachable"):
        client.resolve_digest("registry.example.com/team/app:1")
    assert [r.url.scheme for r in seen] == ["https"]


def test_loopback_falls_back_to_plain_http_and_remembers_it() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "https":
            raise httpx.ConnectError("wrong version number", request=request)
        return httpx.Response(200, headers={"Docker-Content-Digest": DIGEST})

    client, seen = make_client(handle)
    with client:
        client.resolve_digest("127.0.0.1:5000/app:1")
        client.resolve_digest("127.0.0.1:5000/app:2")
    assert [r.url.scheme for r in seen] == ["https", "http", "http"]


def test_insecure_hosts_may_use_plain_http() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "https":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, headers={"Docker-Content-Digest": DIGEST})

    client = RegistryClient(
        credentials={}, insecure_hosts=["http://reg.lan:5000"], transport=httpx.MockTransport(handle)
    )
    with client:
        assert client.resolve_digest("reg.lan:5000/app:1") == DIGEST


# --- bearer tokens ----------------------------------------------------------------------------------------


def test_bearer_challenge_gets_an_anonymous_token_and_caches_it() -> None:
    client, seen = make_client(bearer_registry())
    with client:
        assert client.resolve_digest("registry.example.com/team/app:1") == DIGEST
        assert client.resolve_digest("registry.example.com/team/app:2") == DIGEST
    token_requests = [r for r in seen if r.url.host == "auth.example.com"]
    assert len(token_requests) == 1
    assert token_requests[0].url.params["service"] == "registry.example.com"
    assert token_requests[0].url.params["scope"] == "repository:team/app:pull"
    assert "Authorization" not in token_requests[0].headers
    # challenge, token, retry, then the second tag straight with the cached token
    assert len(seen) == 4
    assert seen[3].headers["Authorization"] == "Bearer tok-1"


def test_bearer_token_is_renewed_after_expiry() -> None:
    clock = Clock()
    client, seen = make_client(bearer_registry(token_lifetime=60), clock=clock)
    with client:
        client.resolve_digest("registry.example.com/team/app:1")
        clock.now += 54  # still valid (60 s minus the 5 s margin)
        client.resolve_digest("registry.example.com/team/app:1")
        clock.now += 2
        client.resolve_digest("registry.example.com/team/app:1")
    assert len([r for r in seen if r.url.host == "auth.example.com"]) == 2


def test_bearer_token_without_expires_in_lives_sixty_seconds() -> None:
    clock = Clock()
    client, seen = make_client(bearer_registry(token_lifetime=None), clock=clock)
    with client:
        client.resolve_digest("registry.example.com/team/app:1")
        clock.now += 56
        client.resolve_digest("registry.example.com/team/app:1")
    assert len([r for r in seen if r.url.host == "auth.example.com"]) == 2


def test_bearer_token_request_carries_basic_credentials() -> None:
    credentials = {"registry.example.com": RegistryCredentials("alice", SECRET, "/cfg.json")}
    client, seen = make_client(bearer_registry(needs_user=True), credentials=credentials)
    with client:
        assert client.resolve_digest("registry.example.com/team/app:1") == DIGEST
    token_request = next(r for r in seen if r.url.host == "auth.example.com")
    assert token_request.headers["Authorization"] == basic("alice", SECRET)


def test_refused_token_is_permanent_with_a_hint_and_no_secret() -> None:
    credentials = {"registry.example.com": RegistryCredentials("alice", "wrong-" + SECRET, "/cfg.json")}
    client, _ = make_client(bearer_registry(needs_user=True), credentials=credentials)
    with client, pytest.raises(PermanentError) as caught:
        client.resolve_digest("registry.example.com/team/app:1")
    assert "refused a token" in caught.value.message
    assert "/cfg.json" in caught.value.hint
    assert SECRET not in str(caught.value)


def test_token_realm_over_plain_http_is_refused() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        challenge = 'Bearer realm="http://auth.example.com/token",service="r"'
        return httpx.Response(401, headers={"WWW-Authenticate": challenge})

    credentials = {"registry.example.com": RegistryCredentials("alice", SECRET)}
    client, seen = make_client(handle, credentials=credentials)
    with client, pytest.raises(PermanentError, match="not HTTPS"):
        client.resolve_digest("registry.example.com/team/app:1")
    assert all(r.url.host != "auth.example.com" for r in seen)


def test_token_server_outage_is_transient() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "auth.example.com":
            return httpx.Response(503)
        return httpx.Response(401, headers={"WWW-Authenticate": CHALLENGE.format(scope="repository:a:pull")})

    client, _ = make_client(handle)
    expected = re.escape("token server auth.example.com failed with HTTP 503")
    with client, pytest.raises(TransientError, match=expected):
        client.resolve_digest("registry.example.com/a:1")


# --- basic auth -------------------------------------------------------------------------------------------


def test_basic_challenge_without_credentials_names_the_config() -> None:
    client, _ = make_client(lambda r: httpx.Response(401, headers={"WWW-Authenticate": 'Basic realm="r"'}))
    with client, pytest.raises(PermanentError, match="requires authentication") as caught:
        client.resolve_digest("registry.example.com/team/app:1")
    assert "docker login registry.example.com" in caught.value.hint


def test_basic_credentials_are_sent_up_front_once_the_registry_asked() -> None:
    expected = basic("alice", SECRET)

    def handle(request: httpx.Request) -> httpx.Response:
        if request.headers.get("Authorization") == expected:
            return httpx.Response(200, headers={"Docker-Content-Digest": DIGEST})
        return httpx.Response(401, headers={"WWW-Authenticate": 'Basic realm="r"'})

    credentials = {"registry.example.com": RegistryCredentials("alice", SECRET)}
    client, seen = make_client(handle, credentials=credentials)
    with client:
        client.resolve_digest("registry.example.com/team/app:1")
        client.resolve_digest("registry.example.com/team/app:2")
    assert [r.headers.get("Authorization") is not None for r in seen] == [False, True, True]
