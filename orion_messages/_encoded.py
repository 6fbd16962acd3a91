"""A conversation's file bytes, kept between saves and extended on append.

Messages are immutable, so the bytes ``dumps_message`` wrote for one stay right for as long as
the conversation holds it. The compact file is ``[`` + the messages' bytes joined by ``,`` +
``]`` (exactly what ``dumps`` writes); this keeps it in one growing buffer, without the closing
bracket, with the offset where each message starts, so that saving after an append encodes and
copies only the new message, and a message replaced near the end rewrites only the tail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .errors import FormatError
from .models import Message
from .wire import dumps_message

__all__: list[str] = []


def _encoded(messages: Sequence[Message], index: int) -> bytes:
    """``dumps_message`` of message ``index``; its problems placed at ``[index]``, as ``save`` does."""
    try:
        return dumps_message(messages[index])
    except FormatError as error:
        raise error.within(f"[{index}]") from None


class _EncodedFile:
    """The encoded messages (``parts``), their offsets in ``buffer``, and the replaced indexes."""

    __slots__ = ("buffer", "offsets", "parts", "stale")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.offsets: list[int] = []
        self.buffer = bytearray(b"[")
        self.stale: set[int] = set()

    def replaced(self, index: int) -> None:
        """Message ``index`` was replaced by another one."""
        if index < len(self.parts):
            self.stale.add(index)

    def update(self, messages: Sequence[Message]) -> None:
        """Bring the parts and the buffer up to ``messages`` (encoding only what is new or replaced)."""
        # Encode first: a message that cannot be written raises before anything here changes.
        again = {index: _encoded(messages, index) for index in self.stale}
        new = [_encoded(messages, index) for index in range(len(self.parts), len(messages))]
        low = min(self.stale, default=len(self.parts))
        for index, part in again.items():
            self.parts[index] = part
        self.stale.clear()
        if low < len(self.parts):
            del self.buffer[self.offsets[low] - (1 if low else 0) :]
            del self.offsets[low:]
        self.parts += new
        buffer, offsets = self.buffer, self.offsets
        for index in range(low, len(self.parts)):
            if index:
                buffer += b","
            offsets.append(len(buffer))
            buffer += self.parts[index]

    def write_compact(self, write: Callable[[bytearray], None]) -> None:
        """Call ``write`` with the whole compact file (the buffer with its closing bracket)."""
        self.buffer += b"]"
        try:
            write(self.buffer)
        finally:
            try:
                del self.buffer[-1]
            except BufferError:  # a view of it outlived the write (held by an error's traceback)
                self.buffer = bytearray(self.buffer[:-1])
