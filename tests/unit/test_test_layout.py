"""The test tree's own layout: no test module imports another test module or a conftest.

A helper two test files share lives in a ``tests/fixtures/<concept>.py`` module (or a tier's helper
module such as ``tests/realk8s/manifests.py``), and a shared pytest fixture in the nearest
``conftest.py``, which pytest finds by itself. Importing from a ``test_*`` module makes one test
file depend on another and hides where a helper lives; importing from a ``conftest`` registers
its fixtures a second time under another module name.
"""

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


def _dotted_names(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules an import statement reads, and each name it takes (a submodule, maybe)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    module = node.module or ""
    yield module
    yield from (f"{module}.{alias.name}" for alias in node.names)


def _imports_where(matches: Callable[[str], bool]) -> list[str]:
    """``file:line: imports NAME`` for each import under tests/ one of whose parts matches."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _dotted_names(node):
                if any(matches(part) for part in name.split(".") if part):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: imports {name}")
                    break
    return found


def test_no_test_module_imports_another_test_module() -> None:
    found = _imports_where(lambda part: part.startswith("test_"))
    assert not found, (
        "these imports reach into a test module; move what they share to "
        "tests/fixtures/<concept>.py (a pytest fixture: to the nearest conftest.py):\n  " + "\n  ".join(found)
    )


def test_no_module_imports_a_conftest() -> None:
    found = _imports_where(lambda part: part == "conftest")
    assert not found, (
        "these imports reach into a conftest.py; pytest hands its fixtures to tests by name, "
        "and its types and helpers belong in tests/fixtures/<concept>.py:\n  " + "\n  ".join(found)
    )
