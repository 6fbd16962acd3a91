"""The README's Python examples run as written (their asserts are the expectations)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _section_blocks(heading: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return _BLOCK.findall(text[start : end if end != -1 else len(text)])


def test_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _section_blocks("Quick start")
    assert blocks, "the Quick start section lost its Python example"
    exec(compile(blocks[0], "README.md (Quick start)", "exec"), {})
    assert (tmp_path / "chat.json").exists()
    assert (tmp_path / "chat.jsonl").read_bytes().count(b"\n") == 4
