"""What checking a free JSON value costs, by its shape: deep chains and wide values, rules against ``Any``.

    python benchmarks/free_values.py [--runs 15] [--quick]

Each value is a tool call's ``arguments`` in a one-message conversation. The rows race
(``run.race``) ``orion_messages.loads`` of its JSON, then the message models without omission
rules (``ablation._models``) with ``arguments`` under the JSON value rules and typed ``Any``, for
JSON input (``validate_json``) and for Python input (``validate_python``). Chains of arrays and
of objects 10 to 119 levels deep show the cost per level: flat when checking is linear in the
size of the value, growing with the depth when a level pays for everything below it. ``--quick``
runs smaller wide values and fewer runs (for the smoke test).
"""

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from ablation import _models
from pydantic import ConfigDict, Field
from run import race

import orion_messages as om
from orion_messages._json_rules import JSON_VALUE

DEPTHS = (10, 50, 100, 119)


def _chain(container: str, depth: int) -> Any:
    """``depth`` arrays (``[[...[1]...]]``) or objects (``{"k":{"k":...1}}``), one in another."""
    value: Any = 1
    for _ in range(depth):
        value = [value] if container == "array" else {"k": value}
    return value


def _shapes(quick: bool) -> dict[str, Any]:
    shapes = {
        f"{kind} chain, {depth} levels": _chain(kind, depth)
        for kind in ("array", "object")
        for depth in DEPTHS
    }
    keys, ints = (10_000, 100_000) if quick else (100_000, 1_000_000)
    shapes[f"object of {keys:,} keys"] = {f"k{i}": i for i in range(keys)}
    shapes[f"array of {ints:,} ints"] = list(range(ints))
    return shapes


def _batched(action: Callable[[], Any], repeats: int) -> Callable[[], Any]:
    return lambda: [action() for _ in range(repeats)]


def _row(value: Any, runs: int, adapters: tuple[Any, Any]) -> list[float]:
    """Microseconds per call of each contender, for ``value`` as a tool call's arguments."""
    message = {
        "id": "m",
        "role": "assistant",
        "content": "",
        "timestamp": 1,
        "tool_calls": [{"id": "c", "name": "f", "arguments": value}],
    }
    data, plain = orjson.dumps([message]), [message]
    rules, any_value = adapters
    contenders = {
        "loads": lambda: om.loads(data),
        "rules json": lambda: rules.validate_json(data),
        "any json": lambda: any_value.validate_json(data),
        "rules python": lambda: rules.validate_python(plain),
        "any python": lambda: any_value.validate_python(plain),
    }
    # Small values run many times per timing, so that one timing is well above the clock's grain.
    repeats = max(1, 2_000 // max(1, len(data) // 8))
    times = race({name: _batched(action, repeats) for name, action in contenders.items()}, runs)
    return [seconds / repeats * 1e6 for seconds in times.values()]


def main() -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    config = ConfigDict(strict=True, frozen=True, extra="allow", cache_strings="keys")
    role = Annotated[om.Role, Field(strict=False)]
    adapters = (_models(config, role, JSON_VALUE), _models(config, role))
    runs = 3 if args.quick else args.runs
    print(f"== a free value's check by shape, microseconds per call, fastest of {runs} interleaved runs ==")
    print(
        "| arguments | loads | rules, JSON | Any, JSON | rules / Any | rules, Python | Any, Python |\n"
        "|---|---:|---:|---:|---:|---:|---:|"
    )
    for name, value in _shapes(args.quick).items():
        loads, rules_json, any_json, rules_python, any_python = _row(value, runs, adapters)
        print(
            f"| {name} | {loads:,.1f} | {rules_json:,.1f} | {any_json:,.1f} | {rules_json / any_json:.1f} "
            f"| {rules_python:,.1f} | {any_python:,.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
