"""serde_json's pretty printer (``to_string_pretty``), which orion-core uses for tool parameters.

orjson with ``OPT_INDENT_2 | OPT_SORT_KEYS`` writes serde_json's pretty layout (two-space indent,
``": "``, ``[]`` and ``{}`` for empty containers, keys in code point order) and spells floats and
escapes strings as current serde_json does. One difference is bridged here: serde_json reads an
integer outside the 64-bit range as a float, where orjson refuses it.
"""

from __future__ import annotations

from typing import Any

import orjson

from .models import I64_MIN, U64_MAX

__all__ = ["pretty_json"]

_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def pretty_json(value: Any) -> str:
    """``value`` as serde_json's ``to_string_pretty`` writes it, keys sorted at every depth.

    Raises:
        TypeError: ``value`` holds something that is not a JSON value.
        ValueError: an integer too large even for a double, which serde_json cannot read.
    """
    try:
        return orjson.dumps(value, option=_PRETTY).decode()
    except TypeError:  # orjson refuses integers beyond 64 bits: write them as serde_json reads them
        return orjson.dumps(_wide_integers_as_floats(value), option=_PRETTY).decode()


def _wide_integers_as_floats(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _wide_integers_as_floats(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_wide_integers_as_floats(item) for item in value]
    if type(value) is int and not I64_MIN <= value <= U64_MAX:
        try:
            return float(value)
        except OverflowError:
            raise ValueError(
                f"an integer of {len(str(abs(value)))} digits is too large for serde_json to read"
            ) from None
    return value
