"""Times as Kubernetes writes them (RFC 3339, UTC, whole seconds) and back."""

from __future__ import annotations

from datetime import UTC, datetime


def format_timestamp(at: float) -> str:
    """RFC 3339, UTC, whole seconds.

    >>> format_timestamp(1_700_000_000.0)
    '2023-11-14T22:13:20Z'
    """
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str | None) -> float | None:
    """Seconds since the epoch, or None for an empty or malformed text.

    >>> parse_timestamp("2023-11-14T22:13:20Z"), parse_timestamp(""), parse_timestamp("soon")
    (1700000000.0, None, None)
    """
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
