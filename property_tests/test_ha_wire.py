"""The HA wire codec (reference_impl.ha.wire): round trips, and HA-7 framing under any segmentation."""

from hypothesis import given
from hypothesis import strategies as hs

from reference_impl.ha import wire

offsets = hs.integers(min_value=wire.LONG_MIN, max_value=wire.LONG_MAX)
sizes = hs.integers(min_value=wire.INT_MIN, max_value=wire.INT_MAX)
frames = hs.lists(hs.tuples(hs.integers(min_value=0, max_value=1 << 40), hs.binary(max_size=40)), max_size=8)


def segment(stream: bytes, cuts: list[int]) -> list[bytes]:
    """Cut `stream` at the given positions (any order, duplicates allowed)."""
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    return [stream[a:b] for a, b in zip(points, points[1:])]


@given(offsets, sizes)
def test_header_round_trip(offset, size):
    raw = wire.encode_header(offset, size)
    assert len(raw) == wire.HEADER_SIZE
    assert wire.decode_header(raw, 0) == (offset, size)


def test_header_is_big_endian_long_then_int():
    """WriteSocketService: byteBufferHeader.putLong(offset).putInt(size), Java's default big-endian order."""
    assert wire.encode_header(0x0102030405060708, 0x0A0B0C0D).hex() == "01020304050607080a0b0c0d"
    assert wire.encode_ack(256).hex() == "0000000000000100"


@given(offsets)
def test_ack_round_trip(offset):
    assert wire.read_acks(b"", wire.encode_ack(offset)) == (offset, b"")


@given(frames)
def test_frames_round_trip(fs):
    stream = b"".join(wire.encode_frame(o, b) for o, b in fs)
    assert wire.decode_frames(stream) == (tuple(fs), b"")


@given(frames, hs.lists(hs.integers(min_value=0), max_size=12))
def test_any_segmentation_decodes_the_same_frames(fs, cuts):
    """HA-7: HAClient decodes the same frames however TCP cuts the stream."""
    stream = b"".join(wire.encode_frame(o, b) for o, b in fs)
    got, rest = [], b""
    for seg in segment(stream, cuts):
        decoded, rest = wire.decode_frames(rest + seg)
        got.extend(decoded)
    assert got == fs and rest == b""


@given(frames, hs.integers(min_value=0))
def test_a_frame_is_reported_only_when_whole(fs, cut):
    stream = b"".join(wire.encode_frame(o, b) for o, b in fs)
    head = stream[:cut % (len(stream) + 1)]
    decoded, rest = wire.decode_frames(head)
    assert b"".join(wire.encode_frame(o, b) for o, b in decoded) + rest == head
    nxt = wire.next_frame(rest)
    assert nxt is None or nxt[2] is None  # what is left is never a whole frame


@given(hs.lists(hs.integers(min_value=0, max_value=1 << 50), min_size=1, max_size=10),
       hs.lists(hs.integers(min_value=0), max_size=12))
def test_master_reads_the_last_complete_report_of_each_read(acks, cuts):
    """HA-7, ReadSocketService: after each read the master holds the report that ends at
    the last 8-byte boundary it has, and never a value the slave did not write."""
    stream = b"".join(wire.encode_ack(a) for a in acks)
    pending, total = b"", 0
    for seg in segment(stream, cuts):
        value, pending = wire.read_acks(pending, seg)
        total += len(seg)
        if total // 8 > (total - len(seg)) // 8:
            assert value == acks[total // 8 - 1]
        else:
            assert value is None
    assert pending == b""


def test_two_reports_in_one_read_only_the_second_counts():
    """processReadEvent reads getLong(pos - 8) with pos the last 8-byte boundary: earlier values are skipped."""
    value, rest = wire.read_acks(b"", wire.encode_ack(100) + wire.encode_ack(200) + b"\x00\x00")
    assert value == 200 and rest == b"\x00\x00"
    value, rest = wire.read_acks(rest, b"\x00" * 6)
    assert value == 0 and rest == b""


def test_header_alone_is_reported_before_the_body():
    """dispatchReadRequest checks the header offset as soon as 12 bytes are there."""
    raw = wire.encode_frame(4096, b"abcdef")
    assert wire.next_frame(raw[:11]) is None
    assert wire.next_frame(raw[:12]) == (4096, 6, None)
    assert wire.next_frame(raw[:17]) == (4096, 6, None)
    assert wire.next_frame(raw) == (4096, 6, b"abcdef")


def test_heartbeat_is_a_header_with_size_zero():
    assert wire.decode_frames(wire.encode_header(77, 0)) == (((77, b""),), b"")
