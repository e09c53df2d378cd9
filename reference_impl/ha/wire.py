"""The HA wire, as bytes: the master's transfer frames and the slave's offset reports.

Theory of operation
-------------------
Classic (non-DLedger) RocketMQ replication runs over one plain TCP connection per
slave (`HAConnection` on the master, `HAService.HAClient` on the slave), with no
framing layer of its own beyond two fixed layouts, both big-endian as Java's
`ByteBuffer` writes them:

- master -> slave: a 12-byte header `[phyOffset: long][bodySize: int]` followed by
  `bodySize` raw commitlog bytes that start at `phyOffset` (`WriteSocketService`,
  `byteBufferHeader`). A header with `bodySize = 0` is the heartbeat.
- slave -> master: an 8-byte `long`, the slave's max physical offset
  (`HAClient#reportSlaveMaxOffset`). The first one on a connection is the slave's
  request offset, later ones are acks.

TCP delivers a byte stream, so the reader sees the writer's bytes cut into segments
of any size. The two readers treat that differently, and the functions below are
exactly their rules:

- `HAClient#dispatchReadRequest` decodes frames one after another from an
  accumulating buffer: a header as soon as 12 bytes are there, the body once the whole
  of it is (`next_frame`, `decode_frames`).
- `ReadSocketService#processReadEvent` keeps only the *last complete* 8-byte value
  after each read and carries the incomplete rest over (`read_acks`); values that
  arrive in the same read as a later one are never seen.

Everything here is pure and total on its declared domain; the docstrings carry
CrossHair contracts (`pre:` / `post:`), checked by property_tests/test_ha_contracts.py.
"""

from __future__ import annotations

HEADER_SIZE = 12  # WriteSocketService.headerSize = 8 + 4
ACK_SIZE = 8  # HAClient.reportOffset = ByteBuffer.allocate(8)
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def encode_header(offset: int, size: int) -> bytes:
    """WriteSocketService: byteBufferHeader.putLong(offset).putInt(size).

    pre: LONG_MIN <= offset <= LONG_MAX
    pre: INT_MIN <= size <= INT_MAX
    post: len(__return__) == HEADER_SIZE
    post: decode_header(__return__, 0) == (offset, size)
    """
    return offset.to_bytes(8, "big", signed=True) + size.to_bytes(4, "big", signed=True)


def decode_header(buf: bytes, pos: int) -> tuple[int, int]:
    """HAClient#dispatchReadRequest: getLong(dispatchPosition), getInt(dispatchPosition + 8).

    pre: 0 <= pos and pos + HEADER_SIZE <= len(buf)
    post: encode_header(*__return__) == buf[pos:pos + HEADER_SIZE]
    """
    return (int.from_bytes(buf[pos:pos + 8], "big", signed=True),
            int.from_bytes(buf[pos + 8:pos + HEADER_SIZE], "big", signed=True))


def encode_frame(offset: int, body: bytes) -> bytes:
    """A whole transfer frame: header, then the body (a heartbeat when the body is empty).

    pre: LONG_MIN <= offset <= LONG_MAX
    pre: len(body) <= INT_MAX
    post: len(__return__) == HEADER_SIZE + len(body)
    post: decode_frames(__return__) == (((offset, body),), b"")
    """
    return encode_header(offset, len(body)) + body


def encode_ack(offset: int) -> bytes:
    """HAClient#reportSlaveMaxOffset: reportOffset.putLong(maxOffset).

    pre: LONG_MIN <= offset <= LONG_MAX
    post: len(__return__) == ACK_SIZE
    post: read_acks(b"", __return__) == (offset, b"")
    """
    return offset.to_bytes(ACK_SIZE, "big", signed=True)


def next_frame(buf: bytes) -> tuple[int, int, bytes | None] | None:
    """The frame at the head of `buf` as far as it has arrived: None before a whole
    header; (offset, size, None) with a header but not yet the whole body; else
    (offset, size, body). A negative size is reported as is (the caller rejects it).

    post: __return__ is None or len(buf) >= HEADER_SIZE
    post: __return__ is None or __return__[2] is None or len(__return__[2]) == __return__[1]
    """
    if len(buf) < HEADER_SIZE:
        return None
    offset, size = decode_header(buf, 0)
    if size < 0 or len(buf) < HEADER_SIZE + size:
        return offset, size, None
    return offset, size, buf[HEADER_SIZE:HEADER_SIZE + size]


def decode_frames(buf: bytes) -> tuple[tuple[tuple[int, bytes], ...], bytes]:
    """Every complete frame at the head of `buf`, and the undecoded rest.

    Decoding is a function of the bytes alone, so feeding a stream in any segments
    and decoding after each (carrying the rest over) yields the same frames as
    decoding the whole stream at once (HA-7; property_tests/test_ha_wire.py).

    post: b"".join(encode_frame(o, b) for o, b in __return__[0]) + __return__[1] == buf
    """
    frames = []
    pos = 0
    while True:
        head = next_frame(buf[pos:])
        if head is None or head[2] is None:
            return tuple(frames), buf[pos:]
        frames.append((head[0], head[2]))
        pos += HEADER_SIZE + head[1]


def read_acks(pending: bytes, chunk: bytes) -> tuple[int | None, bytes]:
    """ReadSocketService#processReadEvent after one read: the last complete 8-byte value
    in `pending + chunk` (None if there is none) and the incomplete rest.

    Java keeps `processPosition` on 8-byte boundaries of its read buffer and, when
    `position - processPosition >= 8`, reads the long just below
    `position - position % 8`; `pending` here is the buffer between the two.

    pre: len(pending) < ACK_SIZE
    post: len(__return__[1]) < ACK_SIZE
    post: (__return__[0] is None) == (len(pending) + len(chunk) < ACK_SIZE)
    """
    buf = pending + chunk
    whole = len(buf) - len(buf) % ACK_SIZE
    if whole == 0:
        return None, buf
    return int.from_bytes(buf[whole - ACK_SIZE:whole], "big", signed=True), buf[whole:]
