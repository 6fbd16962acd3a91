"""The public API: ``__all__`` complete and sorted, everything documented, deprecated aliases warn."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

import orion_messages
from orion_messages import events

PACKAGE = Path(orion_messages.__file__).parent

# Modules whose public names are reached through the module (``orion_messages.schema.X``), not
# re-exported at the top.
_NAMESPACE_MODULES = {"cli", "schema"}

# Public names of a module not yet re-exported at the top, allowed for now (the test below fails
# on stale entries). None today.
_NOT_YET_EXPORTED: dict[str, set[str]] = {}


def _public_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules([str(PACKAGE)]) if not info.name.startswith("_"))


def test_all_is_sorted_without_repeats() -> None:
    names = orion_messages.__all__
    assert names == sorted(names), "keep orion_messages.__all__ sorted (plain sorted())"
    assert len(names) == len(set(names))


@pytest.mark.parametrize("module_name", _public_modules())
def test_every_public_module_name_is_exported(module_name: str) -> None:
    if module_name in _NAMESPACE_MODULES:
        pytest.skip(f"orion_messages.{module_name} is used as a namespace")
    module = importlib.import_module(f"orion_messages.{module_name}")
    declared = getattr(module, "__all__", None)
    assert declared is not None, f"orion_messages.{module_name} has no __all__"
    allowed = _NOT_YET_EXPORTED.get(module_name, set())
    missing = sorted(set(declared) - set(orion_messages.__all__) - allowed)
    assert not missing, f"add to orion_messages/__init__.py and its __all__: {missing}"
    stale = sorted(allowed & set(orion_messages.__all__))
    assert not stale, f"exported now: remove from _NOT_YET_EXPORTED in this test: {stale}"


def _attribute_docstrings(module: object) -> set[str]:
    """Names assigned at a module's top level and followed by a docstring (PEP 257 style)."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    documented: set[str] = set()
    for node, after in zip(tree.body, tree.body[1:], strict=False):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        docstring = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        if docstring and isinstance(after.value.value, str):  # type: ignore[attr-defined]
            documented.update(target.id for target in targets if isinstance(target, ast.Name))
    return documented


def _defining_module(name: str) -> object:
    for module_name in ["_version", *_public_modules()]:
        module = importlib.import_module(f"orion_messages.{module_name}")
        if name in vars(module) and name in getattr(module, "__all__", [name]):
            return module
    raise AssertionError(f"{name} is defined in no module's __all__")


@pytest.mark.parametrize("name", orion_messages.__all__)
def test_every_public_name_is_documented(name: str) -> None:
    value = getattr(orion_messages, name)
    # A generic alias (``Callable[[str], int]``) counts as a class on Python 3.10; it is an alias.
    is_alias = typing.get_origin(value) is not None
    if not is_alias and (inspect.isclass(value) or inspect.isfunction(value)):
        assert inspect.getdoc(value), f"{name} has no docstring"
    else:  # a constant or a type alias: a docstring right after its assignment
        module = _defining_module(name)
        assert name in _attribute_docstrings(module), f"{name} needs a docstring after its assignment"


def _models() -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = [
        orion_messages.Message,
        orion_messages.ToolCall,
        orion_messages.ToolResult,
    ]
    for value in vars(events).values():
        if inspect.isclass(value) and issubclass(value, BaseModel):
            found.append(value)
    return found


@pytest.mark.parametrize("model", _models(), ids=lambda model: model.__name__)
def test_every_model_field_has_a_description(model: type[BaseModel]) -> None:
    undocumented = [name for name, field in model.model_fields.items() if not field.description]
    assert not undocumented, f"{model.__name__} fields without a docstring: {undocumented}"


def test_the_version_matches_the_package_metadata() -> None:
    from importlib.metadata import version

    assert orion_messages.__version__ == version("orion-messages")


# --- deprecated aliases -------------------------------------------------------------------------


@pytest.mark.parametrize("old", sorted(orion_messages._DEPRECATED))
def test_every_deprecated_alias_points_at_a_public_name(old: str) -> None:
    new, since = orion_messages._DEPRECATED[old]
    assert new in orion_messages.__all__, f"{old} -> {new}: the new name is not public"
    assert old not in orion_messages.__all__, f"{old} is deprecated: take it out of __all__"
    assert old not in vars(orion_messages), f"{old} is still defined; the alias would never warn"
    assert since, f"{old}: say in which release it was renamed"
    with pytest.warns(DeprecationWarning, match=rf"orion_messages\.{old} is deprecated.*{new}"):
        assert getattr(orion_messages, old) is getattr(orion_messages, new)


def test_a_registered_alias_warns_and_returns_the_new_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(orion_messages._DEPRECATED, "old_loads", ("loads", "0.2.0"))
    with pytest.warns(DeprecationWarning, match=r"orion_messages\.old_loads is deprecated since 0\.2\.0"):
        from orion_messages import old_loads  # type: ignore[attr-defined]
    assert old_loads is orion_messages.loads
    with pytest.warns(DeprecationWarning, match="old_loads") as caught:
        orion_messages.old_loads  # type: ignore[attr-defined]  # noqa: B018
    assert caught[0].filename == __file__, "the warning must point at the caller's line"


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        orion_messages.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(orion_messages, "no_such_name")


# --- names imported on first use ----------------------------------------------------------------


def _type_checking_imports() -> dict[str, str]:
    """What ``orion_messages/__init__.py`` imports for type checkers: name -> module."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    blocks = [
        node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    assert len(blocks) == 1
    return {
        alias.asname or alias.name: str(node.module)
        for node in blocks[0].body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_lazy_exports_are_what_type_checkers_see() -> None:
    # Type checkers read the imports; the run time reads _EXPORTS. They must name the same places.
    assert _type_checking_imports() == orion_messages._EXPORTS
    assert set(orion_messages._EXPORTS) == set(orion_messages.__all__) - {"__version__"}


@pytest.mark.parametrize("name", sorted(orion_messages._EXPORTS))
def test_every_lazy_export_is_its_module_s_object(name: str) -> None:
    module = importlib.import_module(f"orion_messages.{orion_messages._EXPORTS[name]}")
    assert getattr(orion_messages, name) is getattr(module, name)
    assert name in dir(orion_messages)


def test_importing_the_package_builds_no_models() -> None:
    # The point of importing on first use: a program pays for the modules it touches. Run in a
    # fresh interpreter, since this one has imported everything already.
    script = (
        "import sys, orion_messages\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('orion_messages.'))\n"
        "from orion_messages import Message\n"
        "print(loaded, 'orion_messages.events' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "['orion_messages._version'] False"
