"""benchmarks/pruning_bench.py still runs end to end (a smoke test; nothing about speed is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_pruning_bench_runs(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "pruning_bench.py"
    command = [sys.executable, str(script), "--sizes", "200", "--runs", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    for corpus in ("### project corpus", "### short messages"):
        assert corpus in result.stdout
    for row in ("plan_prune, plain list, cold, chatml template", "Conversation.save after one append"):
        assert result.stdout.count(f"| {row}") == 2
