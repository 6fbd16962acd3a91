"""Every Python example in README.md and docs/*.md runs as written; its asserts are the expectations.

Each page is one test: its ```python blocks run in order, in one namespace (a later block may use
what an earlier one defined), in a fresh temporary folder as the working directory. Pages added
later are picked up by the glob. A block that must not run (a sketch needing a model or a
network) is preceded by the line ``<!-- no-test: why -->``; see docs/development.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_NO_TEST = re.compile(r"<!--\s*no-test:\s*\S.*?-->\s*\Z", re.DOTALL)

# Pages whose examples are not runnable yet, as strict xfails (they fail as soon as the examples
# run, so an entry cannot go stale). None today.
NOT_YET_RUNNABLE: set[str] = set()


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown page with their first line numbers, skipped ones left out."""
    blocks = []
    for match in _FENCE.finditer(text):
        if _NO_TEST.search(text[: match.start()].rstrip() + "\n"):
            continue
        line = text.count("\n", 0, match.start(1)) + 1
        blocks.append((line, match.group(1)))
    return blocks


def _page_id(page: object) -> str:
    return str(page.relative_to(ROOT)) if isinstance(page, Path) else str(page)


def _pages() -> list[object]:
    not_yet = pytest.mark.xfail(strict=True, reason="TODO: the examples are sketches, not runnable yet")
    return [pytest.param(page, marks=not_yet) if page.name in NOT_YET_RUNNABLE else page for page in PAGES]


@pytest.mark.parametrize("page", _pages(), ids=_page_id)
def test_the_pages_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    if not blocks:
        pytest.skip("no Python examples on this page")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__example__"}
    for line, code in blocks:
        # Blank lines in front keep the tracebacks' line numbers those of the page.
        exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)


def test_the_readme_quick_start_runs_twice_in_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = text[text.index("\n## Quick start\n") :]
    code = python_blocks(quick_start)[0][1]
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # the files the first run left behind must not break the second
        exec(compile(code, "README.md (Quick start)", "exec"), {"__name__": "__example__"})
    assert (tmp_path / "chat.json").exists()
    assert (tmp_path / "chat.jsonl").exists()


def test_the_block_finder() -> None:
    page = (
        "Text\n```python\na = 1\n```\n\n<!-- no-test: needs a model -->\n```python\nboom()\n```\n"
        "```bash\nls\n```\n```python\nassert a == 1\n```\n"
    )
    assert python_blocks(page) == [(3, "a = 1\n"), (14, "assert a == 1\n")]
