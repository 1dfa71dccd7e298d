"""The OpenAPI v3 documents kubectl asks for (``kubectl apply`` validation, ``kubectl explain``).

They are kube-apiserver's own, cut down by ``scripts/localcluster-openapi`` to the resources the
embedded cluster serves, and kept gzipped in ``openapi/``; read on first request only.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["PREFIX", "document", "index", "parsed"]

_DIR = Path(__file__).parent / "openapi"
PREFIX = "/openapi/v3"


@functools.cache
def _documents() -> dict[str, bytes]:
    """``api/v1``, ``apis/apps/v1``, ... → the document's JSON."""
    found: dict[str, bytes] = {}
    for path in sorted(_DIR.glob("*.json.gz")):
        found[path.name.removesuffix(".json.gz").replace("__", "/")] = gzip.decompress(path.read_bytes())
    return found


@functools.cache
def index() -> dict[str, Any]:
    """``GET /openapi/v3``: each group version's document, by a URL that names its hash."""
    return {
        "paths": {
            name: {"serverRelativeURL": f"{PREFIX}/{name}?hash={hashlib.sha512(body).hexdigest().upper()}"}
            for name, body in _documents().items()
        }
    }


def document(path: str) -> bytes | None:
    """``GET /openapi/v3/<group version>``: its document, or None when there is none."""
    return _documents().get(path.removeprefix(PREFIX).strip("/"))


@functools.cache
def parsed(name: str) -> dict[str, Any] | None:
    """The document of group version ``name`` (``api/v1``, ``apis/apps/v1``), parsed; None if none."""
    body = _documents().get(name)
    return None if body is None else dict(json.loads(body))
