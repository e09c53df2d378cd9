"""The dledger_log twin's arrays as reference objects: a `core.World` equal (==) to the
reference's world after the same history, field for field (servers with their member,
store, pusher and entry handler; clients; network; ghost; history). The cross-check
compares them whole. The election member and the election's messages decode as the
election twin's do (histories.fast.decode)."""

from __future__ import annotations

from types import SimpleNamespace

import histories.fast.decode as election_decode
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_monitor as M
import histories.fast.election as E
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

PUSH_TYPES = tuple(ep.PushType[name] for name in L.PUSH_TYPE_NAMES)
CODE_NAMES = {int(c): c.name for c in el.Code}


def _id(ids, i):
    return ids[int(i)] if i >= 0 else None


def body(c, code: int):
    """An entry body from its code (dledger_log_layout: client k's seq, or the no-op)."""
    code = int(code)
    if code == 0:
        return st.NOOP
    return st.Body(key=f"c{(code >> 32) - 1}-{code & 0xFFFFFFFF}", length=int(c[L.C_BLEN]))


# Entries are immutable values and a history's logs hold the same ones at every pause of
# the kernel (dledger_log_causes), so each is made once; bounded like the other memos.
_ENTRIES: dict = {}  # (body length, index, term, pos, size, body code) -> Entry
_STORES: dict = {}  # the store's row and entry rows as bytes (and the body length) -> Store
_MEMO_CAP = 1 << 18


def entry(c, index, term, pos, size, b) -> st.Entry:
    key = (int(c[L.C_BLEN]), int(index), int(term), int(pos), int(size), int(b))
    e = _ENTRIES.get(key)
    if e is None:
        if len(_ENTRIES) >= _MEMO_CAP:
            _ENTRIES.clear()
        e = _ENTRIES[key] = st.Entry(index=key[1], term=key[2], pos=key[3], size=key[4], body=body(c, key[5]))
    return e


def entries(c, first: int, rows) -> tuple:
    """The entries of index first, first + 1, ... from rows of (term, pos, size, body code)."""
    blen = int(c[L.C_BLEN])
    get = _ENTRIES.get
    out = []
    for k, (term, pos, size, b) in enumerate(rows.tolist()):
        e = get((blen, first + k, term, pos, size, b))
        out.append(e if e is not None else entry(c, first + k, term, pos, size, b))
    return tuple(out)


def _request(p, row, at: int, remote: str) -> ep.PushEntryRequest:
    """A PushEntryRequest from its fields row[at + RQ_*]."""
    cfg = p.cfg
    f = [int(x) for x in row[at:at + L.NMF]]
    e = None
    if f[L.RQ_HAS]:
        e = entry(p.C, f[L.RQ_EIDX], f[L.RQ_ETERM], f[L.RQ_EPOS], f[L.RQ_ESIZE], f[L.RQ_EBODY])
    return ep.PushEntryRequest(group=cfg.proto.node.dledger.group, remote_id=remote,
                               leader_id=_id(cfg.ids, f[L.RQ_LEADER]), term=f[L.RQ_TERM], type=PUSH_TYPES[f[L.RQ_TYPE]],
                               entry=e, commit_index=f[L.RQ_COMMIT], seq=(f[L.RQ_SEQE], f[L.RQ_SEQC]))


def store(p, s, i) -> st.Store:
    sto = s.S[L.I_STO][i]
    ent = s.S[L.I_ENT][i]
    n = int(sto[L.S_NENT])
    key = sto.tobytes() + ent[:n].tobytes() + p.C[L.C_BLEN:L.C_BLEN + 1].tobytes()
    hit = _STORES.get(key)
    if hit is not None:
        return hit
    b = int(sto[L.S_BEGIN])
    out = st.Store(entries=_store_entries(p, s, i, b, ent[:n]), begin_index=b, end_term=int(sto[L.S_END_TERM]),
                   committed_index=int(sto[L.S_COMMITTED]), committed_pos=int(sto[L.S_CPOS]),
                   min_pos=int(sto[L.S_MINPOS]), flushed_index=int(sto[L.S_FLUSHED]),
                   flush_due_ms=int(sto[L.S_FLUSH_DUE]), check_point=int(sto[L.S_CP]),
                   last_check_point_ms=int(sto[L.S_LAST_CP]), check_point_due_ms=int(sto[L.S_CP_DUE]))
    if len(_STORES) >= 4096:
        _STORES.clear()
    _STORES[key] = out
    return out


def _store_entries(p, s, i, b: int, rows) -> tuple:
    """Server i's entries from `rows` (begin index b): a log mostly grew or lost its tail since the
    last pause of this history, so the prefix equal to the last decoding is kept (State.memo)."""
    key = ("store", i)
    hit = s.memo.get(key)
    k = 0
    if hit is not None and hit[0] == b:
        m = min(len(rows), len(hit[1]))
        diff = (rows[:m] != hit[1][:m]).any(axis=1).nonzero()[0]
        k = int(diff[0]) if len(diff) else m
    out = (hit[2][:k] if k else ()) + entries(p.C, b + k, rows[k:])
    s.memo[key] = (b, rows.copy(), out)
    return out


def pusher(p, s, i) -> ep.Pusher:
    ids = p.cfg.ids
    n = int(p.C[E.C_N])
    pu = s.S[L.I_PU][i]
    wmt = s.S[L.I_WMT][i]
    marks = FrozenMap({int(wmt[r, 0]): tuple(int(x) for x in wmt[r, 1:1 + n]) for r in range(int(pu[L.P_NWM]))})
    pend = s.S[L.I_PEND][i]
    rows = [pend[r] for r in range(int(pu[L.P_NPEND]))]
    pending = {}
    for t in s.S[L.I_PTM][i][:int(pu[L.P_NPT])]:
        pending[int(t)] = FrozenMap({int(r[L.PD_INDEX]): ep.PendingAppend(
            pos=int(r[L.PD_POS]), created_ms=int(r[L.PD_CREATED]), ref=body(p.C, r[L.PD_REF]), rpc=int(r[L.PD_RPC]),
            done=bool(r[L.PD_DONE])) for r in rows if r[L.PD_TERM] == t})
    ds = []
    dp = s.S[L.I_DP][i]
    pm = s.S[L.I_PM][i]
    for j in range(n):
        if j == i:
            continue
        d = dp[j]
        lo, hi = max(0, int(d[L.D_PMLO])), int(d[L.D_PMHI])
        pmap = {k: int(pm[j, k]) for k in range(lo, hi + 1) if pm[j, k] >= 0}
        ds.append(ep.Dispatcher(peer=ids[j], type=PUSH_TYPES[int(d[L.D_TYPE])], compare_index=int(d[L.D_CI]),
                                write_index=int(d[L.D_WI]), term=int(d[L.D_TERM]), leader_id=_id(ids, d[L.D_LEADER]),
                                pending_map=FrozenMap(pmap) if pmap else EMPTY, last_push_commit_ms=int(d[L.D_LPC]),
                                last_check_leak_ms=int(d[L.D_LCL]), waiting=int(d[L.D_WAITING]),
                                truncate_index=int(d[L.D_TI]), sleep_until=int(d[L.D_SLEEP]), seq=int(d[L.D_SEQ])))
    return ep.Pusher(water_marks=marks, pending=FrozenMap(pending), dispatchers=tuple(ds),
                     last_quorum_index=int(pu[L.P_LQI]), last_check_leak_ms=int(pu[L.P_LCL]), epoch=int(pu[L.P_EPOCH]))


def _wait(p, row, remote) -> eh.PushWait:
    return eh.PushWait(request=_request(p, row, L.PW_RQ, remote), rpc=int(row[L.PW_RPC]),
                       created_ms=int(row[L.PW_CREATED]), answered=bool(row[L.PW_ANSWERED]))


def handler(p, s, i) -> eh.EntryHandler:
    ids = p.cfg.ids
    h = s.S[L.I_EH][i]
    wr = s.S[L.I_WR][i]
    lo, hi = max(0, int(h[L.H_WRLO])), int(h[L.H_WRHI])
    reqs = {k: _wait(p, wr[k], ids[i]) for k in range(lo, hi + 1) if wr[k, L.PW_ON]}
    queue = tuple(_wait(p, s.S[L.I_HQ][i, q], ids[i]) for q in range(int(h[L.H_NQ])))
    lseq = s.S[L.I_LSEQ][i]
    seqs = {ids[j]: (int(lseq[j, 1]), int(lseq[j, 2])) for j in range(lseq.shape[0]) if lseq[j, 0]}
    return eh.EntryHandler(write_requests=FrozenMap(reqs) if reqs else EMPTY, queue=queue,
                           last_check_fast_forward_ms=int(h[L.H_LCFF]), last_seq=FrozenMap(seqs) if seqs else EMPTY)


def server(p, s, i) -> dn.DLedgerNode:
    n = int(p.C[E.C_N])
    dl = p.cfg.proto.node.dledger
    shim = SimpleNamespace(ids=p.cfg.ids[:n], proto=SimpleNamespace(dledger=dl))
    nd, live, wmk = s.S[L.I_ND], s.S[L.I_LIVE], s.S[L.I_WMK]
    m = election_decode.member(shim, nd, live, wmk[:, :n], i)
    marks = FrozenMap({p.cfg.ids[j]: int(wmk[i, j]) for j in range(n)}) if wmk[i, n] == 1 else EMPTY
    m = m.evolve(peer_water_marks=marks)
    return dn.DLedgerNode(member=m, store=store(p, s, i), pusher=pusher(p, s, i), handler=handler(p, s, i))


def client(p, s, c) -> lw.LogClient:
    ids = p.cfg.ids
    n = int(p.C[E.C_N])
    r = s.S[L.I_CL][c]
    return lw.LogClient(self_id=ids[n + c], leader_id=_id(ids, r[L.CL_LEADER]), next_append_ms=int(r[L.CL_NEXT]),
                        seq=int(r[L.CL_SEQ]), waiting=bool(r[L.CL_WAITING]))


def message(p, row):
    cfg = p.cfg
    ids = cfg.ids
    mk = int(row[L.E_MK])
    m = [int(x) for x in row[L.E_M0:L.E_M0 + L.NMF]]
    dst = ids[int(row[L.E_DST])]
    group = cfg.proto.node.dledger.group
    if mk == L.MK_APPEND_REQ:
        return ep.AppendEntryRequest(group=group, remote_id=dst, body=body(p.C, m[0]))
    if mk == L.MK_APPEND_RESP:
        return ep.AppendEntryResponse(code=el.Code(m[0]), index=m[1], pos=m[2], term=m[3], leader_id=_id(ids, m[4]))
    if mk == L.MK_PUSH_REQ:
        return _request(p, row, L.E_M0, dst)
    if mk == L.MK_PUSH_RESP:
        return ep.PushEntryResponse(code=el.Code(m[0]), term=m[1], index=None if m[2] == L.NONE else m[2],
                                    begin_index=m[3], end_index=m[4])
    shim = SimpleNamespace(ids=ids, proto=SimpleNamespace(dledger=cfg.proto.node.dledger))
    return election_decode.message(shim, row)


def ctx(p, row):
    ids = p.cfg.ids
    ck = int(row[L.R_CK])
    if ck == L.CK_PUSH:
        return ("push", L.PUSH_TYPE_NAMES[int(row[L.R_C1])], ids[int(row[L.R_C2])], int(row[L.R_C3]))
    if ck == L.CK_APPEND:
        return ("append", body(p.C, row[L.R_C1]).key)
    return election_decode.ctx(SimpleNamespace(ids=ids), row)


# The ghost's history tables only grow within a history (the kernel appends rows and index
# orders, and an index's set gains entries), and the kernel pauses for causes several times a
# history (dledger_log_causes), so each table is decoded once a row and kept in State.memo
# (emptied by dledger_log_run.reset): a pause decodes only what is new since the last.


def _fm(d: dict) -> FrozenMap:
    return FrozenMap(d) if d else EMPTY


def _rows(s, key: str, n: int, decode) -> tuple[list, bool]:
    """Rows 0..n-1 of an append-only table, decoding rows from the last call's count on."""
    done, out = s.memo.get(key, (0, []))
    if done == n:
        return out, False
    out.extend(decode(r) for r in range(done, n))
    s.memo[key] = (n, out)
    return out, True


def _committed(p, s) -> FrozenMap:
    """LogGhost.committed: the first entry per index never changes; indexes in gco order."""
    gc, order = s.G[M.G_GC], s.G[M.G_GCO]
    rows, new = _rows(s, "committed", int(s.ws[L.W_NCOMMITTED]),
                      lambda r: (int(order[r]), entry(p.C, order[r], *gc[order[r], 1:5].tolist())))
    if new or "committed_map" not in s.memo:
        s.memo["committed_map"] = _fm(dict(rows))
    return s.memo["committed_map"]


def _sets(p, s, key: str, table, counts, order, count: int) -> FrozenMap:
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
            d[k] = frozenset(entry(p.C, k, *table[k, r].tolist()) for r in range(c))
    out = _fm(d)
    s.memo[key] = (now.copy(), d, out)
    return out


def ghost(p, s) -> lw.LogGhost:
    ids = p.cfg.ids
    ws = s.ws
    G = s.G
    nt = len(ids)
    top = int(ws[L.W_TOPTERM]) + 1
    elected = {t: frozenset(ids[i] for i in range(nt) if G[M.G_ELECTED][t] >> i & 1) for t in range(top)
               if G[M.G_ELECTED][t]}
    regressed = {t: int(G[M.G_REGRESSED][t]) for t in range(top) if G[M.G_REGRESSED][t] >= 0}
    n_conflict = int(ws[L.W_NCONFLICT])
    conflicts = _sets(p, s, "conflicts", G[M.G_GX], G[M.G_GXN], G[M.G_GXO], n_conflict)
    conflict_terms = {int(k): int(G[M.G_GXT][k]) for k in G[M.G_GXO][:n_conflict]}
    acked = _sets(p, s, "acked", G[M.G_GA], G[M.G_GAN], G[M.G_GAO], int(ws[L.W_NACKED]))
    counted = _sets(p, s, "counted", G[M.G_GK], G[M.G_GCNT], G[M.G_GKO], int(ws[L.W_NCOUNTED]))
    gres = G[M.G_GRES]
    results = {CODE_NAMES[c]: int(gres[c]) for c in CODE_NAMES if 0 <= c < len(gres) and gres[c]}
    n = int(p.C[E.C_N])
    glv = G[M.G_GLV]
    settled = int(ws[L.W_SETTLED])
    return lg.LogGhost(elected=_fm(elected), regressed=_fm(regressed), committed=_committed(p, s),
                       conflicts=conflicts, conflict_terms=_fm(conflict_terms), counted=counted, acked=acked,
                       thin=thin(p, s), led_ends=_fm({int(r[3]): int(r[4]) for r in G[M.G_GLED][:int(ws[L.W_NLED])]}),
                       drops=drops(p, s), terms=terms(p, s), agreed=bool(ws[L.W_AGREED]),
                       agreed_since=int(ws[L.W_AGREED_SINCE]),
                       settled_leader=(ids[settled], int(ws[L.W_SETTLED_T])) if settled >= 0 else None,
                       stragglers=_fm({ids[k]: int(glv[k, L.LV_STRAG]) for k in range(n) if glv[k, L.LV_STRAG] >= 0}),
                       transfers=_fm({ids[k]: int(glv[k, L.LV_TRANSFER]) for k in range(n)
                                      if glv[k, L.LV_TRANSFER] >= 0}),
                       appends=int(ws[L.W_APPENDS]), results=_fm(results),
                       first_ack_after_calm_ms=int(ws[L.W_FIRST_ACK]))


def drops(p, s) -> tuple:
    """LogGhost.drops (rows only ever appended)"""
    ids = p.cfg.ids
    gdr, gdp = s.G[M.G_GDR], s.G[M.G_GDP]

    def drop(r: int) -> lg.Drop:
        d = gdr[r].tolist()
        lo, hi, pay = d[L.DR_LO], d[L.DR_HI], d[L.DR_PAY]
        return lg.Drop(server=ids[d[L.DR_SERVER]], at_ms=d[L.DR_AT], seq=d[L.DR_SEQ], how=L.HOW_NAMES[d[L.DR_HOW]],
                       entries=entries(p.C, lo, gdp[pay:pay + hi - lo + 1]), flushed=d[L.DR_FLUSHED],
                       leader=_id(ids, d[L.DR_LEADER]), term=d[L.DR_TERM], stale=bool(d[L.DR_STALE]))

    rows, new = _rows(s, "drops", int(s.ws[L.W_NDROPS]), drop)
    if new or "drops_t" not in s.memo:
        s.memo["drops_t"] = tuple(rows)
    return s.memo["drops_t"]


def thin(p, s) -> FrozenMap:
    """LogGhost.thin (an index's first Thin stays; indexes in gtho order)"""
    ids = p.cfg.ids
    gth, order = s.G[M.G_GTH], s.G[M.G_GTHO]

    def one(r: int) -> tuple:
        index = int(order[r])
        t = gth[index].tolist()
        return index, lg.Thin(leader=ids[t[L.TH_LEADER]], term=t[L.TH_TERM], index=index, entry_term=t[L.TH_ETERM],
                              holders=tuple(sorted(ids[j] for j in range(len(ids)) if t[L.TH_HOLDERS] >> j & 1)),
                              at_ms=t[L.TH_AT], what=("committed", "acknowledged")[t[L.TH_WHAT]])

    rows, new = _rows(s, "thin", int(s.ws[L.W_NTHIN]), one)
    if new or "thin_map" not in s.memo:
        s.memo["thin_map"] = _fm(dict(rows))
    return s.memo["thin_map"]


def terms(p, s) -> eg.Terms:
    """election.ghost.Terms (votes, leaderships and lost term files: rows only ever appended)"""
    ids = p.cfg.ids
    ws = s.ws
    G = s.G
    gvo, gled, gtl = G[M.G_GVO], G[M.G_GLED], G[M.G_GTL]
    votes, nv = _rows(s, "votes", int(ws[L.W_NVOTES]), lambda r: gvo[r].tolist())
    led, nl = _rows(s, "led", int(ws[L.W_NLED]), lambda r: gled[r, :4].tolist())
    lost, nx = _rows(s, "lost", int(ws[L.W_NTL]), lambda r: gtl[r].tolist())
    seq = int(ws[L.W_SEQ])
    hit = s.memo.get("terms")
    if hit is not None and not (nv or nl or nx) and hit.seq == seq:
        return hit
    by_vote: dict = {}
    for voter, term, cand, at, sq in votes:
        by_vote.setdefault((ids[voter], term), []).append((ids[cand], at, sq))
    by_term: dict = {}
    for term, leader, at, sq in led:
        by_term.setdefault(term, []).append((ids[leader], at, sq))
    by_node: dict = {}
    for node, at, term, sq in lost:
        by_node.setdefault(ids[node], []).append((at, term, sq))

    def fm(d):
        return FrozenMap({k: tuple(v) for k, v in d.items()}) if d else EMPTY

    out = eg.Terms(votes=fm(by_vote), led=fm(by_term), term_lost=fm(by_node), seq=seq)
    s.memo["terms"] = out
    return out


def cause_world(p, s) -> SimpleNamespace:
    """What spec/dledger_log.py's cause functions read of a world: the servers' members and
    stores, the ghost, the time, who is up, the fault history (cheaper than `world`)."""
    cfg = p.cfg
    n = int(p.C[E.C_N])
    dl = cfg.proto.node.dledger
    shim = SimpleNamespace(ids=cfg.ids[:n], proto=SimpleNamespace(dledger=dl))
    nd, live, wmk = s.S[L.I_ND], s.S[L.I_LIVE], s.S[L.I_WMK]
    nodes = tuple(SimpleNamespace(member=election_decode.member(shim, nd, live, wmk[:, :n], i), store=store(p, s, i))
                  for i in range(n))
    ws = s.ws
    history = SimpleNamespace(calm=bool(ws[L.W_CALM]), calm_at_ms=int(ws[L.W_CALM_AT]))
    return SimpleNamespace(cfg=cfg, now=int(ws[L.W_NOW]), nodes=nodes, alive=tuple(bool(a) for a in s.alive[:n]),
                           ghost=ghost(p, s), history=history)


def world(p, s) -> core.World:
    cfg = p.cfg
    ids = cfg.ids
    nt = len(ids)
    n = int(p.C[E.C_N])
    ws = s.ws
    nodes = tuple(server(p, s, i) for i in range(n)) + tuple(client(p, s, c) for c in range(nt - n))
    flight = tuple(net.Envelope(id=int(r[L.E_ID]), src=int(r[L.E_SRC]), dst=int(r[L.E_DST]), msg=message(p, r),
                                sent_ms=int(r[L.E_SENT]), rpc=int(r[L.E_RPC]), reply=bool(r[L.E_REPLY]))
                   for r in s.fl[:int(ws[L.W_NF])])
    rpcs = tuple(net.Rpc(id=int(r[L.R_ID]), requester=int(r[L.R_REQ]), responder=int(r[L.R_RESP]),
                         deadline_ms=int(r[L.R_DEADLINE]), ctx=ctx(p, r), window=int(r[L.R_WINDOW]))
                 for r in s.rp[:int(ws[L.W_NR])])
    cut = frozenset((a, b) for a in range(nt) for b in range(nt) if s.cut[a, b])
    network = net.Network(flight=flight, rpcs=rpcs, cut=cut, next_id=int(ws[L.W_NEXT_ID]))
    history = core.History(last_fault_ms=int(ws[L.W_LAST_FAULT]), crashes=int(ws[L.W_CRASHES]),
                           os_crashes=int(ws[L.W_OS_CRASHES]), disk_losses=int(ws[L.W_DISK_LOSSES]),
                           lost_writes=frozenset(i for i in range(nt) if ws[L.W_LOST] >> i & 1),
                           calm=bool(ws[L.W_CALM]), calm_at_ms=int(ws[L.W_CALM_AT]))
    return core.World(cfg=cfg, now=int(ws[L.W_NOW]), nodes=nodes, alive=tuple(bool(a) for a in s.alive),
                      net=network, ghost=ghost(p, s), history=history, since=tuple(int(x) for x in s.sn),
                      fresh=frozenset(i for i in range(nt) if int(ws[L.W_FRESH]) >> i & 1))
