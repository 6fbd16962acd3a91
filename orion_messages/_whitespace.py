"""Unicode's White_Space set: what Rust's ``trim`` and ``split_whitespace`` treat as space."""

from __future__ import annotations

__all__ = ["UNICODE_WHITESPACE"]

UNICODE_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Every White_Space character. Python's ``str.strip()`` and ``str.split()`` also treat U+001C to
U+001F as space; Rust, and so orion-core, does not."""
