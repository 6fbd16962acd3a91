"""The benchmark suite still runs end to end (a smoke test; speed itself is measured in benchmarks/).

Peers that are not installed (they come from the ``bench`` extra, not from ``dev``) are skipped
by the script, which says so in its report; this test checks that it does.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ._bench_scripts import run_bench_script

PEERS = {"msgspec": "msgspec", "pydantic-ai": "pydantic_ai", "langchain-core": "langchain_core"}


def test_benchmarks_run_quick(tmp_path: Path) -> None:
    report = tmp_path / "results.md"
    run_bench_script("run.py", "--quick", "--sizes", "200", "--output", str(report), cwd=tmp_path)
    text = report.read_text(encoding="utf-8")
    for table in (
        "| load |",
        "| dump |",
        "| prune |",
        "| append (log already holding N messages) |",
        "## Goals",
    ):
        assert table in text
    for row in ("orjson.loads", "orion_messages.loads", "orion_messages.dumps", "plan_prune", "append_jsonl"):
        assert f"| {row}" in text
    for name, module in PEERS.items():
        installed = importlib.util.find_spec(module) is not None
        assert (f"- Skipped {name}: {name} is not installed" in text) is not installed
    assert text.count("**MET**") + text.count("**MISSED**") >= 5


def test_free_values_runs_quick() -> None:
    result = run_bench_script("free_values.py", "--quick")
    for row in ("| array chain, 119 levels |", "| object chain, 10 levels |", "| array of 100,000 ints |"):
        assert row in result.stdout
