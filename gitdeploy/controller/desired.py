"""Desired state at a commit: the config repo's files, through the manifests layer, cached by blob.

Parsing and validating a file depends only on its bytes and path, so the result is cached by blob
sha. The reader also remembers the last commit it loaded: the next load diffs the two trees once
and re-reads only the files that changed. A commit that touches no manifest (a README change)
returns the previous result as it is; a commit that changes one of 10,000 manifests parses that
one file and re-runs the cheap repo-wide pass (:func:`gitdeploy.manifests.loader.assemble`).
A changed ``gitdeploy.yaml`` (which selects the manifest paths) means a full load, still through
the blob cache.

With a sub-path (``--path DIR``), ``DIR/gitdeploy.yaml`` is the settings file and the settings'
``paths`` are relative to ``DIR``.
"""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass, replace
from functools import partial

from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.commits import FileEntry
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.models import RepoSettings
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import (
    SETTINGS_FILE,
    FileAnalysis,
    LoadResult,
    analyse_file,
    assemble,
    is_manifest_path,
    parse_settings,
)
from gitdeploy.source.repo import ConfigRepo

FREEZE_AFTER_FILES = 1_000
"""Every this many files parsed (and after a load that parsed as many), move what is alive to the
permanent GC generation.

The parsed state of 10,000 apps is a few million long-lived objects; without ``gc.freeze()`` every
full collection walks all of them again (about 150 ms each, during the load and in later polls)."""


def settings_path(subpath: str) -> str:
    """The repo-relative path of ``gitdeploy.yaml`` for a source tracking ``subpath`` ('' = root)."""
    return f"{subpath}/{SETTINGS_FILE}" if subpath else SETTINGS_FILE


def relative_to(path: str, subpath: str) -> str:
    """``path`` (repo-relative) as seen from ``subpath``, as the settings' ``paths`` are written."""
    return path[len(subpath) + 1 :] if subpath and path.startswith(subpath + "/") else path


@dataclass(frozen=True)
class _Loaded:
    """What the last load saw, to load the next commit from a tree diff."""

    sha: str
    settings: RepoSettings
    settings_problems: tuple[Diagnostic, ...]
    files: dict[str, FileAnalysis]
    """The analysis of every manifest file, by repo-relative path (sorted)."""
    result: LoadResult


class DesiredStateReader:
    """Reads :class:`LoadResult` for any commit of a :class:`ConfigRepo`, without a checkout."""

    def __init__(self, repo: ConfigRepo, cache: BlobCache[FileAnalysis] | None = None) -> None:
        self.repo = repo
        self.cache: BlobCache[FileAnalysis] = cache or BlobCache()
        self.files_parsed = 0
        self._last: _Loaded | None = None
        self._lock = threading.Lock()

    def load(self, sha: str) -> LoadResult:
        sha = self.repo.resolve_commit(sha)
        with self._lock:
            last = self._last
            if last is not None and last.sha == sha:
                return last.result
            loaded = self._load_changes(last, sha) if last is not None else None
            if loaded is None:
                loaded = self._load_all(sha)
            self._last = loaded
            return loaded.result

    def _analyse(self, entries: list[FileEntry]) -> dict[str, FileAnalysis]:
        """The analysis of each entry (by path), reading and parsing only blobs not in the cache."""
        missing = [e for e in entries if not self.cache.contains(e.blob_sha, path=e.path)]
        blobs = self.repo.read_blobs(sorted({e.blob_sha for e in missing})) if missing else {}
        parsed_before = self.files_parsed

        def analyse(entry: FileEntry) -> FileAnalysis:
            self.files_parsed += 1
            if self.files_parsed % FREEZE_AFTER_FILES == 0:
                gc.freeze()
            return analyse_file(ManifestFile(entry.path, blobs[entry.blob_sha]))

        analyses = {
            e.path: self.cache.get_or_compute(e.blob_sha, partial(analyse, e), path=e.path) for e in entries
        }
        if self.files_parsed - parsed_before >= FREEZE_AFTER_FILES:
            gc.freeze()
        return analyses

    def _finish(
        self,
        sha: str,
        settings: RepoSettings,
        problems: tuple[Diagnostic, ...],
        files: dict[str, FileAnalysis],
    ) -> _Loaded:
        result = assemble(files.values(), settings)
        if problems:
            result = replace(result, diagnostics=problems + result.diagnostics)
        return _Loaded(sha, settings, problems, files, result)

    def _load_all(self, sha: str) -> _Loaded:
        entries = self.repo.list_files(sha)
        where = settings_path(self.repo.subpath)
        settings_entry = next((e for e in entries if e.path == where), None)
        settings_file = None
        if settings_entry is not None:
            data = self.repo.read_blobs([settings_entry.blob_sha])[settings_entry.blob_sha]
            settings_file = ManifestFile(settings_entry.path, data)
        settings, problems = parse_settings(settings_file)
        wanted = [e for e in entries if self._is_manifest(e.path, settings)]
        return self._finish(sha, settings, tuple(problems), self._analyse(wanted))

    def _load_changes(self, last: _Loaded, sha: str) -> _Loaded | None:
        """The state at ``sha`` from ``last`` and one tree diff; None when a full load is needed."""
        changes = self.repo.changed_files(last.sha, sha)
        where = settings_path(self.repo.subpath)
        if any(c.path == where for c in changes):
            return None
        if not changes:
            return replace(last, sha=sha)
        files = dict(last.files)
        changed: list[FileEntry] = []
        for change in changes:
            files.pop(change.path, None)
            if change.new_blob is not None and self._is_manifest(change.path, last.settings):
                changed.append(FileEntry(path=change.path, blob_sha=change.new_blob, size=0))
        files.update(self._analyse(changed))
        ordered = {path: files[path] for path in sorted(files)}
        return self._finish(sha, last.settings, last.settings_problems, ordered)

    def _is_manifest(self, path: str, settings: RepoSettings) -> bool:
        return is_manifest_path(relative_to(path, self.repo.subpath), settings)
