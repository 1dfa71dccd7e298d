"""The kubeconfig and bearer token of an embedded cluster (files created with mode 0600)."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

__all__ = ["CONTEXT_NAME", "load_or_create_token", "write_kubeconfig", "write_private"]

CONTEXT_NAME = "gitdeploy-local"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def load_or_create_token(state_dir: Path) -> str:
    """The cluster's bearer token, kept in ``<state_dir>/token`` so restarts keep it."""
    path = state_dir / "token"
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if not token:
        token = secrets.token_urlsafe(32)
        write_private(path, token + "\n")
    return token


def write_kubeconfig(
    path: Path, server: str, token: str, *, ca_pem: str | None = None, name: str = CONTEXT_NAME
) -> Path:
    """Write a kubeconfig with one cluster, user and context (``name``), current.

    ``ca_pem``: the server's (self-signed) certificate, when it serves HTTPS.
    """
    ca = ""
    if ca_pem:
        ca = f"\n    certificate-authority-data: {base64.b64encode(ca_pem.encode()).decode()}"
    text = f"""apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: "{server}"{ca}
users:
- name: {name}
  user:
    token: "{token}"
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}
    namespace: default
current-context: {name}
preferences: {{}}
"""
    write_private(path, text)
    return path
