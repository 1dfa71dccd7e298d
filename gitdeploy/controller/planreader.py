"""Read the two commits of a change for ``gitdeploy plan``, without a checkout and without a cluster.

Reading and validating every manifest of a 10,000-app repo takes seconds, and a plan of a one-file
change must take well under one. So when ``gitdeploy.yaml`` is the same at both commits, the reader
parses only what the change can affect:

1. the files that differ between the commits (at both commits);
2. the unchanged files that mention, as a whole word, a name defined or referenced by those files
   (an app name, an image stream name), found by a byte search over the unchanged blobs, and
   repeated with the names those files bring in until nothing new turns up.

The repo-wide rules (one definition per app, triggers that follow an existing image stream tag)
only relate files that share such a name, so every app whose verdict can differ between the two
commits is read; every other app is unchanged on both sides. Problems in files the change does not
touch are not seen here (``gitdeploy validate`` checks the whole tree). When ``gitdeploy.yaml``
differs, both commits are read in full.

The classification itself is pure (:mod:`gitdeploy.core.planning.changes`); this module only gathers its
inputs: the two desired states, earlier templates (for rollbacks), and commits (for the report).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from gitdeploy.controller.desired import DesiredStateReader, relative_to, settings_path
from gitdeploy.core.blobcache import BlobCache
from gitdeploy.core.commits import CommitInfo, FileEntry
from gitdeploy.core.models import App, AppKey, RepoSettings
from gitdeploy.core.planning.changes import (
    Baseline,
    DesiredSnapshot,
    EarlierTemplate,
    Plan,
    apps_with_new_template,
    attach_commits,
    plan_changes,
)
from gitdeploy.errors import PermanentError
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.loader import (
    FileAnalysis,
    LoadResult,
    analyse_file,
    assemble,
    is_manifest_path,
    parse_settings,
)
from gitdeploy.source.repo import ConfigRepo

HISTORY_DEPTH = 30
"""How many earlier commits of an app's manifest are searched for the head's template (rollbacks)."""
MAX_COMMITS = 50
"""How many commits between base and head are listed per app."""

_NAME_CHARS = rb"[A-Za-z0-9_.\-]"


def snapshot(result: LoadResult) -> DesiredSnapshot:
    """The core's view of a :class:`LoadResult`."""
    return DesiredSnapshot(
        apps=result.apps,
        diagnostics=result.diagnostics,
        invalid_apps=result.invalid_apps,
        settings=result.settings,
    )


def names_in(analyses: Iterable[FileAnalysis]) -> set[str]:
    """The app and image stream names files define, and the stream names their triggers follow."""
    names: set[str] = set()
    for file in analyses:
        for analysis in file.analyses:
            if analysis.ignored:
                continue
            if analysis.name:
                names.add(analysis.name)
            if analysis.draft is not None:
                names.update(t.stream_name for t in analysis.draft.app.triggers.image_change)
    return names


def mentions(names: Iterable[str]) -> re.Pattern[bytes]:
    """A pattern that finds any of ``names`` as a whole word (``api`` in ``name: api``, not in
    ``apiVersion``; ``web`` in ``from: {name: web:latest}``)."""
    alternatives = b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
    return re.compile(rb"(?<!" + _NAME_CHARS + rb")(?:" + alternatives + rb")(?!" + _NAME_CHARS + rb")")


@dataclass(frozen=True)
class PlanSides:
    """The desired state at both commits, as far as the change can affect it."""

    base: DesiredSnapshot
    head: DesiredSnapshot
    untouched_files: int = 0
    """Files the change does not touch and that were not read (0 when both commits were read in
    full); every app in them is unchanged."""


class PlanReader:
    """Reads what a plan needs from a :class:`ConfigRepo` whose mirror holds both commits."""

    def __init__(
        self,
        repo: ConfigRepo,
        cache: BlobCache[FileAnalysis] | None = None,
        *,
        history_depth: int = HISTORY_DEPTH,
        max_commits: int = MAX_COMMITS,
    ) -> None:
        self.repo = repo
        self.cache: BlobCache[FileAnalysis] = cache or BlobCache()
        self.history_depth = history_depth
        self.max_commits = max_commits
        self.files_parsed = 0
        self._listings: dict[str, dict[str, FileEntry]] = {}

    # -- desired state at both commits ------------------------------------------------------

    def _analyse(
        self, entries: Sequence[FileEntry], blobs: dict[str, bytes] | None = None
    ) -> list[FileAnalysis]:
        have = dict(blobs or {})
        missing = sorted(
            {
                e.blob_sha
                for e in entries
                if e.blob_sha not in have and not self.cache.contains(e.blob_sha, path=e.path)
            }
        )
        if missing:
            have.update(self.repo.read_blobs(missing))

        def analyse(entry: FileEntry) -> FileAnalysis:
            self.files_parsed += 1
            return analyse_file(ManifestFile(entry.path, have[entry.blob_sha]))

        return [self.cache.get_or_compute(e.blob_sha, partial(analyse, e), path=e.path) for e in entries]

    def read(self, base: str, head: str) -> PlanSides:
        """Both desired states; only the affected files when ``gitdeploy.yaml`` did not change."""
        base_entries, head_entries = self.repo.list_files(base), self.repo.list_files(head)
        where = settings_path(self.repo.subpath)
        base_settings = next((e for e in base_entries if e.path == where), None)
        head_settings = next((e for e in head_entries if e.path == where), None)
        if (base_settings and base_settings.blob_sha) != (head_settings and head_settings.blob_sha):
            full = DesiredStateReader(self.repo, self.cache)
            sides = PlanSides(snapshot(full.load(base)), snapshot(full.load(head)))
            self.files_parsed += full.files_parsed
            return sides
        settings_file = None
        if head_settings is not None:
            data = self.repo.read_blobs([head_settings.blob_sha])[head_settings.blob_sha]
            settings_file = ManifestFile(head_settings.path, data)
        settings, settings_problems = parse_settings(settings_file)
        # Whether a path is a manifest under the settings is asked only of the files read: the
        # question costs more than the byte search, and the files not read hold no change.
        old = {e.path: e for e in base_entries if e.path != where}
        new = {e.path: e for e in head_entries if e.path != where}
        unchanged = {p: e for p, e in new.items() if p in old and old[p].blob_sha == e.blob_sha}
        changed = sorted(
            p for p in old.keys() | new.keys() if p not in unchanged and self._is_manifest(p, settings)
        )
        old_changed = self._analyse([old[p] for p in changed if p in old])
        new_changed = self._analyse([new[p] for p in changed if p in new])
        context = self._context(unchanged, names_in([*old_changed, *new_changed]), settings)

        def load(changed_files: list[FileAnalysis], sha: str) -> DesiredSnapshot:
            files = sorted([*changed_files, *context], key=lambda f: f.path)
            result = assemble(files, settings)
            unread = [d for d in self.repo.file_problems(sha) if self._is_manifest(d.file, settings)]
            diagnostics = (*settings_problems, *unread, *result.diagnostics)
            return DesiredSnapshot(result.apps, diagnostics, result.invalid_apps, result.settings)

        untouched = len(unchanged) - len(context)
        base_side, head_side = load(old_changed, base), load(new_changed, head)
        return PlanSides(base_side, head_side, untouched_files=untouched)

    def _is_manifest(self, path: str, settings: RepoSettings) -> bool:
        return is_manifest_path(relative_to(path, self.repo.subpath), settings)

    def _context(
        self, unchanged: dict[str, FileEntry], names: set[str], settings: RepoSettings
    ) -> list[FileAnalysis]:
        """The unchanged files that mention ``names``, and, in turn, the names they bring in."""
        if not names or not unchanged:
            return []
        blobs = self.repo.read_blobs(sorted({e.blob_sha for e in unchanged.values()}))
        found: dict[str, FileAnalysis] = {}
        seen: set[str] = set()
        pending = set(names)
        while pending:
            seen |= pending
            needles = [n.encode() for n in pending]
            pattern = mentions(pending)
            hits = [
                e
                for p, e in unchanged.items()
                if p not in found
                and any(n in blobs[e.blob_sha] for n in needles)  # a fast pre-check, then whole words
                and pattern.search(blobs[e.blob_sha])
                and self._is_manifest(p, settings)
            ]
            analyses = self._analyse(hits, blobs)
            found.update((a.path, a) for a in analyses)
            pending = names_in(analyses) - seen
        return list(found.values())

    # -- history ---------------------------------------------------------------------------

    def _entry_at(self, sha: str, path: str) -> FileEntry | None:
        """The file ``path`` at commit ``sha``; listings are kept for the whole plan (many apps'
        histories share commits, and the source keeps only a few listings)."""
        if sha not in self._listings:
            self._listings[sha] = {e.path: e for e in self.repo.list_files(sha)}
        return self._listings[sha].get(path)

    def _template_hash_at(self, sha: str, path: str, key: AppKey) -> str | None:
        entry = self._entry_at(sha, path)
        if entry is None:
            return None
        (analysis,) = self._analyse([entry])
        for item in analysis.analyses:
            draft = item.draft
            if draft is not None and item.name == key.name and item.namespace in ("", key.namespace):
                return draft.app.template_hash
        return None

    def find_earlier_template(self, before: App, after: App, base: str) -> EarlierTemplate | None:
        """The commit, at or before ``base``, that introduced ``after``'s template to this app.

        Walks the history of the app's manifest at the base, newest first; when the template is
        found, keeps walking while it stays the same, and names the oldest commit of that run
        (the one that brought the template in, not one that only changed replicas).
        """
        try:
            history = self.repo.path_history(before.location.file, at_sha=base, max_count=self.history_depth)
            match: CommitInfo | None = None
            for commit in history:
                if self._template_hash_at(commit.sha, before.location.file, after.key) == after.template_hash:
                    match = commit
                elif match is not None:
                    break
        except PermanentError:
            return None  # the tracked path or the file did not exist back then: no earlier template
        return EarlierTemplate(match) if match is not None else None

    def commits_between(self, base: str, head: str, files: Sequence[str]) -> tuple[CommitInfo, ...]:
        """The commits reachable from ``head`` but not ``base`` that changed any of ``files``,
        newest first (at most :attr:`max_commits`)."""
        found: dict[str, CommitInfo] = {}
        for path in dict.fromkeys(files):
            if not path:
                continue
            known = {c.sha for c in self.repo.path_history(path, at_sha=base, max_count=self.max_commits)}
            for commit in self.repo.path_history(path, at_sha=head, max_count=self.max_commits):
                if commit.sha in known or commit.sha in found:
                    continue
                if not self.repo.is_ancestor(commit.sha, base):
                    found[commit.sha] = commit
        ordered = sorted(found.values(), key=lambda c: c.committed_at, reverse=True)
        return tuple(ordered[: self.max_commits])

    # -- the plan --------------------------------------------------------------------------

    def plan(self, base: str, head: str, *, label: str) -> Plan:
        """The plan of merging ``head`` where ``base`` is (both full commit shas in the mirror)."""
        sides = self.read(base, head)
        baseline = Baseline(label, sides.base.apps, sides.base.invalid_apps)
        plan = self.plan_against(baseline, sides.head, base=base, head=head)
        return replace(plan, untouched_files=sides.untouched_files)

    def plan_against(self, baseline: Baseline, head_state: DesiredSnapshot, *, base: str, head: str) -> Plan:
        """Plan ``head_state`` against any baseline; ``base`` is where earlier templates and the
        change's commits are looked up from. A live plan passes what the cluster runs here."""
        earlier: dict[AppKey, EarlierTemplate] = {}
        for before, after in apps_with_new_template(baseline.apps, head_state.apps):
            found = self.find_earlier_template(before, after, base)
            if found is not None:
                earlier[after.key] = found
        plan = plan_changes(baseline, head_state, earlier=earlier)
        commits = {a.key: self.commits_between(base, head, a.files or (a.file,)) for a in plan.apps}
        return attach_commits(plan, commits)
