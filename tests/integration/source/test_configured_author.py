"""Whose name a commit made for the user carries: their own git identity, when they have one."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitdeploy.core.commits import Author
from gitdeploy.source.gitcmd import configured_author


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n",
            Author("Ada Lovelace", "ada@example.com"),
        ),
        ("[user]\n\tname = Ada Lovelace\n", None),
        ("[user]\n\temail = ada@example.com\n", None),
        ("", None),
    ],
)
def test_the_author_is_the_users_git_identity(
    config: str, expected: Author | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gitconfig").write_text(config, encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.chdir(tmp_path)  # no repository's own config
    assert configured_author() == expected
