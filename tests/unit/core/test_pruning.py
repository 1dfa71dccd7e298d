"""The prune brake's limit, the opt-out annotation and what blocks a prune."""

from __future__ import annotations

import pytest

from gitdeploy.core.diagnostics import Diagnostic
from gitdeploy.core.pruning import PruneLimit, parse_prune_limit, prune_blocker, prune_opted_out


# (limit, apps gitdeploy manages, most prunes one commit may make)
@pytest.mark.parametrize(
    ("limit", "managed", "allowed"),
    [
        (PruneLimit(), 1, 5),
        (PruneLimit(), 50, 5),
        (PruneLimit(), 51, 6),  # 10% of 51, rounded up
        (PruneLimit(), 1000, 100),
        (PruneLimit(apps=0), 1000, 0),
        (PruneLimit(apps=3), 1000, 3),
        (PruneLimit(percent=100), 8, 8),
        (PruneLimit(percent=25), 9, 3),
        (PruneLimit(percent=0), 9, 0),
    ],
)
def test_the_limit_of_a_commit(limit: PruneLimit, managed: int, allowed: int) -> None:
    assert limit.of(managed) == allowed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (7, PruneLimit(apps=7)),
        ("7", PruneLimit(apps=7)),
        (" 20% ", PruneLimit(percent=20)),
        ("0", PruneLimit(apps=0)),
        ("-1", None),
        ("7.5", None),
        ("%", None),
        ("many", None),
        (True, None),
        (None, None),
    ],
)
def test_parse_prune_limit(text: object, parsed: PruneLimit | None) -> None:
    assert parse_prune_limit(text) == parsed


@pytest.mark.parametrize(
    ("annotations", "opted_out"),
    [
        ((("gitdeploy.io/prune", "false"),), True),
        ((("gitdeploy.io/prune", "true"),), False),
        ((("argocd.argoproj.io/sync-options", "Prune=false"),), False),
        ((), False),
    ],
)
def test_only_prune_false_opts_out(annotations: tuple[tuple[str, str], ...], opted_out: bool) -> None:
    assert prune_opted_out(annotations) is opted_out


def test_settings_that_cannot_be_used_block_every_prune_before_file_problems() -> None:
    problems = [Diagnostic("apps/a.yaml", 3, 1, "shop/a", "bad")]
    assert prune_blocker("gitdeploy.yaml:1:1: bad", problems) == (
        "not pruned while the settings cannot be used (gitdeploy.yaml:1:1: bad)"
    )


def test_many_files_with_problems_are_named_in_part() -> None:
    problems = [Diagnostic(f"apps/a{i}.yaml", 1, 1, "", "bad") for i in range(5)]
    assert prune_blocker("", problems) == (
        "not pruned while apps/a0.yaml:1, apps/a1.yaml:1, apps/a2.yaml:1 and 2 more do not validate "
        "(see `gitdeploy validate`)"
    )
