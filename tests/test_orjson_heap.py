"""orjson writes what the library hands it without corrupting the process's memory.

orjson 3.12.0 and 3.13.0 corrupt the heap when they write a list nested a few dozen levels deep
beside scalars (``[[...[1,true,...],true,...],true,...]``): the process aborts later, in
``malloc``, wherever the next allocation happens. The library hands orjson a document's values
in the repeated-key check (``loads(strict=True)``, ``validate``) and the text of ``arguments`` in
token counting, so a valid 30 KB file aborted the host. pyproject.toml keeps orjson below 3.12;
these tests fail (the child process dies) on a release with the fault.

Each case runs in a child process with Python's debug allocator, which checks every block as it
is freed, so an overrun is found at once rather than at some later allocation.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Nested 100 deep (each level: the deeper list first, then 100 scalars), about 50 KB: every
# orjson release with the fault aborts on it, at depth 33 already with 100 `true`s per level.
_SHAPE = """
import json
value = 1
for _ in range(100):
    value = [value] + [True, None, 1.5, 12345678901] * 25
"""

_CASES = {
    "loads_strict": """
from orion_messages import loads
message = {"id": "m", "role": "assistant", "content": "", "timestamp": 1,
           "tool_calls": [{"id": "c", "name": "n", "arguments": value}]}
data = json.dumps([message], separators=(",", ":")).encode()
print(len(loads(data, strict=True)))
""",
    "estimate_tokens": """
from orion_messages import Message, ToolCall, estimate_tokens
message = Message.assistant("m", "", [ToolCall(id="c", name="n", arguments=value)], timestamp=1)
text = json.dumps(value, separators=(",", ":"))
print(int(estimate_tokens(message) == max(1, (len("n") + len(text)) // 4)))
""",
    "template_tools": """
from orion_messages import ToolSchema, get_template
tool = ToolSchema(name="n", description="d", parameters=value)
print(int(json.dumps(value, indent=2) in get_template("chatml").format_system("", [tool])))
""",
}


_ORJSON_ALONE = (
    "import orjson\nprint(int(orjson.dumps(value) == json.dumps(value, separators=(',', ':')).encode()))"
)
"""The same value through orjson alone, compared with the standard library's text: a check of
the installed orjson that does not go through the library."""


@pytest.mark.parametrize("case", [*sorted(_CASES), "orjson_alone"])
def test_a_deeply_nested_value_is_written_without_corrupting_memory(case: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SHAPE + _CASES.get(case, _ORJSON_ALONE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONMALLOC": "debug"},
    )
    assert (result.returncode, result.stdout.strip()) == (0, "1"), result.stderr[-2000:]
