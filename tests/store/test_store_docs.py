"""docs/store.md's Python examples run as written (their asserts are the expectations)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..test_readme import python_blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "store.md"
BLOCKS = [code for _, code in python_blocks(PAGE.read_text(encoding="utf-8"))]  # <!-- no-test --> skipped


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_example_runs(number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[number], f"docs/store.md (example {number + 1})", "exec"), {})
