"""From the files of a config repo to validated apps: per-file analysis, then the repo-wide pass.

:func:`analyse_file` depends only on the file's bytes, so its result can be cached by git blob sha;
:func:`assemble` is the cheap repo-wide pass (namespaces, duplicates, image stream references).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from gitdeploy.core.analysistemplates import AnalysisTemplate
from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.models import App, AppKey, AppKind, ImageStream, Location, RepoSettings
from gitdeploy.core.pruning import PruneLimit, parse_prune_limit
from gitdeploy.manifests.analysisrefs import link_templates, read_rollout_analysis
from gitdeploy.manifests.analysistemplates import analyse_analysis_template
from gitdeploy.manifests.apps import (
    APP_KINDS,
    Analysis,
    analyse_app,
    analyse_image_stream,
    place_in_namespace,
)
from gitdeploy.manifests.documents import MAX_FILE_BYTES, Document, ManifestFile, parse_documents
from gitdeploy.manifests.schemas import dotted, iter_violations, suggest

SETTINGS_FILE = "gitdeploy.yaml"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
MAX_MANIFEST_FILES = 50_000
KNOWN_KINDS = ("Deployment", "DeploymentConfig", "ImageStream", "Rollout", "AnalysisTemplate")


@dataclass(frozen=True, slots=True)
class Ignored:
    """A document of a kind gitdeploy does not manage (a Service, a ConfigMap, ...)."""

    kind: str
    name: str
    location: Location


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    path: str
    analyses: tuple[Analysis, ...]
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True)
class LoadResult:
    """Everything desired state says, and everything wrong with it."""

    settings: RepoSettings
    apps: tuple[App, ...]
    image_streams: tuple[ImageStream, ...]
    diagnostics: tuple[Diagnostic, ...]
    invalid_apps: tuple[AppKey, ...]
    ignored: tuple[Ignored, ...]
    settings_problems: tuple[Diagnostic, ...] = ()
    """Why ``gitdeploy.yaml`` cannot be used (also in ``diagnostics``): the loop applies nothing
    of such a commit, because its ``paths`` and ``allowedNamespaces`` would not hold."""
    analysis_templates: tuple[AnalysisTemplate, ...] = ()
    """The Argo Rollouts AnalysisTemplates of the repo, in namespace/name order."""

    @property
    def ok(self) -> bool:
        return not self.diagnostics

    def with_settings_problems(self, problems: Iterable[Diagnostic]) -> LoadResult:
        """This result with problems of ``gitdeploy.yaml`` first among its diagnostics."""
        found = tuple(problems)
        if not found:
            return self
        return replace(
            self,
            diagnostics=found + self.diagnostics,
            settings_problems=self.settings_problems + found,
        )


def _doc_problem(doc: Document, message: str, hint: str) -> Diagnostic:
    return Diagnostic(doc.file, doc.line, doc.column, "", message, hint)


def _analyse_document(doc: Document) -> Analysis | Diagnostic:
    data = doc.data
    location = Location(doc.file, doc.line, doc.column)
    if not isinstance(data, dict):
        return _doc_problem(doc, "document is not a mapping", "a manifest starts with apiVersion: and kind:")
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return _doc_problem(
            doc,
            "not a Kubernetes object: apiVersion and kind are required",
            "add apiVersion and kind, or move the file out of the manifest paths (gitdeploy.yaml: paths)",
        )
    if kind in (AppKind.DEPLOYMENT.value, AppKind.DEPLOYMENT_CONFIG.value):
        return analyse_app(doc, AppKind(kind))
    if kind == AppKind.ROLLOUT.value:
        return read_rollout_analysis(doc, analyse_app(doc, AppKind.ROLLOUT))
    if kind == "ImageStream":
        return analyse_image_stream(doc)
    if kind == "AnalysisTemplate":
        return analyse_analysis_template(doc)
    if kind == "RepoSettings":
        return _doc_problem(
            doc, "RepoSettings is read only from gitdeploy.yaml at the repo root", "move it there"
        )
    near = suggest(kind, list(KNOWN_KINDS))
    if near:
        return Diagnostic(
            doc.file,
            *doc.position(("kind",)),
            "",
            f"unknown kind '{kind}'",
            f"{near} Kinds other than {', '.join(KNOWN_KINDS)} are ignored",
        )
    name = str((data.get("metadata") or {}).get("name", "")) if isinstance(data.get("metadata"), dict) else ""
    return Analysis(kind, name, "", location, ignored=True)


def analyse_file(source: ManifestFile) -> FileAnalysis:
    """Parse and check every document of one file. Pure: cache it by the file's blob sha."""
    documents, problems = parse_documents(source)
    analyses: list[Analysis] = []
    diagnostics = list(problems)
    for doc in documents:
        outcome = _analyse_document(doc)
        if isinstance(outcome, Diagnostic):
            diagnostics.append(outcome)
        else:
            analyses.append(outcome)
    return FileAnalysis(source.path, tuple(analyses), tuple(diagnostics))


def parse_settings(source: ManifestFile | None) -> tuple[RepoSettings, list[Diagnostic]]:
    """Read ``gitdeploy.yaml``; defaults when there is none. Problems leave the defaults in force."""
    if source is None:
        return RepoSettings(), []
    documents, problems = parse_documents(source)
    if problems:
        return RepoSettings(), problems
    if len(documents) != 1 or not isinstance(documents[0].data, dict):
        where = documents[1] if len(documents) > 1 else None
        line = where.line if where else 1
        return RepoSettings(), [
            Diagnostic(
                source.path,
                line,
                1,
                "",
                "gitdeploy.yaml must hold exactly one mapping",
                "merge the documents",
            )
        ]
    doc = documents[0]
    found = [
        Diagnostic(doc.file, *doc.position(path), "", message, hint, dotted(path))
        for path, message, hint in iter_violations("RepoSettings", doc.data)
    ]
    if found:
        return RepoSettings(), found
    data = doc.data
    settings = RepoSettings(
        paths=tuple(str(PurePosixPath(p.strip("/"))) for p in data.get("paths", [])),
        allowed_namespaces=tuple(data.get("allowedNamespaces", [])),
        default_namespace=str(data.get("defaultNamespace", "default")),
        prune=bool(data.get("prune", False)),
        auto_rollback=data.get("autoRollback"),
        prune_limit=parse_prune_limit(data.get("pruneLimit", "")) or PruneLimit(),
    )
    return settings, []


def unmatched_paths(
    source: ManifestFile | None, settings: RepoSettings, manifest_paths: Iterable[str]
) -> list[Diagnostic]:
    """A problem for every ``paths`` entry of ``gitdeploy.yaml`` under which no manifest file lies
    (``manifest_paths`` relative to where the settings file is): with it, every app that was there
    would look removed from git. Empty without ``paths``."""
    wanted = [p for p in settings.paths if p not in (".", "")]
    if not wanted or source is None:
        return []
    left = set(wanted)
    for path in manifest_paths:
        left -= {p for p in left if path == p or path.startswith(p + "/")}
        if not left:
            return []
    documents, _ = parse_documents(source)
    entries = [str(e).strip("/") for e in documents[0].data.get("paths", [])] if documents else []
    found = []
    for index, entry in enumerate(entries):
        if str(PurePosixPath(entry)) in left:
            line, column = documents[0].position(("paths", index))
            found.append(
                Diagnostic(
                    source.path,
                    line,
                    column,
                    "",
                    f"paths entry '{entry}' matches no manifest file",
                    "fix the directory name or remove the entry; until then nothing of this commit "
                    "deploys and nothing is pruned",
                    f"paths[{index}]",
                )
            )
    return found


def is_manifest_path(path: str, settings: RepoSettings) -> bool:
    """Whether a repo-relative path is a manifest gitdeploy reads under these settings."""
    parts = PurePosixPath(path).parts
    if not path.endswith(MANIFEST_SUFFIXES) or path == SETTINGS_FILE:
        return False
    if any(part.startswith(".") for part in parts):
        return False
    if not settings.paths:
        return True
    return any(p in (".", "") or path == p or path.startswith(p + "/") for p in settings.paths)


def diagnostic_order(d: Diagnostic) -> tuple[str, int, int, str]:
    """The order of :attr:`LoadResult.diagnostics`: by file, line, column, then message."""
    return (d.file, d.line, d.column, d.message)


def _app_label(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass
class _Gathered:
    """What the files of a repo define, before the repo-wide rules: drafts by app key (several
    if an app is defined twice), image streams, and the keys already known to be invalid."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    drafts: dict[AppKey, list[tuple[Analysis, App]]] = field(default_factory=dict)
    invalid: set[AppKey] = field(default_factory=set)
    streams: dict[AppKey, ImageStream] = field(default_factory=dict)
    templates: dict[AppKey, AnalysisTemplate] = field(default_factory=dict)
    ignored: list[Ignored] = field(default_factory=list)

    def add(self, analysis: Analysis, namespace: str) -> None:
        key = AppKey(namespace, analysis.name)
        if analysis.ignored:
            self.ignored.append(Ignored(analysis.kind, analysis.name, analysis.location))
        elif analysis.diagnostics:
            label = _app_label(namespace, analysis.name)
            self.diagnostics.extend(replace(d, app=label) for d in analysis.diagnostics)
            if analysis.name and analysis.kind in APP_KINDS:
                self.invalid.add(key)
        elif analysis.image_stream is not None:
            self.add_stream(key, analysis.image_stream)
        elif analysis.analysis_template is not None:
            self.add_template(key, analysis.analysis_template)
        elif analysis.draft is not None:
            placed = place_in_namespace(analysis.draft.app, namespace)
            self.drafts.setdefault(key, []).append((analysis, placed))

    def add_stream(self, key: AppKey, stream: ImageStream) -> None:
        if key in self.streams:
            self.defined_again(key, "image stream", stream.location, self.streams[key].location)
        self.streams.setdefault(key, replace(stream, key=key))

    def add_template(self, key: AppKey, template: AnalysisTemplate) -> None:
        if key in self.templates:
            self.defined_again(key, "analysis template", template.location, self.templates[key].location)
        self.templates.setdefault(key, replace(template, key=key))

    def defined_again(self, key: AppKey, what: str, again: Location, first: Location) -> None:
        self.diagnostics.append(
            Diagnostic(
                again.file,
                again.line,
                again.column,
                str(key),
                f"an {what} of this name is also defined at {first}",
                "keep one definition",
            )
        )


def _defined_twice(key: AppKey, defined: list[tuple[Analysis, App]]) -> list[Diagnostic]:
    """One diagnostic for each definition of ``key`` after the first."""
    places = [str(app.location) for _, app in defined]
    return [
        Diagnostic(
            app.location.file,
            app.location.line,
            app.location.column,
            str(key),
            f"defined more than once: {', '.join(places)}",
            "keep one definition; until then neither deploys",
        )
        for _, app in defined[1:]
    ]


def assemble(files: Iterable[FileAnalysis], settings: RepoSettings) -> LoadResult:
    """The repo-wide pass: namespaces, duplicates, allowed namespaces, image stream references."""
    gathered = _Gathered()
    for file in files:
        gathered.diagnostics.extend(file.diagnostics)
        for analysis in file.analyses:
            gathered.add(analysis, analysis.namespace or settings.default_namespace)
    diagnostics, invalid, streams = gathered.diagnostics, gathered.invalid, gathered.streams

    apps: list[App] = []
    for key, defined in gathered.drafts.items():
        if len(defined) > 1 or key in invalid:
            diagnostics.extend(_defined_twice(key, defined))
            invalid.add(key)
            continue
        analysis, app = defined[0]
        assert analysis.draft is not None
        problems = _check_repo_rules(analysis, app, settings, streams)
        app, unlinked = link_templates(app, analysis.draft, gathered.templates)
        problems += unlinked
        if problems:
            diagnostics.extend(problems)
            invalid.add(key)
            continue
        auto = analysis.draft.auto_rollback_annotation
        if auto is None and settings.auto_rollback is not None:
            auto = settings.auto_rollback
        apps.append(app if auto is None else replace(app, auto_rollback=auto))

    return LoadResult(
        settings=settings,
        apps=tuple(sorted(apps, key=lambda a: a.key)),
        image_streams=tuple(sorted(streams.values(), key=lambda s: s.key)),
        diagnostics=tuple(sorted(diagnostics, key=diagnostic_order)),
        invalid_apps=tuple(sorted(invalid)),
        ignored=tuple(gathered.ignored),
        analysis_templates=tuple(sorted(gathered.templates.values(), key=lambda t: t.key)),
    )


def _check_repo_rules(
    analysis: Analysis, app: App, settings: RepoSettings, streams: dict[AppKey, ImageStream]
) -> list[Diagnostic]:
    assert analysis.draft is not None
    found: list[Diagnostic] = []
    file = app.location.file
    if settings.allowed_namespaces and app.key.namespace not in settings.allowed_namespaces:
        line, column = analysis.draft.namespace_position
        found.append(
            Diagnostic(
                file,
                line,
                column,
                str(app.key),
                f"namespace '{app.key.namespace}' is not allowed in this repo",
                f"use one of {', '.join(settings.allowed_namespaces)} (gitdeploy.yaml: allowedNamespaces)",
                "metadata.namespace",
            )
        )
    for trigger, (line, column) in zip(
        app.triggers.image_change, analysis.draft.trigger_positions, strict=True
    ):
        stream = streams.get(AppKey(trigger.stream_namespace, trigger.stream_name))
        if stream is None or stream.tag(trigger.tag) is None:
            what = "image stream" if stream is None else "tag"
            found.append(
                Diagnostic(
                    file,
                    line,
                    column,
                    str(app.key),
                    f"ImageChange trigger follows {trigger.stream_namespace}/{trigger.stream_tag}, "
                    f"but the repo defines no such {what}",
                    "add an ImageStream manifest with that tag, or fix the trigger's from.name",
                )
            )
    return found


def load_files(files: Iterable[ManifestFile], settings_file: ManifestFile | None = None) -> LoadResult:
    """Analyse and assemble a set of files (from a directory or a git commit)."""
    settings, settings_problems = parse_settings(settings_file)
    wanted = [f for f in files if is_manifest_path(f.path, settings)]
    result = assemble([analyse_file(f) for f in wanted], settings)
    unmatched = unmatched_paths(settings_file, settings, (f.path for f in wanted))
    return result.with_settings_problems([*settings_problems, *unmatched])


def read_directory(root: Path) -> tuple[list[ManifestFile], ManifestFile | None, list[Diagnostic]]:
    """The manifest files under ``root`` (dot-directories skipped), the settings file, and problems.

    Symlinks that leave ``root`` and files over the size limit are reported, never read.
    """
    root = root.resolve()
    files: list[ManifestFile] = []
    problems: list[Diagnostic] = []
    settings_file: ManifestFile | None = None
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith(".") or not name.endswith(MANIFEST_SUFFIXES):
                continue
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            real = path.resolve()
            if not real.is_relative_to(root):
                link = os.readlink(path) if path.is_symlink() else str(real)
                message = f"is a symlink to {link!r}, which leaves the repository"
                problems.append(
                    Diagnostic(rel, 1, 1, "", message, "copy the file into the repository instead")
                )
                continue
            if not real.is_file():
                problems.append(Diagnostic(rel, 1, 1, "", "is not a regular file", "fix or remove it"))
                continue
            if (size := real.stat().st_size) > MAX_FILE_BYTES:
                message = f"file is {size} bytes, over the {MAX_FILE_BYTES} byte limit"
                problems.append(Diagnostic(rel, 1, 1, "", message, "split its documents over several files"))
                continue
            if len(files) >= MAX_MANIFEST_FILES:
                problems.append(
                    Diagnostic(
                        rel, 1, 1, "", f"more than {MAX_MANIFEST_FILES} manifest files", "split the repo"
                    )
                )
                return files, settings_file, problems
            item = ManifestFile(rel, real.read_bytes())
            if rel == SETTINGS_FILE:
                settings_file = item
            else:
                files.append(item)
    return files, settings_file, problems


def load_directory(root: Path) -> LoadResult:
    files, settings_file, problems = read_directory(root)
    result = load_files(files, settings_file)
    if problems:
        merged = sorted((*problems, *result.diagnostics), key=diagnostic_order)
        result = replace(result, diagnostics=tuple(merged))
    return result
