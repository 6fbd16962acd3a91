"""Where the time of ``loads`` and ``dumps`` goes: cProfile, then the same models with one cost removed at a time.

    python benchmarks/ablation.py [--size 20000]

Most of the work happens inside pydantic-core (Rust), which cProfile cannot see into, so the
second part rebuilds the message models as the library ships them and then without each
suspect: the Python validators (``arguments`` checked for JSON values, unknown keys checked),
``role`` as the ``Role`` enum rather than a ``Literal`` of strings, ``extra="allow"`` (keeping
unknown keys), model instances altogether (``TypedDict``s), and ``exclude_defaults`` when
dumping. Each line is the fastest of several interleaved runs, GC paused, as a
multiple of orjson on the same data.
"""

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from corpus import make_conversation
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from run import median_time
from typing_extensions import NotRequired, TypedDict

import orion_messages as om
from orion_messages import wire

I64 = {"ge": -(2**63), "le": 2**63 - 1}
Role = Literal["system", "user", "assistant", "tool_call", "tool_result"]


def _models(config: ConfigDict, role_type: Any = Role) -> Any:
    """The three wire models with ``config``, ``role`` typed as given, and no Python validators."""

    class ToolCall(BaseModel):
        model_config = config
        id: str
        name: str
        arguments: Any

    class ToolResult(BaseModel):
        model_config = config
        tool_call_id: str
        tool_name: str
        content: str
        is_error: bool
        pending: bool = False

    class Message(BaseModel):
        model_config = config
        id: str
        role: role_type  # type: ignore[valid-type]
        content: str
        timestamp: int = Field(**I64)
        tool_calls: tuple[ToolCall, ...] = ()
        tool_result: ToolResult | None = None
        token_count: int | None = Field(default=None, ge=0, le=2**32 - 1)
        pinned: bool = False

    return TypeAdapter(list[Message])


class _ToolCallDict(TypedDict):
    id: str
    name: str
    arguments: Any


class _ToolResultDict(TypedDict):
    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool
    pending: NotRequired[bool]


class _MessageDict(TypedDict):
    id: str
    role: Role
    content: str
    timestamp: int
    tool_calls: NotRequired[list[_ToolCallDict]]
    tool_result: NotRequired[_ToolResultDict | None]
    token_count: NotRequired[int | None]
    pinned: NotRequired[bool]


def main() -> int:
    """Print the profile and the ablation table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    data = om.dumps(om.loads(orjson.dumps(make_conversation(args.size))))
    messages = om.loads(data)
    plain = orjson.loads(data)

    for title, action in (("loads", lambda: om.loads(data)), ("dumps", lambda: om.dumps(messages))):
        profiler = cProfile.Profile()
        profiler.runcall(action)
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(8)
        print(f"== cProfile of {title}, {args.size:,} messages (top 8 by own time) ==")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:3000])

    strict = ConfigDict(strict=True, frozen=True, extra="allow")
    no_extra = ConfigDict(strict=True, frozen=True, extra="ignore")
    bare = _models(strict)
    bare_enum = _models(strict, Annotated[om.Role, Field(strict=False)])
    bare_no_extra = _models(no_extra)
    typed = TypeAdapter(list[_MessageDict], config=ConfigDict(strict=True))
    shipped = wire._CONVERSATION

    loads_rows = [
        ("orion_messages.loads (as shipped)", lambda: om.loads(data)),
        ("  its TypeAdapter alone (no NaN pre-scan, GC paused)", lambda: shipped.validate_json(data)),
        ("  same models (role the Role enum), no Python validators", lambda: bare_enum.validate_json(data)),
        ("  ... and role a Literal of strings, not an Enum", lambda: bare.validate_json(data)),
        ('  ... and extra="ignore" (unknown keys dropped)', lambda: bare_no_extra.validate_json(data)),
        ("  TypedDicts: no model instances at all", lambda: typed.validate_json(data)),
        (
            "  validate_python(orjson.loads(data)), shipped models",
            lambda: shipped.validate_python(orjson.loads(data)),
        ),
    ]
    bare_messages = bare.validate_json(data)
    bare_enum_messages = bare_enum.validate_json(data)
    bare_no_extra_messages = bare_no_extra.validate_json(data)
    dumps_rows = [
        ("orion_messages.dumps (as shipped)", lambda: om.dumps(messages)),
        (
            "  its dump_json(exclude_defaults=True) alone",
            lambda: shipped.dump_json(messages, exclude_defaults=True),
        ),
        ("  dump_json without exclude_defaults", lambda: shipped.dump_json(messages)),
        (
            "  same models (role the Role enum), no validators",
            lambda: bare_enum.dump_json(bare_enum_messages, exclude_defaults=True),
        ),
        (
            "  ... and role a Literal of strings, not an Enum",
            lambda: bare.dump_json(bare_messages, exclude_defaults=True),
        ),
        (
            '  ... and extra="ignore"',
            lambda: bare_no_extra.dump_json(bare_no_extra_messages, exclude_defaults=True),
        ),
        ("  TypedDicts dump_json (plain dicts in)", lambda: typed.dump_json(plain)),
        (
            "  orjson.dumps(dump_python(exclude_defaults=True))",
            lambda: orjson.dumps(shipped.dump_python(messages, exclude_defaults=True)),
        ),
    ]
    rows = [
        ("orjson.loads (floor)", lambda: orjson.loads(data)),
        *loads_rows,
        ("orjson.dumps of plain dicts (floor)", lambda: orjson.dumps(plain)),
        *dumps_rows,
    ]
    # Round robin, so that a busy moment of a shared machine hits every variant alike; the
    # fastest run of each is the least disturbed one.
    best = [float("inf")] * len(rows)
    for _ in range(args.runs):
        for index, (_, action) in enumerate(rows):
            best[index] = min(best[index], median_time(action, 1))
    print(f"\n== ablation, {args.size:,} messages, fastest of {args.runs} interleaved runs, GC paused ==")
    print("| what | time | x orjson |\n|---|---:|---:|")
    floor = best[0]
    for (name, _), seconds in zip(rows, best, strict=True):
        if name.startswith("orjson.dumps"):
            floor = seconds
        print(f"| {name} | {seconds * 1e3:.1f} ms | {seconds / floor:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
