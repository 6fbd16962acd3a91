"""The package's shape: one-way layers, no import cycles, no deferred imports, short functions.

The imports are read from the source (``ast``), not by importing, so a cycle that Python happens
to survive still fails here. Every module under ``orion_messages`` must be placed in ``LAYERS``;
a module may import modules of its own layer or of a lower one, never of a higher one.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "orion_messages"

# Bottom to top; a name may be an fnmatch pattern, for modules other branches are adding. A
# subpackage (``store/``) takes the layer of its name. A new module fails the tests below until
# it is placed here.
LAYERS: list[tuple[str, ...]] = [
    ("_text", "_version", "_collector"),  # text shown from the data; the version; the collector paused
    ("errors",),  # every error and warning class
    ("_json_rules", "models"),  # JSON value rules and the message models
    ("_problems",),  # validation errors turned into located problems
    ("_unknown_values",),  # loading past unknown values that cannot be kept (the codec's error path)
    ("checks", "turns"),  # semantic check; turn layout (wire's strict mode uses check)
    ("wire",),  # loads / dumps
    ("templates", "_pretty_json", "_whitespace", "text_counters"),  # chat templates, text counters
    ("counting", "_layout", "ids", "stats"),  # message counting, planning columns, tool-call ids, stats
    ("planning",),  # orion-core's plan
    ("pruning",),  # applying a plan, summaries
    (
        "storage",
        "_encoded",
        "_message_index",
    ),  # files: atomic saves, JSON Lines logs, bytes kept for a save again; positions by id
    ("conversation",),  # Conversation on top of the layers below
    (  # events, schemas, conversions, the store
        "events",
        "schema",
        "conversions",
        "_arguments",
        "_conversion_input",
        "openai_chat",
        "anthropic_messages",
        "chat_template_dicts",
        "orion_backend",
        "store",
        "_store*",
    ),
    # The command line, bottom to top: its exit statuses, lazy loading and printed text; what every
    # command shares; reading inputs, writing outputs, convert's options; prune's template options,
    # convert --to/--from; the validate and prune commands; main, its parser and the small commands.
    ("_cli_exit", "_cli_lazy", "_cli_text"),
    ("_cli_base",),
    ("_cli_input", "_cli_output", "_cli_convert_options"),
    ("_cli_options", "_cli_convert"),
    ("_cli_validate", "_cli_prune"),
    ("cli", "_cli*", "__main__"),  # a new _cli module lands here until it is placed lower
    ("__init__",),  # the public facade re-exports everything; nothing imports it
]

# Imports that break the rules and are tolerated for now; each entry fails the tests once it is
# no longer needed. None today.
ALLOWED_FOR_NOW_UPWARD: set[tuple[str, str]] = set()
ALLOWED_FOR_NOW_DEFERRED: set[tuple[str, str]] = set()

# The entry point imports the command line inside ``main``: the command line's modules build
# their models as they load, and Ctrl-C in that time must end the command as it does later.
ENTRY_POINT_DEFERRED: set[tuple[str, str]] = {("__main__", "cli")}

# The command line also loads some modules when a command first uses them (``_cli_lazy.LazyModule``,
# by name), so that a command starts without the others; each is imported under ``TYPE_CHECKING``
# too, so its edge is read here as a top-level import (layers and cycles are checked), which
# ``test_every_lazy_module_is_an_import_too`` makes sure of.

# Modules that import an optional extra at their top (psycopg): importing them on demand keeps the
# extra optional. That is the one good reason for an import inside a function; no cycle is dodged.
OPTIONAL_EXTRA_MODULES = {"_store_postgres"}


@dataclass(frozen=True)
class Import:
    """One import of a package module: who imports whom, where, and whether inside a function."""

    importer: str
    imported: str
    line: int
    deferred: bool


def _module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        names[".".join(parts)] = path
    return names


def _layer_of(module: str) -> int | None:
    top = module.split(".")[0]
    for index, patterns in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(top, pattern) for pattern in patterns):
            return index
    return None


def _package_of(module: str, path: Path) -> list[str]:
    """The dotted package ``module`` lives in, relative to ``orion_messages``."""
    parts = [] if module == "__init__" else module.split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def _targets(node: ast.Import | ast.ImportFrom, module: str, path: Path, known: set[str]) -> Iterator[str]:
    """The package modules an import statement loads, as dotted names (``__init__`` for the top)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == "orion_messages" or alias.name.startswith("orion_messages."):
                yield alias.name.removeprefix("orion_messages").lstrip(".") or "__init__"
        return
    if node.level:
        base = _package_of(module, path)
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    elif node.module == "orion_messages" or (node.module or "").startswith("orion_messages."):
        base = []
        node = ast.ImportFrom(node.module.removeprefix("orion_messages").lstrip("."), node.names, 1)  # type: ignore[union-attr]
    else:
        return
    target = ".".join([*base, *([node.module] if node.module else [])])
    for alias in node.names:
        submodule = f"{target}.{alias.name}" if target else alias.name
        yield submodule if submodule in known else (target or "__init__")


def _imports() -> list[Import]:
    modules = _module_names()
    found: list[Import] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {id(node) for node in _top_level_statements(tree.body)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, path, set(modules)):
                    if target != module:
                        found.append(Import(module, target, node.lineno, id(node) not in top_level))
    return found


def _top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at import time: the module body, and inside its if/try blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level_statements(node.body)
            yield from _top_level_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level_statements(block)


def test_every_module_is_placed_in_a_layer() -> None:
    unplaced = sorted(module for module in _module_names() if _layer_of(module) is None)
    assert not unplaced, (
        f"new modules {unplaced}: place each in LAYERS in tests/test_layers.py "
        "(bottom to top; see the house rules in BRIEF/docs/development.md)"
    )


def test_no_import_runs_back_up_a_layer() -> None:
    upward = set()
    for edge in _imports():
        low, high = _layer_of(edge.importer), _layer_of(edge.imported)
        if low is not None and high is not None and high > low:
            upward.add((edge.importer, edge.imported, edge.line))
    pairs = {(importer, imported) for importer, imported, _ in upward}
    unexpected = sorted(edge for edge in upward if edge[:2] not in ALLOWED_FOR_NOW_UPWARD)
    assert not unexpected, f"imports that run up the layers (importer, imported, line): {unexpected}"
    stale = ALLOWED_FOR_NOW_UPWARD - pairs
    assert not stale, f"fixed: remove from ALLOWED_FOR_NOW_UPWARD: {sorted(stale)}"


def test_no_deferred_import_of_a_package_module() -> None:
    deferred = {
        (edge.importer, edge.imported, edge.line)
        for edge in _imports()
        if edge.deferred
        and edge.imported not in OPTIONAL_EXTRA_MODULES
        and (edge.importer, edge.imported) not in ENTRY_POINT_DEFERRED
    }
    pairs = {(importer, imported) for importer, imported, _ in deferred}
    unexpected = sorted(edge for edge in deferred if edge[:2] not in ALLOWED_FOR_NOW_DEFERRED)
    assert not unexpected, (
        f"imports inside functions (importer, imported, line): {unexpected}; import at the top, "
        "and if that makes a cycle, move the shared code down a layer"
    )
    stale = ALLOWED_FOR_NOW_DEFERRED - pairs
    assert not stale, f"fixed: remove from ALLOWED_FOR_NOW_DEFERRED: {sorted(stale)}"


def _lazy_modules() -> set[tuple[str, str]]:
    """Each ``LazyModule("name")`` in the package, as (the module it is in, the module it loads)."""
    found = set()
    for module, path in _module_names().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "LazyModule"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add((module, str(node.args[0].value)))
    return found


def test_every_lazy_module_is_an_import_too() -> None:
    lazy = _lazy_modules()
    assert lazy, "the command line loads some modules lazily; the reader found none"
    edges = {(edge.importer, edge.imported) for edge in _imports()}
    unseen = sorted(lazy - edges)
    assert not unseen, f"loaded lazily without an import under TYPE_CHECKING (module, loaded): {unseen}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for edge in _imports():
        graph.setdefault(edge.importer, set()).add(edge.imported)
    allowed = [sorted({*pair}) for pair in ALLOWED_FOR_NOW_UPWARD]
    cycles = [cycle for cycle in _cycles(graph) if cycle not in allowed]
    assert not cycles, f"modules that import each other, directly or through others: {cycles}"


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = (
        "from . import wire\nfrom .models import Message\nimport orion_messages.storage\n"
        "from orion_messages import cli\nfrom . import __version__\n"
        "def f():\n    from .pruning import prune\n"
    )
    tree = ast.parse(source)
    known = {"wire", "models", "storage", "cli", "pruning"}
    fake = tmp_path / "checks.py"
    found = [t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) for t in _targets(node, "checks", fake, known)]  # fmt: skip
    assert found == ["wire", "models", "storage", "cli", "__init__", "pruning"]
    top = {id(node) for node in _top_level_statements(tree.body)}
    assert [id(node) in top for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)][-1] is False


# --- function length --------------------------------------------------------------------------

MAX_FUNCTION_LINES = 60
"""A function fits on one screen; longer ones carry a ``# long: why`` comment on or above the def."""

# Functions over the limit allowed for now; the test fails when an entry is stale. None today.
LONG_FOR_NOW: set[tuple[str, str]] = set()


def _long_functions() -> list[tuple[str, str, int]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            header = lines[max(0, first - 2) : node.lineno]
            if length > MAX_FUNCTION_LINES and not any("# long:" in line for line in header):
                found.append((str(path.relative_to(PACKAGE)), node.name, length))
    return found


def test_functions_fit_on_a_screen() -> None:
    long = _long_functions()
    unexpected = [entry for entry in long if entry[:2] not in LONG_FOR_NOW]
    assert not unexpected, (
        f"functions over {MAX_FUNCTION_LINES} lines (file, name, lines): {unexpected}; split them, "
        "or say why on a '# long: ...' comment above the def"
    )
    stale = LONG_FOR_NOW - {entry[:2] for entry in long}
    assert not stale, f"now short: remove from LONG_FOR_NOW: {sorted(stale)}"


def test_the_house_rules_order_holds() -> None:
    # Storage sits below the conversation: Conversation.load/save call it.
    order = ["errors", "models", "checks", "wire", "pruning", "storage", "conversation", "cli", "__init__"]
    layers = [_layer_of(name) for name in order]
    assert layers == sorted(layers, key=lambda layer: -1 if layer is None else layer)
    assert None not in layers
