"""Reading a vectors file (`rmqspec.vectors/1`, docs/conformance.md) one vector at a time.

A vectors file is one JSON object, and `rmqspec vectors --count 1000000` writes about 2 GB
of it; read whole, a 300 MB file took 1.28 GiB and `/dev/zero` took memory until it ran
out. So the object is read as a stream: its members before `vectors` (the header: schema,
protocol, ...) first, then the vectors one by one, each parsed on its own, then whatever
members follow. What is held at once is one vector's text (at most MAX_VECTOR_BYTES) and a
read-ahead chunk, whatever the file's size; nothing but whitespace may follow the object.

Each value is strict JSON as everywhere else (histories.formats: no duplicate keys, no
NaN, no integer of more than 20 digits, no nesting deeper than 32 levels, UTF-8 only),
and an error names the file, the line and the member or vector it is in.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from histories import formats

CHUNK = 1 << 20
MAX_VECTOR_BYTES = formats.MAX_LINE_BYTES  # one vector's JSON text (a vector is about 2.3 KB)
MAX_MEMBER_BYTES = 1 << 20  # any other member's text
MAX_WHITESPACE = formats.MAX_LINE_BYTES  # a run of whitespace between two tokens
MAX_VECTORS = 2_000_000  # vectors --count writes at most 1,000,000 and the edge cases
_WHITESPACE = " \t\n\r"


class VectorsReader:
    """`header` (the members before `vectors`), then iterate for (line, vector) pairs; after
    the iteration, `trailer` holds the members after `vectors`. `bytes_read` says how far
    it got (a progress line's measure)."""

    def __init__(self, f: IO[bytes], where: str) -> None:
        self.f, self.where = f, where
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._json = formats.strict_decoder()
        self.buf, self.pos, self.eof = "", 0, False
        self.bytes_read = 0
        self._line, self._counted = 1, 0  # the line of buf[_counted]
        self.header: dict[str, Any] = {}
        self.trailer: dict[str, Any] = {}
        self.keys: set[str] = set()  # the object's member names, as far as read
        self._skip()
        self._expect("{", "is not JSON: a vectors file is one JSON object")
        self._members(self.header, stop_at_vectors=True)

    # --- the document ---

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        if "vectors" in self.keys:
            yield from self._vectors()
        self._skip()
        if self._peek() != "":
            self.fail("has text after the JSON object")

    def _vectors(self) -> Iterator[tuple[int, Any]]:
        self._skip()
        self._expect("[", "vectors must be a list")
        count = 0
        self._skip()
        if self._peek() == "]":
            self.pos += 1
        else:
            while True:
                count += 1
                if count > MAX_VECTORS:
                    self.fail(f"vectors has more than {MAX_VECTORS:,} vectors")
                self._skip()
                line = self.line()
                yield line, self._value(MAX_VECTOR_BYTES, f"vector {count}")
                self._skip()
                if self._peek() == "]":
                    self.pos += 1
                    break
                self._expect(",", f"after vector {count}: ',' or ']' expected")
        self._skip()
        if self._peek() == ",":
            self.pos += 1
            self._members(self.trailer, stop_at_vectors=False)
        else:
            self._expect("}", "after vectors: ',' or '}' expected")

    def _members(self, into: dict, stop_at_vectors: bool) -> None:
        """Members up to `vectors` (left for iteration) or to the closing brace."""
        self._skip()
        if self._peek() == "}" and not into and not self.keys:
            self.pos += 1
            return
        while True:
            self._skip()
            line = self.line()
            key = self._value(MAX_MEMBER_BYTES, "a member's name")
            if not isinstance(key, str):
                self.fail("a member's name must be a string", line)
            if key in self.keys:
                self.fail(f"JSON has the key {key!r} twice", line)
            self.keys.add(key)
            self._skip()
            self._expect(":", f"after {key!r}: ':' expected")
            if key == "vectors":
                if not stop_at_vectors:
                    self.fail("has the key 'vectors' twice", line)
                return
            self._skip()
            into[key] = self._value(MAX_MEMBER_BYTES, repr(key))
            self._skip()
            if self._peek() == "}":
                self.pos += 1
                return
            self._expect(",", f"after {key!r}: ',' or '}}' expected")

    # --- tokens ---

    def _value(self, limit: int, what: str) -> Any:
        """The JSON value at the read position, read ahead until it is whole (at most `limit` bytes)."""
        while True:
            try:
                value, end = self._json.raw_decode(self.buf, self.pos)
            except formats.JsonRefused as e:
                self.fail(f"{what}: JSON {e}")
            except RecursionError:
                self.fail(f"{what}: JSON nests deeper than {formats.MAX_DEPTH} levels")
            except json.JSONDecodeError as e:
                if self.eof or len(self.buf) - self.pos > limit:
                    if len(self.buf) - self.pos > limit:
                        self.fail(f"{what} is longer than {limit} bytes")
                    self.fail(f"{what} is not JSON ({e.msg})")
                self._fill()
                continue
            if end == len(self.buf) and not self.eof:  # a number may go on in the next chunk
                self._fill()
                continue
            if len(self.buf[self.pos:end].encode("utf-8", "surrogatepass")) > limit:
                self.fail(f"{what} is longer than {limit} bytes")
            if formats.depth(value) > formats.MAX_DEPTH:
                self.fail(f"{what}: JSON nests deeper than {formats.MAX_DEPTH} levels")
            self.pos = end
            return value

    def _skip(self) -> None:
        skipped = 0
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WHITESPACE:
                self.pos += 1
                skipped += 1
            if self.pos < len(self.buf) or self.eof:
                return
            if skipped > MAX_WHITESPACE:
                self.fail(f"has more than {MAX_WHITESPACE} bytes of whitespace in a row")
            self._fill()

    def _peek(self) -> str:
        while self.pos >= len(self.buf) and not self.eof:
            self._fill()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def _expect(self, char: str, message: str) -> None:
        if self._peek() != char:
            got = self._peek()
            self.fail(f"{message}, got {got!r}" if got else f"{message}, but the file ends")
        self.pos += 1

    def _fill(self) -> None:
        if self.pos > CHUNK:  # drop what has been read, counting its lines first
            self.line()
            self.buf, self._counted, self.pos = self.buf[self.pos:], self._counted - self.pos, 0
        data = self.f.read(CHUNK)
        try:
            self.buf += self._decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise formats.FormatError(self.where, None, "", f"is not UTF-8 text (byte {self.bytes_read + e.start})"
                                      ) from None
        self.bytes_read += len(data)
        self.eof = not data

    # --- where ---

    def line(self) -> int:
        """The line of the read position."""
        self._line += self.buf.count("\n", self._counted, self.pos)
        self._counted = self.pos
        return self._line

    def fail(self, message: str, line: int | None = None) -> None:
        raise formats.FormatError(self.where, line if line is not None else self.line(), "", message)
