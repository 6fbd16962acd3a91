"""serde_json's pretty printer (``to_string_pretty``), which orion-core uses for tool parameters.

The layout is Python's ``json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)``; the
numbers are not: serde_json reads an integer outside the 64-bit range as a float, and spells
floats its own way (``1e-7``, ``0.000025``, ``1e+16`` where Python writes ``1e-07``,
``2.5e-05``, ``1e+16``). The standard library's encoder has no hook for float spelling once an
indent is set, hence this small writer.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["pretty_json", "serde_float"]

_I64_MIN = -(2**63)
_U64_MAX = 2**64 - 1


def serde_float(value: float) -> str:
    """A float as current serde_json writes it: shortest round-trip digits, its own layout.

    Plain decimal for ``1e-5 <= |x| < 1e16`` (a whole value ends in ``.0``), otherwise
    scientific with a signed exponent (``1e-7``, ``1.5e+20``). Zero is ``0.0`` or ``-0.0``.
    """
    if value == 0.0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-trip digits (the same digits serde_json picks); only the
    # layout is rebuilt here, from the digits and the decimal exponent.
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    digits = all_digits.lstrip("0")
    # The exponent of the first significant digit: value = d.ddd x 10**exponent.
    exponent = int(exp_text or "0") + len(whole) - 1 - (len(all_digits) - len(digits))
    digits = digits.rstrip("0")
    if -5 <= exponent < 16:
        if exponent < 0:
            return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
        integer = digits[: exponent + 1].ljust(exponent + 1, "0")
        return f"{sign}{integer}.{digits[exponent + 1 :] or '0'}"
    tail = f".{digits[1:]}" if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{tail}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        # json's escaping with ensure_ascii=False is serde_json's: \" \\ \b \t \n \f \r, other
        # control characters as lowercase \u00xx, everything else raw.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        if _I64_MIN <= value <= _U64_MAX:
            return str(value)
        # serde_json reads a JSON integer outside the 64-bit range as a float.
        return serde_float(float(value))
    if isinstance(value, float):
        return serde_float(value)
    raise TypeError(f"expected a JSON value, found a {type(value).__name__}")


def _write(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, dict):
        items: list[tuple[str | None, Any]] = [(key, value[key]) for key in sorted(value)]
        brackets = "{}"
    elif isinstance(value, list | tuple):
        items = [(None, item) for item in value]
        brackets = "[]"
    else:
        out.append(_scalar(value))
        return
    if not items:
        out.append(brackets)
        return
    inner = "\n" + "  " * (depth + 1)
    out.append(brackets[0])
    for index, (key, item) in enumerate(items):
        out.append(inner if index == 0 else "," + inner)
        if key is not None:
            out.append(json.dumps(key, ensure_ascii=False) + ": ")
        _write(item, depth + 1, out)
    out.append("\n" + "  " * depth + brackets[1])


def pretty_json(value: Any) -> str:
    """``value`` as serde_json's ``to_string_pretty`` writes it, keys sorted at every depth.

    Raises:
        TypeError: ``value`` holds something that is not a JSON value.
    """
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out)
