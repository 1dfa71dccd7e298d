"""Desired state at a commit: the config repo's files, through the manifests layer, cached by blob.

Parsing and validating a file depends only on its bytes and path, so the result is cached by blob
sha. The reader also remembers the last commit it loaded: the next load diffs the two trees once
and re-reads only the files that changed. A commit that touches no manifest (a README change)
returns the previous result as it is; a commit that changes one of 10,000 manifests parses that
one file and runs the repo-wide pass (:func:`gitdeploy.manifests.loader.assemble`) over only the
files that decide the apps it touches: every file defining one of their names (duplicates), and
the files holding image streams (trigger references) or analysis templates (canary analysis
references); the other apps, diagnostics and ignored documents are kept from the previous result.
A changed ``gitdeploy.yaml`` (which selects the manifest paths), or a changed file holding an
image stream or an analysis template, means a whole repo-wide pass, still through the blob cache.

With a sub-path (``--path DIR``), ``DIR/gitdeploy.yaml`` is the settings file and the settings'
``paths`` are relative to ``DIR``.
"""

from __future__ import annotations

import bisect
import gc
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.commits import FileEntry
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.models import App, AppKey, RepoSettings
from gitdeploy.manifests.apps import APP_KINDS
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import (
    SETTINGS_FILE,
    FileAnalysis,
    Ignored,
    LoadResult,
    analyse_file,
    assemble,
    diagnostic_order,
    is_manifest_path,
    parse_settings,
    unmatched_paths,
)
from gitdeploy.source.repo import ConfigRepo

IMAGE_STREAM = "ImageStream"
ANALYSIS_TEMPLATE = "AnalysisTemplate"
_T = TypeVar("_T")

FREEZE_AFTER_FILES = 1_000
"""Every this many files parsed (and after a load that parsed as many), move what is alive to the
permanent GC generation.

The parsed state of 10,000 apps is a few million long-lived objects; without ``gc.freeze()`` every
full collection walks all of them again, during the load and in every later poll."""


def _freeze() -> None:
    """Collect the cyclic garbage made since the last freeze, then freeze what is alive. Frozen
    objects are never looked at again, so garbage frozen with them would stay for the life of the
    process (about 9,000 objects, 6 MiB, after loading 10,000 apps); the collection walks only
    what was made since the last freeze, not the frozen millions."""
    gc.collect()
    gc.freeze()


READ_AT_ONCE = 500
"""Files whose blobs are read (one ``git cat-file --batch``) and parsed together. Reading all 10,000
blobs of a big repo first held them all through the whole parse and left a hole of their size in
the heap under what the parse keeps, which raised the peak RSS of ``gitdeploy run`` (measured by
``bench/run.py``'s memory figure)."""


def settings_path(subpath: str) -> str:
    """The repo-relative path of ``gitdeploy.yaml`` for a source tracking ``subpath`` ('' = root)."""
    return f"{subpath}/{SETTINGS_FILE}" if subpath else SETTINGS_FILE


def relative_to(path: str, subpath: str) -> str:
    """``path`` (repo-relative) as seen from ``subpath``, as the settings' ``paths`` are written."""
    return path[len(subpath) + 1 :] if subpath and path.startswith(subpath + "/") else path


def _app_keys(file: FileAnalysis, settings: RepoSettings) -> set[AppKey]:
    """The names of the apps ``file`` defines, valid or not (image streams, analysis templates
    and ignored kinds aside)."""
    return {
        AppKey(a.namespace or settings.default_namespace, a.name)
        for a in file.analyses
        if not a.ignored and a.kind in APP_KINDS
    }


def _is_shared(file: FileAnalysis) -> bool:
    """Whether ``file`` defines what apps of other files refer to: an image stream or an
    analysis template. Such files take part in every repo-wide pass."""
    return any(a.kind in (IMAGE_STREAM, ANALYSIS_TEMPLATE) for a in file.analyses)


@dataclass(frozen=True)
class _SettingsSource:
    """``gitdeploy.yaml`` as read at the last load that read it, and where the source is rooted."""

    settings: RepoSettings
    problems: tuple[Diagnostic, ...]
    file: ManifestFile | None
    root: str
    """The sub-path the source tracks ('' = the repo root); the settings' ``paths`` are relative to it."""


@dataclass(frozen=True)
class _Loaded:
    """What the last load saw, to load the next commit from a tree diff."""

    sha: str
    source: _SettingsSource
    files: dict[str, FileAnalysis]
    """The analysis of every manifest file, by repo-relative path."""
    assembled: LoadResult
    """The repo-wide pass over ``files`` (``result`` without the settings problems)."""
    definers: dict[AppKey, tuple[str, ...]]
    """The files that define each app name (a tuple: a third of a frozenset's size, and most names
    have one)."""
    shared_files: frozenset[str]
    """The files that hold an image stream or an analysis template (see :func:`_is_shared`)."""
    file_problems: tuple[Diagnostic, ...] = ()
    """Manifest files the source does not read (a symlink out of the tree, a file too large)."""

    @property
    def settings(self) -> RepoSettings:
        return self.source.settings

    @property
    def result(self) -> LoadResult:
        """The desired state, with the problems of ``gitdeploy.yaml`` at this commit (its own, and
        ``paths`` entries that match no manifest file) and of the files the source does not read."""
        source = self.source
        relative = (relative_to(path, source.root) for path in self.files)
        unmatched = unmatched_paths(source.file, source.settings, relative)
        result = self.assembled.with_settings_problems([*source.problems, *unmatched])
        if not self.file_problems:
            return result
        return replace(result, diagnostics=self.file_problems + result.diagnostics)

    @classmethod
    def assemble_all(cls, sha: str, source: _SettingsSource, files: dict[str, FileAnalysis]) -> _Loaded:
        """The state from a repo-wide pass over every file."""
        settings = source.settings
        definers: dict[AppKey, set[str]] = defaultdict(set)
        for path, file in files.items():
            for key in _app_keys(file, settings):
                definers[key].add(path)
        assembled = assemble((files[path] for path in sorted(files)), settings)
        shared = frozenset(path for path, file in files.items() if _is_shared(file))
        held = {key: tuple(sorted(paths)) for key, paths in definers.items()}  # MEMORY: see definers
        return cls(sha, source, files, assembled, held, shared)

    def updated(self, sha: str, changed: dict[str, FileAnalysis | None]) -> _Loaded:
        """The state at ``sha`` where the files in ``changed`` (path to analysis, None when gone)
        differ: the repo-wide pass runs over the files that decide the apps they touch."""
        settings = self.settings
        files = dict(self.files)
        before = [self.files[path] for path in changed if path in self.files]
        after = [file for file in changed.values() if file is not None]
        for path, file in changed.items():
            if file is None:
                files.pop(path, None)
            else:
                files[path] = file
        if any(_is_shared(file) for file in before + after):
            return _Loaded.assemble_all(sha, self.source, files)
        definers = dict(self.definers)
        for file in before:
            for key in _app_keys(file, settings):
                definers[key] = tuple(path for path in definers[key] if path != file.path)
                if not definers[key]:
                    del definers[key]
        for file in after:
            for key in _app_keys(file, settings):
                definers[key] = tuple(sorted({*definers.get(key, ()), file.path}))
        # The files that decide the touched apps: every definition of each name (closed over the
        # other names those files define), and the image streams that triggers refer to.
        keys: set[AppKey] = set()
        deciding: set[str] = set()
        names = set().union(*(_app_keys(file, settings) for file in before))
        paths = {file.path for file in after} | self.shared_files
        while names or paths:
            for path in paths - deciding:
                deciding.add(path)
                names |= _app_keys(files[path], settings)
            paths = set().union(*(definers.get(key, ()) for key in names - keys))
            keys |= names
            names = set()
        reassembled = assemble((files[path] for path in sorted(deciding)), settings)
        redone = deciding | set(changed)
        last = self.assembled
        assembled = LoadResult(
            settings=settings,
            apps=_merge_sorted(last.apps, keys, reassembled.apps, group=_app_key),
            image_streams=reassembled.image_streams,
            diagnostics=_merge_sorted(
                last.diagnostics, redone, reassembled.diagnostics, group=_file_of, order=diagnostic_order
            ),
            invalid_apps=tuple(sorted((set(last.invalid_apps) - keys) | set(reassembled.invalid_apps))),
            ignored=_merge_sorted(last.ignored, redone, reassembled.ignored, group=_ignored_file),
            analysis_templates=reassembled.analysis_templates,
        )
        return _Loaded(sha, self.source, files, assembled, definers, self.shared_files)


def _merge_sorted(
    items: tuple[_T, ...],
    drop: Iterable[Any],
    fresh: Iterable[_T],
    *,
    group: Callable[[_T], Any],
    order: Callable[[_T], Any] | None = None,
) -> tuple[_T, ...]:
    """``items``, sorted by ``order`` (default ``group``), without every item whose ``group`` is in
    ``drop``, and with ``fresh`` inserted in order (after equal items): a few bisections instead of
    sorting every app's entry after each commit."""
    out = list(items)
    for value in drop:
        del out[bisect.bisect_left(out, value, key=group) : bisect.bisect_right(out, value, key=group)]
    for item in fresh:
        bisect.insort(out, item, key=order or group)
    return tuple(out)


def _app_key(app: App) -> AppKey:
    return app.key


def _file_of(diagnostic: Diagnostic) -> str:
    return diagnostic.file


def _ignored_file(ignored: Ignored) -> str:
    return ignored.location.file


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
        parsed_before = self.files_parsed

        def analyse(entry: FileEntry, blobs: dict[str, bytes]) -> FileAnalysis:
            self.files_parsed += 1
            if self.files_parsed % FREEZE_AFTER_FILES == 0:
                _freeze()
            return analyse_file(ManifestFile(entry.path, blobs[entry.blob_sha]))

        analyses: dict[str, FileAnalysis] = {}
        # MEMORY: blobs are read READ_AT_ONCE entries at a time, not all at once (see READ_AT_ONCE).
        for start in range(0, len(entries), READ_AT_ONCE):
            batch = entries[start : start + READ_AT_ONCE]
            missing = {e.blob_sha for e in batch if not self.cache.contains(e.blob_sha, path=e.path)}
            blobs = self.repo.read_blobs(sorted(missing)) if missing else {}
            for e in batch:
                compute = partial(analyse, e, blobs)
                analyses[e.path] = self.cache.get_or_compute(e.blob_sha, compute, path=e.path)
        if self.files_parsed - parsed_before >= FREEZE_AFTER_FILES:
            _freeze()
        return analyses

    def _load_all(self, sha: str) -> _Loaded:
        entries = self.repo.list_files(sha)
        where = settings_path(self.repo.subpath)
        settings_entry = next((e for e in entries if e.path == where), None)
        settings_file = None
        if settings_entry is not None:
            data = self.repo.read_blobs([settings_entry.blob_sha])[settings_entry.blob_sha]
            settings_file = ManifestFile(settings_entry.path, data)
        settings, problems = parse_settings(settings_file)
        source = _SettingsSource(settings, tuple(problems), settings_file, self.repo.subpath)
        wanted = [e for e in entries if self._is_manifest(e.path, settings)]
        loaded = _Loaded.assemble_all(sha, source, self._analyse(wanted))
        self.cache.retain((e.blob_sha, e.path) for e in wanted)  # MEMORY: see _load_changes
        unread = tuple(d for d in self.repo.file_problems(sha) if self._is_manifest(d.file, settings))
        return replace(loaded, file_problems=unread)

    def _load_changes(self, last: _Loaded, sha: str) -> _Loaded | None:
        """The state at ``sha`` from ``last`` and one tree diff; None when a full load is needed
        (``gitdeploy.yaml`` changed, or a file that is not read is involved on either side)."""
        changes = self.repo.changed_files(last.sha, sha)
        where = settings_path(self.repo.subpath)
        if any(c.path == where for c in changes) or last.file_problems or self.repo.file_problems(sha):
            return None
        wanted = [
            FileEntry(path=c.path, blob_sha=c.new_blob, size=0)
            for c in changes
            if c.new_blob is not None and self._is_manifest(c.path, last.settings)
        ]
        fresh = self._analyse(wanted)
        changed = {c.path: fresh.get(c.path) for c in changes if c.path in last.files or c.path in fresh}
        if not changed:
            return replace(last, sha=sha)
        loaded = last.updated(sha, changed)
        # MEMORY: the cache forgets what the files held before they changed, as the state does:
        # kept, every version of every file since the start would stay parsed (2.5 KiB each)
        for c in changes:
            if c.old_blob is not None and c.old_blob != c.new_blob:
                self.cache.discard_entry(c.old_blob, path=c.path)
        return loaded

    def _is_manifest(self, path: str, settings: RepoSettings) -> bool:
        return is_manifest_path(relative_to(path, self.repo.subpath), settings)
