"""benchmarks/pruning_bench.py still runs end to end (a smoke test; nothing about speed is asserted)."""

from __future__ import annotations

from pathlib import Path

from ._bench_scripts import run_bench_script


def test_pruning_bench_runs(tmp_path: Path) -> None:
    result = run_bench_script("pruning_bench.py", "--sizes", "200", "--runs", "1", cwd=tmp_path)
    for corpus in ("### project corpus", "### short messages"):
        assert corpus in result.stdout
    for row in ("plan_prune, plain list, cold, chatml template", "Conversation.save after one append"):
        assert result.stdout.count(f"| {row}") == 2
