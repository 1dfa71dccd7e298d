"""Put one app's document of an older version of a manifest file back into the current file,
leaving every other document byte for byte (``gitdeploy rollback --git-revert``).

A file is cut into documents at its ``---`` marker lines; the app's document is the one holding
the line the loader located the app at. Both pieces are parsed again to make sure they are the
app's own document and nothing else, so a file whose layout the cut does not understand (a
``---`` line inside a block scalar, a marker followed by content) is refused, never mangled.

>>> head = b"kind: A\\nmetadata: {name: a}\\n---\\nkind: B\\nmetadata: {name: b}\\n"
>>> old = b"# b as it was\\nkind: B\\nmetadata: {name: b, labels: {v: '1'}}\\n"
>>> print(splice_document(ManifestFile("x.yaml", head), 4, ManifestFile("x.yaml", old), 2, "b").decode())
kind: A
metadata: {name: a}
---
# b as it was
kind: B
metadata: {name: b, labels: {v: '1'}}
<BLANKLINE>
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitdeploy.errors import PermanentError
from gitdeploy.manifests.documents import ManifestFile, parse_documents

_MARKER = re.compile(r"^---(?:[ \t]|$)")


@dataclass(frozen=True)
class _Piece:
    marker: str
    """The ``---`` line that opens the document (with its newline), or '' for a first document."""
    body: str
    first_line: int
    """1-based line of the first line of ``body``."""

    @property
    def last_line(self) -> int:
        return self.first_line + max(self.body.count("\n"), 1) - 1


def _cut(text: str) -> list[_Piece]:
    pieces: list[_Piece] = []
    marker, start = "", 1
    body: list[str] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if _MARKER.match(line):
            if line.rstrip("\r\n").strip() != "---":
                raise ValueError(f"line {number} has content after its '---' marker")
            if marker or body:
                pieces.append(_Piece(marker, "".join(body), start))
            marker, body, start = line, [], number + 1
        else:
            body.append(line)
    pieces.append(_Piece(marker, "".join(body), start))
    return pieces


def _name_of(data: object) -> object:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    return metadata.get("name") if isinstance(metadata, dict) else None


def _app_piece(source: ManifestFile, line: int, name: str) -> tuple[list[_Piece], int]:
    """The file's pieces and the index of the one that is exactly ``name``'s document."""
    where = f"{source.path}:{line}"
    try:
        text = source.data.decode("utf-8")
        pieces = _cut(text)
    except (UnicodeDecodeError, ValueError) as bad:
        raise PermanentError(
            f"cannot cut {source.path} into its documents ({bad})",
            hint="revert the file by hand",
        ) from None
    index = next((i for i, p in enumerate(pieces) if p.first_line <= line <= p.last_line), None)
    if index is not None:
        documents, problems = parse_documents(ManifestFile(source.path, pieces[index].body.encode()))
        if not problems and len(documents) == 1 and _name_of(documents[0].data) == name:
            return pieces, index
    raise PermanentError(
        f"cannot find {name}'s own document at {where}",
        hint="its file has a layout gitdeploy does not cut safely; revert the file by hand",
    )


def splice_document(
    current: ManifestFile, current_line: int, older: ManifestFile, older_line: int, name: str
) -> bytes:
    """``current`` with app ``name``'s document (at ``current_line``) replaced by its document in
    ``older`` (at ``older_line``). A file holding just the app becomes ``older`` as it was."""
    if current.path.endswith(".json") or older.path.endswith(".json"):
        if current.path.endswith(".json") and not older.path.endswith(".json"):
            raise PermanentError(
                f"{name} moved from the YAML file {older.path} to the JSON file {current.path}",
                hint="revert the file by hand",
            )
        return older.data  # a JSON file holds one document
    pieces, index = _app_piece(current, current_line, name)
    old_pieces, old_index = _app_piece(older, older_line, name)
    if len(pieces) == 1 and len(old_pieces) == 1:
        return older.data
    body = old_pieces[old_index].body
    if index < len(pieces) - 1 and not body.endswith("\n"):
        body += "\n"
    pieces[index] = _Piece(pieces[index].marker, body, pieces[index].first_line)
    return "".join(p.marker + p.body for p in pieces).encode()


__all__ = ["splice_document"]
