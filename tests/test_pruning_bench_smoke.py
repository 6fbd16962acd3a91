"""benchmarks/pruning_bench.py still runs end to end (a smoke test; nothing about speed is asserted)."""

from __future__ import annotations

from pathlib import Path

from ._bench_scripts import run_bench_script


def test_pruning_bench_runs(tmp_path: Path) -> None:
    result = run_bench_script("pruning_bench.py", "--sizes", "200", "--runs", "1", cwd=tmp_path)
    corpora = (
        "### project corpus\n",
        "### short messages\n",
        "### project corpus, call ids reused every turn\n",
    )
    for corpus in corpora:
        assert corpus in result.stdout
    rows = (
        "plan_prune, plain list, cold, chatml template",
        "Conversation.save after one append",
        "Conversation.save after a token count set on every 100th message",
    )
    for row in rows:
        assert result.stdout.count(f"| {row}") == len(corpora)
