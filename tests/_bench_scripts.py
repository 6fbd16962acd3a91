"""Running a script of ``benchmarks/`` from a test, the way a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run_bench_script(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<name>`` with ``args`` in a fresh interpreter; fail the test if it fails."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result
