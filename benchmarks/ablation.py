"""Where the time of ``loads`` and ``dumps`` goes: cProfile, then the same models with one cost removed at a time.

    python benchmarks/ablation.py [--size 20000] [--corpus short]

Most of the work happens inside pydantic-core (Rust), which cProfile cannot see into, so the
second part rebuilds the message models as the library ships them and then without each
suspect: the JSON value rules on ``arguments`` (checked inside pydantic-core), ``role`` as the
``Role`` enum, ``extra="allow"`` (keeping unknown keys), model instances altogether
(``TypedDict``s), and the omission rules (``exclude_if``) when dumping. The rows of a table race
(``run.race``): each is the fastest of several interleaved runs, GC paused, as a multiple of
orjson on the same data. Last, the containers a loaded message holds (``sys.getsizeof``), model
instances against orjson's dicts: where a model's memory goes.
"""

import argparse
import cProfile
import io
import pstats
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from corpus import make_conversation, make_short_conversation
from peers import pydantic_floor
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from run import race

import orion_messages as om
from orion_messages import wire
from orion_messages._json_rules import JSON_VALUE

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
Role = Literal["system", "user", "assistant", "tool_call", "tool_result"]


def _models(config: ConfigDict, role_type: Any = Role, arguments_type: Any = Any) -> Any:
    """The three wire models with ``config``, ``role`` and ``arguments`` typed as given, no omission rules."""

    class ToolCall(BaseModel):
        model_config = config
        id: str
        name: str
        arguments: arguments_type

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
        role: role_type
        content: str
        timestamp: int = Field(ge=I64_MIN, le=I64_MAX)
        tool_calls: tuple[ToolCall, ...] = Field(default=(), strict=False)
        tool_result: ToolResult | None = None
        token_count: int | None = Field(default=None, ge=0, le=2**32 - 1)
        pinned: bool = False

    return TypeAdapter(list[Message])


def _containers(messages: list[om.Message]) -> Counter[str]:
    """Bytes of the containers a loaded conversation holds besides its values, by kind.

    Each model instance (a message, its tool calls, its result) is the object itself, its field
    dict, its fields-set and its extras dict; ``tool_calls`` is a tuple. Strings and numbers are
    left out: the dicts orjson builds hold the same ones.
    """
    sizes: Counter[str] = Counter()
    for message in messages:
        models: list[om.Message | om.ToolCall | om.ToolResult] = [message, *message.tool_calls]
        if message.tool_result is not None:
            models.append(message.tool_result)
        for model in models:
            sizes["instance object"] += sys.getsizeof(model)
            sizes["field dict (__dict__)"] += sys.getsizeof(model.__dict__)
            sizes["fields-set (model_fields_set)"] += sys.getsizeof(model.model_fields_set)
            sizes["extras dict (__pydantic_extra__)"] += sys.getsizeof(model.__pydantic_extra__)
        if message.tool_calls:
            sizes["tool_calls tuple"] += sys.getsizeof(message.tool_calls)
    return sizes


def _dict_containers(plain: list[dict[str, Any]]) -> int:
    """Bytes of the dicts and lists orjson builds for the same messages (values left out)."""
    total = 0
    for item in plain:
        total += sys.getsizeof(item)
        for call in item.get("tool_calls", ()):
            total += sys.getsizeof(call)
        if "tool_calls" in item:
            total += sys.getsizeof(item["tool_calls"])
        if item.get("tool_result") is not None:
            total += sys.getsizeof(item["tool_result"])
    return total


def _print_memory(messages: list[om.Message], plain: list[dict[str, Any]]) -> None:
    """The containers per message, models against orjson's dicts (``sys.getsizeof``)."""
    count = len(messages)
    sizes = _containers(messages)
    print("\n== containers per loaded message, bytes (sys.getsizeof; strings and numbers left out) ==")
    print("| what | bytes per message |\n|---|---:|")
    print(f"| orjson.loads: the dicts and lists | {_dict_containers(plain) / count:,.0f} |")
    print(f"| orion_messages.loads: all containers | {sum(sizes.values()) / count:,.0f} |")
    for kind, size in sizes.most_common():
        print(f"|   {kind} | {size / count:,.0f} |")
    names = Counter(len(message.model_fields_set) for message in messages)
    shapes = ", ".join(f"{share / count:.0%} hold {held} names" for held, share in sorted(names.items()))
    print(f"\nFields-sets of the messages: {shapes}.")


def _with_text(plain: list[dict[str, Any]], text: str) -> bytes:
    """The corpus with ``text`` added to the second message's content: what a ``-0`` there costs."""
    changed = [*plain]
    changed[1] = {**changed[1], "content": changed[1]["content"] + text}
    return orjson.dumps(changed)


def main() -> int:
    """Print the profile and the ablation table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--corpus", choices=("project", "short"), default="project")
    args = parser.parse_args()
    make = make_conversation if args.corpus == "project" else make_short_conversation
    data = om.dumps(om.loads(orjson.dumps(make(args.size))))
    messages = om.loads(data)
    plain = orjson.loads(data)

    for title, action in (("loads", lambda: om.loads(data)), ("dumps", lambda: om.dumps(messages))):
        profiler = cProfile.Profile()
        profiler.runcall(action)
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(8)
        print(f"== cProfile of {title}, {args.size:,} messages (top 8 by own time) ==")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:3000])

    strict = ConfigDict(strict=True, frozen=True, extra="allow", cache_strings="keys")
    no_extra = ConfigDict(strict=True, frozen=True, extra="ignore", cache_strings="keys")
    role = Annotated[om.Role, Field(strict=False)]
    rules = _models(strict, role, JSON_VALUE)  # as shipped, less the omission rules
    any_arguments = _models(strict, role)
    literal_role = _models(strict)
    no_extras = _models(no_extra)
    typed = pydantic_floor()
    shipped = wire._CONVERSATION
    field_names = [tuple(message.model_fields_set) for message in messages]
    rules_messages = rules.validate_json(data)
    literal_messages = literal_role.validate_json(data)
    no_extras_messages = no_extras.validate_json(data)

    texts = ("@@ -0,0 +1,5 @@", "values [-0, 1]", "\\" * 5 + '" [-0, 1]')
    diff_data, quoted_data, walked_data = (_with_text(plain, text) for text in texts)

    loads = {
        "orjson.loads (floor)": lambda: orjson.loads(data),
        "orion_messages.loads (as shipped)": lambda: om.loads(data),
        "  one message's text holding a diff hunk `@@ -0,0 +1,5 @@` (a -0 in text)": lambda: om.loads(
            diff_data
        ),
        "  one message's text holding `[-0` (told apart by the quotes before it)": lambda: om.loads(
            quoted_data
        ),
        "  the same after 5 backslashes and a quote (11 in a row in JSON: the strings walked)": lambda: (
            om.loads(walked_data)
        ),
        "  its validator alone (no -0 scan, no GC pause)": lambda: shipped.validator.validate_json(data),
        "  same models, arguments any value (no JSON value rules)": lambda: any_arguments.validate_json(data),
        "  ... and role a Literal of strings, not the Role enum": lambda: literal_role.validate_json(data),
        '  ... and extra="ignore" (unknown keys dropped)': lambda: no_extras.validate_json(data),
        "  TypedDicts: no model instances at all": lambda: typed.validate_json(data),
        "  validate_python(orjson.loads(data)), shipped models": lambda: shipped.validate_python(
            orjson.loads(data)
        ),
        "  for scale: one set of its field names per message (the fields-sets alone)": lambda: list(
            map(set, field_names)
        ),
    }
    dumps = {
        "orjson.dumps of plain dicts (floor)": lambda: orjson.dumps(plain),
        "orion_messages.dumps (as shipped)": lambda: om.dumps(messages),
        "  its serializer alone": lambda: shipped.serializer.to_json(messages),
        "  same models without omission rules (every field written)": lambda: rules.dump_json(rules_messages),
        "  ... and role a Literal, arguments any value": lambda: literal_role.dump_json(literal_messages),
        '  ... and extra="ignore" (no unknown keys to write)': lambda: no_extras.dump_json(
            no_extras_messages
        ),
        "  TypedDicts dump_json (plain dicts in)": lambda: typed.dump_json(plain),
        "  orjson.dumps(model_dump()) of the shipped models": lambda: orjson.dumps(
            shipped.dump_python(messages)
        ),
    }
    print(
        f"\n== ablation, {args.size:,} messages ({args.corpus} corpus), fastest of {args.runs} "
        "interleaved runs, GC paused =="
    )
    print("| what | time | x orjson |\n|---|---:|---:|")
    for table in (loads, dumps):
        times = race(table, args.runs)
        floor = next(iter(times.values()))
        for name, seconds in times.items():
            print(f"| {name} | {seconds * 1e3:.1f} ms | {seconds / floor:.2f} |")
    _print_memory(messages, plain)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
