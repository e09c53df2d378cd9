"""Ghost variables of the HA world: history that properties need and no broker can see.

What they record, and why:

- `acked` / `lost` (HA-4): every message a producer saw PUT_OK for, until no broker
  holds its bytes at its offset any more; then it moves to `lost` with the concrete
  cause (the OS crash or disk loss that removed the last copy), or None.
- `missing` (HA-3): SYNC_MASTER PUT_OK messages that no slave held at the moment the
  producer got the answer, with the reason the master believed they were replicated:
  a report that set push2SlaveMaxOffset (`p2`), or an ack of a connection (`ack_log`),
  checked against the slave's later data loss (`data_loss`).
- `frames`, `reports`, `up_bytes`, `framing` (HA-7): per connection, the frames the
  master built and the reports the slave wrote, in order, against what the other end
  decoded from the segments it was given.
- `master_floor` (HA-1): the master's max offset after its latest data loss; a slave
  that differs from the master at or above it holds data the master lost.
- `calm_target`, `caught_up` (HA-L): the master's max offset when faults stopped, and
  when each slave reached it.

The broker transitions never read any of this.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.ha import broker as ha
from reference_impl.ha import commit_log as st
from reference_impl.ha.records import AckRead, FrameRead, FrameRejected, FrameSent, PutResult, Reported
from reference_impl.rocketmq import BrokerRole, PutMessageStatus

ACK_LOG_KEEP = 16  # connections whose latest ack is kept for attribution


@record
class Copy:
    msg_id: str
    offset: int
    size: int
    at_ms: int


@record
class Finding:
    msg_id: str
    offset: int
    at_ms: int
    cause: str | None  # the known cause, or None: unexplained
    code: str | None = None  # the cause's short name (docs/ha.md): first-report, last-file-start, ...


@record
class HaGhost:
    acked: tuple[Copy, ...] = ()
    lost: tuple[Finding, ...] = ()
    missing: tuple[Finding, ...] = ()
    statuses: FrozenMap = EMPTY  # put status -> count
    framing: str | None = None
    frames: FrozenMap = EMPTY  # conn -> ((offset, size, crc), ...) built, not yet read
    reports: FrozenMap = EMPTY  # conn -> (index of the first kept report, offsets)
    up_bytes: FrozenMap = EMPTY  # conn -> bytes delivered to the master
    ack_log: FrozenMap = EMPTY  # conn -> (slave, start, ack, at_ms) of its latest accepted report
    p2: tuple | None = None  # (master incarnation, AckRead, at_ms) that last raised push2SlaveMaxOffset
    data_loss: FrozenMap = EMPTY  # node id -> time of its latest OS crash or disk loss
    master_floor: int = -1
    master_crash_max: int = -1  # the master's max offset when it last went down; -1 while it is up
    calm_target: int = -1
    caught_up: FrozenMap = EMPTY  # slave id -> time it reached calm_target
    misplaced: FrozenMap = EMPTY  # slave id -> Finding: a frame it appended away from the frame's offset (HA-6)


def init(cfg: core.WorldConfig) -> HaGhost:
    return HaGhost()


def master_index(w: core.World) -> int:
    return w.cfg.ids.index(w.cfg.proto.brokers[0])


def broker_indices(w: core.World) -> range:
    return range(len(w.cfg.proto.brokers))


def holders(w: core.World, copy: Copy, among: Any = None) -> list[int]:
    """Brokers (up or down: what their storage holds) that have the message's bytes at its offset."""
    blob = ha.message_blob(copy.msg_id, copy.offset, copy.size)
    return [j for j in (among if among is not None else broker_indices(w))
            if st.holds(w.nodes[j].store, copy.offset, blob)]


# --- attribution ---


def ha3_cause(g: HaGhost, w: core.World, copy: Copy) -> tuple[str | None, str | None]:
    """Why the master answered PUT_OK for a message no slave holds, if a known cause
    applies: (short name, sentence), or (None, None)."""
    c = w.cfg.proto
    m = master_index(w)
    nxt = copy.offset + copy.size
    candidates = []
    if c.version != "fixed":
        if g.p2 is not None and g.p2[0] == w.nodes[m].incarnation and g.p2[1].ack >= nxt:
            a, at = g.p2[1], g.p2[2]
            if a.ack > a.master_max:
                which = "the first report" if a.first else "a report"
                fix = ("4.9.4 range-checks later acks only (#3015)" if a.first
                       else "4.9.0-4.9.2 never range-check reports (#3015)")
                return "first-report", (f"push2SlaveMaxOffset = {a.ack} came from {which} of {a.slave}, above the "
                                        f"master's max offset {a.master_max} ({fix}); the slave held data the "
                                        f"master had lost")
            if copy.offset < a.start:
                return "transfer-start", (f"push2SlaveMaxOffset = {a.ack} came from {a.slave}, which the master "
                                          f"feeds from offset {a.start} (an empty slave starts at the master's last "
                                          f"mapped file); its ack covers {copy.msg_id} at {copy.offset}, which it "
                                          f"never received")
            candidates.append((a.slave, at))
    else:
        candidates = [(s, at) for s, start, ack, at in g.ack_log.values() if 0 <= start <= copy.offset and ack >= nxt]
    for slave, at in candidates:
        if g.data_loss.get(slave, -1) >= at:
            return "slave-page-cache", (f"{slave} acknowledged {copy.msg_id} from its page cache and lost it in an "
                                        f"OS crash or disk loss at t={g.data_loss[slave]} ms (HAClient reports "
                                        f"getMaxPhyOffset, unflushed data included)")
    return None, None


def _loss_cause(g: HaGhost, w: core.World, event: Any, copy: Copy) -> tuple[str | None, str | None]:
    """The event removed the last copy of an acknowledged message; the known causes:
    data loss (an OS crash or disk loss), or recovery of a slave that holds bytes the
    master lost and was then streamed the master's new bytes from inside a message."""
    if isinstance(event, core.Crash) and event.kind() != "process":
        what = "disk loss" if event.disk else "an OS crash (its unflushed page cache)"
        if w.cfg.proto.store.broker_role is BrokerRole.ASYNC_MASTER:
            return "async-master", (f"ASYNC_MASTER acknowledges before any slave has the message; the last copy was "
                                    f"on {w.cfg.ids[event.node]}, lost in {what}")
        return "data-loss", f"the last copy was on {w.cfg.ids[event.node]}, lost in {what}; no other copy survived"
    if isinstance(event, (core.Restart, core.Calm)) and g.master_floor >= 0:
        m = master_index(w)
        nodes = [event.node] if isinstance(event, core.Restart) else list(broker_indices(w))
        for j in nodes:
            end = st.max_offset(w.nodes[j].store)
            if j != m and g.master_floor <= end <= copy.offset:
                return "diverged-slave", (
                    f"the last copy was on {w.cfg.ids[j]}, whose CommitLog recovery stopped at {end}: above "
                    f"{g.master_floor}, where the master lost data {w.cfg.ids[j]} had, the master streamed its new "
                    f"bytes to it from inside a message, so recovery truncated everything after (docs/ha.md)")
    return None, None


def _check_losses(g: HaGhost, w: core.World, event: Any) -> HaGhost:
    if not g.acked:
        return g
    keep, lost = [], []
    for copy in g.acked:
        if holders(w, copy):
            keep.append(copy)
        else:
            code, cause = _loss_cause(g, w, event, copy)
            lost.append(Finding(msg_id=copy.msg_id, offset=copy.offset, at_ms=w.now, cause=cause, code=code))
    if not lost:
        return g
    return g.evolve(acked=tuple(keep), lost=g.lost + tuple(lost))


# --- the update ---


def _framing(g: HaGhost, text: str) -> HaGhost:
    return g if g.framing is not None else g.evolve(framing=text)


def update(g: HaGhost, w: core.World, i: int, o: Any) -> HaGhost:
    t = type(o)
    if t is FrameSent:
        return g.evolve(frames=g.frames.set(o.conn, g.frames.get(o.conn, ()) + ((o.offset, o.size, o.crc),)))
    if t is FrameRead:
        q = g.frames.get(o.conn, ())
        got = (o.offset, o.size, o.crc)
        if not q or q[0] != got:
            g = _framing(g, f"connection {o.conn}: the slave decoded frame {got}, the master sent "
                            f"{q[0] if q else 'nothing more'}")
        g = g.evolve(frames=g.frames.set(o.conn, q[1:]))
        if o.appended:
            g = _check_placement(g, w, i, o)
        if g.calm_target >= 0 and w.cfg.ids[i] not in g.caught_up and \
                st.max_offset(w.nodes[i].store) >= g.calm_target:
            g = g.evolve(caught_up=g.caught_up.set(w.cfg.ids[i], w.now))
        return g
    if t is FrameRejected:
        q = g.frames.get(o.conn, ())
        if not q or q[0][0] != o.offset:
            g = _framing(g, f"connection {o.conn}: the slave decoded a header at offset {o.offset}, the master sent "
                            f"{q[0] if q else 'nothing more'}")
        return g.evolve(frames=g.frames.without(o.conn))
    if t is Reported:
        if o.written == 8:
            base, vals = g.reports.get(o.conn, (0, ()))
            g = g.evolve(reports=g.reports.set(o.conn, (base, vals + (o.offset,))))
        return g
    if t is AckRead:
        return _ack_read(g, w, o)
    if t is PutResult:
        return _put_result(g, w, o)
    name = t.__name__
    if name == "SegmentDelivered":
        return g.evolve(up_bytes=g.up_bytes.set(o.conn, g.up_bytes.get(o.conn, 0) + o.size)) if o.to_master else g
    if name == "Connected":
        live = {c.id for c in w.ext.conns}
        return g.evolve(frames=_only(g.frames, live), reports=_only(g.reports, live), up_bytes=_only(g.up_bytes, live))
    if t is core.Crash:
        m = master_index(w)
        if o.node == m:
            g = g.evolve(master_crash_max=st.max_offset(w.nodes[m].store))
        if o.kind() != "process":
            node_id = w.cfg.ids[o.node]
            g = g.evolve(data_loss=g.data_loss.set(node_id, w.now))
            if o.disk:
                g = g.evolve(misplaced=g.misplaced.without(node_id))
            if o.node == m:
                g = _lower_floor(g, st.max_offset(w.nodes[m].store))
        return _check_losses(g, w, o)
    if t is core.Restart:
        return _check_losses(_master_recovered(g, w) if o.node == master_index(w) else g, w, o)
    if t is core.Calm:
        g = _check_losses(_master_recovered(g, w), w, o)
        target = st.max_offset(w.nodes[master_index(w)].store)
        caught = {w.cfg.ids[j]: w.now for j in broker_indices(w)
                  if j != master_index(w) and st.max_offset(w.nodes[j].store) >= target}
        return g.evolve(calm_target=target, caught_up=FrozenMap(caught))
    return g


def _check_placement(g: HaGhost, w: core.World, i: int, o: FrameRead) -> HaGhost:
    """Record a frame whose bytes did not land at the frame's offset, and why."""
    s = w.nodes[i].store
    start = o.offset - s.base
    if s.base >= 0 and 0 <= start <= len(s.data) - o.size and st.crc32(s.data[start:start + o.size]) == o.crc:
        return g
    cause = None
    if s.base == 0 and len(s.data) >= o.size and st.crc32(s.data[:o.size]) == o.crc:
        cause = (f"{w.cfg.ids[i]}'s max offset was 0 with its first mapped file kept empty by recovery (an OS crash "
                 f"lost its data): HAClient skips the offset check while getMaxPhyOffset() == 0, and appendData "
                 f"wrote the frame for {o.offset} at the file's wrote position, 0")
    f = Finding(msg_id="", offset=o.offset, at_ms=w.now, cause=cause, code="empty-file" if cause else None)
    return g.evolve(misplaced=g.misplaced.set(w.cfg.ids[i], f))


def _lower_floor(g: HaGhost, offset: int) -> HaGhost:
    return g.evolve(master_floor=offset if g.master_floor < 0 else min(g.master_floor, offset))


def _master_recovered(g: HaGhost, w: core.World) -> HaGhost:
    """The master is up again: if recovery cut its CommitLog below where the crash left it
    (a trailing blank record after an OS crash), that is lost data too."""
    m = master_index(w)
    if g.master_crash_max < 0 or not w.alive[m]:
        return g
    recovered = st.max_offset(w.nodes[m].store)
    if recovered < g.master_crash_max:
        g = _lower_floor(g, recovered)
    return g.evolve(master_crash_max=-1)


def _only(m: FrozenMap, keys: set) -> FrozenMap:
    return m if all(k in keys for k in m) else FrozenMap((k, v) for k, v in m.items() if k in keys)


def _ack_read(g: HaGhost, w: core.World, o: AckRead) -> HaGhost:
    idx = g.up_bytes.get(o.conn, 0) // 8 - 1
    base, vals = g.reports.get(o.conn, (0, ()))
    if not 0 <= idx - base < len(vals) or vals[idx - base] != o.ack:
        g = _framing(g, f"connection {o.conn}: the master read report {o.ack} as the slave's report #{idx}, "
                        f"the slave wrote {vals[idx - base] if 0 <= idx - base < len(vals) else 'nothing there'}")
    else:
        g = g.evolve(reports=g.reports.set(o.conn, (idx + 1, vals[idx - base + 1:])))
    if not o.accepted:
        return g
    if o.start >= 0:
        log = g.ack_log.set(o.conn, (o.slave, o.start, o.ack, w.now))
        if len(log) > ACK_LOG_KEEP:
            log = log.without(min(log))
        g = g.evolve(ack_log=log)
    inc = w.nodes[master_index(w)].incarnation
    if g.p2 is None or g.p2[0] != inc or o.ack > g.p2[1].ack:
        g = g.evolve(p2=(inc, o, w.now))
    return g


def _put_result(g: HaGhost, w: core.World, o: PutResult) -> HaGhost:
    g = g.evolve(statuses=g.statuses.set(o.status, g.statuses.get(o.status, 0) + 1))
    if o.status != PutMessageStatus.PUT_OK.value:
        return g
    copy = Copy(msg_id=o.msg_id, offset=o.offset, size=o.size, at_ms=w.now)
    m = master_index(w)
    everywhere = holders(w, copy)
    if not everywhere:  # acknowledged, and already nowhere: no known cause
        return g.evolve(lost=g.lost + (Finding(msg_id=o.msg_id, offset=o.offset, at_ms=w.now, cause=None),))
    g = g.evolve(acked=g.acked + (copy,))
    if w.cfg.proto.store.broker_role is BrokerRole.SYNC_MASTER and not [j for j in everywhere if j != m]:
        code, cause = ha3_cause(g, w, copy)
        g = g.evolve(missing=g.missing + (Finding(msg_id=o.msg_id, offset=o.offset, at_ms=w.now, cause=cause,
                                                  code=code),))
    return g
