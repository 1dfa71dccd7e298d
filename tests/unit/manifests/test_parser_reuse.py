"""The YAML parser is reused per thread: a file that stops half-way never leaks into the next one."""

from __future__ import annotations

import gc
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import pytest

from gitdeploy.manifests.documents import ManifestFile, parse_documents

GOOD = "a: 1\nb: [x, 'y', 2.5, true, null, 2024-01-01]\n---\nc: {d: e}\n"

BROKEN = [
    pytest.param("a: 1\n---\nb: [unclosed\n", id="syntax error in the second document"),
    pytest.param("a: !custom 1\n---\nb: 2\n", id="custom tag in the first document"),
    pytest.param("a: 1\na: 2\n---\nb: 2\n", id="duplicate key"),
    pytest.param("a: &x [*x]\n", id="recursive alias"),
]


@pytest.mark.parametrize("broken", BROKEN)
def test_a_good_file_parses_the_same_after_a_broken_one(broken: str) -> None:
    before, _ = parse_documents(ManifestFile("good.yaml", GOOD.encode()))

    documents, problems = parse_documents(ManifestFile("bad.yaml", broken.encode()))
    after, after_problems = parse_documents(ManifestFile("good.yaml", GOOD.encode()))

    assert documents == [] and len(problems) == 1
    assert after_problems == []
    assert [(d.data, d.positions) for d in after] == [(d.data, d.positions) for d in before]
    assert after[0].data == {"a": 1, "b": ["x", "y", 2.5, True, None, "2024-01-01"]}


def test_threads_parse_at_once_with_the_same_results() -> None:
    files = [ManifestFile(f"f{i}.yaml", f"name: app{i}\nreplicas: {i}\n".encode()) for i in range(200)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(parse_documents, files))

    assert [docs[0].data for docs, _ in results] == [{"name": f"app{i}", "replicas": i} for i in range(200)]


def test_the_reused_parser_keeps_nothing_of_the_files_it_parsed() -> None:
    # Given a thread that parsed a file (its parser made), When it parses it 2,000 times more
    file = ManifestFile("app.yaml", GOOD.encode())
    parse_documents(file)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(2_000):
            parse_documents(file)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # Then what it keeps did not grow with them (a few caches fill up; ruamel kept a record of
    # every call, 180 bytes each, and the last loader)
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert grown < 100_000, [str(stat) for stat in after.compare_to(before, "lineno")[:5]]
