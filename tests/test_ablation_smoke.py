"""``benchmarks/ablation.py`` still runs, and its memory table measures what it says it does.

Speed is measured in benchmarks/, never asserted here.
"""

from __future__ import annotations

import importlib
import sys

import pytest

import orion_messages as om

from ._bench_scripts import BENCHMARKS, run_bench_script


@pytest.mark.parametrize("corpus", ["project", "short"])
def test_ablation_runs_small(corpus: str) -> None:
    result = run_bench_script("ablation.py", "--size", "300", "--runs", "1", "--corpus", corpus)
    for heading in ("== cProfile of loads", "== ablation, 300 messages", "== containers per loaded message"):
        assert heading in result.stdout
    for row in ("| orion_messages.loads (as shipped) |", "|   fields-set (model_fields_set) |"):
        assert row in result.stdout


def test_containers_count_each_model_once() -> None:
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its sibling modules
    try:
        containers = importlib.import_module("ablation")._containers
    finally:
        sys.path.remove(str(BENCHMARKS))
    call = om.ToolCall(id="c", name="read", arguments={"path": "a"})
    message = om.Message.assistant("msg-1", "", [call], timestamp=1)
    sizes = containers([message])
    # Independent expectation: sets grown name by name, as pydantic-core builds them (a set
    # literal would be presized smaller).
    assert sizes["fields-set (model_fields_set)"] == _grown_set_size(
        "id", "role", "content", "timestamp", "tool_calls"
    ) + _grown_set_size("id", "name", "arguments")
    assert sizes["instance object"] == sys.getsizeof(message) + sys.getsizeof(call)
    assert sizes["tool_calls tuple"] == sys.getsizeof((call,))


def _grown_set_size(*names: str) -> int:
    grown: set[str] = set()
    for name in names:
        grown.add(name)
    return sys.getsizeof(grown)
