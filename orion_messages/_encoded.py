"""A conversation's file bytes, kept between saves and extended on append.

Messages are immutable, so the bytes ``dumps_message`` wrote for one stay right for as long as
the conversation holds it. The compact file is ``[`` + the messages' bytes joined by ``,`` +
``]`` (exactly what ``dumps`` writes); this keeps it in one growing buffer, without the closing
bracket, with the offset where each message starts, so that saving after an append encodes and
copies only the new message, and a message replaced near the end rewrites only the tail.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate

from .errors import FormatError
from .models import Message
from .wire import record_bytes

__all__: list[str] = []


def _encoded(messages: Sequence[Message], index: int) -> bytes:
    """``dumps_message`` of message ``index`` (checked as a file's bytes are: ``record_bytes``);
    its problems placed at ``[index]``, as ``save`` does."""
    try:
        return record_bytes(messages[index])
    except FormatError as error:
        raise error.within(f"[{index}]") from None


class _EncodedFile:
    """The buffer, the offset in it where each message's bytes start, and the replaced indexes.

    Each message's bytes are kept once, in the buffer: they end at the comma before the next
    one's offset (the last, at the buffer's end).
    """

    __slots__ = ("buffer", "offsets", "stale")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.buffer = bytearray(b"[")
        self.stale: set[int] = set()

    def replaced(self, index: int) -> None:
        """Message ``index`` was replaced by another one."""
        if index < len(self.offsets):
            self.stale.add(index)

    def update(self, messages: Sequence[Message]) -> None:
        """Bring the buffer up to ``messages`` (encoding only what is new or replaced)."""
        # Encode first: a message that cannot be written raises before anything here changes.
        again = {index: _encoded(messages, index) for index in self.stale}
        new = [_encoded(messages, index) for index in range(len(self.offsets), len(messages))]
        self.stale.clear()
        if again:
            self._splice(again)
        if new:
            if self.offsets:
                self.buffer += b","
            # Each message starts one byte (the comma) after the end of the one before it; all in C.
            steps = map((1).__add__, map(len, new[:-1]))
            self.offsets += accumulate(steps, initial=len(self.buffer))
            self.buffer += b",".join(new)

    def _splice(self, again: dict[int, bytes]) -> None:
        """Put the new bytes of each replaced message (``again``, by index) in place of its old
        ones: one pass over the buffer from the first of them, whatever their number (a splice
        each, moving the rest of the buffer and its offsets, was quadratic)."""
        offsets = self.offsets
        indexes = sorted(again)
        base = offsets[indexes[0]]
        tail = self.buffer[base:]  # a copy of the old bytes from the first replaced message on
        del self.buffer[base:]
        shift = 0
        for number, index in enumerate(indexes):
            following = indexes[number + 1] if number + 1 < len(indexes) else len(offsets)
            start = offsets[index] - base
            end = offsets[index + 1] - 1 - base if index + 1 < len(offsets) else len(tail)
            stop = offsets[following] - base if following < len(offsets) else len(tail)
            offsets[index] += shift
            self.buffer += again[index]
            shift += len(again[index]) - (end - start)
            self.buffer += tail[end:stop]  # the comma after it, the messages kept, the comma before the next
            if shift:
                offsets[index + 1 : following] = map(shift.__add__, offsets[index + 1 : following])

    def jsonl(self) -> bytearray:
        """The messages' bytes as JSON Lines: one message a line, each ending in a newline."""
        if not self.offsets:
            return bytearray()
        data = self.buffer[1:]
        for offset in self.offsets[1:]:
            data[offset - 2] = 0x0A  # the comma before the message (one byte less: no "[")
        data += b"\n"
        return data

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
