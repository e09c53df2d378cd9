"""The twin's arrays as reference objects: a `core.World` equal (==) to the
reference's world after the same history, field for field (nodes, network, ghost,
history). The cross-check compares them whole."""

from __future__ import annotations

import numpy as np

import histories.fast.election as K
from reference_impl import core
from reference_impl.core import network as net
from reference_impl.core.state import EMPTY, FrozenMap
from reference_impl.election import ghost as eg
from reference_impl.election import member_state as ms
from reference_impl.election import records as el
from reference_impl.election import world as ew

ROLES = (el.Role.CANDIDATE, el.Role.LEADER, el.Role.FOLLOWER)
PARSE = tuple(el.ParseResult[name] for name in K.PARSE_NAMES)
VOTE_RESULTS = tuple(el.VoteResult)


def _id(ids, i):
    return ids[int(i)] if i >= 0 else None


def member(cfg, nd, live, wmk, i) -> ms.Member:
    ids = cfg.ids
    dl = cfg.proto.dledger
    r = nd[i]
    n = len(ids)
    rnd = None
    if r[K.RTYPE] == K.RT_VOTE:
        rnd = ms.VoteRound(seq=int(r[K.RSEQ]), term=int(r[K.RTERM]), deadline=int(r[K.RDEADLINE]),
                           known_max_term_in_group=int(r[K.RKMAX]), all_num=int(r[K.RALL]),
                           valid_num=int(r[K.RVALID]), accepted_num=int(r[K.RACC]),
                           not_ready_term_num=int(r[K.RNR]), bigger_ledger_num=int(r[K.RBIG]),
                           already_has_leader=bool(r[K.RHASL]), released_at=int(r[K.RREL]))
    elif r[K.RTYPE] == K.RT_HB:
        rnd = ms.HeartBeatRound(seq=int(r[K.RSEQ]), term=int(r[K.RTERM]), deadline=int(r[K.RDEADLINE]),
                                all_num=int(r[K.RALL]), succ_num=int(r[K.RSUCC]), not_ready_num=int(r[K.RNR]),
                                max_term=int(r[K.RMAXT]), inconsist_leader=bool(r[K.RINC]),
                                released_at=int(r[K.RREL]))
    take = None
    if r[K.TLW]:
        req = el.LeadershipTransferRequest(group=dl.group, remote_id=ids[i], term=int(r[K.TL_TERM]),
                                           transfer_id=_id(ids, r[K.TL_FROM]), transferee_id=ids[i],
                                           take_leadership_ledger_index=int(r[K.TL_IDX]),
                                           leader_id=_id(ids, r[K.TL_LEADER]))
        take = ms.TakeLeadershipWait(rpc=int(r[K.TL_RPC]), request=req, started=int(r[K.TL_STARTED]),
                                     waiting_for_index=bool(r[K.TL_WAITING]))
    table = {ids[j]: bool(live[i, j]) for j in range(n) if live[i, j] >= 0}
    marks = {ids[j]: int(wmk[i, j]) for j in range(n) if wmk[i, j] != -1}
    return ms.Member(
        self_id=ids[i], curr_term=int(r[K.TERM]), curr_vote_for=_id(ids, r[K.VOTE]), role=ROLES[int(r[K.ROLE])],
        leader_id=_id(ids, r[K.LEADER_ID]), ledger_end_index=int(r[K.LEI]), ledger_end_term=int(r[K.LET]),
        known_max_term_in_group=int(r[K.KMAX]), peers_live_table=FrozenMap(table) if table else EMPTY,
        transferee=_id(ids, r[K.TRANSFEREE]), term_to_take_leadership=int(r[K.TTTL]),
        last_leader_heart_beat_time=int(r[K.LLHB]), last_send_heart_beat_time=int(r[K.LSHB]),
        last_succ_heart_beat_time=int(r[K.LSUCC]), next_time_to_request_vote=int(r[K.NTRV]),
        need_increase_term_immediately=bool(r[K.NEEDINC]), last_parse_result=PARSE[int(r[K.LPR])],
        next_loop_ms=int(r[K.NEXTLOOP]), round=rnd, round_seq=int(r[K.ROUNDSEQ]),
        peer_water_marks=FrozenMap(marks) if marks else EMPTY, next_check_preferred_ms=int(r[K.NCP]),
        transfer_in_flight=bool(r[K.TIF]), take_leadership=take)


def message(cfg, row):
    ids = cfg.ids
    group = cfg.proto.dledger.group
    mk = int(row[K.E_MK])
    m = [int(x) for x in row[K.E_M0:K.E_M0 + 5]]
    src, dst = ids[int(row[K.E_SRC])], ids[int(row[K.E_DST])]
    if mk == K.MK_VOTE_REQ:
        return el.VoteRequest(group=group, remote_id=dst, leader_id=_id(ids, m[0]), term=m[1],
                              ledger_end_index=m[2], ledger_end_term=m[3])
    if mk == K.MK_VOTE_RESP:
        return el.VoteResponse(term=m[0], vote_result=VOTE_RESULTS[m[1]], code=el.Code(m[2]))
    if mk == K.MK_HB_REQ:
        return el.HeartBeatRequest(group=group, local_id=src, remote_id=dst, leader_id=_id(ids, m[0]), term=m[1])
    if mk == K.MK_HB_RESP:
        return el.HeartBeatResponse(code=el.Code(m[0]), term=m[1])
    if mk == K.MK_LT_REQ:
        return el.LeadershipTransferRequest(group=group, remote_id=dst, term=m[0], transfer_id=_id(ids, m[1]),
                                            transferee_id=ids[m[2]], take_leadership_ledger_index=m[3],
                                            leader_id=_id(ids, m[4]))
    if mk == K.MK_LT_RESP:
        return el.LeadershipTransferResponse(code=el.Code(m[0]), term=m[1])
    raise ValueError(f"unknown message kind {mk}")


def ctx(cfg, row):
    ck = int(row[K.R_CK])
    if ck == K.CK_HB:
        return ("hb", int(row[K.R_C1]))
    if ck == K.CK_VOTE:
        return ("vote", int(row[K.R_C1]))
    return ("transfer", int(row[K.R_C1]), cfg.ids[int(row[K.R_C2])], int(row[K.R_C3]))


def _since_map(ids, col) -> FrozenMap:
    """node id -> since, for the nodes whose column is set (>= 0)."""
    d = {ids[i]: int(t) for i, t in enumerate(col) if t >= 0}
    return FrozenMap(d) if d else EMPTY


def terms(cfg, nt, upto: int) -> eg.Terms:
    """ghost.Terms from the notes before seq `upto` (a note's seq is its row)."""
    ids = cfg.ids
    votes: dict = {}
    led: dict = {}
    lost: dict = {}
    for seq, (kind, node, term, cand, at, _) in enumerate(nt[:upto].tolist()):
        if kind == K.NOTE_VOTE:
            votes.setdefault((ids[node], term), []).append((ids[cand], at, seq))
        elif kind == K.NOTE_LED:
            led.setdefault(term, []).append((ids[node], at, seq))
        else:
            lost.setdefault(ids[node], []).append((at, term, seq))

    def frozen(d):
        return FrozenMap({k: tuple(v) for k, v in d.items()}) if d else EMPTY

    return eg.Terms(votes=frozen(votes), led=frozen(led), term_lost=frozen(lost), seq=upto)


def ghost_at(cfg, nt, upto: int, two_leaders: bool) -> ew.ElectionGhost:
    """The part of the ghost spec's ELE-1 (`two_leaders`) or ELE-2 cause reads, as it was once
    `upto` notes were taken: the terms with two leaders (or the (voter, term) keys with two
    candidates), the ACCEPTs of those terms (keys), and every lost term file. The other
    entries are ones ele1_expected / ele2_expected skip, so leaving them out changes no
    cause and spares building the whole record for each expected violation."""
    ids = cfg.ids
    n = len(ids)
    rows = nt[:upto]
    seqs = np.arange(upto)
    votes = rows[:, K.N_KIND] == K.NOTE_VOTE
    if two_leaders:
        led = rows[rows[:, K.N_KIND] == K.NOTE_LED]
        pairs = np.unique(led[:, [K.N_TERM, K.N_NODE]], axis=0)
        terms_, counts = np.unique(pairs[:, 0], return_counts=True)
        bad = terms_[counts > 1]
        elected = FrozenMap({int(t): frozenset(ids[int(x)] for x in pairs[pairs[:, 0] == t, 1]) for t in bad})
        keep = votes & np.isin(rows[:, K.N_TERM], bad)
        grants = EMPTY
    else:
        v = rows[votes]
        triples = np.unique(v[:, [K.N_TERM, K.N_NODE, K.N_CAND]], axis=0)
        keys, counts = np.unique(triples[:, 0] * n + triples[:, 1], return_counts=True)
        bad = keys[counts > 1]
        elected = EMPTY
        grants = FrozenMap({(ids[int(key % n)], int(key // n)): frozenset(
            ids[int(c)] for c in triples[triples[:, 0] * n + triples[:, 1] == key, 2]) for key in bad})
        keep = votes & np.isin(rows[:, K.N_TERM] * n + rows[:, K.N_NODE], bad)
    by_key: dict = {}
    for seq, (node, term, cand, at) in zip(seqs[keep].tolist(),
                                           rows[keep][:, [K.N_NODE, K.N_TERM, K.N_CAND, K.N_AT]].tolist()):
        by_key.setdefault((ids[node], term), []).append((ids[cand], at, seq))
    lost: dict = {}
    lrows = rows[:, K.N_KIND] == K.NOTE_LOST
    for seq, (node, term, at) in zip(seqs[lrows].tolist(), rows[lrows][:, [K.N_NODE, K.N_TERM, K.N_AT]].tolist()):
        lost.setdefault(ids[node], []).append((at, term, seq))
    t = eg.Terms(votes=FrozenMap({k: tuple(x) for k, x in by_key.items()}),
                 term_lost=FrozenMap({k: tuple(x) for k, x in lost.items()}), seq=upto)
    return ew.ElectionGhost(elected=elected, grants=grants, terms=t)


def world(p, s) -> core.World:
    cfg = p.cfg
    ids = cfg.ids
    n = len(ids)
    ws = s.ws
    nodes = tuple(member(cfg, s.nd, s.live, s.wmk, i) for i in range(n))
    flight = tuple(net.Envelope(id=int(r[K.E_ID]), src=int(r[K.E_SRC]), dst=int(r[K.E_DST]), msg=message(cfg, r),
                                sent_ms=int(r[K.E_SENT]), rpc=int(r[K.E_RPC]), reply=bool(r[K.E_REPLY]))
                   for r in s.fl[:int(ws[K.W_NF])])
    rpcs = tuple(net.Rpc(id=int(r[K.R_ID]), requester=int(r[K.R_REQ]), responder=int(r[K.R_RESP]),
                         deadline_ms=int(r[K.R_DEADLINE]), ctx=ctx(cfg, r), window=int(r[K.R_WINDOW]))
                 for r in s.rp[:int(ws[K.W_NR])])
    cut = frozenset((a, b) for a in range(n) for b in range(n) if s.cut[a, b])
    network = net.Network(flight=flight, rpcs=rpcs, cut=cut, next_id=int(ws[K.W_NEXT_ID]))
    top = int(ws[K.W_MAXTERM_SEEN]) + 1
    elected = FrozenMap({t: frozenset(ids[i] for i in range(n) if s.elected[t] >> i & 1)
                         for t in range(top) if s.elected[t]})
    grants = FrozenMap({(ids[v], t): frozenset(ids[c] for c in range(n) if s.grants[t, v] >> c & 1)
                        for t in range(top) for v in range(n) if s.grants[t, v]})
    sl = int(ws[K.W_SL])
    ghost = ew.ElectionGhost(
        elected=elected, grants=grants, cut_since=tuple(int(x) for x in s.cs), settled_ms=int(ws[K.W_SETTLED]),
        terms=terms(cfg, s.nt, int(ws[K.W_SEQ])), agreed=bool(ws[K.W_AGREED]), agreed_since=int(ws[K.W_AGREED_SINCE]),
        settled_leader=(ids[sl], int(ws[K.W_SL_TERM])) if sl >= 0 else None,
        stragglers=_since_map(ids, s.lv[:, K.LV_STRAG]), transfers=_since_map(ids, s.lv[:, K.LV_TRANS]))
    history = core.History(last_fault_ms=int(ws[K.W_LAST_FAULT]), crashes=int(ws[K.W_CRASHES]),
                         os_crashes=int(ws[K.W_OS_CRASHES]), disk_losses=int(ws[K.W_DISK_LOSSES]),
                         lost_writes=frozenset(i for i in range(n) if ws[K.W_LOST] >> i & 1),
                         calm=bool(ws[K.W_CALM]), calm_at_ms=int(ws[K.W_CALM_AT]))
    return core.World(cfg=cfg, now=int(ws[K.W_NOW]), nodes=nodes, alive=tuple(bool(a) for a in s.alive),
                    net=network, ghost=ghost, history=history, since=tuple(int(x) for x in s.sn),
                    fresh=frozenset(i for i in range(n) if int(ws[K.W_FRESH]) >> i & 1))
