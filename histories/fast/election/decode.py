"""Turning the election twin's state table back into reference objects.

Used for counterexamples and by the cross-check gates: `world` builds the reference's World (members,
messages, ghost) from a twin's rows so the two can be compared field by field."""

from __future__ import annotations

import numpy as np

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
from histories.fast.election.layout import (
    CTX_HEART_BEAT,
    CTX_VOTE,
    CURR_TERM,
    CURR_VOTE_FOR,
    HEART_BEAT_REQUEST,
    HEART_BEAT_RESPONSE,
    KNOWN_MAX_TERM_IN_GROUP,
    LAST_LEADER_HEART_BEAT_TIME,
    LAST_PARSE_RESULT,
    LAST_SEND_HEART_BEAT_TIME,
    LAST_SUCC_HEART_BEAT_TIME,
    LEADER_ID,
    LEADERSHIP_TRANSFER_REQUEST,
    LEADERSHIP_TRANSFER_RESPONSE,
    LEDGER_END_INDEX,
    LEDGER_END_TERM,
    MEMBER_ROUND_SEQ,
    N_AT,
    N_CANDIDATE,
    N_KIND,
    N_NODE,
    N_TERM,
    NEED_INCREASE_TERM_IMMEDIATELY,
    NEXT_CHECK_PREFERRED_MS,
    NEXT_LOOP_MS,
    NEXT_TIME_TO_REQUEST_VOTE,
    NN_STRAGGLER_SINCE,
    NN_TRANSFER_SINCE,
    NOTE_LED,
    NOTE_LOST,
    NOTE_VOTE,
    PARSE_RESULTS,
    ROLE,
    ROLES,
    ROUND_ACCEPTED_NUM,
    ROUND_ALL_NUM,
    ROUND_ALREADY_HAS_LEADER,
    ROUND_BIGGER_LEDGER_NUM,
    ROUND_DEADLINE,
    ROUND_HEART_BEAT,
    ROUND_INCONSIST_LEADER,
    ROUND_KIND,
    ROUND_KNOWN_MAX_TERM_IN_GROUP,
    ROUND_MAX_TERM,
    ROUND_NOT_READY_NUM,
    ROUND_RELEASED_AT,
    ROUND_SEQ,
    ROUND_SUCC_NUM,
    ROUND_TERM,
    ROUND_VALID_NUM,
    ROUND_VOTE,
    TAKE_LEADERSHIP,
    TAKE_LEADERSHIP_LEADER_ID,
    TAKE_LEADERSHIP_LEDGER_INDEX,
    TAKE_LEADERSHIP_RPC,
    TAKE_LEADERSHIP_STARTED,
    TAKE_LEADERSHIP_TERM,
    TAKE_LEADERSHIP_TRANSFER_ID,
    TAKE_LEADERSHIP_WAITING_FOR_INDEX,
    TERM_TO_TAKE_LEADERSHIP,
    TRANSFER_IN_FLIGHT,
    TRANSFEREE,
    VOTE_REQUEST,
    VOTE_RESPONSE,
    VOTE_RESULTS,
    VOTE_START,
    VOTE_START_LEDGER_END_INDEX,
    VOTE_START_LEDGER_END_TERM,
    VOTE_START_TERM,
    W_AGREED,
    W_AGREED_SINCE,
    W_NOTES,
    W_SETTLED,
    W_SETTLED_LEADER,
    W_SETTLED_LEADER_TERM,
    W_TOP_TERM,
)
from reference_impl import core
from reference_impl.core import network as net
from reference_impl.core.state import EMPTY, FrozenMap
from reference_impl.election import ghost as eg
from reference_impl.election import member_state as ms
from reference_impl.election import records as el
from reference_impl.election import world as ew


def id_or_none(ids, i):
    return ids[int(i)] if i >= 0 else None


def member(cfg, members, live, water_marks, i) -> ms.Member:
    ids = cfg.ids
    dledger = cfg.proto.dledger
    r = members[i]
    n = len(ids)
    rnd = None
    if r[ROUND_KIND] == ROUND_VOTE:
        rnd = ms.VoteRound(seq=int(r[ROUND_SEQ]), term=int(r[ROUND_TERM]), deadline=int(r[ROUND_DEADLINE]),
                           known_max_term_in_group=int(r[ROUND_KNOWN_MAX_TERM_IN_GROUP]), all_num=int(r[ROUND_ALL_NUM]),
                           valid_num=int(r[ROUND_VALID_NUM]), accepted_num=int(r[ROUND_ACCEPTED_NUM]),
                           not_ready_term_num=int(r[ROUND_NOT_READY_NUM]), bigger_ledger_num=int(r[ROUND_BIGGER_LEDGER_NUM]),
                           already_has_leader=bool(r[ROUND_ALREADY_HAS_LEADER]), released_at=int(r[ROUND_RELEASED_AT]))
    elif r[ROUND_KIND] == ROUND_HEART_BEAT:
        rnd = ms.HeartBeatRound(seq=int(r[ROUND_SEQ]), term=int(r[ROUND_TERM]), deadline=int(r[ROUND_DEADLINE]),
                                all_num=int(r[ROUND_ALL_NUM]), succ_num=int(r[ROUND_SUCC_NUM]), not_ready_num=int(r[ROUND_NOT_READY_NUM]),
                                max_term=int(r[ROUND_MAX_TERM]), inconsist_leader=bool(r[ROUND_INCONSIST_LEADER]),
                                released_at=int(r[ROUND_RELEASED_AT]))
    start = None
    if r[VOTE_START]:
        start = ms.VoteStart(term=int(r[VOTE_START_TERM]), ledger_end_index=int(r[VOTE_START_LEDGER_END_INDEX]),
                             ledger_end_term=int(r[VOTE_START_LEDGER_END_TERM]))
    take = None
    if r[TAKE_LEADERSHIP]:
        req = el.LeadershipTransferRequest(group=dledger.group, remote_id=ids[i], term=int(r[TAKE_LEADERSHIP_TERM]),
                                           transfer_id=id_or_none(ids, r[TAKE_LEADERSHIP_TRANSFER_ID]), transferee_id=ids[i],
                                           take_leadership_ledger_index=int(r[TAKE_LEADERSHIP_LEDGER_INDEX]),
                                           leader_id=id_or_none(ids, r[TAKE_LEADERSHIP_LEADER_ID]))
        take = ms.TakeLeadershipWait(rpc=int(r[TAKE_LEADERSHIP_RPC]), request=req, started=int(r[TAKE_LEADERSHIP_STARTED]),
                                     waiting_for_index=bool(r[TAKE_LEADERSHIP_WAITING_FOR_INDEX]))
    table = {ids[j]: bool(live[i, j]) for j in range(n) if live[i, j] >= 0}
    marks = {ids[j]: int(water_marks[i, j]) for j in range(n) if water_marks[i, j] != -1}
    return ms.Member(
        self_id=ids[i], curr_term=int(r[CURR_TERM]), curr_vote_for=id_or_none(ids, r[CURR_VOTE_FOR]), role=ROLES[int(r[ROLE])],
        leader_id=id_or_none(ids, r[LEADER_ID]), ledger_end_index=int(r[LEDGER_END_INDEX]), ledger_end_term=int(r[LEDGER_END_TERM]),
        known_max_term_in_group=int(r[KNOWN_MAX_TERM_IN_GROUP]), peers_live_table=FrozenMap(table) if table else EMPTY,
        transferee=id_or_none(ids, r[TRANSFEREE]), term_to_take_leadership=int(r[TERM_TO_TAKE_LEADERSHIP]),
        last_leader_heart_beat_time=int(r[LAST_LEADER_HEART_BEAT_TIME]), last_send_heart_beat_time=int(r[LAST_SEND_HEART_BEAT_TIME]),
        last_succ_heart_beat_time=int(r[LAST_SUCC_HEART_BEAT_TIME]), next_time_to_request_vote=int(r[NEXT_TIME_TO_REQUEST_VOTE]),
        need_increase_term_immediately=bool(r[NEED_INCREASE_TERM_IMMEDIATELY]), last_parse_result=PARSE_RESULTS[int(r[LAST_PARSE_RESULT])],
        next_loop_ms=int(r[NEXT_LOOP_MS]), round=rnd, round_seq=int(r[MEMBER_ROUND_SEQ]), vote_start=start,
        peer_water_marks=FrozenMap(marks) if marks else EMPTY, next_check_preferred_ms=int(r[NEXT_CHECK_PREFERRED_MS]),
        transfer_in_flight=bool(r[TRANSFER_IN_FLIGHT]), take_leadership=take)


def message(cfg, row):
    ids = cfg.ids
    group = cfg.proto.dledger.group
    message_kind = int(row[E_KIND])
    m = [int(x) for x in row[E_FIELDS:E_FIELDS + 5]]
    src, dst = ids[int(row[E_SRC])], ids[int(row[E_DST])]
    if message_kind == VOTE_REQUEST:
        return el.VoteRequest(group=group, remote_id=dst, leader_id=id_or_none(ids, m[0]), term=m[1],
                              ledger_end_index=m[2], ledger_end_term=m[3])
    if message_kind == VOTE_RESPONSE:
        return el.VoteResponse(term=m[0], vote_result=VOTE_RESULTS[m[1]], code=el.Code(m[2]))
    if message_kind == HEART_BEAT_REQUEST:
        return el.HeartBeatRequest(group=group, local_id=src, remote_id=dst, leader_id=id_or_none(ids, m[0]), term=m[1])
    if message_kind == HEART_BEAT_RESPONSE:
        return el.HeartBeatResponse(code=el.Code(m[0]), term=m[1])
    if message_kind == LEADERSHIP_TRANSFER_REQUEST:
        return el.LeadershipTransferRequest(group=group, remote_id=dst, term=m[0], transfer_id=id_or_none(ids, m[1]),
                                            transferee_id=ids[m[2]], take_leadership_ledger_index=m[3],
                                            leader_id=id_or_none(ids, m[4]))
    if message_kind == LEADERSHIP_TRANSFER_RESPONSE:
        return el.LeadershipTransferResponse(code=el.Code(m[0]), term=m[1])
    raise ValueError(f"unknown message kind {message_kind}")


def ctx(cfg, row):
    context = int(row[R_CONTEXT])
    if context == CTX_HEART_BEAT:
        return ("hb", int(row[R_CONTEXT_1]))
    if context == CTX_VOTE:
        return ("vote", int(row[R_CONTEXT_1]))
    return ("transfer", int(row[R_CONTEXT_1]), cfg.ids[int(row[R_CONTEXT_2])], int(row[R_CONTEXT_3]))


def since_map(ids, col) -> FrozenMap:
    """node id -> since, for the nodes whose column is set (>= 0)."""
    d = {ids[i]: int(t) for i, t in enumerate(col) if t >= 0}
    return FrozenMap(d) if d else EMPTY


def terms(cfg, notes, upto: int) -> eg.Terms:
    """ghost.Terms from the notes before seq `upto` (a note's seq is its row)."""
    ids = cfg.ids
    votes: dict = {}
    led: dict = {}
    lost: dict = {}
    for seq, (kind, node, term, cand, at, _) in enumerate(notes[:upto].tolist()):
        if kind == NOTE_VOTE:
            votes.setdefault((ids[node], term), []).append((ids[cand], at, seq))
        elif kind == NOTE_LED:
            led.setdefault(term, []).append((ids[node], at, seq))
        else:
            lost.setdefault(ids[node], []).append((at, term, seq))

    def frozen(d):
        return FrozenMap({k: tuple(v) for k, v in d.items()}) if d else EMPTY

    return eg.Terms(votes=frozen(votes), led=frozen(led), term_lost=frozen(lost), seq=upto)


def ghost_at(cfg, notes, upto: int, two_leaders: bool) -> ew.ElectionGhost:
    """The part of the ghost spec's ELE-1 (`two_leaders`) or ELE-2 cause reads, as it was once
    `upto` notes were taken: the terms with two leaders (or the (voter, term) keys with two
    candidates), the ACCEPTs of those terms (keys), and every lost term file. The other
    entries are ones ele1_expected / ele2_expected skip, so leaving them out changes no
    cause and spares building the whole record for each expected violation."""
    ids = cfg.ids
    n = len(ids)
    rows = notes[:upto]
    seqs = np.arange(upto)
    votes = rows[:, N_KIND] == NOTE_VOTE
    if two_leaders:
        led = rows[rows[:, N_KIND] == NOTE_LED]
        pairs = np.unique(led[:, [N_TERM, N_NODE]], axis=0)
        terms_, counts = np.unique(pairs[:, 0], return_counts=True)
        bad = terms_[counts > 1]
        elected = FrozenMap({int(t): frozenset(ids[int(x)] for x in pairs[pairs[:, 0] == t, 1]) for t in bad})
        keep = votes & np.isin(rows[:, N_TERM], bad)
        grants = EMPTY
    else:
        v = rows[votes]
        triples = np.unique(v[:, [N_TERM, N_NODE, N_CANDIDATE]], axis=0)
        keys, counts = np.unique(triples[:, 0] * n + triples[:, 1], return_counts=True)
        bad = keys[counts > 1]
        elected = EMPTY
        grants = FrozenMap({(ids[int(key % n)], int(key // n)): frozenset(
            ids[int(c)] for c in triples[triples[:, 0] * n + triples[:, 1] == key, 2]) for key in bad})
        keep = votes & np.isin(rows[:, N_TERM] * n + rows[:, N_NODE], bad)
    by_key: dict = {}
    for seq, (node, term, cand, at) in zip(seqs[keep].tolist(),
                                           rows[keep][:, [N_NODE, N_TERM, N_CANDIDATE, N_AT]].tolist()):
        by_key.setdefault((ids[node], term), []).append((ids[cand], at, seq))
    lost: dict = {}
    lrows = rows[:, N_KIND] == NOTE_LOST
    for seq, (node, term, at) in zip(seqs[lrows].tolist(), rows[lrows][:, [N_NODE, N_TERM, N_AT]].tolist()):
        lost.setdefault(ids[node], []).append((at, term, seq))
    t = eg.Terms(votes=FrozenMap({k: tuple(x) for k, x in by_key.items()}),
                 term_lost=FrozenMap({k: tuple(x) for k, x in lost.items()}), seq=upto)
    return ew.ElectionGhost(elected=elected, grants=grants, terms=t)


def world(p, s) -> core.World:
    cfg = p.cfg
    ids = cfg.ids
    n = len(ids)
    counters = s.world
    nodes = tuple(member(cfg, s.members, s.peers_live, s.water_marks, i) for i in range(n))
    flight = tuple(net.Envelope(id=int(r[E_ID]), src=int(r[E_SRC]), dst=int(r[E_DST]), msg=message(cfg, r),
                                sent_ms=int(r[E_SENT]), rpc=int(r[E_RPC]), reply=bool(r[E_REPLY]))
                   for r in s.flight[:int(counters[W_FLIGHT])])
    rpcs = tuple(net.Rpc(id=int(r[R_ID]), requester=int(r[R_REQUESTER]), responder=int(r[R_RESPONDER]),
                         deadline_ms=int(r[R_DEADLINE]), ctx=ctx(cfg, r), window=int(r[R_WINDOW]))
                 for r in s.rpcs[:int(counters[W_RPCS])])
    cut = frozenset((a, b) for a in range(n) for b in range(n) if s.cut[a, b])
    network = net.Network(flight=flight, rpcs=rpcs, cut=cut, next_id=int(counters[W_NEXT_ID]))
    top = int(counters[W_TOP_TERM]) + 1
    elected = FrozenMap({t: frozenset(ids[i] for i in range(n) if s.elected[t] >> i & 1)
                         for t in range(top) if s.elected[t]})
    grants = FrozenMap({(ids[v], t): frozenset(ids[c] for c in range(n) if s.grants[t, v] >> c & 1)
                        for t in range(top) for v in range(n) if s.grants[t, v]})
    settled_leader = int(counters[W_SETTLED_LEADER])
    ghost = ew.ElectionGhost(
        elected=elected, grants=grants, cut_since=tuple(int(x) for x in s.cut_since), settled_ms=int(counters[W_SETTLED]),
        terms=terms(cfg, s.notes, int(counters[W_NOTES])), agreed=bool(counters[W_AGREED]), agreed_since=int(counters[W_AGREED_SINCE]),
        settled_leader=(ids[settled_leader], int(counters[W_SETTLED_LEADER_TERM])) if settled_leader >= 0 else None,
        stragglers=since_map(ids, s.node_notes[:, NN_STRAGGLER_SINCE]), transfers=since_map(ids, s.node_notes[:, NN_TRANSFER_SINCE]))
    history = core.History(last_fault_ms=int(counters[W_LAST_FAULT]), crashes=int(counters[W_CRASHES]),
                         os_crashes=int(counters[W_OS_CRASHES]), disk_losses=int(counters[W_DISK_LOSSES]),
                         lost_writes=frozenset(i for i in range(n) if counters[W_LOST_WRITES] >> i & 1),
                         calm=bool(counters[W_CALM]), calm_at_ms=int(counters[W_CALM_AT]))
    return core.World(cfg=cfg, now=int(counters[W_NOW]), nodes=nodes, alive=tuple(bool(a) for a in s.alive),
                    net=network, ghost=ghost, history=history, since=tuple(int(x) for x in s.since),
                    fresh=frozenset(i for i in range(n) if int(counters[W_FRESH]) >> i & 1))
