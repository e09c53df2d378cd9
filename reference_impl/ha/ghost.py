"""Ghost variables of the HA world: history that properties need and no broker can see.

What they record, and why:

- `acked` / `lost` (HA-4): every message a producer saw PUT_OK for, until no broker
  holds its bytes at its offset any more; then it moves to `lost` with the concrete
  cause (the OS crash or disk loss that removed the last copy), or None.
- `missing` (HA-3): SYNC_MASTER PUT_OK messages that no slave held at the moment the
  producer got the answer, with the reason the master believed they were replicated:
  a report that set push2SlaveMaxOffset (`p2`), or an ack of a connection (`ack_log`),
  checked against the slave's later data loss (`data_loss`, and `lost_range`: the bytes
  that loss took, past the slave's durable offset, so the copy must have been among them).
- `frames`, `reports`, `up_bytes`, `framing` (HA-7): per connection, the frames the
  master built and the reports the slave wrote, in order, against what the other end
  decoded from the segments it was given.
- `master_floor`, `held_at_loss` (HA-1): the master's max offset after its latest data
  loss, and how far each slave's CommitLog reached at some such loss; a slave that
  differs from the master at or above the floor and below what it held then holds data
  the master lost (beyond it, the slave only ever appended what the master sent after).
- `crash_dropped` (HA-4): the acknowledged messages the crash being applied took from
  the crashed broker (held before it, gone after, and for an OS crash not yet on disk:
  seen as it crashes, `ghost_crash`), so a loss is blamed on a crash only if that crash
  removed that copy from the page cache (or with the disk).
- `calm_target`, `caught_up` (HA-L): the master's max offset when faults stopped, and
  when each slave reached it.
- `master_losses` (HA-1): per data loss of the master, its CommitLog just before (the store
  value itself: immutable, so nothing is copied), its max offset after, and how far each
  slave reached then, so a slave that differs from the master is explained only by bytes
  it holds that are exactly the master's before that loss.
- `lost_stores`, `down_stores` (HA-3, HA-4): a broker's CommitLog just before its latest OS
  crash or disk loss, and what it kept while down, so a cause names a copy only if that
  crash took it, or that restart's recovery truncated it.
- `appended_at` (HA-11): when the master appended the message at each recent offset (the
  put's time, from which slaveTimeout runs).
- `tail_puts`, `tail_failed`, `tail_slowest` (HA-Q): puts made in the quiet tail that
  fault-free service owes a PUT_OK (any put of an ASYNC_MASTER; a SYNC_MASTER's while a live
  slave whose CommitLog is a prefix-copy of the master's, caught up to its max offset, has an
  open connection whose transfer started), those answered otherwise, and the slowest answer.

The broker transitions never read any of this.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.ha import broker as ha
from reference_impl.ha import commit_log as st
from reference_impl.ha.records import AckRead, Appended, FrameRead, FrameRejected, FrameSent, PutResult, Reported
from reference_impl.rocketmq import BrokerRole, PutMessageStatus

ACK_LOG_KEEP = 16  # connections whose latest ack is kept for attribution
MASTER_LOSSES_KEPT = 32  # (their stores are the master's own values, shared, not copied)
APPENDED_KEPT = 32  # more than any number of puts pending at once (one per producer)


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
    size: int = 0  # a misplaced frame's body size and CRC (HA-1's evidence that the slave still holds it)
    crc: int = 0


@record
class MasterLoss:
    """One OS crash or disk loss of the master (HA-1's evidence)."""

    before: Any  # the master's CommitLog (a commit_log.Store) just before the loss
    floor: int  # its max offset after the loss (and after its recovery, once it restarted)
    held: FrozenMap  # slave id -> its max offset at the loss
    recovered: bool = False  # the master restarted after it (its recovery may have cut more)


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
    lost_range: FrozenMap = EMPTY  # node id -> (durable, max) offsets of its latest OS crash: what it lost
    master_floor: int = -1
    master_crash_max: int = -1  # the master's max offset when it last went down; -1 while it is up
    calm_target: int = -1
    caught_up: FrozenMap = EMPTY  # slave id -> time it reached calm_target
    misplaced: FrozenMap = EMPTY  # slave id -> Finding: a frame it appended away from the frame's offset (HA-6)
    held_at_loss: FrozenMap = EMPTY  # slave id -> the highest max offset it had at a master data loss (HA-1)
    crash_dropped: frozenset = frozenset()  # msg ids the crash being applied took from the crashed broker
    master_losses: tuple = ()  # MasterLoss, the latest MASTER_LOSSES_KEPT
    lost_stores: FrozenMap = EMPTY  # node id -> (time, its store before its latest OS crash / disk loss, after)
    down_stores: FrozenMap = EMPTY  # node id -> the store it keeps while down (what its restart recovers)
    appended_at: FrozenMap = EMPTY  # offset -> when the master appended a message there (latest APPENDED_KEPT)
    tail_puts: FrozenMap = EMPTY  # msg id -> (appended at, why fault-free service owes it PUT_OK): HA-Q
    tail_failed: tuple = ()  # (msg id, appended at, answered at, status) of such puts answered otherwise
    tail_slowest: tuple = ()  # (ms from the append to the answer, msg id, appended at) of the slowest PUT_OK


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
            if a.ack > a.master_max and (a.first or c.version == "4.9.2"):
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
    blob = ha.message_blob(copy.msg_id, copy.offset, copy.size)
    for slave, at in candidates:
        lost = g.lost_stores.get(slave)
        # that slave's latest OS crash (or disk loss) came after its ack and took this very copy
        if lost is not None and lost[0] >= at and st.holds(lost[1], copy.offset, blob) \
                and not st.holds(lost[2], copy.offset, blob):
            return "slave-page-cache", (f"{slave} acknowledged {copy.msg_id} from its page cache and lost it in an "
                                        f"OS crash or disk loss at t={lost[0]} ms (HAClient reports "
                                        f"getMaxPhyOffset, unflushed data included)")
    return None, None


def crash_note(g: HaGhost, w: core.World, i: int, kind: str, crashed: Any) -> HaGhost:
    """Broker i is crashing (the world before; `crashed` what it keeps): which acknowledged copies
    this crash takes from it, and, for the master's data loss, how far each slave reached."""
    if i not in broker_indices(w):
        return g.evolve(crash_dropped=frozenset())
    node_id = w.cfg.ids[i]
    g = g.evolve(down_stores=g.down_stores.set(node_id, crashed.store))
    if kind == "process":
        return g.evolve(crash_dropped=frozenset())
    durable = w.nodes[i].store.durable  # an OS crash may take only what was not on disk yet
    gone = frozenset(c.msg_id for c in g.acked if holders(w, c, [i])
                     and not st.holds(crashed.store, c.offset, ha.message_blob(c.msg_id, c.offset, c.size))
                     and (kind == "disk" or c.offset + c.size > durable))
    store = w.nodes[i].store
    g = g.evolve(crash_dropped=gone, lost_range=g.lost_range.set(
        node_id, (-1 if kind == "disk" else store.durable, st.max_offset(store))),
        lost_stores=g.lost_stores.set(node_id, (w.now, store, crashed.store)))
    if i == master_index(w):
        held = g.held_at_loss
        at_loss = {}
        for j in broker_indices(w):
            if j != i:
                top = st.max_offset(w.nodes[j].store)
                at_loss[w.cfg.ids[j]] = top
                if top > held.get(w.cfg.ids[j], -1):
                    held = held.set(w.cfg.ids[j], top)
        loss = MasterLoss(before=store, floor=st.max_offset(crashed.store), held=FrozenMap(at_loss))
        g = g.evolve(held_at_loss=held, master_losses=(g.master_losses + (loss,))[-MASTER_LOSSES_KEPT:])
    return g


def _loss_cause(g: HaGhost, w: core.World, event: Any, copy: Copy) -> tuple[str | None, str | None]:
    """The event removed the last copy of an acknowledged message; the known causes:
    data loss (an OS crash or disk loss) that took this very copy from the crashed broker,
    or recovery of a slave that holds bytes the master lost and was then streamed the
    master's new bytes from inside a message."""
    if isinstance(event, core.Crash) and event.kind() != "process" and copy.msg_id in g.crash_dropped:
        what = "disk loss" if event.disk else "an OS crash (its unflushed page cache)"
        if w.cfg.proto.store.broker_role is BrokerRole.ASYNC_MASTER:
            return "async-master", (f"ASYNC_MASTER acknowledges before any slave has the message; the last copy was "
                                    f"on {w.cfg.ids[event.node]}, lost in {what}")
        return "data-loss", f"the last copy was on {w.cfg.ids[event.node]}, lost in {what}; no other copy survived"
    if isinstance(event, (core.Restart, core.Calm)) and g.master_floor >= 0:
        m = master_index(w)
        nodes = [event.node] if isinstance(event, core.Restart) else list(broker_indices(w))
        blob = ha.message_blob(copy.msg_id, copy.offset, copy.size)
        for j in nodes:
            end = st.max_offset(w.nodes[j].store)
            kept = g.down_stores.get(w.cfg.ids[j])  # what it held while down: recovery cut this very copy
            if j != m and g.master_floor <= end <= copy.offset and kept is not None and st.holds(kept, copy.offset,
                                                                                                  blob):
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
    """Fold one observation (or a fault event, node -1) into the ghost: the step of its type in
    `UPDATES` (or, for the world's own stream observations, of its name in `UPDATES_BY_NAME`);
    other observations leave it as it is."""
    t = type(o)
    step = UPDATES.get(t) or UPDATES_BY_NAME.get(t.__name__)
    return g if step is None else step(g, w, i, o)


def _frame_sent(g: HaGhost, w: core.World, i: int, o: FrameSent) -> HaGhost:
    return g.evolve(frames=g.frames.set(o.conn, g.frames.get(o.conn, ()) + ((o.offset, o.size, o.crc),)))


def _frame_read(g: HaGhost, w: core.World, i: int, o: FrameRead) -> HaGhost:
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


def _frame_rejected(g: HaGhost, w: core.World, i: int, o: FrameRejected) -> HaGhost:
    q = g.frames.get(o.conn, ())
    if not q or q[0][0] != o.offset:
        g = _framing(g, f"connection {o.conn}: the slave decoded a header at offset {o.offset}, the master sent "
                        f"{q[0] if q else 'nothing more'}")
    return g.evolve(frames=g.frames.without(o.conn))


def _reported(g: HaGhost, w: core.World, i: int, o: Reported) -> HaGhost:
    if o.written == 8:
        base, vals = g.reports.get(o.conn, (0, ()))
        g = g.evolve(reports=g.reports.set(o.conn, (base, vals + (o.offset,))))
    return g


def _appended(g: HaGhost, w: core.World, i: int, o: Appended) -> HaGhost:
    if i != master_index(w):
        return g
    at = g.appended_at.set(o.offset, w.now)
    if len(at) > APPENDED_KEPT:
        at = at.without(min(at, key=at.get))
    g = g.evolve(appended_at=at)
    why = _owed_put_ok(w, o) if w.history.calm else None
    return g.evolve(tail_puts=g.tail_puts.set(o.msg_id, (w.now, why))) if why else g


def _segment_delivered(g: HaGhost, w: core.World, i: int, o: Any) -> HaGhost:
    return g.evolve(up_bytes=g.up_bytes.set(o.conn, g.up_bytes.get(o.conn, 0) + o.size)) if o.to_master else g


def _connected(g: HaGhost, w: core.World, i: int, o: Any) -> HaGhost:
    live = {c.id for c in w.ext.conns}
    return g.evolve(frames=_only(g.frames, live), reports=_only(g.reports, live), up_bytes=_only(g.up_bytes, live))


def _crash(g: HaGhost, w: core.World, i: int, o: core.Crash) -> HaGhost:
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
    return _check_losses(g, w, o).evolve(crash_dropped=frozenset())


def _restart(g: HaGhost, w: core.World, i: int, o: core.Restart) -> HaGhost:
    g = _check_losses(_master_recovered(g, w) if o.node == master_index(w) else g, w, o)
    node_id = w.cfg.ids[o.node]
    return g.evolve(down_stores=g.down_stores.without(node_id)) if node_id in g.down_stores else g


def _calm(g: HaGhost, w: core.World, i: int, o: core.Calm) -> HaGhost:
    """Every broker still down restarts now."""
    g = _check_losses(_master_recovered(g, w), w, o).evolve(down_stores=EMPTY)
    target = st.max_offset(w.nodes[master_index(w)].store)
    caught = {w.cfg.ids[j]: w.now for j in broker_indices(w)
              if j != master_index(w) and st.max_offset(w.nodes[j].store) >= target}
    return g.evolve(calm_target=target, caught_up=FrozenMap(caught))


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
    f = Finding(msg_id="", offset=o.offset, at_ms=w.now, cause=cause, code="empty-file" if cause else None,
                size=o.size, crc=o.crc)
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
    losses = g.master_losses
    if losses and not losses[-1].recovered:
        last = losses[-1]
        g = g.evolve(master_losses=losses[:-1] + (last.evolve(floor=min(last.floor, recovered), recovered=True),))
    return g.evolve(master_crash_max=-1)


def _only(m: FrozenMap, keys: set) -> FrozenMap:
    return m if all(k in keys for k in m) else FrozenMap((k, v) for k, v in m.items() if k in keys)


def _ack_read(g: HaGhost, w: core.World, i: int, o: AckRead) -> HaGhost:
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


def _prefix_copy(ms: Any, s: Any) -> bool:
    """Slave store `s` holds exactly the master's bytes wherever it holds any, and nothing beyond them."""
    if s.base < 0:
        return True
    top = st.max_offset(s)
    return ms.base >= 0 and ms.base <= s.base and top <= st.max_offset(ms) and \
        ms.data.startswith(s.data, s.base - ms.base)


def _owed_put_ok(w: core.World, o: Appended) -> str | None:
    """Why fault-free service owes the put just appended (in the quiet tail) a PUT_OK within
    syncFlushTimeout, or None when it does not: a SYNC_MASTER needs a slave to copy it."""
    c = w.cfg.proto
    if c.store.broker_role is not BrokerRole.SYNC_MASTER:
        return f"{c.store.broker_role.value} answers once the flush is done"
    m = master_index(w)
    ms = w.nodes[m].store
    open_conns = {x.id for x in w.nodes[m].conns if x.slave_request_offset >= 0}
    for j in broker_indices(w):
        s = w.nodes[j]
        if j != m and w.alive[j] and s.client.conn in open_conns and st.max_offset(s.store) >= o.offset \
                and _prefix_copy(ms, s.store):
            return (f"{w.cfg.ids[j]} held a prefix-copy of the master's CommitLog up to its max offset {o.offset} "
                    f"over an open connection")
    return None


def _put_result(g: HaGhost, w: core.World, i: int, o: PutResult) -> HaGhost:
    g = g.evolve(statuses=g.statuses.set(o.status, g.statuses.get(o.status, 0) + 1))
    owed = g.tail_puts.get(o.msg_id)
    if owed is not None:
        g = g.evolve(tail_puts=g.tail_puts.without(o.msg_id))
        if o.status != PutMessageStatus.PUT_OK.value:
            g = g.evolve(tail_failed=g.tail_failed + ((o.msg_id, owed[0], w.now, o.status),))
        elif not g.tail_slowest or w.now - owed[0] > g.tail_slowest[0]:
            g = g.evolve(tail_slowest=(w.now - owed[0], o.msg_id, owed[0]))
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


# What each observation (or fault event) does to the ghost, by its type, as core/transitions.py
# steps the world by the event's type.
UPDATES = {
    FrameSent: _frame_sent, FrameRead: _frame_read, FrameRejected: _frame_rejected, Reported: _reported,
    AckRead: _ack_read, PutResult: _put_result, Appended: _appended, core.Crash: _crash, core.Restart: _restart,
    core.Calm: _calm,
}
# The world's own stream observations, by name: ha/world.py defines them and imports this module.
UPDATES_BY_NAME = {"SegmentDelivered": _segment_delivered, "Connected": _connected}
