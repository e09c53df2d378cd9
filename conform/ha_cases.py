"""Classic replication cases: Hypothesis strategies for `rmqspec conform --protocol ha`, and the
deterministic edge cases that `rmqspec vectors --protocol ha` writes first.

Cases are built from the relations RocketMQ 4.9.4 branches on, not from free numbers. A slave's
report is the master's max offset, one byte past it, 200 bytes below or above it, 0, -1 or far
past; a stream of reports is cut on and off their 8-byte boundaries, with an incomplete report
left from the previous read. A master's frame starts at the slave's max offset, one byte past
it, below it, at 0 or at the next file; its body is empty (a heartbeat), small, exactly the rest
of the slave's mapped file or one byte more; a stream of frames is cut inside a header, inside a
body and between frames. The slave's CommitLog has no file, an empty first file, a file ending
at its boundary or 8 bytes short of it. Timers sit at the thresholds the Java code compares with
(`haSendHeartbeatInterval`, `haHousekeepingInterval`, a request's deadline) or one ms either
side. Every choice's first value is the plainest, so a mismatch shrinks toward a 1 GiB mapped
file, a CommitLog at 5600, one report or one frame read whole.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

from hypothesis import strategies as hs

from conform.ha import (
    CONN_ID,
    MASTER,
    MAX_STORE_BYTES,
    SLAVE,
    SOCKET_BUFFER,
    VERSION_FEATURE,
    Case,
    ClientTick,
    ReadFrames,
    ReadReports,
    TransferWait,
)
from reference_impl.ha import commit_log as st
from reference_impl.ha import wire
from reference_impl.ha.records import Broker, GroupCommitRequest, HAClient, HaConfig, HAConnection, MessageStoreConfig
from reference_impl.rocketmq import BrokerRole

BASE_NOW = 100_000
GIB = 1 << 30
FILE_SIZES = (GIB, 1024, 4096, 256)
TIMINGS = ({}, {"ha_send_heartbeat_interval": 1000, "ha_housekeeping_interval": 3000})


@functools.lru_cache(maxsize=None)
def _range(lo: int, hi: int) -> hs.SearchStrategy:
    return hs.integers(lo, hi)


def pick(draw: hs.DrawFn, options: list | tuple) -> object:
    """One of `options`, about evenly (a wide draw taken modulo: Hypothesis favours the ends of a
    small range); shrinks toward the first."""
    return options[draw(_range(0, 1023)) % len(options)]


def mostly(draw: hs.DrawFn, common: object, rare: list | tuple) -> object:
    """`common` nine times in ten (and when shrunk), else one of `rare`."""
    return common if draw(_range(0, 9)) < 9 or not rare else pick(draw, rare)


# --- building blocks (plain functions: the strategies and the edge cases share them) ---


def config(size: int = GIB, version: str = "4.9.4", **timing: int) -> HaConfig:
    return HaConfig(store=MessageStoreConfig(mapped_file_size_commit_log=size, **timing), version=version,
                    socket_buffer_bytes=SOCKET_BUFFER)


def store(lo: int, hi: int) -> st.Store:
    """A CommitLog whose first mapped file starts at `lo` (-1: no file) and whose max offset is `hi`."""
    return st.EMPTY_STORE if lo < 0 else st.Store(base=lo, data=bytes(hi - lo), flushed=hi, durable=hi)


def master(c: HaConfig, max_offset: int, request: int = -1, ack: int = -1, pending: bytes = b"",
           last_read: int = BASE_NOW, push: int = 0, notified: bool = False, now: int = BASE_NOW) -> Broker:
    size = c.store.mapped_file_size_commit_log
    lo = max_offset - max_offset % size if max_offset > 0 else -1  # only its max offset matters here
    conn = HAConnection(id=CONN_ID, slave=SLAVE, slave_request_offset=request, slave_ack_offset=ack,
                        read_pending=pending, last_read_ms=last_read, last_write_ms=now)
    return Broker(id=MASTER, role=BrokerRole.ASYNC_MASTER, store=store(lo, max_offset), push2slave_max=push,
                  conns=(conn,), gt_notified=notified)


def slave(lo: int, hi: int, reported: int | None = None, last_write: int = BASE_NOW, pending: bytes = b"",
          space: int = SOCKET_BUFFER, now: int = BASE_NOW) -> Broker:
    client = HAClient(master=MASTER, conn=CONN_ID, current_reported_offset=hi if reported is None else reported,
                      last_write_ms=last_write, read_buf=pending, out=bytes(SOCKET_BUFFER - space),
                      out_since=now if space < SOCKET_BUFFER else -1)
    return Broker(id=SLAVE, role=BrokerRole.SLAVE, store=store(lo, hi), client=client)


def body(n: int, seed: int) -> bytes:
    return bytes((seed + 31 * i) & 0xFF for i in range(n))


def split(stream: bytes, cuts: list[int]) -> tuple[bytes, ...]:
    """The stream as the reads that end at `cuts` (kept inside it), then the rest."""
    points = sorted({c for c in cuts if 0 < c < len(stream)})
    out, at = [], 0
    for p in points + [len(stream)]:
        if p > at:
            out.append(stream[at:p])
        at = p
    return tuple(out)


def transfer(c: HaConfig, push: int, reads: list[tuple[int, int]], writes: list[tuple[int, int]], waiting: bool,
             notified: bool = False, now: int = BASE_NOW) -> Broker:
    def reqs(pairs: list, first: int) -> tuple[GroupCommitRequest, ...]:
        return tuple(GroupCommitRequest(put=first + k, next_offset=n, wrote_offset=max(0, n - 1), deadline=dl)
                     for k, (n, dl) in enumerate(pairs))
    read = reqs(reads, 1)
    write = reqs(writes, 1 + len(read))
    return Broker(id=MASTER, role=BrokerRole.SYNC_MASTER, push2slave_max=push, gt_read=read, gt_write=write,
                  gt_wait_until=now if waiting and read else -1, gt_wake_ms=now if write else -1, gt_notified=notified)


def layouts(size: int) -> list[tuple[int, int]]:
    """Slave CommitLogs (first file's offset, max offset) the reference can hold: no file, an
    empty first file, messages in the first file, a file that ends at its boundary or 8 bytes
    short of it, a later first file."""
    out = [(0, 5600 if size > 5600 else size // 2), (-1, 0), (0, 0), (0, 200), (0, size), (0, size - 8),
           (2 * size, 2 * size + 200 if size > 200 else 2 * size + size // 2), (size, size)]
    return [(lo, hi) for lo, hi in out if hi - max(lo, 0) <= MAX_STORE_BYTES]


# --- Hypothesis strategies ---


@hs.composite
def cases(draw: hs.DrawFn, kinds: tuple[str, ...], features: frozenset) -> Case:
    """A case a driver that handles `kinds` with `features` can answer."""
    kind = pick(draw, list(kinds))
    versions = ["4.9.4"] + [v for v, f in VERSION_FEATURE.items() if f in features
                            and not (kind == "transfer_wait" and v == "fixed")]
    version = mostly(draw, "4.9.4", versions[1:])
    c = config(pick(draw, FILE_SIZES), version, **pick(draw, TIMINGS))
    now = BASE_NOW + draw(_range(0, 1_000_000))
    if kind == "report_read":
        return _report_case(draw, c, now)
    if kind == "frame_read":
        return _frame_case(draw, c, now)
    if kind == "client_tick":
        return _tick_case(draw, c, now)
    return _transfer_case(draw, c, now)


def _report_case(draw: hs.DrawFn, c: HaConfig, now: int) -> Case:
    size = c.store.mapped_file_size_commit_log
    top = pick(draw, [5600, 0, 200, size, size + 200, 3 * size + 48])
    fresh = draw(_range(0, 2)) == 0
    request = -1 if fresh else pick(draw, [max(0, top - 1000), 0, top, top + 200])
    ack = -1 if fresh else pick(draw, [top, max(0, top - 200), request, top + 200])
    push = pick(draw, [max(0, ack), 0, top, max(0, ack - 200), top + 200])
    hk = c.store.ha_housekeeping_interval
    last_read = now - pick(draw, [0, 1000, hk, hk + 1, hk + 1000])
    values = [pick(draw, [top, max(0, top - 200), top + 200, top + 1, 0, -1, 1 << 62, ack + 200])
              for _ in range(pick(draw, [1, 2, 3, 0]))]
    stream = b"".join(wire.encode_ack(v) for v in values)
    held = mostly(draw, 0, [1, 3, 7])
    pending, rest = b"\xff" * held, stream
    if held:  # the tail of an earlier, incomplete report; this read completes it
        rest = stream[held:] if len(stream) >= held else b""
        pending = stream[:held] if len(stream) >= held else bytes(held)
    cuts = [pick(draw, [0, 8 - held, 16 - held, 4, 11, 1]) for _ in range(pick(draw, [0, 1, 2]))]
    reads = split(rest, cuts)
    eof = mostly(draw, False, [True])
    b = master(c, top, request, ack, pending, last_read, push, draw(_range(0, 1)) == 1, now)
    return Case(config=c, broker=b, now=now, input=ReadReports(reads=reads, eof=eof))


def _frames(draw: hs.DrawFn, size: int, hi: int) -> bytes:
    """1 to 3 frames from a master; each usually starts where the slave will be."""
    out = b""
    at = hi
    for _ in range(pick(draw, [1, 2, 3])):
        offset = pick(draw, [at, at + 1, max(0, at - 200), 0, (at // size + 1) * size, at + 200])
        room = size - at % size if at % size else size
        n = pick(draw, [draw(_range(1, 64)), 0, room, room + 1, 200])
        n = min(n, 4096)
        out += wire.encode_frame(offset, body(n, draw(_range(0, 255))))
        at = offset + n if offset == at or at == 0 else at
    return out


def _frame_case(draw: hs.DrawFn, c: HaConfig, now: int) -> Case:
    size = c.store.mapped_file_size_commit_log
    lo, hi = pick(draw, layouts(size))
    stream = _frames(draw, size, hi)
    held = mostly(draw, 0, [5, 12, 13, 20])
    head = wire.next_frame(stream[:held])
    if held >= len(stream) or (head is not None and (head[2] is not None or (hi != 0 and head[0] != hi))):
        held = 0  # what an earlier read left must be an incomplete frame HAClient accepted so far
    pending, rest = stream[:held], stream[held:]
    cuts = [pick(draw, [0, 12 - held, 5, 13 - held, 40, draw(_range(1, 300))]) for _ in range(pick(draw, [0, 1, 2]))]
    reads = split(rest, cuts)
    hb, hk = c.store.ha_send_heartbeat_interval, c.store.ha_housekeeping_interval
    last_write = now - pick(draw, [0, 100, hb, hk + 1])
    reported = mostly(draw, hi, [max(0, hi - 200)])
    space = mostly(draw, SOCKET_BUFFER, [0, 7, 8])
    b = slave(lo, hi, reported, last_write, pending, space, now)
    return Case(config=c, broker=b, now=now, input=ReadFrames(reads=reads, eof=mostly(draw, False, [True])))


def _tick_case(draw: hs.DrawFn, c: HaConfig, now: int) -> Case:
    size = c.store.mapped_file_size_commit_log
    lo, hi = pick(draw, layouts(size))
    hb, hk = c.store.ha_send_heartbeat_interval, c.store.ha_housekeeping_interval
    last_write = now - pick(draw, [hb + 1, hb, 0, hk, hk + 1, hk + hb, 1])
    space = mostly(draw, SOCKET_BUFFER, [0, 7, 8])
    # connected, HAClient's currentReportedOffset is the slave's max offset (connectMaster sets it,
    # every append reports it): reportSlaveMaxOffsetPlus then writes nothing in a loop without reads
    return Case(config=c, broker=slave(lo, hi, hi, last_write, b"", space, now), now=now, input=ClientTick())


def _transfer_case(draw: hs.DrawFn, c: HaConfig, now: int) -> Case:
    push = pick(draw, [5600, 0, 200])
    first = push + pick(draw, [200, 0, -200, 1, -1, 400])
    n = pick(draw, [1, 2, 3, 4])
    offsets = [first + 200 * k for k in range(n)]
    timeout = c.store.sync_flush_timeout if c.version == "4.9.2" else 3000

    def deadline() -> int:
        if c.version == "4.9.2" and draw(_range(0, 1)):
            return -1  # not reached yet: GroupTransferService sets it when it gets there
        return now + pick(draw, [timeout, 1, 0, -1, -1000, timeout - 1])
    reqs = [(o, deadline()) for o in offsets]
    k = pick(draw, [n, 0, 1])
    waiting = bool(k) and draw(_range(0, 1)) == 1
    b = transfer(c, push, reqs[:k], reqs[k:], waiting, draw(_range(0, 1)) == 1, now)
    return Case(config=c, broker=b, now=now, input=TransferWait())


# --- deterministic edge cases (rmqspec vectors) ---

NOW = BASE_NOW


def edge_cases() -> Iterator[Case]:
    """Each input kind at the edges its Java code branches on."""
    yield from _report_edges()
    yield from _frame_edges()
    yield from _tick_edges()
    yield from _transfer_edges()


def _report_edges() -> Iterator[Case]:
    """First reports and acks at, below and above the master's max offset, per version; the last
    complete report of a read; a report completed across reads; end of stream; housekeeping."""
    top = 5600
    for version, (request, ack), value in itertools.product(
            ("4.9.4", "4.9.2", "fixed"), ((-1, -1), (0, 0), (top - 200, top - 200)),
            (top, top + 1, top - 200, 0, -1)):
        c = config(version=version)
        b = master(c, top, request, ack, push=max(0, ack))
        yield Case(config=c, broker=b, now=NOW, input=ReadReports(reads=(wire.encode_ack(value),)))
    c = config()
    three = wire.encode_ack(200) + wire.encode_ack(top + 200) + wire.encode_ack(400)
    for reads in ((three,), (three[:12], three[12:]), (three[:20],), (three[:7],)):
        yield Case(config=c, broker=master(c, top, 0, 0), now=NOW, input=ReadReports(reads=reads))
    half = wire.encode_ack(top)
    yield Case(config=c, broker=master(c, top, 0, 0, pending=half[:3]), now=NOW,
               input=ReadReports(reads=(half[3:],)))
    yield Case(config=c, broker=master(c, top, 0, 0), now=NOW, input=ReadReports(reads=(half,), eof=True))
    hk = c.store.ha_housekeeping_interval
    for ago in (hk, hk + 1):
        yield Case(config=c, broker=master(c, top, 0, 0, last_read=NOW - ago), now=NOW, input=ReadReports())
    for push, notified in itertools.product((top - 200, top, top + 200), (False, True)):
        yield Case(config=c, broker=master(c, top, 0, top - 200, push=push, notified=notified), now=NOW,
                   input=ReadReports(reads=(wire.encode_ack(top),)))


def _frame_edges() -> Iterator[Case]:
    """Frames at, past and before the slave's max offset, into no file, an empty first file, a
    full file and a file with 8 bytes left; heartbeats; frames split at every kind of cut."""
    for size, version in itertools.product((4096, GIB), ("4.9.4", "fixed")):
        c = config(size, version)
        for (lo, hi), delta in itertools.product(layouts(size), (0, 1, -200, None)):
            offset = size if delta is None else max(0, hi + delta)
            for n in (16, 0, 8, 9):
                frame = wire.encode_frame(offset, body(n, 7))
                yield Case(config=c, broker=slave(lo, hi), now=NOW, input=ReadFrames(reads=(frame,)))
    c = config(4096)
    two = wire.encode_frame(200, body(40, 1)) + wire.encode_frame(240, body(24, 2))
    for cuts in ([5], [12], [13], [52], [52, 60], [1, 2, 3]):
        yield Case(config=c, broker=slave(0, 200), now=NOW, input=ReadFrames(reads=split(two, cuts)))
    yield Case(config=c, broker=slave(0, 200, pending=two[:20]), now=NOW, input=ReadFrames(reads=(two[20:],)))
    yield Case(config=c, broker=slave(0, 200), now=NOW, input=ReadFrames(reads=(two[:30],), eof=True))
    for space in (0, 7, 8):
        yield Case(config=c, broker=slave(0, 200, space=space), now=NOW, input=ReadFrames(reads=(two,)))
    yield Case(config=c, broker=slave(0, 200, reported=0), now=NOW,
               input=ReadFrames(reads=(wire.encode_frame(300, b""),)))


def _tick_edges() -> Iterator[Case]:
    for timing in TIMINGS:
        c = config(**timing)
        hb, hk = c.store.ha_send_heartbeat_interval, c.store.ha_housekeeping_interval
        for ago, space in itertools.product((hb, hb + 1, hk, hk + 1, 0), (SOCKET_BUFFER, 7, 8)):
            yield Case(config=c, broker=slave(0, 5600, last_write=NOW - ago, space=space), now=NOW,
                       input=ClientTick())


def _transfer_edges() -> Iterator[Case]:
    for version in ("4.9.4", "4.9.2"):
        c = config(version=version)
        for delta, left, waiting in itertools.product((0, 1, -1), (1, 0, -1), (False, True)):
            deadline = NOW + left
            req = (5600 + delta, deadline)
            yield Case(config=c, broker=transfer(c, 5600, [req], [], waiting), now=NOW, input=TransferWait())
        reqs = [(5400, NOW + 100), (5800, NOW + 100), (5600, NOW - 1)]
        for k in (0, 1, 3):
            yield Case(config=c, broker=transfer(c, 5600, reqs[:k], reqs[k:], False), now=NOW, input=TransferWait())
    c = config(version="4.9.2")
    yield Case(config=c, broker=transfer(c, 5600, [(5800, -1)], [(5400, -1)], False), now=NOW, input=TransferWait())
