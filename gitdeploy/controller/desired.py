"""Desired state at a commit: the config repo's files, through the manifests layer, cached by blob.

Parsing and validating a file depends only on its bytes and path, so the result is cached by blob
sha: after a commit that changes one of 10,000 manifests, one file is read and parsed again; the
repo-wide pass (:func:`gitdeploy.manifests.loader.assemble`) is cheap and always runs.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.commits import FileEntry
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


class DesiredStateReader:
    """Reads :class:`LoadResult` for any commit of a :class:`ConfigRepo`, without a checkout."""

    def __init__(self, repo: ConfigRepo, cache: BlobCache[FileAnalysis] | None = None) -> None:
        self.repo = repo
        self.cache: BlobCache[FileAnalysis] = cache or BlobCache()
        self.files_parsed = 0

    def load(self, sha: str) -> LoadResult:
        entries = self.repo.list_files(sha)
        settings_entry = next((e for e in entries if e.path == SETTINGS_FILE), None)
        settings_file = None
        if settings_entry is not None:
            data = self.repo.read_blobs([settings_entry.blob_sha])[settings_entry.blob_sha]
            settings_file = ManifestFile(settings_entry.path, data)
        settings, settings_problems = parse_settings(settings_file)
        wanted = [e for e in entries if is_manifest_path(e.path, settings)]
        missing = [e for e in wanted if not self.cache.contains(e.blob_sha, path=e.path)]
        blobs = self.repo.read_blobs(sorted({e.blob_sha for e in missing})) if missing else {}

        def analyse(entry: FileEntry) -> FileAnalysis:
            self.files_parsed += 1
            return analyse_file(ManifestFile(entry.path, blobs[entry.blob_sha]))

        analyses = [self.cache.get_or_compute(e.blob_sha, partial(analyse, e), path=e.path) for e in wanted]
        result = assemble(analyses, settings)
        if settings_problems:
            result = replace(result, diagnostics=tuple(settings_problems) + result.diagnostics)
        return result
