"""Turning the dledger_log twin's state table back into reference objects.

Used for counterexamples, for cause questions and by the cross-check gates: `server`, `client`, `store`,
`pusher` and `handler` build the reference's dataclasses (reference_impl/dledger_log/*) from a twin's rows so
the two worlds can be compared field by field. Decoded entries and stores are memoised per history."""

from __future__ import annotations

from types import SimpleNamespace

from histories.fast.core.layout import (
    E_DST,
    E_FIELDS,
    E_ID,
    E_KIND,
    E_REPLY,
    E_RPC,
    E_SENT,
    E_SRC,
    R_CONTEXT,
    R_CONTEXT_1,
    R_CONTEXT_2,
    R_CONTEXT_3,
    R_DEADLINE,
    R_ID,
    R_REQUESTER,
    R_RESPONDER,
    R_WINDOW,
    W_CALM,
    W_CALM_AT,
    W_CRASHES,
    W_DISK_LOSSES,
    W_FLIGHT,
    W_FRESH,
    W_LAST_FAULT,
    W_LOST_WRITES,
    W_NEXT_ID,
    W_NOW,
    W_OS_CRASHES,
    W_RPCS,
)
from histories.fast.dledger_log.layout import (
    CTX_TERM_SHIFT,
    D_BLOCKED,
    D_HAS_RESPONSE,
    D_RESPONSE_BEGIN,
    D_RESPONSE_CODE,
    D_RESPONSE_END,
    D_RESPONSE_INDEX,
    D_RESPONSE_TERM,
    D_WAIT_UNTIL,
    H_WOKEN,
    P_CHECKER_WOKEN,
    ACKED,
    ACKED_COUNTS,
    ACKED_ORDER,
    APPEND_ENTRY_REQUEST,
    APPEND_ENTRY_RESPONSE,
    CLIENTS,
    CL_LEADER_ID,
    CL_NEXT_APPEND_MS,
    CL_SEQ,
    CL_WAITING,
    COMMITTED,
    COMMITTED_ORDER,
    CONFLICTS,
    CONFLICT_COUNTS,
    CONFLICT_ORDER,
    CONFLICT_TERMS,
    COUNTED,
    COUNTED_COUNTS,
    COUNTED_ORDER,
    CTX_APPEND,
    CTX_PUSH,
    C_BODY_LENGTH,
    DISPATCHERS,
    DROPPED_ENTRIES,
    DROPS,
    DR_AT,
    DR_ENTRIES,
    DR_FLUSHED,
    DR_HIGH,
    DR_HOW,
    DR_LEADER,
    DR_LOW,
    DR_SEQ,
    DR_SERVER,
    DR_STALE,
    DR_TERM,
    D_COMPARE_INDEX,
    D_LAST_CHECK_LEAK_MS,
    D_LAST_PUSH_COMMIT_MS,
    D_LEADER_ID,
    D_PENDING_HIGH,
    D_PENDING_LOW,
    D_SEQ,
    D_SLEEP_UNTIL,
    D_TERM,
    D_TRUNCATE_INDEX,
    D_TYPE,
    D_WAITING,
    D_WRITE_INDEX,
    ELECTED,
    ENTRIES,
    HANDLER,
    HANDLER_QUEUE,
    HOW_NAMES,
    H_LAST_CHECK_FAST_FORWARD_MS,
    H_QUEUE,
    H_WRITE_HIGH,
    H_WRITE_LOW,
    LAST_SEQS,
    LEADERSHIPS,
    LIVENESS,
    LV_TRANSFER_SINCE,
    MESSAGE_FIELDS,
    NO_INDEX,
    PD_CREATED_MS,
    PD_DONE,
    PD_INDEX,
    PD_POS,
    PD_REF,
    PD_RPC,
    PD_TERM,
    PENDING,
    PENDING_MAPS,
    PENDING_TERMS,
    PUSHER,
    PUSH_ENTRY_REQUEST,
    PUSH_ENTRY_RESPONSE,
    PUSH_TYPES,
    PW_ANSWERED,
    PW_CREATED_MS,
    PW_PRESENT,
    PW_REQUEST,
    PW_RPC,
    P_EPOCH,
    P_LAST_CHECK_LEAK_MS,
    P_LAST_QUORUM_INDEX,
    P_PENDING,
    P_PENDING_TERMS,
    P_WATER_MARK_TERMS,
    REGRESSED,
    RESULTS,
    RQ_COMMIT_INDEX,
    RQ_ENTRY_BODY,
    RQ_ENTRY_INDEX,
    RQ_ENTRY_POS,
    RQ_ENTRY_SIZE,
    RQ_ENTRY_TERM,
    RQ_HAS_ENTRY,
    RQ_LEADER_ID,
    RQ_SEQ_COUNT,
    RQ_SEQ_EPOCH,
    RQ_TERM,
    RQ_TYPE,
    STORE,
    S_BEGIN_INDEX,
    S_CHECK_POINT,
    S_CHECK_POINT_DUE_MS,
    S_COMMITTED_INDEX,
    S_COMMITTED_POS,
    S_END_TERM,
    S_ENTRIES,
    S_FLUSHED_INDEX,
    S_FLUSH_DUE_MS,
    S_LAST_CHECK_POINT_MS,
    S_MIN_POS,
    TERMS_LOST,
    THIN,
    THIN_ORDER,
    TH_AT,
    TH_ENTRY_TERM,
    TH_HOLDERS,
    TH_LEADER,
    TH_TERM,
    TH_WHAT,
    VOTES,
    WATER_MARK_TERMS,
    WRITE_REQUESTS,
    W_ACKED,
    W_AGREED,
    W_AGREED_SINCE,
    W_APPENDS,
    W_COMMITTED,
    W_CONFLICTS,
    W_COUNTED,
    W_DROPS,
    W_FIRST_ACK,
    W_LEADERSHIPS,
    W_NOTES,
    W_SETTLED_LEADER,
    W_SETTLED_LEADER_TERM,
    W_TERMS_LOST,
    W_THIN,
    W_TOP_TERM,
    W_VOTES,
)
from histories.fast.election import decode as election_decode
from histories.fast.election.layout import (
    C_PEERS,
    MEMBERS,
    NN_STRAGGLER_SINCE,
    PEERS_LIVE,
    WATER_MARKS,
)
from reference_impl import core
from reference_impl.core import network as net
from reference_impl.core.state import EMPTY, FrozenMap
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import ghost as lg
from reference_impl.dledger_log import server as dn
from reference_impl.dledger_log import store as st
from reference_impl.dledger_log import world as lw
from reference_impl.election import ghost as eg
from reference_impl.election import records as el



CODE_NAMES = {int(c): c.name for c in el.Code}


def id_or_none(ids, i):
    return ids[int(i)] if i >= 0 else None


def body(c, code: int):
    """An entry body from its code (dledger_log_layout: client k's seq, or the no-op)."""
    code = int(code)
    if code == 0:
        return st.NOOP
    return st.Body(key=f"c{(code >> 32) - 1}-{code & 0xFFFFFFFF}", length=int(c[C_BODY_LENGTH]))


# Entries are immutable values and a history's logs hold the same ones at every pause of
# the kernel (dledger_log_causes), so each is made once; bounded like the other memos.
_ENTRY_MEMO: dict = {}  # (body length, index, term, pos, size, body code) -> Entry


_STORE_MEMO: dict = {}  # the store's row and entry rows as bytes (and the body length) -> Store


_MEMO_CAP = 1 << 18


def entry(c, index, term, pos, size, b) -> st.Entry:
    key = (int(c[C_BODY_LENGTH]), int(index), int(term), int(pos), int(size), int(b))
    e = _ENTRY_MEMO.get(key)
    if e is None:
        if len(_ENTRY_MEMO) >= _MEMO_CAP:
            _ENTRY_MEMO.clear()
        e = _ENTRY_MEMO[key] = st.Entry(index=key[1], term=key[2], pos=key[3], size=key[4], body=body(c, key[5]))
    return e


def entries(c, first: int, rows) -> tuple:
    """The entries of index first, first + 1, ... from rows of (term, pos, size, body code)."""
    blen = int(c[C_BODY_LENGTH])
    get = _ENTRY_MEMO.get
    out = []
    for k, (term, pos, size, b) in enumerate(rows.tolist()):
        e = get((blen, first + k, term, pos, size, b))
        out.append(e if e is not None else entry(c, first + k, term, pos, size, b))
    return tuple(out)


def request(p, row, at: int, remote: str) -> ep.PushEntryRequest:
    """A PushEntryRequest from its fields row[at + RQ_*]."""
    cfg = p.cfg
    f = [int(x) for x in row[at:at + MESSAGE_FIELDS]]
    e = None
    if f[RQ_HAS_ENTRY]:
        e = entry(p.config, f[RQ_ENTRY_INDEX], f[RQ_ENTRY_TERM], f[RQ_ENTRY_POS], f[RQ_ENTRY_SIZE], f[RQ_ENTRY_BODY])
    return ep.PushEntryRequest(group=cfg.proto.node.dledger.group, remote_id=remote,
                               leader_id=id_or_none(cfg.ids, f[RQ_LEADER_ID]), term=f[RQ_TERM], type=PUSH_TYPES[f[RQ_TYPE]],
                               entry=e, commit_index=f[RQ_COMMIT_INDEX], seq=(f[RQ_SEQ_EPOCH], f[RQ_SEQ_COUNT]))


def store(p, s, i) -> st.Store:
    sto = s.slots[STORE][i]
    ent = s.slots[ENTRIES][i]
    n = int(sto[S_ENTRIES])
    key = sto.tobytes() + ent[:n].tobytes() + p.config[C_BODY_LENGTH:C_BODY_LENGTH + 1].tobytes()
    hit = _STORE_MEMO.get(key)
    if hit is not None:
        return hit
    b = int(sto[S_BEGIN_INDEX])
    out = st.Store(entries=store_entries(p, s, i, b, ent[:n]), begin_index=b, end_term=int(sto[S_END_TERM]),
                   committed_index=int(sto[S_COMMITTED_INDEX]), committed_pos=int(sto[S_COMMITTED_POS]),
                   min_pos=int(sto[S_MIN_POS]), flushed_index=int(sto[S_FLUSHED_INDEX]),
                   flush_due_ms=int(sto[S_FLUSH_DUE_MS]), check_point=int(sto[S_CHECK_POINT]),
                   last_check_point_ms=int(sto[S_LAST_CHECK_POINT_MS]), check_point_due_ms=int(sto[S_CHECK_POINT_DUE_MS]))
    if len(_STORE_MEMO) >= 4096:
        _STORE_MEMO.clear()
    _STORE_MEMO[key] = out
    return out


def store_entries(p, s, i, b: int, rows) -> tuple:
    """Server i's entries from `rows` (begin index b): a log mostly grew or lost its tail since the
    last pause of this history, so the prefix equal to the last decoding is kept (State.memo)."""
    key = ("store", i)
    hit = s.memo.get(key)
    k = 0
    if hit is not None and hit[0] == b:
        m = min(len(rows), len(hit[1]))
        diff = (rows[:m] != hit[1][:m]).any(axis=1).nonzero()[0]
        k = int(diff[0]) if len(diff) else m
    out = (hit[2][:k] if k else ()) + entries(p.config, b + k, rows[k:])
    s.memo[key] = (b, rows.copy(), out)
    return out


def pusher(p, s, i) -> ep.Pusher:
    ids = p.cfg.ids
    n = int(p.config[C_PEERS])
    pusher_row = s.slots[PUSHER][i]
    wmt = s.slots[WATER_MARK_TERMS][i]
    marks = FrozenMap({int(wmt[r, 0]): tuple(int(x) for x in wmt[r, 1:1 + n]) for r in range(int(pusher_row[P_WATER_MARK_TERMS]))})
    pend = s.slots[PENDING][i]
    rows = [pend[r] for r in range(int(pusher_row[P_PENDING]))]
    pending = {}
    for t in s.slots[PENDING_TERMS][i][:int(pusher_row[P_PENDING_TERMS])]:
        pending[int(t)] = FrozenMap({int(r[PD_INDEX]): ep.PendingAppend(
            pos=int(r[PD_POS]), created_ms=int(r[PD_CREATED_MS]), ref=body(p.config, r[PD_REF]), rpc=int(r[PD_RPC]),
            done=bool(r[PD_DONE])) for r in rows if r[PD_TERM] == t})
    dispatchers = []
    dispatcher_rows = s.slots[DISPATCHERS][i]
    pending_maps = s.slots[PENDING_MAPS][i]
    for j in range(n):
        if j == i:
            continue
        d = dispatcher_rows[j]
        lo, hi = max(0, int(d[D_PENDING_LOW])), int(d[D_PENDING_HIGH])
        pmap = {k: int(pending_maps[j, k]) for k in range(lo, hi + 1) if pending_maps[j, k] >= 0}
        dispatchers.append(ep.Dispatcher(peer=ids[j], type=PUSH_TYPES[int(d[D_TYPE])], compare_index=int(d[D_COMPARE_INDEX]),
                                write_index=int(d[D_WRITE_INDEX]), term=int(d[D_TERM]), leader_id=id_or_none(ids, d[D_LEADER_ID]),
                                pending_map=FrozenMap(pmap) if pmap else EMPTY, last_push_commit_ms=int(d[D_LAST_PUSH_COMMIT_MS]),
                                last_check_leak_ms=int(d[D_LAST_CHECK_LEAK_MS]), waiting=int(d[D_WAITING]),
                                truncate_index=int(d[D_TRUNCATE_INDEX]), sleep_until=int(d[D_SLEEP_UNTIL]), seq=int(d[D_SEQ]),
                                blocked=None if d[D_BLOCKED] < 0 else PUSH_TYPES[int(d[D_BLOCKED])],
                                wait_until=int(d[D_WAIT_UNTIL]), response=dispatcher_response(d)))
    return ep.Pusher(water_marks=marks, pending=FrozenMap(pending), dispatchers=tuple(dispatchers),
                     last_quorum_index=int(pusher_row[P_LAST_QUORUM_INDEX]), last_check_leak_ms=int(pusher_row[P_LAST_CHECK_LEAK_MS]),
                     checker_woken=bool(pusher_row[P_CHECKER_WOKEN]), epoch=int(pusher_row[P_EPOCH]))


def dispatcher_response(d) -> ep.PushEntryResponse | None:
    """Dispatcher.response: what the future of the push a blocked thread waits on completed with."""
    if not d[D_HAS_RESPONSE]:
        return None
    index = int(d[D_RESPONSE_INDEX])
    return ep.PushEntryResponse(code=el.Code(int(d[D_RESPONSE_CODE])), term=int(d[D_RESPONSE_TERM]),
                                index=None if index == NO_INDEX else index, begin_index=int(d[D_RESPONSE_BEGIN]),
                                end_index=int(d[D_RESPONSE_END]))


def wait(p, row, remote) -> eh.PushWait:
    return eh.PushWait(request=request(p, row, PW_REQUEST, remote), rpc=int(row[PW_RPC]),
                       created_ms=int(row[PW_CREATED_MS]), answered=bool(row[PW_ANSWERED]))


def handler(p, s, i) -> eh.EntryHandler:
    ids = p.cfg.ids
    h = s.slots[HANDLER][i]
    write_requests = s.slots[WRITE_REQUESTS][i]
    lo, hi = max(0, int(h[H_WRITE_LOW])), int(h[H_WRITE_HIGH])
    reqs = {k: wait(p, write_requests[k], ids[i]) for k in range(lo, hi + 1) if write_requests[k, PW_PRESENT]}
    queue = tuple(wait(p, s.slots[HANDLER_QUEUE][i, q], ids[i]) for q in range(int(h[H_QUEUE])))
    lseq = s.slots[LAST_SEQS][i]
    seqs = {ids[j]: (int(lseq[j, 1]), int(lseq[j, 2])) for j in range(lseq.shape[0]) if lseq[j, 0]}
    return eh.EntryHandler(write_requests=FrozenMap(reqs) if reqs else EMPTY, queue=queue,
                           last_check_fast_forward_ms=int(h[H_LAST_CHECK_FAST_FORWARD_MS]), last_seq=FrozenMap(seqs) if seqs else EMPTY,
                           woken=bool(h[H_WOKEN]))


def server(p, s, i) -> dn.DLedgerNode:
    n = int(p.config[C_PEERS])
    dledger = p.cfg.proto.node.dledger
    shim = SimpleNamespace(ids=p.cfg.ids[:n], proto=SimpleNamespace(dledger=dledger))
    members, live, water_marks = s.slots[MEMBERS], s.slots[PEERS_LIVE], s.slots[WATER_MARKS]
    m = election_decode.member(shim, members, live, water_marks[:, :n], i)
    marks = FrozenMap({p.cfg.ids[j]: int(water_marks[i, j]) for j in range(n)}) if water_marks[i, n] == 1 else EMPTY
    m = m.evolve(peer_water_marks=marks)
    return dn.DLedgerNode(member=m, store=store(p, s, i), pusher=pusher(p, s, i), handler=handler(p, s, i))


def client(p, s, c) -> lw.LogClient:
    ids = p.cfg.ids
    n = int(p.config[C_PEERS])
    r = s.slots[CLIENTS][c]
    return lw.LogClient(self_id=ids[n + c], leader_id=id_or_none(ids, r[CL_LEADER_ID]), next_append_ms=int(r[CL_NEXT_APPEND_MS]),
                        seq=int(r[CL_SEQ]), waiting=bool(r[CL_WAITING]))


def message(p, row):
    cfg = p.cfg
    ids = cfg.ids
    message_kind = int(row[E_KIND])
    m = [int(x) for x in row[E_FIELDS:E_FIELDS + MESSAGE_FIELDS]]
    dst = ids[int(row[E_DST])]
    group = cfg.proto.node.dledger.group
    if message_kind == APPEND_ENTRY_REQUEST:
        return ep.AppendEntryRequest(group=group, remote_id=dst, body=body(p.config, m[0]))
    if message_kind == APPEND_ENTRY_RESPONSE:
        return ep.AppendEntryResponse(code=el.Code(m[0]), index=m[1], pos=m[2], term=m[3], leader_id=id_or_none(ids, m[4]))
    if message_kind == PUSH_ENTRY_REQUEST:
        return request(p, row, E_FIELDS, dst)
    if message_kind == PUSH_ENTRY_RESPONSE:
        return ep.PushEntryResponse(code=el.Code(m[0]), term=m[1], index=None if m[2] == NO_INDEX else m[2],
                                    begin_index=m[3], end_index=m[4])
    shim = SimpleNamespace(ids=ids, proto=SimpleNamespace(dledger=cfg.proto.node.dledger))
    return election_decode.message(shim, row)


def ctx(p, row):
    ids = p.cfg.ids
    context = int(row[R_CONTEXT])
    if context == CTX_PUSH:
        kind_and_term = int(row[R_CONTEXT_1])
        return ("push", PUSH_TYPES[kind_and_term & ((1 << CTX_TERM_SHIFT) - 1)].name, ids[int(row[R_CONTEXT_2])],
                int(row[R_CONTEXT_3]), kind_and_term >> CTX_TERM_SHIFT)
    if context == CTX_APPEND:
        return ("append", body(p.config, row[R_CONTEXT_1]).key)
    return election_decode.ctx(SimpleNamespace(ids=ids), row)


def frozen(d: dict) -> FrozenMap:
    return FrozenMap(d) if d else EMPTY


def table_rows(s, key: str, n: int, decode) -> tuple[list, bool]:
    """Rows 0..n-1 of an append-only table, decoding rows from the last call's count on."""
    done, out = s.memo.get(key, (0, []))
    if done == n:
        return out, False
    out.extend(decode(r) for r in range(done, n))
    s.memo[key] = (n, out)
    return out, True


def committed(p, s) -> FrozenMap:
    """LogGhost.committed: the first entry per index never changes; indexes in gco order."""
    committed_rows, order = s.slots[COMMITTED], s.slots[COMMITTED_ORDER]
    rows, new = table_rows(s, "committed", int(s.world[W_COMMITTED]),
                      lambda r: (int(order[r]), entry(p.config, order[r], *committed_rows[order[r], 1:5].tolist())))
    if new or "committed_map" not in s.memo:
        s.memo["committed_map"] = frozen(dict(rows))
    return s.memo["committed_map"]


def sets(p, s, key: str, table, counts, order, count: int) -> FrozenMap:
    """A per-index table of entry sets (conflicts, acked, counted): the indexes in `order`, each
    decoded again only when its count grew."""
    idx = order[:count]
    now = counts[idx]
    hit = s.memo.get(key)
    if hit is not None and len(hit[0]) == count and (hit[0] == now).all():
        return hit[2]
    d = dict(hit[1]) if hit is not None else {}
    old = hit[0] if hit is not None else now[:0]
    for j, k in enumerate(idx.tolist()):
        c = int(now[j])
        if j >= len(old) or old[j] != c:
            d[k] = frozenset(entry(p.config, k, *table[k, r].tolist()) for r in range(c))
    out = frozen(d)
    s.memo[key] = (now.copy(), d, out)
    return out


def ghost(p, s) -> lw.LogGhost:
    ids = p.cfg.ids
    counters = s.world
    G = s.slots
    node_count = len(ids)
    top = int(counters[W_TOP_TERM]) + 1
    elected = {t: frozenset(ids[i] for i in range(node_count) if G[ELECTED][t] >> i & 1) for t in range(top)
               if G[ELECTED][t]}
    regressed = {t: int(G[REGRESSED][t]) for t in range(top) if G[REGRESSED][t] >= 0}
    n_conflict = int(counters[W_CONFLICTS])
    conflicts = sets(p, s, "conflicts", G[CONFLICTS], G[CONFLICT_COUNTS], G[CONFLICT_ORDER], n_conflict)
    conflict_terms = {int(k): int(G[CONFLICT_TERMS][k]) for k in G[CONFLICT_ORDER][:n_conflict]}
    acked = sets(p, s, "acked", G[ACKED], G[ACKED_COUNTS], G[ACKED_ORDER], int(counters[W_ACKED]))
    counted = sets(p, s, "counted", G[COUNTED], G[COUNTED_COUNTS], G[COUNTED_ORDER], int(counters[W_COUNTED]))
    gres = G[RESULTS]
    results = {CODE_NAMES[c]: int(gres[c]) for c in CODE_NAMES if 0 <= c < len(gres) and gres[c]}
    n = int(p.config[C_PEERS])
    glv = G[LIVENESS]
    settled = int(counters[W_SETTLED_LEADER])
    return lg.LogGhost(elected=frozen(elected), regressed=frozen(regressed), committed=committed(p, s),
                       conflicts=conflicts, conflict_terms=frozen(conflict_terms), counted=counted, acked=acked,
                       thin=thin(p, s), led_ends=frozen({int(r[3]): int(r[4]) for r in G[LEADERSHIPS][:int(counters[W_LEADERSHIPS])]}),
                       drops=drops(p, s), terms=terms(p, s), agreed=bool(counters[W_AGREED]),
                       agreed_since=int(counters[W_AGREED_SINCE]),
                       settled_leader=(ids[settled], int(counters[W_SETTLED_LEADER_TERM])) if settled >= 0 else None,
                       stragglers=frozen({ids[k]: int(glv[k, NN_STRAGGLER_SINCE]) for k in range(n) if glv[k, NN_STRAGGLER_SINCE] >= 0}),
                       transfers=frozen({ids[k]: int(glv[k, LV_TRANSFER_SINCE]) for k in range(n)
                                      if glv[k, LV_TRANSFER_SINCE] >= 0}),
                       appends=int(counters[W_APPENDS]), results=frozen(results),
                       first_ack_after_calm_ms=int(counters[W_FIRST_ACK]))


def drops(p, s) -> tuple:
    """LogGhost.drops (rows only ever appended)"""
    ids = p.cfg.ids
    gdr, gdp = s.slots[DROPS], s.slots[DROPPED_ENTRIES]

    def drop(r: int) -> lg.Drop:
        d = gdr[r].tolist()
        lo, hi, pay = d[DR_LOW], d[DR_HIGH], d[DR_ENTRIES]
        return lg.Drop(server=ids[d[DR_SERVER]], at_ms=d[DR_AT], seq=d[DR_SEQ], how=HOW_NAMES[d[DR_HOW]],
                       entries=entries(p.config, lo, gdp[pay:pay + hi - lo + 1]), flushed=d[DR_FLUSHED],
                       leader=id_or_none(ids, d[DR_LEADER]), term=d[DR_TERM], stale=bool(d[DR_STALE]))

    rows, new = table_rows(s, "drops", int(s.world[W_DROPS]), drop)
    if new or "drops_t" not in s.memo:
        s.memo["drops_t"] = tuple(rows)
    return s.memo["drops_t"]


def thin(p, s) -> FrozenMap:
    """LogGhost.thin (an index's first Thin stays; indexes in gtho order)"""
    ids = p.cfg.ids
    gth, order = s.slots[THIN], s.slots[THIN_ORDER]

    def one(r: int) -> tuple:
        index = int(order[r])
        t = gth[index].tolist()
        return index, lg.Thin(leader=ids[t[TH_LEADER]], term=t[TH_TERM], index=index, entry_term=t[TH_ENTRY_TERM],
                              holders=tuple(sorted(ids[j] for j in range(len(ids)) if t[TH_HOLDERS] >> j & 1)),
                              at_ms=t[TH_AT], what=("committed", "acknowledged")[t[TH_WHAT]])

    rows, new = table_rows(s, "thin", int(s.world[W_THIN]), one)
    if new or "thin_map" not in s.memo:
        s.memo["thin_map"] = frozen(dict(rows))
    return s.memo["thin_map"]


def terms(p, s) -> eg.Terms:
    """election.ghost.Terms (votes, leaderships and lost term files: rows only ever appended)"""
    ids = p.cfg.ids
    counters = s.world
    G = s.slots
    vote_rows, leadership_rows, lost_rows = G[VOTES], G[LEADERSHIPS], G[TERMS_LOST]
    votes, votes_cut = table_rows(s, "votes", int(counters[W_VOTES]), lambda r: vote_rows[r].tolist())
    led, led_cut = table_rows(s, "led", int(counters[W_LEADERSHIPS]), lambda r: leadership_rows[r, :4].tolist())
    lost, lost_cut = table_rows(s, "lost", int(counters[W_TERMS_LOST]), lambda r: lost_rows[r].tolist())
    seq = int(counters[W_NOTES])
    hit = s.memo.get("terms")
    if hit is not None and not (votes_cut or led_cut or lost_cut) and hit.seq == seq:
        return hit
    by_vote: dict = {}
    for voter, term, cand, at, note_seq in votes:
        by_vote.setdefault((ids[voter], term), []).append((ids[cand], at, note_seq))
    by_term: dict = {}
    for term, leader, at, note_seq in led:
        by_term.setdefault(term, []).append((ids[leader], at, note_seq))
    by_node: dict = {}
    for node, at, term, note_seq in lost:
        by_node.setdefault(ids[node], []).append((at, term, note_seq))

    def frozen(d):
        return FrozenMap({k: tuple(v) for k, v in d.items()}) if d else EMPTY

    out = eg.Terms(votes=frozen(by_vote), led=frozen(by_term), term_lost=frozen(by_node), seq=seq)
    s.memo["terms"] = out
    return out


def cause_world(p, s) -> SimpleNamespace:
    """What spec/dledger_log.py's cause functions read of a world: the servers' members and
    stores, the ghost, the time, who is up, the fault history (cheaper than `world`)."""
    cfg = p.cfg
    n = int(p.config[C_PEERS])
    dledger = cfg.proto.node.dledger
    shim = SimpleNamespace(ids=cfg.ids[:n], proto=SimpleNamespace(dledger=dledger))
    members, live, water_marks = s.slots[MEMBERS], s.slots[PEERS_LIVE], s.slots[WATER_MARKS]
    nodes = tuple(SimpleNamespace(member=election_decode.member(shim, members, live, water_marks[:, :n], i), store=store(p, s, i))
                  for i in range(n))
    counters = s.world
    history = SimpleNamespace(calm=bool(counters[W_CALM]), calm_at_ms=int(counters[W_CALM_AT]))
    return SimpleNamespace(cfg=cfg, now=int(counters[W_NOW]), nodes=nodes, alive=tuple(bool(a) for a in s.alive[:n]),
                           ghost=ghost(p, s), history=history)


def world(p, s) -> core.World:
    cfg = p.cfg
    ids = cfg.ids
    node_count = len(ids)
    n = int(p.config[C_PEERS])
    counters = s.world
    nodes = tuple(server(p, s, i) for i in range(n)) + tuple(client(p, s, c) for c in range(node_count - n))
    flight = tuple(net.Envelope(id=int(r[E_ID]), src=int(r[E_SRC]), dst=int(r[E_DST]), msg=message(p, r),
                                sent_ms=int(r[E_SENT]), rpc=int(r[E_RPC]), reply=bool(r[E_REPLY]))
                   for r in s.flight[:int(counters[W_FLIGHT])])
    rpcs = tuple(net.Rpc(id=int(r[R_ID]), requester=int(r[R_REQUESTER]), responder=int(r[R_RESPONDER]),
                         deadline_ms=int(r[R_DEADLINE]), ctx=ctx(p, r), window=int(r[R_WINDOW]))
                 for r in s.rpcs[:int(counters[W_RPCS])])
    cut = frozenset((a, b) for a in range(node_count) for b in range(node_count) if s.cut[a, b])
    network = net.Network(flight=flight, rpcs=rpcs, cut=cut, next_id=int(counters[W_NEXT_ID]))
    history = core.History(last_fault_ms=int(counters[W_LAST_FAULT]), crashes=int(counters[W_CRASHES]),
                           os_crashes=int(counters[W_OS_CRASHES]), disk_losses=int(counters[W_DISK_LOSSES]),
                           lost_writes=frozenset(i for i in range(node_count) if counters[W_LOST_WRITES] >> i & 1),
                           calm=bool(counters[W_CALM]), calm_at_ms=int(counters[W_CALM_AT]))
    return core.World(cfg=cfg, now=int(counters[W_NOW]), nodes=nodes, alive=tuple(bool(a) for a in s.alive),
                      net=network, ghost=ghost(p, s), history=history, since=tuple(
                          tuple(int(x) for x in s.thread_since[j, :(n + 3 if j < n else 1)]) for j in range(node_count)),
                      fresh=frozenset(i for i in range(node_count) if int(counters[W_FRESH]) >> i & 1))
