"""Conversation, driven at random, against an independent plain-dict model of orion-core's format.

A state machine appends and extends, pins, sets token counts, resolves pending results, replaces
the messages, copies, saves, loads and appends to a JSON Lines log, plans and prunes (sliding
window and summaries, with and without the ChatML template). After every step the conversation
must hold what the model holds. Each persistence step compares the saved bytes with the model's
own encoder; each plan is compared with a naive planner (no template, and ChatML), refusal texts
included; the documented exceptions are raised for misuse.

The model is written from the reference pages (``orion-core-format.md``: the wire format and
orion-core's ``plan_prune`` and ``Summarize``; ``chat-templates.md`` section 3: ChatML) and from
``docs/pruning.md`` (the no-template rules, summaries), not from the library's code. Messages are
plain dicts in wire key order; nothing here imports the library's planner or encoder internals.

The template and counters are module-level objects shared by every step, so the conversation's
per-object caches of counts survive the changes between plans: a stale cache shows up as a plan
that differs from the naive one (``my_message_counter`` reads ``pinned`` to catch a pin that
does not invalidate it).
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias, TypedDict

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import orion_messages as om
from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    ContextConfig,
    ContextOverflowError,
    Conversation,
    Message,
    PendingResultNotFound,
    PrunePlan,
    PruneStrategy,
    ResultAlreadyResolved,
    ToolSchema,
    count_words,
    estimate_text_tokens,
)

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"
TextCounter: TypeAlias = Callable[[str], int]

SUMMARY_MARKER = "[Summary of earlier conversation]"
SUMMARY_PREFIX = SUMMARY_MARKER + "\n"

# --- the model: a message is a plain dict in wire key order -----------------------------------


class WireCall(TypedDict):
    id: str
    name: str
    arguments: JSON


class _WireResultFields(TypedDict):
    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool


class WireResult(_WireResultFields, total=False):
    pending: bool


class _WireMessageFields(TypedDict):
    id: str
    role: str
    content: str
    timestamp: int


class WireMessage(_WireMessageFields, total=False):
    tool_calls: list[WireCall]
    tool_result: WireResult
    token_count: int | None
    pinned: bool


def m_dict(
    id: str,
    role: str,
    content: str,
    ts: int,
    tool_calls: Sequence[WireCall] = (),
    tool_result: WireResult | None = None,
    token_count: int | None = None,
    pinned: bool = False,
) -> WireMessage:
    d: WireMessage = {"id": id, "role": role, "content": content, "timestamp": ts}
    if tool_calls:
        d["tool_calls"] = [WireCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in tool_calls]
    if tool_result is not None:
        d["tool_result"] = tool_result.copy()
    if token_count is not None:
        d["token_count"] = token_count
    if pinned:
        d["pinned"] = True
    return d


def normalise(d: WireMessage) -> WireMessage:
    """Key order and omissions as the wire format writes them (defaults left out)."""
    out: WireMessage = {
        "id": d["id"],
        "role": d["role"],
        "content": d["content"],
        "timestamp": d["timestamp"],
    }
    if d.get("tool_calls"):
        out["tool_calls"] = [
            WireCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in d["tool_calls"]
        ]
    tr = d.get("tool_result")
    if tr is not None:
        t = WireResult(
            tool_call_id=tr["tool_call_id"],
            tool_name=tr["tool_name"],
            content=tr["content"],
            is_error=tr["is_error"],
        )
        if tr.get("pending"):
            t["pending"] = True
        out["tool_result"] = t
    if d.get("token_count") is not None:
        out["token_count"] = d["token_count"]
    if d.get("pinned"):
        out["pinned"] = True
    return out


def result_of(d: WireMessage) -> WireResult | None:
    return d.get("tool_result")


def is_pending(d: WireMessage) -> bool:
    tr = result_of(d)
    return tr is not None and bool(tr.get("pending"))


def answers_call(d: WireMessage, call: str) -> bool:
    tr = result_of(d)
    return tr is not None and tr["tool_call_id"] == call


def is_summary_like(d: WireMessage) -> bool:
    return bool(d.get("pinned")) and d["content"].startswith(SUMMARY_MARKER)


# serde_json's string escapes: " and \ escaped, \b\t\n\f\r short, other C0 as lowercase \u00xx.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def enc_str(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def enc_value(v: object) -> str:
    # bool before int: True is an int in Python, but written true on the wire.
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return enc_str(v)
    if isinstance(v, list):
        return "[" + ",".join(enc_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ",".join(enc_str(str(k)) + ":" + enc_value(x) for k, x in v.items()) + "}"
    raise TypeError(v)  # no floats are generated: their spelling is the codec tests' business


def enc_message(d: WireMessage) -> bytes:
    return enc_value(normalise(d)).encode("utf-8")


def enc_file(ds: Iterable[WireMessage]) -> bytes:
    return b"[" + b",".join(enc_message(d) for d in ds) + b"]"


def enc_jsonl(ds: Iterable[WireMessage]) -> bytes:
    return b"".join(enc_message(d) + b"\n" for d in ds)


def as_wire(message: Message) -> WireMessage:
    """The library's own encoding of one message, read back as a model dict."""
    decoded: WireMessage = json.loads(om.dumps_message(message))
    return decoded


def decoded(d: WireMessage) -> WireMessage:
    """The model's encoding, read back the same way, so both sides compare as parsed JSON."""
    value: WireMessage = json.loads(enc_message(d))
    return value


def to_message(d: WireMessage) -> Message:
    return Message.model_validate_json(enc_message(d))


# --- turns and orion-core's keep loop (orion-core-format.md, steps 1-7) -----------------------


def turns_of(ds: Sequence[WireMessage]) -> list[range]:
    starts = [i for i, d in enumerate(ds) if d["role"] == "user"]
    return [range(s, e) for s, e in zip(starts, [*starts[1:], len(ds)], strict=False)]


def turn_index(ds: Sequence[WireMessage], i: int) -> int:
    """The turn message ``i`` belongs to, -1 for the preamble."""
    return sum(1 for d in ds[: i + 1] if d["role"] == "user") - 1


class Refused(Exception):
    """The model's refusal, with the text orion-core gives."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def naive_keep(costs: list[int], protected: list[int], fixed: int, available: int) -> tuple[list[bool], int]:
    """Which units to keep and what they cost, or ``Refused`` with orion-core's text."""
    if fixed >= available:
        raise Refused(
            f"System prompt and tools ({fixed} tokens) exceed available context budget ({available} tokens)"
        )
    budget = available - fixed
    keep = [False] * len(costs)
    if not costs:
        return keep, 0
    latest = len(costs) - 1
    if costs[latest] > budget:
        raise Refused(
            f"Latest message ({costs[latest]} tokens) plus system prompt ({fixed} tokens) exceeds context "
            f"budget ({available} tokens). Clear the conversation or increase context size."
        )
    keep[latest] = True
    rem = budget - costs[latest]
    for u in sorted(protected):
        if u == latest:
            continue
        if costs[u] > rem:
            total = sum(costs[p] for p in protected)
            raise Refused(
                f"Pinned messages ({total} tokens) exceed the available context budget ({available} tokens). "
                "Unpin some messages or increase context size."
            )
        rem -= costs[u]
        keep[u] = True
    for u in range(latest - 1, -1, -1):
        if keep[u]:
            continue
        if costs[u] > rem:
            break  # the walk stops at the first turn that does not fit
        rem -= costs[u]
        keep[u] = True
    return keep, budget - rem


@dataclass(frozen=True)
class Window:
    """A context window in tokens, as ``ContextConfig`` takes it."""

    max_context_tokens: int
    max_response_tokens: int
    reserved_tokens: int


@dataclass(frozen=True)
class RelativeWindow:
    """A window sized as a fraction of the conversation's cost, so plans drop some turns."""

    fraction: float
    max_response_tokens: int
    reserved_tokens: int


@dataclass
class NaivePlan:
    """What the model expects of a ``PrunePlan``."""

    kept: list[range]
    dropped: list[range]
    kept_tokens: int
    fixed: int
    budget: int
    preamble_kept: bool
    preamble: range = range(0)


# --- ChatML (chat-templates.md section 3) ---------------------------------------------------

ToolSpec: TypeAlias = "tuple[str, str, dict[str, JSON]]"

TOOLS_TAIL = 'To use a tool, respond with a JSON block:\n```tool_call\n{"name": "tool_name", "arguments": {...}}\n```\n'
CHATML_PREFIX = "<|im_start|>assistant\n"


def tools_block(tools: Sequence[ToolSpec]) -> str:
    if not tools:
        return ""
    t = "\n\nYou have access to the following tools:\n\n"
    for name, desc, params in tools:
        parameters = json.dumps(params, indent=2, ensure_ascii=False, sort_keys=True)
        t += "### " + name + "\n" + desc + "\nParameters: " + parameters + "\n\n"
    return t + TOOLS_TAIL


def chatml_system(system_prompt: str, tools: Sequence[ToolSpec]) -> str:
    return "<|im_start|>system\n" + system_prompt + tools_block(tools) + "<|im_end|>\n"


def chatml_message(d: WireMessage) -> str:
    role, content = d["role"], d["content"]
    if role == "system":
        return ""
    if role == "user":
        return "<|im_start|>user\n" + content + "<|im_end|>\n"
    if role in ("assistant", "tool_call"):
        return "<|im_start|>assistant\n" + content + "<|im_end|>\n"
    return "<|im_start|>tool\n" + content + "<|im_end|>\n"


def naive_plan_templated(
    ds: Sequence[WireMessage],
    window: Window,
    system_prompt: str,
    tools: Sequence[ToolSpec],
    counter: TextCounter,
) -> NaivePlan:
    """orion-core's plan under ChatML: the preamble is neither counted nor kept."""
    available = max(0, window.max_context_tokens - window.max_response_tokens)
    fixed = counter(chatml_system(system_prompt, tools)) + counter(CHATML_PREFIX) + window.reserved_tokens
    turns = turns_of(ds)
    costs = [sum(counter(chatml_message(ds[i])) for i in t) for t in turns]
    protected = [k for k, t in enumerate(turns) if any(ds[i].get("pinned") for i in t)]
    keep, used = naive_keep(costs, protected, fixed, available)
    return NaivePlan(
        kept=[t for t, k in zip(turns, keep, strict=False) if k],
        dropped=[t for t, k in zip(turns, keep, strict=False) if not k],
        kept_tokens=used,
        fixed=fixed,
        budget=available - fixed,
        preamble_kept=False,
    )


# --- the plan without a template (docs/pruning.md, "Without a template") ----------------------


def naive_estimate(d: WireMessage) -> int:
    count = d.get("token_count")
    if count is not None:
        return count  # the host's count wins over the estimate
    n = len(d["content"])
    for c in d.get("tool_calls", ()):
        n += len(c["name"]) + len(json.dumps(c["arguments"], separators=(",", ":"), ensure_ascii=False))
    return max(1, n // 4)


def _protected_and_ties(ds: Sequence[WireMessage]) -> tuple[set[int], list[tuple[int, int]]]:
    """Turns kept like pinned ones (pinned, pending, answering a preamble call), and the spans of
    turns a result and the call it answers tie together: the latest call with its id before it,
    else the first one after it."""
    tidx = [turn_index(ds, i) for i in range(len(ds))]
    protected = {tidx[i] for i, d in enumerate(ds) if tidx[i] >= 0 and (d.get("pinned") or is_pending(d))}
    spans = []
    for ri, r in enumerate(ds):
        tr = result_of(r)
        if tr is None:
            continue
        asking = [
            i for i, d in enumerate(ds) if any(c["id"] == tr["tool_call_id"] for c in d.get("tool_calls", ()))
        ]
        before = [i for i in asking if i < ri]
        after = [i for i in asking if i > ri]
        ci = before[-1] if before else after[0] if after else None
        if ci is None or tidx[ci] == tidx[ri]:
            continue
        lo, hi = min(tidx[ci], tidx[ri]), max(tidx[ci], tidx[ri])
        if lo < 0:
            protected.add(hi)
        else:
            spans.append((lo, hi))
    return protected, spans


def _units(turn_count: int, spans: list[tuple[int, int]]) -> list[list[int]]:
    """Turns merged into units kept or dropped together: every turn from a call to its result."""
    units = [[k] for k in range(turn_count)]
    changed = True
    while changed:
        changed = False
        for lo, hi in spans:
            ul = next(u for u, ks in enumerate(units) if lo in ks)
            uh = next(u for u, ks in enumerate(units) if hi in ks)
            if ul != uh:
                units[ul : uh + 1] = [[k for u in units[ul : uh + 1] for k in u]]
                changed = True
                break
    return units


def naive_plan_plain(
    ds: Sequence[WireMessage], window: Window, count: Callable[[WireMessage], int] = naive_estimate
) -> NaivePlan:
    """The no-template plan: the preamble is kept and counted as fixed overhead."""
    available = max(0, window.max_context_tokens - window.max_response_tokens)
    turns = turns_of(ds)
    pre_stop = turns[0].start if turns else len(ds)
    pre_cost = sum(count(ds[i]) for i in range(pre_stop))
    fixed = window.reserved_tokens + pre_cost
    protected_turns, spans = _protected_and_ties(ds)
    units = _units(len(turns), spans)
    unit_costs = [sum(count(ds[i]) for k in u for i in turns[k]) for u in units]
    protected = [n for n, u in enumerate(units) if any(k in protected_turns for k in u)]
    keep_unit, used = naive_keep(unit_costs, protected, fixed, available)
    keep_turn = [False] * len(turns)
    for n, u in enumerate(units):
        for k in u:
            keep_turn[k] = keep_unit[n]
    return NaivePlan(
        kept=[t for t, k in zip(turns, keep_turn, strict=False) if k],
        dropped=[t for t, k in zip(turns, keep_turn, strict=False) if not k],
        kept_tokens=pre_cost + used,
        fixed=fixed,
        budget=available - window.reserved_tokens,
        preamble_kept=True,
        preamble=range(pre_stop),
    )


# --- strategies -----------------------------------------------------------------------------

# Few distinct values, so ids, call ids and summary markers repeat as in hand-edited histories.
WORDS = st.sampled_from(
    [
        "",
        " ",
        "hi",
        "a b",
        "hello there friend",
        "x" * 37,
        "one two three four five six",
        "ünï cödé 字",
        "tab\there\nnl",
        'q"uote\\back\x01',
        SUMMARY_PREFIX + "  old stuff ",
        SUMMARY_MARKER,
    ]
)
RARE = st.integers(0, 5).map(lambda n: n == 0)
IDS = st.sampled_from(["msg-1", "msg-2", "msg-3", "msg-4", "msg-9", "msg-12", "other", "msg-007"])
CALL_IDS = st.sampled_from(["c1", "c2", "c3", "msg-2-call-1"])
# Unset, small, or the u32 maximum.
TOKENS = st.one_of(
    st.none(), st.none(), st.integers(0, 12), st.integers(0, 12).map(lambda n: 2**32 - 1 if n == 12 else n)
)
_ARGUMENTS: list[JSON] = [{}, {"a": 2, "b": 3}, {"path": "/tmp/x", "n": [1, 2]}, "s", None, [1, "é"]]
ARGS = st.sampled_from(_ARGUMENTS)


@st.composite
def message_dicts(draw: st.DrawFn) -> WireMessage:
    role = draw(
        st.sampled_from(
            ["user", "user", "assistant", "assistant", "tool_result", "pending", "system", "tool_call"]
        )
    )
    id, content = draw(IDS), draw(WORDS)
    ts = draw(st.integers(-(2**63), 2**63 - 1) | st.integers(0, 2000))
    token_count, pinned = draw(TOKENS), draw(RARE)
    calls: list[WireCall] = []
    tr = None
    if role in ("assistant", "tool_call"):
        for _ in range(draw(st.integers(0, 2))):
            name = draw(st.sampled_from(["add", "read_file"]))
            calls.append(WireCall(id=draw(CALL_IDS), name=name, arguments=draw(ARGS)))
    if role == "tool_result":
        tr = WireResult(
            tool_call_id=draw(CALL_IDS), tool_name="add", content=content, is_error=draw(st.booleans())
        )
    if role == "pending":
        role, content = "tool_result", ""
        tr = WireResult(
            tool_call_id=draw(CALL_IDS), tool_name="add", content="", is_error=False, pending=True
        )
    return m_dict(id, role, content, ts, calls, tr, token_count, pinned)


ABSOLUTE_WINDOWS = st.builds(
    Window,
    st.one_of(st.integers(0, 40), st.integers(40, 300)),
    st.sampled_from([0, 0, 0, 5, 40]),
    st.sampled_from([0, 0, 0, 3, 20]),
)
RELATIVE_WINDOWS = st.builds(
    RelativeWindow, st.floats(0.2, 1.3), st.sampled_from([0, 0, 5]), st.sampled_from([0, 0, 0, 3])
)
WINDOWS: st.SearchStrategy[Window | RelativeWindow] = st.one_of(
    ABSOLUTE_WINDOWS, RELATIVE_WINDOWS, RELATIVE_WINDOWS
)

CHATML = om.get_template("chatml")
TOOLS1: list[ToolSpec] = [
    ("add", "Adds two numbers.", {"type": "object", "properties": {"a": {"type": "integer"}}})
]
SYSTEM_PROMPTS = st.sampled_from(["", "Be brief.", "   ", "You are a helpful assistant with a long prompt"])


def my_message_counter(m: Message) -> int:
    return len(m.content) + 2 * int(m.pinned)  # reads pinned: a pin must invalidate its count


def my_message_counter_model(d: WireMessage) -> int:
    return len(d["content"]) + 2 * int(bool(d.get("pinned")))


def fails_with(expected: type[Exception], call: Callable[[], object]) -> None:
    with pytest.raises(expected):
        call()


class Summarizer:
    """A ``summarize=`` callable that records what it was given and answers ``answer``."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.folded: list[str] | None = None
        self.prior: str | None = None

    def __call__(self, folded: list[Message], prior: str | None) -> str:
        self.folded = [m.id for m in folded]
        self.prior = prior
        if self.answer == "raise":
            raise RuntimeError("boom")
        return self.answer


def misuses(conv: Conversation, directory: Path) -> dict[str, tuple[type[Exception], Callable[[], object]]]:
    """Each misuse the documentation names, with the exception it raises."""
    return {
        "pin_id": (ArgumentTypeError, lambda: conv.set_pinned(5, True)),  # type: ignore[arg-type]
        "resolve_id": (ArgumentTypeError, lambda: conv.resolve(5, "x")),  # type: ignore[arg-type]
        "resolve_content": (ArgumentTypeError, lambda: conv.resolve("c1", 5)),  # type: ignore[arg-type]
        "resolve_err": (ArgumentTypeError, lambda: conv.resolve("c1", "x", is_error=1)),  # type: ignore[arg-type]
        "config": (ArgumentTypeError, lambda: conv.plan_prune({"max_context_tokens": 5})),  # type: ignore[arg-type]
        "neg": (ArgumentValueError, lambda: ContextConfig(max_context_tokens=-1)),
        "sp": (ArgumentValueError, lambda: conv.plan_prune(ContextConfig(), system_prompt="hi")),
        "counter": (ArgumentTypeError, lambda: conv.plan_prune(ContextConfig(), counter=count_words)),
        "count_tpl": (
            ArgumentTypeError,
            lambda: conv.plan_prune(ContextConfig(), template="chatml", count=my_message_counter),
        ),
        "tpl": (om.UnknownTemplateError, lambda: conv.plan_prune(ContextConfig(), template="gpt-9")),
        "cfg_type": (ArgumentTypeError, lambda: ContextConfig(max_context_tokens=5.0)),  # type: ignore[arg-type]
        "save_dir": (om.NotARegularFileError, lambda: conv.save(directory)),
        "save_jsonl_dir": (om.NotARegularFileError, lambda: conv.save_jsonl(directory)),
    }


MISUSES = sorted(misuses(Conversation(), Path()))


# --- the state machine ----------------------------------------------------------------------


class ConversationModel(RuleBasedStateMachine):
    """Random changes, saves and plans of one Conversation, checked against ``self.model``."""

    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.file = self.tmp / "conv.json"
        self.jsonl = self.tmp / "conv.jsonl"
        self.log = self.tmp / "log.jsonl"
        self.log_count = 0  # how many of the model's messages the log holds
        self.log_valid = True  # False once the history changed other than by appending
        self.conv = Conversation()
        self.model: list[WireMessage] = []
        self.last_counter = 0  # the largest N of an msg-N id seen: next_id gives N + 1

    def teardown(self) -> None:
        self._tmp.cleanup()

    def _add(self, ds: Iterable[WireMessage]) -> None:
        for d in ds:
            self.model.append(d)
            self._note_id(d["id"])

    def _note_id(self, id: str) -> None:
        m = re.fullmatch(r"msg-\+?([0-9]+)", id)
        if m:
            self.last_counter = max(self.last_counter, int(m[1]))

    def _first(self, id: str) -> int | None:
        return next((i for i, d in enumerate(self.model) if d["id"] == id), None)

    @initialize(
        turns=st.lists(st.tuples(WORDS, WORDS, st.booleans(), RARE, st.booleans(), RARE), max_size=10),
        extra=st.lists(message_dicts(), max_size=6),
        extra_first=st.booleans(),
    )
    def seed(
        self,
        turns: list[tuple[str, str, bool, bool, bool, bool]],
        extra: list[WireMessage],
        extra_first: bool,
    ) -> None:
        if extra_first:
            self.extend(extra)
        for t in turns:
            self.append_turn(*t)
        if not extra_first:
            self.extend(extra)

    # --- changes ------------------------------------------------------------------------
    @rule(d=message_dicts())
    def append(self, d: WireMessage) -> None:
        self.conv.append(to_message(d))
        self._add([d])

    @rule(q=WORDS, a=WORDS, with_call=st.booleans(), pending=RARE, reuse_call=st.booleans(), pin=RARE)
    def append_turn(
        self, q: str, a: str, with_call: bool, pending: bool, reuse_call: bool, pin: bool
    ) -> None:
        """A whole agent turn: user, assistant (maybe calling a tool), its result (maybe pending)."""
        n = self.last_counter
        ds = [m_dict(f"msg-{n + 1}", "user", q, n + 1, pinned=pin and not with_call)]
        if with_call:
            call = "c1" if reuse_call else f"msg-{n + 2}-call-1"
            calls = [WireCall(id=call, name="add", arguments={"a": 2, "b": 3})]
            ds.append(m_dict(f"msg-{n + 2}", "assistant", a, n + 2, calls))
            tr = WireResult(
                tool_call_id=call, tool_name="add", content="" if pending else "5", is_error=False
            )
            if pending:
                tr["pending"] = True
            ds.append(m_dict(f"msg-{n + 3}", "tool_result", tr["content"], n + 3, tool_result=tr, pinned=pin))
        else:
            ds.append(m_dict(f"msg-{n + 2}", "assistant", a, n + 2))
        self.conv.extend(to_message(d) for d in ds)
        self._add(ds)

    @rule(ds=st.lists(message_dicts(), max_size=4))
    def extend(self, ds: list[WireMessage]) -> None:
        self.conv.extend(to_message(d) for d in ds)
        self._add(ds)

    @rule(d=message_dicts(), bad=st.sampled_from([{"x": 1}, "text", 5, None]))
    def extend_with_bad_item(self, d: WireMessage, bad: object) -> None:
        # Rejected whole: the invariants check that the good message before it was not added.
        fails_with(TypeError, lambda: self.conv.extend([to_message(d), bad]))  # type: ignore[list-item]

    @rule(id=IDS, pinned=st.booleans())
    def set_pinned(self, id: str, pinned: bool) -> None:
        i = self._first(id)
        assert self.conv.set_pinned(id, pinned) == (i is not None)
        if i is not None:
            d = self.model[i].copy()
            d["pinned"] = pinned
            self.model[i] = normalise(d)

    @rule(id=IDS, value=st.sampled_from([1, "1", 1.0, None]))
    def set_pinned_bad_type(self, id: str, value: object) -> None:
        fails_with(ArgumentTypeError, lambda: self.conv.set_pinned(id, value))  # type: ignore[arg-type]

    @rule(id=IDS, count=TOKENS)
    def set_token_count(self, id: str, count: int | None) -> None:
        i = self._first(id)
        assert self.conv.set_token_count(id, count) == (i is not None)
        if i is not None:
            d = self.model[i].copy()
            d["token_count"] = count
            self.model[i] = normalise(d)

    @rule(id=IDS, count=st.sampled_from([-1, 2**32, True, 1.0, "3"]))
    def set_token_count_bad(self, id: str, count: object) -> None:
        # An int out of range is a value error; anything else (bool included) a type error.
        out_of_range = isinstance(count, int) and not isinstance(count, bool)
        expected = ArgumentValueError if out_of_range else ArgumentTypeError
        fails_with(expected, lambda: self.conv.set_token_count(id, count))  # type: ignore[arg-type]

    @rule(call=CALL_IDS, content=WORDS, is_error=st.booleans())
    def resolve(self, call: str, content: str, is_error: bool) -> None:
        answers = [i for i, d in enumerate(self.model) if answers_call(d, call)]
        pending = [i for i in answers if is_pending(self.model[i])]
        # Without a placeholder: already resolved (a ValueError) if the id was answered, else not
        # found (a KeyError).
        if not pending:
            error = ResultAlreadyResolved if answers else PendingResultNotFound
            with pytest.raises(error) as raised:
                self.conv.resolve(call, content, is_error=is_error)
            assert isinstance(raised.value, ValueError if answers else KeyError)
            return
        got = self.conv.resolve(call, content, is_error=is_error)
        i = pending[0]  # the first placeholder of the id is filled in
        d = self.model[i].copy()
        old = d["tool_result"]
        d["content"] = content
        d["tool_result"] = WireResult(
            tool_call_id=old["tool_call_id"], tool_name=old["tool_name"], content=content, is_error=is_error
        )
        d["token_count"] = None  # the placeholder's count was for other text
        self.model[i] = normalise(d)
        assert as_wire(got) == decoded(self.model[i])

    @rule(keep=st.lists(st.booleans(), max_size=12))
    def replace_messages(self, keep: list[bool]) -> None:
        kept = [d for d, k in zip(self.model, keep, strict=False) if k]
        self.conv.replace_messages([to_message(d) for d in kept])
        self.model = []
        self._add(kept)
        self.log_valid = False

    @rule()
    def next_id(self) -> None:
        self.last_counter += 1
        assert self.conv.next_id() == f"msg-{self.last_counter}"

    @rule()
    def copy_conversation(self) -> None:
        new = copy.copy(self.conv)
        assert new == self.conv
        self.conv = new  # carry on with the copy: its caches start empty

    @rule()
    def reload_from_file(self) -> None:
        self.conv.save(self.file)
        self.conv = Conversation.load(self.file)
        # A loaded conversation's counter is past the largest loaded msg-N, no more.
        self.last_counter = 0
        for d in self.model:
            self._note_id(d["id"])

    @rule()
    def pending(self) -> None:
        assert [m.id for m in self.conv.pending()] == [d["id"] for d in self.model if is_pending(d)]

    # --- persistence --------------------------------------------------------------------
    @rule()
    def save(self) -> None:
        self.conv.save(self.file)
        data = self.file.read_bytes()
        assert data == enc_file(self.model), "save bytes differ from the reference encoding"
        assert data == om.dumps(list(self.conv))
        assert om.load(self.file) == list(self.conv)
        assert Conversation.load(self.file) == self.conv

    @rule()
    def save_indented(self) -> None:
        self.conv.save(self.file, indent=2)
        assert om.load(self.file) == list(self.conv)

    @rule()
    def save_jsonl(self) -> None:
        self.conv.save_jsonl(self.jsonl)
        assert self.jsonl.read_bytes() == enc_jsonl(self.model)
        assert om.read_jsonl(self.jsonl) == list(self.conv)
        assert Conversation.load_jsonl(self.jsonl) == self.conv

    @rule()
    def append_to_log(self) -> None:
        # Appending only works on a log that still holds a prefix of the history: rewrite it first
        # when the history was changed in place (or shrank).
        on_disk = self.log.read_bytes() if self.log.exists() else b""
        stale = self.log_count > len(self.model) or enc_jsonl(self.model[: self.log_count]) != on_disk
        if not self.log_valid or stale:
            self.conv.save_jsonl(self.log)
            self.log_count = len(self.model)
            self.log_valid = True
        for m in list(self.conv)[self.log_count :]:
            om.append_jsonl(self.log, m, fsync=False)
        self.log_count = len(self.model)
        if not self.log.exists():
            assert not self.model
            return
        assert self.log.read_bytes() == enc_jsonl(self.model)
        assert om.read_jsonl(self.log) == list(self.conv)

    # --- planning -----------------------------------------------------------------------
    def _refused_alike(
        self, refusal: ContextOverflowError, free: Callable[[], PrunePlan], naive: Callable[[], NaivePlan]
    ) -> None:
        """The model refuses with the same text, and so does the free function on a plain list."""
        try:
            naive()
        except Refused as r:
            text = r.text
        else:
            raise AssertionError(f"library refused ({refusal}) where the model plans")
        assert str(refusal) == text
        with pytest.raises(ContextOverflowError) as again:
            free()
        assert str(again.value) == str(refusal)

    def _check_plan(
        self, planned: Callable[[], PrunePlan], free: Callable[[], PrunePlan], naive: Callable[[], NaivePlan]
    ) -> None:
        try:
            plan = planned()
        except ContextOverflowError as e:
            self._refused_alike(e, free, naive)
            return
        assert plan == free()
        try:
            expected = naive()
        except Refused as r:
            raise AssertionError(f"model refused ({r.text}) where the library planned {plan}") from r
        assert plan.kept == expected.kept, (plan.kept, expected.kept)
        assert plan.dropped == expected.dropped, (plan.dropped, expected.dropped)
        assert plan.kept_tokens == expected.kept_tokens, (plan.kept_tokens, expected.kept_tokens)
        assert plan.fixed_tokens == expected.fixed, (plan.fixed_tokens, expected.fixed)
        assert plan.budget == expected.budget, (plan.budget, expected.budget)
        assert plan.preamble_kept == expected.preamble_kept
        assert plan.kept_tokens <= plan.budget
        # The latest turn and the pinned turns are never dropped.
        turns = turns_of(self.model)
        if turns:
            assert turns[-1] in plan.kept
        for t in plan.dropped:
            assert not any(self.model[i].get("pinned") for i in t), "a pinned turn was dropped"

    def _absolute(
        self, window: Window | RelativeWindow, fixed: int = 0, counter: TextCounter | None = None
    ) -> Window:
        if isinstance(window, Window):
            return window
        if counter is None:
            total = sum(naive_estimate(d) for d in self.model)
        else:
            total = sum(counter(chatml_message(d)) for d in self.model)
        room = int(window.fraction * total) + window.max_response_tokens + window.reserved_tokens + fixed + 1
        return Window(room, window.max_response_tokens, window.reserved_tokens)

    @staticmethod
    def _config(window: Window, strategy: PruneStrategy = PruneStrategy.SLIDING_WINDOW) -> ContextConfig:
        return ContextConfig(
            max_context_tokens=window.max_context_tokens,
            max_response_tokens=window.max_response_tokens,
            reserved_tokens=window.reserved_tokens,
            strategy=strategy,
        )

    @rule(window=WINDOWS)
    def plan_plain(self, window: Window | RelativeWindow) -> None:
        w = self._absolute(window)
        config = self._config(w)
        self._check_plan(
            lambda: self.conv.plan_prune(config),
            lambda: om.plan_prune(list(self.conv), config),
            lambda: naive_plan_plain(self.model, w),
        )

    @rule(window=WINDOWS)
    def plan_plain_count(self, window: Window | RelativeWindow) -> None:
        w = self._absolute(window)
        config = self._config(w)
        self._check_plan(
            lambda: self.conv.plan_prune(config, count=my_message_counter),
            lambda: om.plan_prune(list(self.conv), config, count=my_message_counter),
            lambda: naive_plan_plain(self.model, w, my_message_counter_model),
        )

    @rule(
        window=WINDOWS,
        system_prompt=SYSTEM_PROMPTS,
        tools=st.sampled_from([[], TOOLS1]),
        words=st.booleans(),
        by_name=st.booleans(),
    )
    def plan_templated(
        self,
        window: Window | RelativeWindow,
        system_prompt: str,
        tools: list[ToolSpec],
        words: bool,
        by_name: bool,
    ) -> None:
        counter = count_words if words else estimate_text_tokens
        fixed = counter(chatml_system(system_prompt, tools)) + counter(CHATML_PREFIX)
        w = self._absolute(window, fixed, counter)
        config = self._config(w)
        template = "chatml" if by_name else CHATML
        schemas = [ToolSchema(name=n, description=d, parameters=p) for n, d, p in tools]

        def planned(messages: Sequence[Message]) -> PrunePlan:
            if isinstance(messages, Conversation):
                return messages.plan_prune(
                    config, template=template, system_prompt=system_prompt, tools=schemas, counter=counter
                )
            return om.plan_prune(
                messages,
                config,
                template=template,
                system_prompt=system_prompt,
                tools=schemas,
                counter=counter,
            )

        self._check_plan(
            lambda: planned(self.conv),
            lambda: planned(list(self.conv)),
            lambda: naive_plan_templated(self.model, w, system_prompt, tools, counter),
        )

    @rule(window=WINDOWS, words=st.booleans())
    def prune_sliding(self, window: Window | RelativeWindow, words: bool) -> None:
        # 8: about what ChatML's system block and prefix cost in words; it only sizes the window.
        w = self._absolute(window, 8 if words else 0, count_words if words else None)
        config = self._config(w)
        before = list(self.conv)
        template = CHATML if words else None
        counter = count_words if words else None
        try:
            res = self.conv.prune(config, template=template, counter=counter)
        except ContextOverflowError:
            assert list(self.conv) == before
            return
        assert list(self.conv) == before, "the sliding window changed the history"
        assert res.messages == res.plan.kept_messages(before)
        assert res.dropped == res.plan.dropped_messages(before)
        if words:
            cost = sum(count_words(chatml_message(as_wire(m))) for m in res.messages)
        else:
            cost = sum(naive_estimate(as_wire(m)) for m in res.messages)
        assert res.tokens == cost, "tokens != the cost of what is sent"
        free = om.prune(before, config, template=template, counter=counter)
        assert free.messages == res.messages
        assert free.plan == res.plan

    @rule(window=WINDOWS)
    def prune_summarize_without_callable(self, window: Window | RelativeWindow) -> None:
        config = self._config(self._absolute(window), PruneStrategy.SUMMARIZE)
        fails_with(ValueError, lambda: self.conv.prune(config))

    # --- summaries (docs/pruning.md, "Summarizing instead of dropping") ------------------
    @staticmethod
    def _removed(before: list[WireMessage], plan: NaivePlan) -> tuple[int | None, list[int]]:
        """The earlier summary (the first pinned message starting with the marker, any role) and
        every index folded: the dropped turns plus that summary."""
        prior = next((i for i, d in enumerate(before) if is_summary_like(d)), None)
        dropped = {i for t in plan.dropped for i in t}
        return prior, sorted(dropped | ({prior} if prior is not None else set()))

    def _fold(
        self, before: list[WireMessage], prior: int | None, removed: list[int], summary: Message
    ) -> list[tuple[int | None, WireMessage]]:
        """The new history: the removed messages taken out, the summary at the lowest removed
        index. Each entry carries its index before the fold (None for the summary)."""
        self.last_counter += 1
        assert summary.id == f"msg-{self.last_counter}"  # a fresh id, as next_id() gives
        assert summary.pinned
        assert summary.role == "user"
        assert summary.content.startswith(SUMMARY_PREFIX)
        lowest = removed[0]
        history: list[tuple[int | None, WireMessage]] = [(i, d) for i, d in enumerate(before) if i < lowest]
        history.append((None, m_dict(summary.id, "user", summary.content, summary.timestamp, pinned=True)))
        history += [(i, d) for i, d in enumerate(before) if i > lowest and i not in removed]
        self.model = [normalise(d) for _, d in history]
        self.log_valid = False
        # The earlier summary is replaced; a second summary-like message stays as it is.
        summaries = sum(map(is_summary_like, before)) - (prior is not None) + 1
        assert sum(map(is_summary_like, self.model)) == summaries
        return history

    def _unchanged(self, before: list[WireMessage], res: om.PruneResult) -> None:
        assert res.summary is None
        assert [as_wire(m) for m in self.conv] == [decoded(d) for d in before]

    @rule(window=WINDOWS, answer=st.sampled_from(["short", "  ", "raise", "a much longer summary " * 5]))
    def prune_summarize(self, window: Window | RelativeWindow, answer: str) -> None:
        w = self._absolute(window)
        summarizer = Summarizer(answer)
        before = list(self.model)
        try:
            naive: NaivePlan | None = naive_plan_plain(before, w)
        except Refused:
            naive = None
        try:
            res = self.conv.prune(self._config(w, PruneStrategy.SUMMARIZE), summarize=summarizer)
        except ContextOverflowError:
            assert naive is None
            return
        assert naive is not None
        if not naive.dropped:
            assert res.summary is None
            assert summarizer.folded is None
            return
        prior, removed = self._removed(before, naive)
        assert summarizer.folded == [before[i]["id"] for i in removed]
        if prior is None:
            assert summarizer.prior is None
        else:
            text = before[prior]["content"][len(SUMMARY_MARKER) :].strip(" \t\n\r")
            assert summarizer.prior == (text or None), (summarizer.prior, text)
        self._check_plain_summary(res, before, naive, prior, removed, answer)

    def _check_plain_summary(
        self,
        res: om.PruneResult,
        before: list[WireMessage],
        naive: NaivePlan,
        prior: int | None,
        removed: list[int],
        answer: str,
    ) -> None:
        if answer == "raise" or not answer.strip():
            self._unchanged(before, res)
            assert isinstance(res.summary_error, RuntimeError if answer == "raise" else ValueError)
            return
        content = SUMMARY_PREFIX + answer.strip()
        # The earlier summary is always among the kept messages (pinned, or in the preamble).
        prior_cost = naive_estimate(before[prior]) if prior is not None else 0
        tokens = naive.kept_tokens + max(1, len(content) // 4) - prior_cost
        if tokens > naive.budget:
            self._unchanged(before, res)
            assert isinstance(res.summary_error, ValueError), res
            return
        assert res.summary is not None, res.summary_error
        assert res.summary.content == content
        self._fold(before, prior, removed, res.summary)
        # Without a template the preamble is sent and every dropped turn folded: what is sent
        # is the whole new history.
        assert [as_wire(m) for m in res.messages] == [decoded(d) for d in self.model]
        assert res.tokens == tokens
        assert res.tokens == sum(naive_estimate(as_wire(m)) for m in res.messages)

    @rule(
        window=WINDOWS,
        answer=st.sampled_from(["short", "raise", "a much longer summary " * 5]),
        words=st.booleans(),
    )
    def prune_summarize_templated(self, window: Window | RelativeWindow, answer: str, words: bool) -> None:
        w = self._absolute(window)
        counter = count_words if words else estimate_text_tokens
        summarizer = Summarizer(answer)
        before = list(self.model)
        try:
            naive: NaivePlan | None = naive_plan_templated(before, w, "", [], counter)
        except Refused:
            naive = None
        config = self._config(w, PruneStrategy.SUMMARIZE)
        try:
            res = self.conv.prune(config, summarize=summarizer, template=CHATML, counter=counter)
        except ContextOverflowError:
            assert naive is None
            return
        assert naive is not None
        assert res.plan.kept == naive.kept
        assert res.plan.dropped == naive.dropped
        if not naive.dropped:
            self._unchanged(before, res)
            assert summarizer.folded is None
            return
        prior, removed = self._removed(before, naive)
        assert summarizer.folded == [before[i]["id"] for i in removed]
        self._check_templated_summary(res, before, naive, prior, removed, answer, counter)

    def _check_templated_summary(
        self,
        res: om.PruneResult,
        before: list[WireMessage],
        naive: NaivePlan,
        prior: int | None,
        removed: list[int],
        answer: str,
        counter: TextCounter,
    ) -> None:
        # What would be sent: the kept turns (never the preamble, with a template) less the
        # earlier summary, plus the new one; it must fit the plan's budget. An earlier summary in
        # the preamble becomes the new summary, a user message: the preamble after it joins its
        # turn and is sent too, as orion-core reads the folded history.
        turns = turns_of(before)
        preamble_stop = turns[0].start if turns else len(before)
        kept = {i for t in naive.kept for i in t}
        if prior is not None and prior < preamble_stop:
            kept |= set(range(prior + 1, preamble_stop))
        content = SUMMARY_PREFIX + answer.strip()
        summary_cost = counter(chatml_message(m_dict("", "user", content, 0)))
        prior_cost = counter(chatml_message(before[prior])) if prior in kept and prior is not None else 0
        joined = sum(counter(chatml_message(before[i])) for i in kept if i < preamble_stop)
        tokens = naive.kept_tokens + joined - prior_cost + summary_cost
        if answer == "raise" or tokens > naive.budget:
            self._unchanged(before, res)
            if answer == "raise":
                assert isinstance(res.summary_error, RuntimeError)
            else:
                assert isinstance(res.summary_error, ValueError)
                assert "does not fit" in str(res.summary_error), res.summary_error
            return
        assert res.summary is not None, res.summary_error
        assert res.summary.content == content
        history = self._fold(before, prior, removed, res.summary)
        sent = [d for i, d in history if i is None or i in kept]
        assert [as_wire(m) for m in res.messages] == [decoded(d) for d in sent]
        assert res.tokens == tokens <= res.plan.budget
        assert res.tokens == sum(counter(chatml_message(as_wire(m))) for m in res.messages)

    @rule(which=st.sampled_from(MISUSES))
    def documented_errors(self, which: str) -> None:
        expected, call = misuses(self.conv, self.tmp)[which]
        fails_with(expected, call)

    # --- invariants ---------------------------------------------------------------------
    @invariant()
    def view_behaves(self) -> None:
        view = self.conv.messages
        lst = list(self.conv)
        assert view == lst
        assert len(view) == len(lst)
        if lst:
            assert view[-1] == lst[-1]
            assert self.conv[0] == lst[0]
            assert view[1:] == lst[1:]
            assert view.index(lst[-1]) == lst.index(lst[-1])
            assert lst[-1] in view

    @invariant()
    def same_messages(self) -> None:
        assert len(self.conv) == len(self.model)
        assert [as_wire(m) for m in self.conv] == [decoded(d) for d in self.model]


ConversationModel.TestCase.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)
test_conversation_model = ConversationModel.TestCase
