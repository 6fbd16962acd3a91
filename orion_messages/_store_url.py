"""Store URLs as text: which texts are URLs, and where their passwords are (private).

The command line asks these of every argument that may name a store, so they live apart from
``store``, which loads the backends (asyncio, sqlite3) and the models: a command that is given
no store URL never loads them. ``store`` parses a URL (``parse_store_url``) with these rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

__all__ = [
    "SCHEMES",
    "is_store_url",
    "is_url",
    "masked_forms",
    "masked_url",
    "password_forms",
    "url_passwords",
]

SCHEMES = {"sqlite": "sqlite", "postgresql": "postgresql", "postgres": "postgresql"}
"""The schemes of store URLs, each with its backend."""

_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(text: str) -> bool:
    """Whether ``text`` starts as a URL does (``scheme://``), whatever the scheme: a store URL or
    one this library does not read (``mysql://``), never a file name the command line should try."""
    return _URL_START.match(text) is not None


def is_store_url(text: str) -> bool:
    """Whether ``text`` is a store URL (``sqlite:``, ``postgresql:`` or ``postgres:``) rather than a path."""
    scheme, colon, _ = text.partition(":")
    return bool(colon) and scheme.lower() in SCHEMES


_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
"""The libpq parameters whose values are secrets, masked wherever a URL is shown."""


def masked_url(url: str) -> str:
    """``url`` with its passwords (``user:pw@``, ``?password=``, ``?sslpassword=``) shown as ``***``, for messages.

    Conservatively: the password in the authority runs from the user name's colon to the last
    ``@`` (a password may hold ``@``, ``/`` and ``?``), so an ``@`` later in the URL masks more
    than the password, never less. A parameter's whole value equal to a password is masked
    too, either of them percent-decoded or as written (``password=s3cr%65t&host=s3cret``), the
    value read both as libpq reads it (to the next ``&``: ``a=s3cr#t``) and as if a ``#`` ended
    it (``a=x#b=s3cret``), so neither reading shows it.
    """
    spans = _secret_spans(url)
    masked = url
    for start, end in reversed(spans):
        masked = f"{masked[:start]}***{masked[end:]}"
    forms = password_forms(url)
    if not forms:
        return masked
    for value in _VALUES:
        masked = value.sub(
            lambda found: f"{found[1]}***" if _decoded_forms(found[2]) & forms else found[0], masked
        )
    return masked


# A value may hold "=" (libpq refuses it, and quotes the URL in its error) and "#" (libpq reads
# no fragment): it runs from its key's first "=" to the next "&", as libpq reads it, so a
# password holding either is found whole. Read again as if "#" ended a value and began a key,
# a password after a "#" is found too.
_VALUES = (re.compile(r"(?<=[?&])([^=&]*=)([^&]*)"), re.compile(r"(?<=[?&#])([^=&#]*=)([^&#]*)"))
"""A parameter's key with its ``=``, then its whole value, in both readings: what ``masked_url``
compares with the passwords."""


def url_passwords(url: str) -> list[str]:
    """The passwords a store URL holds, as written: the authority's ``user:pw@`` (from the user
    name's colon to the last ``@``), then the value of each ``password`` and ``sslpassword``
    parameter."""
    return [url[start:end] for start, end in _secret_spans(url)]


def password_forms(url: str) -> set[str]:
    """Each password of ``url`` (``url_passwords``) as written and percent-decoded, as libpq
    reads it and may quote it: every form a text shown must not hold (an empty one is none)."""
    return {form for secret in url_passwords(url) for form in _decoded_forms(secret) if form}


MASKED_FORM_MIN = 3
"""The shortest form of a password ``masked_forms`` masks on its own, in characters."""


def masked_forms(text: str, forms: Iterable[str]) -> str:
    """``text`` with each of a password's ``forms`` (``password_forms``) replaced by ``***``, as
    written and as ``repr`` escapes it (psycopg quotes a host it cannot resolve so, argparse an
    invalid choice), the longest first (one may hold another). A form shorter than
    ``MASKED_FORM_MIN`` is not masked on its own: it would mask ordinary words (``%65`` decodes
    to ``e``); the URL that holds it is shown by ``masked_url``, which masks every password
    whole, however short."""
    given = set(forms)
    for form in sorted(given | {repr(form)[1:-1] for form in given}, key=len, reverse=True):
        if len(form) >= MASKED_FORM_MIN:
            text = text.replace(form, "***")
    return text


def _decoded_forms(text: str) -> set[str]:
    """``text`` as written and percent-decoded (libpq decodes ``%XX``, and keeps ``+``)."""
    return {text, unquote(text)}


def _secret_spans(url: str) -> list[tuple[int, int]]:
    """Where ``url``'s passwords are, as ``(start, end)`` offsets in order, overlaps merged.

    Both readings are taken, whatever the other finds: the authority's password (up to the
    last ``@``, which may lie in a parameter) and every ``password``/``sslpassword`` parameter
    after the first ``?`` (which may lie in the authority's password).
    """
    spans: list[tuple[int, int]] = []
    scheme, _, rest = url.partition(":")
    # A URL written with one slash or none (postgresql:/me:pw@host) is refused, but shown first.
    authority = len(scheme) + 1 + (2 if rest.startswith("//") else len(rest) - len(rest.lstrip("/")))
    at = url.rfind("@")
    colon = url.find(":", authority, at) if at > authority else -1
    # A "/" or "?" before the colon: it is a port's or a parameter's, not the user name's.
    if colon >= 0 and not any(mark in url[authority:colon] for mark in "/?"):
        spans.append((colon + 1, at))
    mark = url.find("?", len(scheme) + 1)
    offset = mark + 1
    for segment in url[offset:].split("&") if mark >= 0 else ():
        key, equals, _ = segment.partition("=")
        if equals and unquote(key).strip().lower() in _SECRET_PARAMETERS:
            spans.append((offset + len(key) + 1, offset + len(segment)))
        offset += len(segment) + 1
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
