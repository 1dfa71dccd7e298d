"""Kubernetes timestamps (RFC 3339, UTC) from and to clock seconds."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_time", "parse_time"]


def format_time(seconds: float) -> str:
    """``2023-11-14T22:13:20Z``; sub-second clocks keep their fraction (``...20.5Z``), still RFC 3339."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0") + "Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp, or None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
