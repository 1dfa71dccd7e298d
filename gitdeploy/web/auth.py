"""Who may act on the dashboard: a login with the shared token, a signed session cookie, and a
CSRF token bound to the session. No state is kept in memory, so a restart keeps people logged in,
and changing the token file logs everyone out.

* The session cookie is ``NAME|EXPIRES|NONCE`` and an HMAC of it, keyed from the token; it is
  HttpOnly and SameSite=Strict (and Secure when the page came over HTTPS).
* The CSRF token is an HMAC of the session's nonce: every form that acts carries it, and a POST
  without it (or with another session's) is refused, whatever its cookie.

>>> keys = SessionKeys(b"s3cret-token-of-the-team")
>>> cookie = keys.issue("alice", now=1000.0)
>>> session = keys.read(cookie, now=1001.0)
>>> session.name, keys.csrf_matches(session, session.csrf)
('alice', True)
>>> keys.read(cookie + "x", now=1001.0) is None, keys.read(cookie, now=1000.0 + SESSION_SECONDS + 1) is None
(True, True)
>>> SessionKeys(b"another-token-entirely").read(cookie, now=1001.0) is None
True
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from gitdeploy.server.http import read_secret_file

COOKIE: Final = "gitdeploy_session"
SESSION_SECONDS: Final = 8 * 3600
"""A login lasts a working day."""
MIN_TOKEN_BYTES: Final = 16
NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@ -]{0,62}$")
"""The name given at login: what the events say did it (letters, digits, ``._@ -``)."""


def read_token_file(path: Path | str) -> bytes:
    """The dashboard token in ``path``, without its trailing newline; refused when short."""
    return read_secret_file(path, "--dashboard-token-file", min_bytes=MIN_TOKEN_BYTES)


@dataclass(frozen=True)
class Session:
    name: str
    """Who logged in, as they said (recorded in the events of what they do)."""
    csrf: str
    """The token the session's forms carry."""


class SessionKeys:
    """Checks the login token and issues and reads session cookies (see the module's doc)."""

    def __init__(self, token: bytes) -> None:
        self._token = token
        self._key = hmac.new(token, b"gitdeploy dashboard session", hashlib.sha256).digest()

    def token_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), self._token)

    def _sign(self, payload: str) -> str:
        digest = hmac.new(self._key, payload.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def issue(self, name: str, *, now: float) -> str:
        """A cookie value for ``name``'s new session."""
        payload = f"{name}|{int(now) + SESSION_SECONDS}|{secrets.token_urlsafe(16)}"
        encoded = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
        return f"{encoded}.{self._sign(payload)}"

    def read(self, cookie: str | None, *, now: float) -> Session | None:
        """The session of a cookie this token signed and that has not expired; else None."""
        if not cookie or "." not in cookie:
            return None
        encoded, _, signature = cookie.partition(".")
        try:
            payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        except (ValueError, UnicodeDecodeError):
            return None
        if not hmac.compare_digest(self._sign(payload), signature):
            return None
        name, _, rest = payload.partition("|")
        expires, _, nonce = rest.partition("|")
        if not expires.isdigit() or int(expires) < now or not NAME.match(name):
            return None
        return Session(name, self._sign(f"csrf|{nonce}"))

    def csrf_matches(self, session: Session, given: str) -> bool:
        return hmac.compare_digest(session.csrf.encode(), given.encode("utf-8", "replace"))
