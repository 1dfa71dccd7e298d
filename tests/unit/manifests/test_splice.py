"""Table-driven tests of putting an app's older document back into its current file."""

from __future__ import annotations

import pytest

from gitdeploy.errors import PermanentError
from gitdeploy.manifests.documents import ManifestFile
from gitdeploy.manifests.splice import splice_document

WEB_OLD = "kind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n"
WEB_NEW = "kind: Deployment\nmetadata: {name: web}\nspec: {replicas: 5}\n"
API = "kind: Deployment   # untouched\nmetadata:\n  name: api\n"
CONFIG = "kind: ConfigMap\nmetadata: {name: web}   # same name, other kind\n"
SEP = "---\n"
SEP2 = "--- \n"


def splice(current: str, line: int, older: str, older_line: int) -> str:
    return splice_document(
        ManifestFile("apps/x.yaml", current.encode()),
        line,
        ManifestFile("apps/x.yaml", older.encode()),
        older_line,
        "web",
    ).decode()


@pytest.mark.parametrize(
    ("current", "line", "older", "older_line", "expected"),
    [
        (WEB_NEW, 1, WEB_OLD, 1, WEB_OLD),
        ("# head comment\n" + WEB_NEW, 2, SEP + WEB_OLD, 2, SEP + WEB_OLD),
        (API + SEP + WEB_NEW, 5, WEB_OLD, 1, API + SEP + WEB_OLD),
        (WEB_NEW + SEP + API, 1, WEB_OLD.rstrip("\n"), 1, WEB_OLD + SEP + API),
        (API + SEP + WEB_NEW + SEP2 + API, 5, API + SEP + WEB_OLD, 5, API + SEP + WEB_OLD + SEP2 + API),
        (SEP + API + SEP + "\n" + WEB_NEW, 7, "# old\n" + WEB_OLD, 2, SEP + API + SEP + "# old\n" + WEB_OLD),
    ],
    ids=[
        "single document",
        "single document: the old file as it was",
        "last of two",
        "first of two, no newline",
        "middle of three",
        "moved within the file",
    ],
)
def test_splice_replaces_only_the_apps_document(
    current: str, line: int, older: str, older_line: int, expected: str
) -> None:
    assert splice(current, line, older, older_line) == expected


@pytest.mark.parametrize(
    ("current", "line", "message"),
    [
        (API + SEP + WEB_NEW, 2, "cannot find web's own document at apps/x.yaml:2"),
        (CONFIG + "--- {kind: Deployment, metadata: {name: web}}\n", 3, "content after its '---' marker"),
        (API + SEP + WEB_NEW, 99, "cannot find web's own document at apps/x.yaml:99"),
    ],
    ids=["line of another document", "marker with content", "line past the end"],
)
def test_splice_refuses_layouts_it_cannot_cut_safely(current: str, line: int, message: str) -> None:
    with pytest.raises(PermanentError, match=message):
        splice(current, line, WEB_OLD, 1)


def test_json_files_are_replaced_whole_and_yaml_is_not_written_into_json() -> None:
    old_json = b'{"kind": "Deployment", "metadata": {"name": "web"}}'
    spliced = splice_document(ManifestFile("a.json", b"{}"), 1, ManifestFile("a.json", old_json), 1, "web")
    assert spliced == old_json
    with pytest.raises(PermanentError, match=r"moved from the YAML file a\.yaml to the JSON file a\.json"):
        splice_document(ManifestFile("a.json", b"{}"), 1, ManifestFile("a.yaml", WEB_OLD.encode()), 1, "web")
