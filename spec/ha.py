"""Master/slave HA replication properties (docs/properties.md: HA-*).

Each predicate reads a world of the `ha` protocol: broker states (reference_impl.ha),
the connection table (reference_impl.ha.world) and the ghost variables of
reference_impl.ha.ghost. Causes of expected violations are read from the history of
the world being checked (docs/ha.md lists them).
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.ha import commit_log as st
from reference_impl.ha.ghost import broker_indices, master_index
from reference_impl.ha.records import FrameRead, FrameRejected, TransferStart
from spec import bounds, ha_decisions
from spec.properties import Property, register

HA_L_BOUND_MS = 30_000  # connect timeout 5 s + reconnect wait 5 s + first report 5 s, and slack for the transfer


def _slaves(w: core.World) -> list[int]:
    m = master_index(w)
    return [j for j in broker_indices(w) if j != m]


def _stores(w: core.World) -> tuple:
    return tuple(w.nodes[j].store for j in broker_indices(w))


# --- HA-1: the slave's bytes are a prefix-copy of the master's ---


def divergence(w: core.World, j: int) -> int:
    """The first offset at which slave j's CommitLog holds a byte that is not the master's at that
    offset, or -1 if it is a prefix-copy."""
    ms, s = w.nodes[master_index(w)].store, w.nodes[j].store
    if s.base < 0:
        return -1
    mmax, smax = st.max_offset(ms), st.max_offset(s)
    lo, hi = s.base, min(smax, mmax)
    if lo < hi:
        if ms.base < 0 or ms.base > lo:
            return lo
        mine = s.data if hi == smax else s.data[:hi - lo]
        if not ms.data.startswith(mine, lo - ms.base):  # one memcmp, no copy in the usual case
            theirs = ms.data[lo - ms.base:hi - ms.base]
            k = 0
            step = 4096
            while mine[k:k + step] == theirs[k:k + step]:
                k += step
            return lo + next(x for x in range(k, hi - lo) if mine[x] != theirs[x])
    # beyond the master's max offset, where the slave's CommitLog holds bytes at all: a slave restarted
    # empty is fed from the master's last mapped file (HA-5), so it may start above that max offset
    return max(mmax, lo) if smax > mmax else -1


def ha1(w: core.World) -> bool:
    return all(divergence(w, j) < 0 for j in _slaves(w))


def _bytes(s: Any, lo: int, hi: int) -> bytes | None:
    """A store's bytes in [lo, hi), or None when it does not hold all of them."""
    if s.base < 0 or lo < s.base or hi > st.max_offset(s):
        return None
    return s.data[lo - s.base:hi - s.base]


def _common(a: bytes, b: bytes) -> int:
    """The length of the common prefix of two byte strings."""
    n = min(len(a), len(b))
    k, step = 0, 4096
    while k + step <= n and a[k:k + step] == b[k:k + step]:
        k += step
    while k < n and a[k] == b[k]:
        k += 1
    return k


def _lost_by_master(w: core.World, j: int, d: int) -> str | None:
    """Slave j differs from the master at d because it holds what the master lost: from d to its
    max offset, every byte of it is the master's byte at that offset now, or from before a data loss
    of the master that left the master at or below that offset while j held it (slaves are never
    truncated, and they append only what the master streamed: bytes it had then)."""
    slave, s = w.cfg.ids[j], w.nodes[j].store
    ms = w.nodes[master_index(w)].store
    regions = [(ms, -1, st.max_offset(ms))]
    for loss in reversed(w.ghost.master_losses):
        hi = min(loss.held.get(slave, -1), st.max_offset(loss.before))
        if loss.floor < hi:
            regions.append((loss.before, loss.floor, hi))
    if len(regions) == 1:
        return None
    top = st.max_offset(s)
    if d >= top:
        return _end_lost_by_master(w, j, regions[1:])
    x = d
    lost = False
    while x < top:
        run, by_loss = 0, False
        for store, floor, hi in regions:
            if floor <= x < hi:
                end = min(hi, top)
                mine, theirs = _bytes(s, x, end), _bytes(store, x, end)
                if mine is not None and theirs is not None:
                    n = _common(mine, theirs)
                    if n > run:
                        run, by_loss = n, floor >= 0
        if run == 0:
            return None
        lost = lost or by_loss
        x += run
    if not lost:
        return None
    floor = min(f for _, f, _ in regions[1:])
    return (f"the master lost its data above {floor} in OS crashes or disk losses while {slave} had it, and {slave} "
            f"differs at {d}: from there it holds the master's bytes from before those losses (and the master's "
            f"own where they agree); classic HA never truncates a slave")


def _end_lost_by_master(w: core.World, j: int, losses: list) -> str | None:
    """Slave j holds no byte past the master's max offset, yet its CommitLog ends beyond it: an
    empty mapped file (recovery after an OS crash keeps a file whose data was never flushed, and
    CommitLog#recover* sets the max offset to the file's start). That end is the master's loss if
    one of its OS crashes or disk losses left it below that end while the master had reached it
    and j's CommitLog already ended there (`losses`: (CommitLog before, floor, min(j's max offset
    then, that CommitLog's max offset)))."""
    slave, top = w.cfg.ids[j], st.max_offset(w.nodes[j].store)
    floors = [floor for _, floor, hi in losses if floor < top <= hi]
    if not floors:
        return None
    return (f"the master lost its data above {min(floors)} in an OS crash or disk loss when {slave}'s CommitLog "
            f"already ended at {top}, and {slave} holds no byte there: its last mapped file, from {top}, is empty "
            f"(recovery keeps a file whose data an OS crash took); classic HA never truncates a slave")


def _misplaced(w: core.World, j: int) -> str | None:
    """F3 (empty-file): slave j still holds, at the start of its CommitLog, the frame it appended
    there instead of at the frame's offset."""
    f = w.ghost.misplaced.get(w.cfg.ids[j])
    s = w.nodes[j].store
    if f is None or not f.cause or s.base != 0 or len(s.data) < f.size or st.crc32(s.data[:f.size]) != f.crc:
        return None
    return f.cause


def ha1_expected(w: core.World, event: Any = None) -> str | None:
    causes = []
    for j in _slaves(w):
        d = divergence(w, j)
        if d < 0:
            continue
        cause = _lost_by_master(w, j, d) or _misplaced(w, j)
        if cause is None:
            return None
        causes.append(cause)
    return "; ".join(dict.fromkeys(causes)) or None


def ha1_explain(w: core.World) -> str:
    m = w.nodes[master_index(w)]
    return "; ".join(f"{w.cfg.ids[j]} differs from the master from offset {d} (slave max "
                     f"{st.max_offset(w.nodes[j].store)}, master max {st.max_offset(m.store)})"
                     for j in _slaves(w) if (d := divergence(w, j)) >= 0)


# --- HA-2: acks never exceed what the slave has; push2SlaveMaxOffset never decreases ---


def ha2(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    m = master_index(after)
    if before.nodes[m] is after.nodes[m]:
        return True
    b, a = before.nodes[m], after.nodes[m]
    if before.alive[m] and after.alive[m] and b.incarnation == a.incarnation and a.push2slave_max < b.push2slave_max:
        return False
    if not after.alive[m]:
        return True
    ids = after.cfg.ids
    for conn in a.conns:
        if conn.slave_ack_offset >= 0:
            j = ids.index(conn.slave)
            s = after.nodes[j]
            if after.alive[j] and s.client.conn == conn.id and conn.slave_ack_offset > st.max_offset(s.store):
                return False
    return True


# --- HA-3: SYNC_MASTER: a PUT_OK message is on a slave when the producer gets the ack ---


def _all_known(findings: tuple) -> str | None:
    if not findings or any(f.cause is None for f in findings):
        return None
    causes = list(dict.fromkeys(f.cause for f in findings))
    return causes[-1] if len(causes) == 1 else f"{len(causes)} causes, latest: {causes[-1]}"


def ha3_expected(w: core.World, event: Any = None) -> str | None:
    return _all_known(w.ghost.missing)


def _findings(findings: tuple, what: str) -> str:
    last = findings[-1]
    unexplained = sum(f.cause is None for f in findings)
    return (f"{len(findings)} {what}, {unexplained} without a known cause; latest {last.msg_id} at offset "
            f"{last.offset} (t={last.at_ms} ms): {last.cause or 'no known cause'}")


# --- HA-5: a slave asking for 0 starts at the master's last mapped file ---


def ha5(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i, o in obs:
        if type(o) is TransferStart:
            mo = st.max_offset(before.nodes[i].store)
            size = bounds.setting(after, "mapped_file_size_commit_log")
            if o.start != (o.request if o.request != 0 else mo - mo % size):
                return False
    return True


# --- HA-6: a frame is appended at its own offset only; a mismatch drops the connection ---


def ha6(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    for i, o in obs:
        t = type(o)
        if t is FrameRead and o.appended:
            s = after.nodes[i].store
            start = o.offset - s.base
            if s.base < 0 or start < 0 or start + o.size > len(s.data) or \
                    st.crc32(s.data[start:start + o.size]) != o.crc:
                return False
        elif t is FrameRejected:
            cl = after.nodes[i].client
            if cl.conn == o.conn or (cl.conn == 0 and cl.next_connect_ms != after.now and not cl.connecting):
                return False
    return True


def ha6_expected(w: core.World, event: Any = None) -> str | None:
    now = [f for f in w.ghost.misplaced.values() if f.at_ms == w.now]
    return _all_known(tuple(now))


# --- HA-8: push2SlaveMaxOffset never exceeds the master's max offset ---


def ha8(w: core.World) -> bool:
    m = master_index(w)
    return not w.alive[m] or w.nodes[m].push2slave_max <= st.max_offset(w.nodes[m].store)


def ha8_expected(w: core.World, event: Any = None) -> str | None:
    p2 = w.ghost.p2
    m = master_index(w)
    if w.cfg.proto.version == "fixed" or p2 is None or p2[0] != w.nodes[m].incarnation:
        return None
    a = p2[1]
    if a.ack == w.nodes[m].push2slave_max and a.ack > a.master_max and (a.first or w.cfg.proto.version == "4.9.2"):
        return (f"{'the first report' if a.first else 'a report'} of {a.slave} ({a.ack}) exceeded the master's max "
                f"offset ({a.master_max}) and was taken: " + ("4.9.4 checks only later acks (#3015)" if a.first
                                                              else "4.9.0-4.9.2 check no report (#3015)"))
    return None


# --- HA-L: after faults stop, consistent slaves catch up ---


def ha_l(w: core.World) -> bool:
    h = w.history
    if not h.calm or w.now - h.calm_at_ms <= HA_L_BOUND_MS:
        return True
    caught = w.ghost.caught_up
    return all(w.cfg.ids[j] in caught or not w.alive[j] or divergence(w, j) >= 0 for j in _slaves(w))


def ha_l_explain(w: core.World) -> str:
    late = [w.cfg.ids[j] for j in _slaves(w) if w.cfg.ids[j] not in w.ghost.caught_up]
    return (f"{', '.join(late)} not at the master's max offset at calm ({w.ghost.calm_target}) "
            f"{w.now - w.history.calm_at_ms} ms after faults stopped")


# --- HA-Q: fault-free service in the quiet tail ---


def ha_q_bound_ms(w: core.World) -> int:
    """syncFlushTimeout (RocketMQ's default, spec/bounds.py, or the user's), plus the quiet tail's
    message delay each way."""
    return bounds.setting(w, "sync_flush_timeout") + 2 * core.CALM_DELAY_MS[1]


def _tail_problems(w: core.World) -> list[str]:
    g = w.ghost
    if not (g.tail_puts or g.tail_failed or g.tail_slowest):
        return []
    bound = ha_q_bound_ms(w)
    out = [f"{msg} (appended at {t} ms) was answered {status} at {at} ms" for msg, t, at, status in g.tail_failed]
    if g.tail_slowest and g.tail_slowest[0] > bound:
        ms, msg, t = g.tail_slowest
        out.append(f"{msg} (appended at {t} ms) was answered PUT_OK only after {ms} ms")
    out += [f"{msg} (appended at {t} ms, while {why}) has no answer after {w.now - t} ms"
            for msg, (t, why) in g.tail_puts.items() if w.now - t > bound]
    return out


def ha_q(w: core.World) -> bool:
    return not _tail_problems(w)


def ha_q_explain(w: core.World) -> str:
    problems = _tail_problems(w)
    return f"{len(problems)} put(s) of the quiet tail not answered PUT_OK within {ha_q_bound_ms(w)} ms; " + \
        "; ".join(problems[:3])


LOST_CAUSES = ("async-master", "data-loss", "diverged-slave")  # ha_ghost._loss_cause
MISSING_CAUSES = ("first-report", "transfer-start", "slave-page-cache")  # ha_ghost.ha3_cause
STATUSES = ("PUT_OK", "NO_RESPONSE", "SLAVE_NOT_AVAILABLE", "FLUSH_SLAVE_TIMEOUT")


def measure(w: core.World) -> dict:
    """Measured quantities of one history, all scalars: what producers saw, acknowledged
    messages lost or on no slave at ack time (by cause, docs/ha.md), how far the slaves
    are behind, and how long they took to catch up after faults stopped."""
    g, h = w.ghost, w.history
    out: dict = {f"puts_{s.lower()}": g.statuses.get(s, 0) for s in STATUSES}
    out["acked_lost"] = len(g.lost)
    for code in LOST_CAUSES:
        out[f"lost_{code.replace('-', '_')}"] = sum(f.code == code for f in g.lost)
    out["missing_at_ack"] = len(g.missing)
    for code in MISSING_CAUSES:
        out[f"missing_{code.replace('-', '_')}"] = sum(f.code == code for f in g.missing)
    out["misplaced_frames"] = len(g.misplaced)
    out["unexplained"] = sum(f.cause is None for f in g.lost + g.missing + tuple(g.misplaced.values()))
    catch = [t - h.calm_at_ms for t in g.caught_up.values()] if h.calm else []
    out["catch_up_ms"] = max(catch) if catch else None
    maxes = [st.max_offset(w.nodes[j].store) for j in broker_indices(w)]
    out["master_max_offset"] = maxes[0]
    out["slave_lag_bytes"] = maxes[0] - min(maxes[1:]) if len(maxes) > 1 else 0
    out["crashes"] = h.crashes
    out["data_losses"] = h.os_crashes
    return out


PROPERTIES = [
    Property(id="HA-1", protocol="ha", kind="safety", holds=ha1, expected_when=ha1_expected, explain=ha1_explain,
             reads=_stores,
             statement="Every slave's CommitLog is a prefix-copy of the master's: the same bytes at the same offsets, "
                       "and no byte beyond the master's max offset."),
    Property(id="HA-2", protocol="ha", kind="safety", holds_step=ha2,
             statement="The master's slaveAckOffset for a connection never exceeds the max offset of the slave at its "
                       "other end; push2SlaveMaxOffset never decreases while the master runs."),
    Property(id="HA-3", protocol="ha", kind="safety", holds=lambda w: not w.ghost.missing, expected_when=ha3_expected,
             explain=lambda w: _findings(w.ghost.missing, "PUT_OK message(s) on no slave at ack time"),
             reads=lambda w: (w.ghost.missing,),
             statement="SYNC_MASTER: when a producer gets PUT_OK, the message's bytes are on a slave at its offset."),
    Property(id="HA-4", protocol="ha", kind="expected", holds=lambda w: not w.ghost.lost,
             expected_when=lambda w, e=None: _all_known(w.ghost.lost),
             explain=lambda w: _findings(w.ghost.lost, "acknowledged message(s) lost"),
             reads=lambda w: (w.ghost.lost,),
             statement="An acknowledged (PUT_OK) message stays on some broker. ASYNC_MASTER loses it when the master's "
                       "disk (or unflushed page cache) is lost before a slave copied it: expected."),
    Property(id="HA-5", protocol="ha", kind="safety", holds_step=ha5,
             statement="A slave that asks for offset 0 is fed from the start of the master's last mapped file; "
                       "any other request offset is fed from that offset."),
    Property(id="HA-6", protocol="ha", kind="safety", holds_step=ha6, expected_when=ha6_expected,
             statement="A frame's body is appended at the frame's offset only; a frame whose offset is not the "
                       "slave's max offset is never appended, and the slave drops the connection and reconnects."),
    Property(id="HA-7", protocol="ha", kind="safety", holds=lambda w: w.ghost.framing is None,
             explain=lambda w: w.ghost.framing, reads=lambda w: (w.ghost.framing,),
             statement="Framing: however the byte streams are cut into segments, the slave decodes exactly the frames "
                       "the master wrote and the master reads exactly the reports the slave wrote."),
    Property(id="HA-8", protocol="ha", kind="safety", holds=ha8, expected_when=ha8_expected,
             reads=lambda w: (w.nodes[master_index(w)], w.alive),
             statement="push2SlaveMaxOffset never exceeds the master's own max offset (the #3015 guard)."),
    Property(id="HA-L", protocol="ha", kind="bounded", holds=ha_l, explain=ha_l_explain,
             statement=f"After faults stop, every live slave whose CommitLog is a prefix-copy of the master's reaches "
                       f"the master's max offset of that moment within {HA_L_BOUND_MS} ms; the time is reported."),
    Property(id="HA-Q", protocol="ha", kind="bounded", holds=ha_q, explain=ha_q_explain,
             statement="After faults stop, a put is answered PUT_OK within syncFlushTimeout (5 s; plus the message "
                       "delays): every put of an ASYNC_MASTER (a SYNC_FLUSH one once flushed), and a SYNC_MASTER's "
                       "while a live slave holding a prefix-copy of the master's CommitLog up to its max offset has "
                       "an open connection."),
] + ha_decisions.PROPERTIES

register(PROPERTIES)
