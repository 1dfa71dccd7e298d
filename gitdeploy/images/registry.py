"""An OCI distribution API client that resolves image tags to manifest digests.

The only module that talks to image registries. It asks ``HEAD /v2/<repository>/manifests/<tag>``
with an ``Accept`` header listing the OCI index and manifest and the Docker manifest list and v2
manifest, and reads ``Docker-Content-Digest``; without that header it falls back to ``GET`` and the
sha256 of the exact body bytes.

Authentication follows the registry's ``WWW-Authenticate`` challenge:

* ``Bearer realm=...,service=...,scope=...``: fetch a token from the realm (with basic credentials
  when we have some, anonymously otherwise) and cache it per registry and scope until it expires;
* ``Basic``: send the credentials, and remember that the registry wants them up front.

Credentials come from a Docker config file (``auths.<host>.auth`` = base64 ``user:pass``, or
``username``/``password``). They never appear in messages, logs or ``repr``.

Transport rules: HTTPS always; plain HTTP only for loopback hosts and hosts listed as insecure (tried
after HTTPS fails to connect, like ``docker`` does). Every request has a timeout.

Errors leave this module only as ``gitdeploy.errors``: an unknown tag or repository is an
``ImageNotFoundError`` (permanent), 401/403 a ``PermanentError`` with a hint about credentials, and
network failures, 5xx and 429 a ``TransientError`` with ``retry_after``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import httpx

from gitdeploy.errors import PermanentError, TransientError
from gitdeploy.images.reference import DOCKER_HUB, ImageReference, parse_image_reference, validate_digest

log = logging.getLogger(__name__)

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MANIFEST_MEDIA_TYPES = (OCI_INDEX, OCI_MANIFEST, DOCKER_MANIFEST_LIST, DOCKER_MANIFEST)
"""What we accept, multi-platform indexes first: a tag of a multi-arch image resolves to its index."""

DEFAULT_TIMEOUT = 10.0
"""Seconds for connecting, and for each read/write, of one request."""
TOKEN_DEFAULT_LIFETIME = 60.0
"""Seconds a bearer token lives when the token server does not say (the token spec's default)."""
TOKEN_EXPIRY_MARGIN = 5.0
"""A cached token is dropped this many seconds before it expires, so it never expires in flight."""
RETRY_AFTER_RATE_LIMITED = 30.0
RETRY_AFTER_SERVER_ERROR = 10.0
RETRY_AFTER_NETWORK = 5.0

_DOCKER_HUB_API = "registry-1.docker.io"
_DOCKER_HUB_ALIASES = frozenset(
    {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
)
_CHALLENGE_PARAM_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))')


class ImageNotFoundError(PermanentError):
    """The registry has no such tag or repository (HTTP 404)."""


@dataclass(frozen=True)
class RegistryCredentials:
    """A user name and password (or token) for one registry. The password never shows in ``repr``."""

    username: str
    password: str = field(repr=False)
    source: str = ""
    """Where they were read from (``/root/.docker/config.json``), for hints."""


@dataclass(frozen=True)
class _Challenge:
    scheme: str  # lowercase: "bearer" or "basic"
    params: Mapping[str, str]


@dataclass(frozen=True)
class _Token:
    value: str = field(repr=False)
    expires_at: float  # on the client's monotonic clock


def default_docker_config_path() -> Path:
    """``$DOCKER_CONFIG/config.json`` when ``DOCKER_CONFIG`` is set, else ``~/.docker/config.json``."""
    directory = os.environ.get("DOCKER_CONFIG")
    return Path(directory) / "config.json" if directory else Path.home() / ".docker" / "config.json"


def normalize_registry_host(key: str) -> str:
    """The registry host a Docker config ``auths`` key or a reference names, lowercased.

    ``https://index.docker.io/v1/`` -> ``docker.io``; ``http://127.0.0.1:5000`` -> ``127.0.0.1:5000``.
    """
    text = key.strip()
    if "://" in text:
        text = urlsplit(text).netloc
    text = text.split("/", 1)[0].lower()
    return DOCKER_HUB if text in _DOCKER_HUB_ALIASES else text


def load_docker_credentials(path: Path | None = None) -> dict[str, RegistryCredentials]:
    """Read registry credentials from a Docker config file, keyed by normalised registry host.

    With ``path=None`` the default file is read and a missing file means "no credentials"; a
    ``path`` that was given explicitly must exist. ``credsStore``/``credHelpers`` are not consulted.
    """
    explicit = path is not None
    config_path = path if path is not None else default_docker_config_path()
    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise PermanentError(
                f"docker config file {config_path} does not exist",
                hint="give the path of a config.json with an 'auths' section, or run docker login",
            ) from None
        return {}
    except OSError as exc:
        raise PermanentError(
            f"cannot read docker config file {config_path}: {exc.strerror}",
            hint="check the file's permissions",
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # The decoder's message names a position only, never the file's content.
        raise PermanentError(
            f"docker config file {config_path} is not valid JSON (line {exc.lineno}, column {exc.colno})",
            hint="fix the file or log in again with docker login",
        ) from None
    auths = data.get("auths") if isinstance(data, dict) else None
    if not isinstance(auths, dict):
        return {}
    found: dict[str, RegistryCredentials] = {}
    for key, entry in auths.items():
        if not isinstance(entry, dict):
            continue
        credentials = _read_auth_entry(str(key), entry, config_path)
        if credentials is not None:
            found[normalize_registry_host(str(key))] = credentials
    return found


def _read_auth_entry(key: str, entry: Mapping[str, object], config_path: Path) -> RegistryCredentials | None:
    auth = entry.get("auth")
    if isinstance(auth, str) and auth:
        try:
            decoded = base64.b64decode(auth, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        user, sep, secret = decoded.partition(":")
        if not sep or not user:
            raise PermanentError(
                f"docker config file {config_path}: auths.{key}.auth is not base64 of 'user:password'",
                hint=f"log in again with docker login {key}, or set username and password instead",
            )
        return RegistryCredentials(user, secret, str(config_path))
    username, password = entry.get("username"), entry.get("password")
    if isinstance(username, str) and isinstance(password, str) and username:
        return RegistryCredentials(username, password, str(config_path))
    return None


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (``host[:port]``, IPv6 in brackets) is ``localhost`` or a loopback address."""
    name = host
    if name.startswith("["):
        name = name[1:].split("]", 1)[0]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_www_authenticate(header: str) -> tuple[str, dict[str, str]]:
    """Split a ``WWW-Authenticate`` value into its lowercased scheme and its parameters.

    ``Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull"`` ->
    ``("bearer", {"realm": "https://auth.example/token", "service": "reg", "scope": "repository:a/b:pull"})``
    """
    scheme, _, rest = header.strip().partition(" ")
    params = {
        m[1].lower(): (m[2].replace('\\"', '"') if m[2] is not None else m[3])
        for m in _CHALLENGE_PARAM_RE.finditer(rest)
    }
    return scheme.lower(), params


def parse_retry_after(value: str | None, default: float) -> float:
    """Seconds from a ``Retry-After`` header (delay-seconds form), clamped to 1..3600; else ``default``."""
    if value is None or not value.strip().isdigit():
        return default
    return float(min(max(int(value.strip()), 1), 3600))


class RegistryClient:
    """Resolves tags to digests over the OCI distribution API. Thread-safe; close it when done.

    ``credentials`` maps registry hosts to credentials; when ``None`` they are read from
    ``docker_config`` (default ``~/.docker/config.json``). ``insecure_hosts`` (``host[:port]``) may
    be reached over plain HTTP in addition to loopback hosts. ``transport`` and ``monotonic`` exist
    for tests.
    """

    def __init__(
        self,
        *,
        credentials: Mapping[str, RegistryCredentials] | None = None,
        docker_config: Path | None = None,
        insecure_hosts: Iterable[str] = (),
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if credentials is None:
            credentials = load_docker_credentials(docker_config)
        self._credentials = {normalize_registry_host(k): v for k, v in credentials.items()}
        self._config_hint = str(docker_config) if docker_config is not None else "~/.docker/config.json"
        self._insecure = frozenset(normalize_registry_host(h) for h in insecure_hosts)
        self._monotonic = monotonic
        self._http = httpx.Client(timeout=httpx.Timeout(timeout), transport=transport, follow_redirects=True)
        self._lock = threading.Lock()
        self._tokens: dict[tuple[str, str], _Token] = {}
        self._basic_hosts: set[str] = set()
        self._schemes: dict[str, str] = {}

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self, _exc_type: type[BaseException] | None, _exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def resolve_digest(self, reference: ImageReference | str) -> str:
        """The manifest digest ``reference``'s tag points at now (``sha256:...``).

        A reference that already carries a digest is returned as is, without asking the registry.
        """
        ref = parse_image_reference(reference) if isinstance(reference, str) else reference
        if ref.digest is not None:
            return ref.digest
        path = f"/v2/{ref.repository}/manifests/{ref.manifest_reference}"
        response = self._request_manifest("HEAD", ref, path)
        digest = response.headers.get("Docker-Content-Digest")
        if response.status_code == 200 and digest:
            return self._check_digest(digest, ref)
        response = self._request_manifest("GET", ref, path)
        digest = response.headers.get("Docker-Content-Digest")
        if digest:
            return self._check_digest(digest, ref)
        return "sha256:" + hashlib.sha256(response.content).hexdigest()

    def _check_digest(self, digest: str, ref: ImageReference) -> str:
        try:
            return validate_digest(digest.strip())
        except PermanentError:
            raise PermanentError(
                f"registry {ref.registry} answered {ref} with a malformed digest",
                hint="the registry is not following the distribution API; report it to its operator",
            ) from None

    def _request_manifest(self, method: str, ref: ImageReference, path: str) -> httpx.Response:
        scope = f"repository:{ref.repository}:pull"
        response = self._send(method, ref.registry, path, self._auth_headers(ref.registry, scope))
        if response.status_code == 401:
            headers = self._answer_challenge(ref, scope, response)
            response = self._send(method, ref.registry, path, headers)
            if response.status_code == 401:
                raise self._auth_error(ref, "rejected the credentials")
        if method == "HEAD" and response.status_code in (405, 501):
            return response  # HEAD not supported: the caller falls back to GET
        self._raise_for_status(ref, response)
        return response

    def _auth_headers(self, registry: str, scope: str) -> dict[str, str]:
        headers = {"Accept": ", ".join(MANIFEST_MEDIA_TYPES)}
        with self._lock:
            token = self._tokens.get((registry, scope))
            if token is not None and token.expires_at <= self._monotonic():
                del self._tokens[(registry, scope)]
                token = None
            basic = registry in self._basic_hosts
        if token is not None:
            headers["Authorization"] = f"Bearer {token.value}"
        elif basic and (credentials := self._credentials.get(registry)) is not None:
            headers["Authorization"] = _basic_authorization(credentials)
        return headers

    def _answer_challenge(self, ref: ImageReference, scope: str, response: httpx.Response) -> dict[str, str]:
        """Headers for the retry after a 401, following the registry's ``WWW-Authenticate``."""
        challenges = [parse_www_authenticate(v) for v in response.headers.get_list("WWW-Authenticate")]
        credentials = self._credentials.get(ref.registry)
        accept = ", ".join(MANIFEST_MEDIA_TYPES)
        for scheme, params in challenges:
            if scheme == "bearer" and params.get("realm"):
                token = self._fetch_token(ref, _Challenge(scheme, params), scope, credentials)
                return {"Accept": accept, "Authorization": f"Bearer {token}"}
            if scheme == "basic" and credentials is not None:
                with self._lock:
                    self._basic_hosts.add(ref.registry)
                return {"Accept": accept, "Authorization": _basic_authorization(credentials)}
        raise self._auth_error(ref, "requires authentication")

    def _fetch_token(
        self, ref: ImageReference, challenge: _Challenge, scope: str, credentials: RegistryCredentials | None
    ) -> str:
        realm = challenge.params["realm"]
        realm_url = httpx.URL(realm)
        if realm_url.scheme != "https" and not (
            realm_url.scheme == "http" and self._plain_http_allowed(realm_url.netloc.decode("ascii"))
        ):
            raise PermanentError(
                f"registry {ref.registry} sends us for a token to {realm_url.scheme}://{realm_url.host}, "
                "which is not HTTPS",
                hint="plain HTTP is only used for loopback hosts and hosts marked insecure",
            )
        token_scope = challenge.params.get("scope") or scope
        params = {"scope": token_scope}
        if challenge.params.get("service"):
            params["service"] = challenge.params["service"]
        auth = (credentials.username, credentials.password) if credentials is not None else None
        try:
            response = self._http.get(realm_url, params=params, auth=auth)
        except httpx.TransportError as exc:
            raise TransientError(
                f"token server of registry {ref.registry} ({realm_url.host}) is unreachable: "
                f"{type(exc).__name__}",
                retry_after=RETRY_AFTER_NETWORK,
            ) from None
        if response.status_code in (401, 403):
            raise self._auth_error(ref, "refused a token")
        self._raise_for_status(ref, response, what=f"token server {realm_url.host}")
        try:
            body = response.json()
            value = body.get("token") or body.get("access_token")
            lifetime = float(body.get("expires_in") or TOKEN_DEFAULT_LIFETIME)
        except (ValueError, AttributeError, TypeError):
            value, lifetime = None, 0.0
        if not isinstance(value, str) or not value:
            raise PermanentError(
                f"token server of registry {ref.registry} ({realm_url.host}) answered without a token",
                hint="the registry's token service is misconfigured; report it to its operator",
            )
        expires_at = self._monotonic() + max(lifetime - TOKEN_EXPIRY_MARGIN, 0.0)
        with self._lock:
            self._tokens[(ref.registry, scope)] = _Token(value, expires_at)
        log.debug("registry %s: got a bearer token for %s (%.0f s)", ref.registry, token_scope, lifetime)
        return value

    def _send(self, method: str, registry: str, path: str, headers: Mapping[str, str]) -> httpx.Response:
        endpoint = _DOCKER_HUB_API if registry == DOCKER_HUB else registry
        with self._lock:
            known = self._schemes.get(registry)
        if known is not None:
            schemes = [known]
        else:
            schemes = ["https", "http"] if self._plain_http_allowed(registry) else ["https"]
        for index, scheme in enumerate(schemes):
            try:
                response = self._http.request(method, f"{scheme}://{endpoint}{path}", headers=headers)
            except httpx.ConnectError as exc:
                if index + 1 < len(schemes):
                    continue  # e.g. a plain-HTTP registry on localhost: TLS fails, try HTTP
                raise self._network_error(registry, exc) from None
            except httpx.TransportError as exc:
                raise self._network_error(registry, exc) from None
            with self._lock:
                self._schemes[registry] = scheme
            return response
        raise AssertionError("unreachable: schemes is never empty")

    def _plain_http_allowed(self, host: str) -> bool:
        return is_loopback_host(host) or normalize_registry_host(host) in self._insecure

    def _raise_for_status(self, ref: ImageReference, response: httpx.Response, what: str = "") -> None:
        status = response.status_code
        source = what or f"registry {ref.registry}"
        if 200 <= status < 300:
            return
        if status == 404 and not what:
            raise ImageNotFoundError(
                f"tag '{ref.tag}' not found in registry {ref.registry} (repository {ref.repository})",
                hint="check the repository and tag, or push the image first",
            )
        if status in (401, 403):
            raise self._auth_error(ref, "denied access")
        if status == 429:
            retry_after = parse_retry_after(response.headers.get("Retry-After"), RETRY_AFTER_RATE_LIMITED)
            raise TransientError(
                f"{source} is rate limiting us (HTTP 429) while resolving {ref}",
                hint="pull less often, or log in for a higher limit",
                retry_after=retry_after,
            )
        if status >= 500:
            retry_after = parse_retry_after(response.headers.get("Retry-After"), RETRY_AFTER_SERVER_ERROR)
            raise TransientError(
                f"{source} failed with HTTP {status} while resolving {ref}", retry_after=retry_after
            )
        raise PermanentError(
            f"{source} answered HTTP {status} while resolving {ref}",
            hint="check the image reference; this request is not expected to succeed if repeated",
        )

    def _auth_error(self, ref: ImageReference, what: str) -> PermanentError:
        credentials = self._credentials.get(ref.registry)
        if credentials is None:
            hint = (
                f'no credentials for {ref.registry} in {self._config_hint}: add auths."{ref.registry}" '
                f"(docker login {ref.registry}); some registries also answer like this for a repository "
                "that does not exist"
            )
        else:
            hint = (
                f"check the credentials for {ref.registry} in {credentials.source or self._config_hint} "
                "(wrong or expired password or token, or no pull access to this repository)"
            )
        return PermanentError(f"registry {ref.registry} {what} for {ref.name}", hint=hint)

    @staticmethod
    def _network_error(registry: str, exc: httpx.TransportError) -> TransientError:
        kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "is unreachable"
        return TransientError(
            f"registry {registry} {kind} ({type(exc).__name__})",
            hint="check the registry host and the network; will retry",
            retry_after=RETRY_AFTER_NETWORK,
        )


def _basic_authorization(credentials: RegistryCredentials) -> str:
    raw = f"{credentials.username}:{credentials.password}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")
