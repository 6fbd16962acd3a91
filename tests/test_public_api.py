"""The public API: everything in ``__all__`` exists and is documented, every model field too."""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel

import orion_messages
from orion_messages import events


@pytest.mark.parametrize("name", orion_messages.__all__)
def test_every_public_name_is_documented(name: str) -> None:
    value = getattr(orion_messages, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert inspect.getdoc(value), f"{name} has no docstring"


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
