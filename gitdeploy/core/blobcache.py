"""A bounded cache of results computed from git blobs, keyed by blob sha.

A blob sha names file contents exactly, so anything computed only from those contents (parsed
YAML, a validation result) can be reused for every commit and every path that holds the same
bytes. With 10,000 manifests and one changed file, a sync parses one blob, not 10,000.

When the result also depends on the file's path (messages that name the file), pass ``path`` so
the key becomes blob sha plus path.

>>> cache: BlobCache[int] = BlobCache(max_entries=2)
>>> cache.get_or_compute("aa", lambda: 1)
1
>>> cache.get_or_compute("aa", lambda: 99)
1
>>> (cache.hits, cache.misses)
(1, 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class BlobCache(Generic[T]):
    """A thread-safe least-recently-used map from blob sha (plus optional path) to a result.

    ``compute`` runs outside the lock, so two threads may compute the same entry once each; the
    result is the same by construction (it depends only on the blob), so that is harmless.
    Exceptions from ``compute`` are not cached.
    """

    def __init__(self, max_entries: int = 50_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, str | None], T] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, blob_sha: object) -> bool:
        with self._lock:
            return (blob_sha, None) in self._entries

    def contains(self, blob_sha: str, *, path: str | None = None) -> bool:
        """Whether a result for ``blob_sha`` (and ``path``) is cached, without touching its recency."""
        with self._lock:
            return (blob_sha, path) in self._entries

    def get_or_compute(self, blob_sha: str, compute: Callable[[], T], *, path: str | None = None) -> T:
        """Return the cached result for ``blob_sha`` (and ``path``), computing and storing it once."""
        key = (blob_sha, path)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key]
            self.misses += 1
        value = compute()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def discard_entry(self, blob_sha: str, *, path: str | None = None) -> None:
        """Forget one entry (for example after the rules that produced it changed)."""
        with self._lock:
            self._entries.pop((blob_sha, path), None)

    def retain(self, keys: Iterable[tuple[str, str | None]]) -> None:
        """Forget every entry but those of ``keys`` (``(blob sha, path)``; path None when the
        entry was stored without one): what a new state no longer uses.

        >>> cache: BlobCache[int] = BlobCache()
        >>> for sha in ("aa", "bb"): _ = cache.get_or_compute(sha, lambda: 1, path="x.yaml")
        >>> cache.retain([("bb", "x.yaml")]); cache.contains("aa", path="x.yaml"), len(cache)
        (False, 1)
        """
        wanted = set(keys)
        with self._lock:
            for key in [k for k in self._entries if k not in wanted]:
                del self._entries[key]

    def clear_entries(self) -> None:
        """Forget every entry and reset the counters."""
        with self._lock:
            self._entries.clear()
            self.hits = 0
            self.misses = 0
