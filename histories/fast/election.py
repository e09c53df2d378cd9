"""The compiled twin of the `election` world: one Numba kernel, fixed-layout arrays.

It runs a whole seeded history the way `rmqspec.runner.run(cfg, SeededChooser(seed).choose,
steps, until_ms)` does, event for event: the same enabled events in the same order
(`world.protocol_events` then `world.fault_events`), the same random draws from the same
MT19937 sequence (`fast_proto.mt`), the same transitions (`reference_impl.election`, the
generic world of `reference_impl.world` and `reference_impl.network`), the same ghost
variables (`reference_impl.election_world`) and every property of `spec/election.py` at
every step, with the Monitor's rules for first and expected violations.

The hot loop never calls Python. Python (`fast_proto.run`) only builds the arrays from a
`WorldConfig` and decodes the results. Layout of the arrays: fast_proto/README.md.

Reading guide: each function below names the reference function it mirrors; the
branches are in the reference's order so that a change there maps to one place here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from histories.fast.common import borrow
from histories.fast.mt import genrand, getrandbits, random53, randbelow  # noqa: F401  (genrand: tests)

# --- enums as the reference declares them ---

CANDIDATE = 0
LEADER = 1
FOLLOWER = 2
ROLE_NAMES = ("CANDIDATE", "LEADER", "FOLLOWER")

WAIT_TO_REVOTE = 0
REVOTE_IMMEDIATELY = 1
PASSED = 2
WAIT_TO_VOTE_NEXT = 3
PARSE_NAMES = ("WAIT_TO_REVOTE", "REVOTE_IMMEDIATELY", "PASSED", "WAIT_TO_VOTE_NEXT")

# VoteResponse.RESULT in declaration order (election.VoteResult)
V_UNKNOWN = 0
V_ACCEPT = 1
V_REJECT_UNKNOWN_LEADER = 2
V_REJECT_UNEXPECTED_LEADER = 3
V_REJECT_EXPIRED_VOTE_TERM = 4
V_REJECT_ALREADY_VOTED = 5
V_REJECT_ALREADY_HAS_LEADER = 6
V_REJECT_TERM_NOT_READY = 7
V_REJECT_TERM_SMALL_THAN_LEDGER = 8
V_REJECT_EXPIRED_LEDGER_TERM = 9
V_REJECT_SMALL_LEDGER_END_INDEX = 10
V_REJECT_TAKING_LEADERSHIP = 11

# DLedgerResponseCode values (election.Code)
SUCCESS = 200
NETWORK_ERROR = 302
UNKNOWN_MEMBER = 401
UNEXPECTED_MEMBER = 402
EXPIRED_TERM = 403
NOT_LEADER = 404
INCONSISTENT_TERM = 407
INCONSISTENT_LEADER = 409
UNEXPECTED_ARGUMENT = 411
TERM_NOT_READY = 416
FALL_BEHIND_TOO_MUCH = 417
TAKE_LEADERSHIP_FAILED = 418
INTERNAL_ERROR = 500
LEADER_TRANSFERRING = 506

LONG_AGO_MS = 1 << 40
SCAN_GRACE_MS = 1000  # network.SCAN_GRACE_MS: an invokeAsync timeout fires once begin + timeout + 1000 <= now
SCAN_PERIOD_MS = 1000  # network.SCAN_PERIOD_MS: ... at the response-table scan, every 1000 ms
VOTE_WAIT_BASE_MS = 2000  # maintainAsCandidate: voteLatch.await(2000 + random.nextInt(maxVoteIntervalMs))
CALM_DELAY_MAX = 5  # world.CALM_DELAY_MS
CALM_DELAY_MIN = 1
ELE_L_BOUND_MS = 30_000
MAX_FAULT_SHARE = 0.5

# --- node record (election.Member): one row of `nd` per node ---

TERM = 0  # curr_term
VOTE = 1  # curr_vote_for, node index or -1
ROLE = 2
LEADER_ID = 3  # node index or -1
LEI = 4  # ledger_end_index
LET = 5  # ledger_end_term
KMAX = 6  # known_max_term_in_group
TRANSFEREE = 7  # node index or -1
TTTL = 8  # term_to_take_leadership
LLHB = 9  # last_leader_heart_beat_time
LSHB = 10  # last_send_heart_beat_time
LSUCC = 11  # last_succ_heart_beat_time
NTRV = 12  # next_time_to_request_vote
NEEDINC = 13  # need_increase_term_immediately
LPR = 14  # last_parse_result
NEXTLOOP = 15  # next_loop_ms
RTYPE = 16  # round: 0 none, 1 VoteRound, 2 HeartBeatRound
RSEQ = 17
RTERM = 18
RDEADLINE = 19
RKMAX = 20  # VoteRound.known_max_term_in_group
RALL = 21  # all_num
RVALID = 22  # VoteRound.valid_num
RACC = 23  # VoteRound.accepted_num
RNR = 24  # VoteRound.not_ready_term_num / HeartBeatRound.not_ready_num
RBIG = 25  # VoteRound.bigger_ledger_num
RHASL = 26  # VoteRound.already_has_leader
RREL = 27  # released_at
RSUCC = 28  # HeartBeatRound.succ_num
RMAXT = 29  # HeartBeatRound.max_term
RINC = 30  # HeartBeatRound.inconsist_leader
ROUNDSEQ = 31  # round_seq
NCP = 32  # next_check_preferred_ms
TIF = 33  # transfer_in_flight
TLW = 34  # take_leadership is not None
TL_RPC = 35
TL_TERM = 36  # request.term
TL_IDX = 37  # request.take_leadership_ledger_index
TL_STARTED = 38
TL_WAITING = 39  # waiting_for_index
TL_FROM = 40  # request.transfer_id (index or -1)
TL_LEADER = 41  # request.leader_id (index or -1)
NF = 42

RT_VOTE = 1
RT_HB = 2

# --- envelopes (network.Envelope): rows of `fl`, kept in id order as the reference's tuple ---

E_ID = 0
E_SRC = 1
E_DST = 2
E_SENT = 3
E_RPC = 4
E_REPLY = 5
E_MK = 6  # message kind
E_M0 = 7  # message fields m0..m4, by kind:
EF = 12
# VoteRequest: m0 leader_id (candidate), m1 term, m2 ledger_end_index, m3 ledger_end_term
# VoteResponse: m0 term, m1 vote_result, m2 code
# HeartBeatRequest: m0 leader_id, m1 term (local_id = src)
# HeartBeatResponse: m0 code, m1 term
# LeadershipTransferRequest: m0 term, m1 transfer_id, m2 transferee_id, m3 take_leadership_ledger_index, m4 leader_id
# LeadershipTransferResponse: m0 code, m1 term
MK_VOTE_REQ = 1
MK_VOTE_RESP = 2
MK_HB_REQ = 3
MK_HB_RESP = 4
MK_LT_REQ = 5
MK_LT_RESP = 6

# --- open RPCs (network.Rpc): rows of `rp`, in id order ---

R_ID = 0
R_REQ = 1
R_RESP = 2
R_DEADLINE = 3
R_CK = 4  # ctx kind: 1 ("hb", seq), 2 ("vote", seq), 3 ("transfer", term, transferee, admin_rpc)
R_C1 = 5
R_C2 = 6
R_C3 = 7
R_WINDOW = 8  # network.Rpc.window: how much later than its deadline its failure may fire
RF = 9
CK_HB = 1
CK_VOTE = 2
CK_TRANSFER = 3

# --- a transition's outputs, in order (Send / Respond / observations) ---

O_TYPE = 0
OF = 13
OT_SEND = 1  # dst, mk, m0..m4, ck, c1, c2, c3
OT_RESPOND = 2  # rpc, mk, m0, m1
OT_OBS = 3  # kind, a, b, c
OB_ROLE = 1  # RoleChanged(term, role, leader)
OB_GRANT = 2  # VoteGranted(term, candidate)
OB_PARSED = 3  # VoteParsed
OB_FTO = 4  # FollowerTimeout(term, leader)
OB_STEPDOWN = 5  # LeaderStepDown
OB_TRANSFER = 6  # TransferDone

# --- config (C, int64) ---

C_N = 0
C_HBI = 1  # heart_beat_time_interval_ms
C_LEAK = 2  # max_heart_beat_leak
C_MINV = 3
C_MAXV = 4
C_ELECTOR = 5  # enable_leader_elector
C_PREF = 6  # preferred_leader_ids is not None
C_MINTL = 7
C_MAXTL = 8
C_MAXTWI = 9  # max_leadership_transfer_wait_index
C_LTWT = 10  # leadership_transfer_wait_timeout
C_RPCTO = 11
C_SLEEP = 12
C_CPLI = 13  # check_preferred_leader_interval_ms
C_DMIN = 14
C_DMAX = 15
C_CALM_AT = 16  # -1: no quiet tail
C_JAVA = 17  # FaultProfile.timing: 1 "java" (ticks and scanned RPC failures fire within windows), 0 "pinned"
C_HB1Q = 18  # spec.election.hb1_quiet_ms
C_HB2B = 19  # spec.election.hb2_bound_ms
C_CRASHABLE = 20  # bit mask of nodes random crashes may pick
C_TCAP = 21  # capacity of the per-term ghost tables
C_LOG = 22  # 1: write the event log
C_MUTANT = 23  # 0: the reference; k > 0: property_tests/mutants.py's mutant k (MUTANTS below)
C_STAGGER = 24  # FaultProfile.stagger_ms (the first tick of a node after it (re)starts)
CF = 25

# property_tests/mutants.py, by the name of the function each replaces (test-only: they
# let the cross-check compare unexpected verdicts of every property)
MUT_VOTE_IGNORING_VOTE = 1  # handle_vote: vote_ignoring_curr_vote_for
MUT_OWN_VOTE_QUORUM = 2  # finish_vote_round: parse_own_vote_as_quorum
MUT_HB_NO_REFRESH = 3  # handle_heart_beat: heartbeat_not_refreshing_timer
MUT_CRASH_LOSES_TERM = 4  # crash: crash_losing_term_file
MUT_CRASH_LOSES_VOTE = 5  # crash: crash_losing_vote
MUT_HB_FOLLOW_HIGHER = 6  # handle_heart_beat: heartbeat_following_higher_term_at_old_term
MUT_LEASE_NEVER_EXPIRES = 7  # finish_heart_beat_round: leader_lease_never_expires
MUT_NEVER_INCREMENT = 8  # maintain_as_candidate: candidate_never_increments_term
MUTANTS = {"vote_ignoring_curr_vote_for": 1, "parse_own_vote_as_quorum": 2, "heartbeat_not_refreshing_timer": 3,
           "crash_losing_term_file": 4, "crash_losing_vote": 5, "heartbeat_following_higher_term_at_old_term": 6,
           "leader_lease_never_expires": 7, "candidate_never_increments_term": 8}

# fault kinds, in world.FAULT_KINDS order; profile weights `pw` are float64[9]
K_LOSS = 0
K_DUP = 1
K_CRASH = 2
K_OS = 3
K_DISK = 4
K_RESTART = 5
K_PARTITION = 6
K_ONEWAY = 7
K_HEAL = 8

# --- world scalars (ws, int64) ---

W_NOW = 0
W_NEXT_ID = 1
W_NF = 2  # envelopes in flight
W_NR = 3  # open RPCs
W_NCUT = 4
W_CALM = 5
W_CALM_AT = 6
W_LAST_FAULT = 7
W_CRASHES = 8
W_OS_CRASHES = 9
W_DISK_LOSSES = 10
W_LOST = 11  # lost_writes, bit mask
W_SETTLED = 12  # ghost.settled_ms
W_STEPS = 13
W_STOP = 14  # 0 steps, 1 until, 2 idle, negative: capacity overflow (status codes below)
W_MAXTERM_SEEN = 15  # largest term index used in the ghost tables
W_GVER = 16  # bumped when elected, grants or lost_writes change (caches expected causes)
W_ELE1_BAD = 17  # terms with more than one leader
W_ELE2_BAD = 18  # (voter, term) with more than one candidate
W_METER_SINCE = 19  # LeaderlessMeter.since
W_METER_TOTAL = 20
W_METER_EPISODES = 21
W_FAULT0 = 22  # fault counts: drop, duplicate, crash, os_crash, disk_loss, restart, partition, cut, heal
W_NLOG = 31
W_EVENTS_TICK = 32  # event counts by kind (diagnostics), 32 + EV_* (up to 43)
W_FRESH = 44  # World.fresh as a bit mask: nodes that have not ticked since they (re)started
WF = 48

STOP_STEPS = 0
STOP_UNTIL = 1
STOP_IDLE = 2
OVERFLOW_FLIGHT = -1
OVERFLOW_RPCS = -2
OVERFLOW_TERMS = -3
OVERFLOW_OUTS = -4
OVERFLOW_EVENTS = -5
OVERFLOW_LOG = -6

# --- properties (vi rows), in the catalogue order of spec/election.py ---

P_ELE1 = 0
P_ELE2 = 1
P_ELE3 = 2
P_ELE4 = 3
P_ELE5 = 4
P_HB1 = 5
P_HB2 = 6
P_ELEL = 7
NPROP = 8
PROPERTY_IDS = ("ELE-1", "ELE-2", "ELE-3", "ELE-4", "ELE-5", "HB-1", "HB-2", "ELE-L")
V_STEP = 0  # -1: none recorded
V_T = 1
V_CAUSE = 2  # bit mask of the nodes named by the expected cause; 0: unexpected
V_CVER = 3  # cache: ghost version the cause below was computed at (-1: none)
V_CMASK = 4
VF = 5

# --- events (the log, and the chooser's lists) ---

EV_TICK = 1
EV_DELIVER = 2
EV_DROP = 3
EV_DUP = 4
EV_RPCFAIL = 5
EV_CRASH = 6  # b: 0 process, 1 os, 2 disk
EV_RESTART = 7
EV_PARTITION = 8  # a: index into world.isolations(n)
EV_CUT = 9  # a src, b dst
EV_HEAL = 10
EV_CALM = 11
EVENT_NAMES = {1: "Tick", 2: "Deliver", 3: "Drop", 4: "Duplicate", 5: "RpcFail", 6: "Crash", 7: "Restart",
               8: "Partition", 9: "CutLink", 10: "Heal", 11: "Calm"}
L_KIND = 0
L_A = 1
L_B = 2
L_T = 3
L_DRAW = 4
L_LATE = 5
L_NOBS = 6
LF = 7


# =====================================================================================
# node logic (reference_impl.election)
# =====================================================================================


@njit(cache=True, inline='always')
def _is_quorum(C, num):
    return num >= C[C_N] // 2 + 1


@njit(cache=True, inline='always')
def _elapsed(now, since):
    return now - since if since >= 0 else LONG_AGO_MS


@njit(cache=True, inline='always')
def _rand_int(draw, bound):
    return (draw * bound) >> 16


@njit(cache=True, inline='always')
def _push_send(ob, oc, dst, mk, m0, m1, m2, m3, m4, ck, c1, c2, c3):
    k = oc[0]
    if k >= ob.shape[0]:
        oc[1] = 1
        return
    ob[k, 0] = OT_SEND
    ob[k, 1] = dst
    ob[k, 2] = mk
    ob[k, 3] = m0
    ob[k, 4] = m1
    ob[k, 5] = m2
    ob[k, 6] = m3
    ob[k, 7] = m4
    ob[k, 8] = ck
    ob[k, 9] = c1
    ob[k, 10] = c2
    ob[k, 11] = c3
    oc[0] = k + 1


@njit(cache=True, inline='always')
def _push_respond(ob, oc, rpc, mk, m0, m1):
    k = oc[0]
    if k >= ob.shape[0]:
        oc[1] = 1
        return
    ob[k, 0] = OT_RESPOND
    ob[k, 1] = rpc
    ob[k, 2] = mk
    ob[k, 3] = m0
    ob[k, 4] = m1
    oc[0] = k + 1


@njit(cache=True, inline='always')
def _push_obs(ob, oc, kind, a, b, c):
    k = oc[0]
    if k >= ob.shape[0]:
        oc[1] = 1
        return
    ob[k, 0] = OT_OBS
    ob[k, 1] = kind
    ob[k, 2] = a
    ob[k, 3] = b
    ob[k, 4] = c
    oc[0] = k + 1


@njit(cache=True, inline='always')
def _clear_take_leadership(nd, i):
    nd[i, TLW] = 0
    nd[i, TL_RPC] = 0
    nd[i, TL_TERM] = 0
    nd[i, TL_IDX] = 0
    nd[i, TL_STARTED] = 0
    nd[i, TL_WAITING] = 0
    nd[i, TL_FROM] = -1
    nd[i, TL_LEADER] = -1


@njit(cache=True)
def _boot(C, nd, live, i, now, term, vote, lei, let, ncp):
    """election.boot (and Member defaults): `ncp` is next_check_preferred_ms."""
    n = C[C_N]
    for f in range(NF):
        nd[i, f] = 0
    nd[i, TERM] = term
    nd[i, VOTE] = vote
    nd[i, ROLE] = CANDIDATE
    nd[i, LEADER_ID] = -1
    nd[i, LEI] = lei
    nd[i, LET] = let
    nd[i, KMAX] = -1
    nd[i, TRANSFEREE] = -1
    nd[i, TTTL] = -1
    nd[i, LLHB] = -1
    nd[i, LSHB] = -1
    nd[i, LSUCC] = -1
    nd[i, NTRV] = -1
    nd[i, NEEDINC] = 0
    nd[i, LPR] = WAIT_TO_REVOTE
    nd[i, NEXTLOOP] = now
    nd[i, RTYPE] = 0
    nd[i, ROUNDSEQ] = 0
    nd[i, NCP] = ncp
    nd[i, TIF] = 0
    _clear_take_leadership(nd, i)
    for j in range(n):
        live[i, j] = -1


@njit(cache=True)
def _take_leadership_task_check(nd, i, term, role, ob, oc):
    """election.take_leadership_task_check"""
    if nd[i, TTTL] == -1 or nd[i, TLW] == 0 or nd[i, TL_WAITING] == 1:
        return
    target = nd[i, TTTL]
    if term > target:
        code = EXPIRED_TERM
    elif term == target:
        if role == LEADER:
            code = SUCCESS
        elif role == FOLLOWER:
            code = TAKE_LEADERSHIP_FAILED
        else:
            return
    else:
        code = TAKE_LEADERSHIP_FAILED if role == FOLLOWER else INTERNAL_ERROR
    rpc = nd[i, TL_RPC]
    nd[i, TTTL] = -1
    _clear_take_leadership(nd, i)
    _push_respond(ob, oc, rpc, MK_LT_RESP, code, term)


@njit(cache=True)
def _handle_role_change(nd, i, term, role, ob, oc):
    """election.handle_role_change"""
    _take_leadership_task_check(nd, i, term, role, ob, oc)
    _push_obs(ob, oc, OB_ROLE, term, role, nd[i, LEADER_ID])


@njit(cache=True)
def _change_role_to_leader(C, nd, live, i, term, ob, oc):
    if nd[i, TERM] != term:
        return
    nd[i, ROLE] = LEADER
    nd[i, LEADER_ID] = i
    for j in range(C[C_N]):
        live[i, j] = -1
    nd[i, LSHB] = -1
    _handle_role_change(nd, i, term, LEADER, ob, oc)


@njit(cache=True)
def _change_role_to_candidate(nd, i, term, ob, oc):
    if term < nd[i, TERM]:
        return
    nd[i, ROLE] = CANDIDATE
    nd[i, LEADER_ID] = -1
    nd[i, TRANSFEREE] = -1
    if term > nd[i, KMAX]:
        nd[i, KMAX] = term
    _handle_role_change(nd, i, term, CANDIDATE, ob, oc)


@njit(cache=True)
def _change_role_to_follower(nd, i, term, leader, now, ob, oc):
    nd[i, LPR] = WAIT_TO_REVOTE
    nd[i, ROLE] = FOLLOWER
    nd[i, LEADER_ID] = leader
    nd[i, TRANSFEREE] = -1
    nd[i, LLHB] = now
    _handle_role_change(nd, i, term, FOLLOWER, ob, oc)


@njit(cache=True)
def _is_taking_leadership(C, nd, i, self_pref):
    return C[C_PREF] == 1 and nd[i, TTTL] == nd[i, TERM] and self_pref[i] == 1


@njit(cache=True, inline='always')
def _handle_vote(C, nd, i, cand, term, lei, let, self_vote, self_pref, ob, oc):
    """election.handle_vote -> (reply term, vote_result)"""
    curr = nd[i, TERM]
    if cand < 0 or cand >= C[C_N]:
        return curr, V_REJECT_UNKNOWN_LEADER
    if not self_vote and cand == i:
        return curr, V_REJECT_UNEXPECTED_LEADER
    if let < nd[i, LET]:
        return curr, V_REJECT_EXPIRED_LEDGER_TERM
    if let == nd[i, LET] and lei < nd[i, LEI]:
        return curr, V_REJECT_SMALL_LEDGER_END_INDEX
    if term < curr:
        return curr, V_REJECT_EXPIRED_VOTE_TERM
    if term == curr:
        if nd[i, VOTE] >= 0 and nd[i, VOTE] != cand:
            # mutant 1 grants when the rest of handleVote would (it re-runs with no vote)
            if not (C[C_MUTANT] == MUT_VOTE_IGNORING_VOTE and not term < nd[i, LET]
                    and not (not self_vote and _is_taking_leadership(C, nd, i, self_pref)
                             and let == nd[i, LET] and nd[i, LEI] >= lei)):
                if nd[i, LEADER_ID] >= 0:
                    return curr, V_REJECT_ALREADY_HAS_LEADER
                return curr, V_REJECT_ALREADY_VOTED
    else:
        _change_role_to_candidate(nd, i, term, ob, oc)
        nd[i, NEEDINC] = 1
        return curr, V_REJECT_TERM_NOT_READY
    if term < nd[i, LET]:
        return nd[i, LET], V_REJECT_TERM_SMALL_THAN_LEDGER
    if (not self_vote and _is_taking_leadership(C, nd, i, self_pref) and let == nd[i, LET]
            and nd[i, LEI] >= lei):
        return curr, V_REJECT_TAKING_LEADERSHIP
    nd[i, VOTE] = cand
    _push_obs(ob, oc, OB_GRANT, nd[i, TERM], cand, 0)
    return curr, V_ACCEPT


@njit(cache=True, inline='always')
def _handle_heart_beat(C, nd, i, leader, term, now, ob, oc):
    """election.handle_heart_beat -> (code, reply term)"""
    mut = C[C_MUTANT]
    if mut == MUT_HB_FOLLOW_HIGHER and 0 <= leader < C[C_N] and leader != i and term > nd[i, TERM]:
        nd[i, ROLE] = FOLLOWER
        nd[i, LEADER_ID] = leader
        nd[i, LLHB] = now
        _push_obs(ob, oc, OB_ROLE, nd[i, TERM], FOLLOWER, leader)
        return SUCCESS, -1
    if mut == MUT_HB_NO_REFRESH and nd[i, ROLE] == FOLLOWER:
        before = nd[i, LLHB]
        code, rterm = _handle_heart_beat_ref(C, nd, i, leader, term, now, ob, oc)
        if nd[i, ROLE] == FOLLOWER:
            nd[i, LLHB] = before
        return code, rterm
    return _handle_heart_beat_ref(C, nd, i, leader, term, now, ob, oc)


@njit(cache=True, inline='always')
def _handle_heart_beat_ref(C, nd, i, leader, term, now, ob, oc):
    if leader < 0 or leader >= C[C_N]:
        return UNKNOWN_MEMBER, nd[i, TERM]
    if leader == i:
        return UNEXPECTED_MEMBER, nd[i, TERM]
    if term < nd[i, TERM]:
        return EXPIRED_TERM, nd[i, TERM]
    if term == nd[i, TERM]:
        if leader == nd[i, LEADER_ID]:
            nd[i, LLHB] = now
            return SUCCESS, -1
        if nd[i, LEADER_ID] < 0:
            _change_role_to_follower(nd, i, term, leader, now, ob, oc)
            return SUCCESS, -1
        return INCONSISTENT_LEADER, -1
    _change_role_to_candidate(nd, i, term, ob, oc)
    nd[i, NEEDINC] = 1
    return TERM_NOT_READY, -1


@njit(cache=True)
def _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref):
    if _is_taking_leadership(C, nd, i, self_pref):
        lo = C[C_MINTL]
        hi = C[C_MAXTL]
    else:
        lo = C[C_MINV]
        hi = C[C_MAXV]
    return now + lo + _rand_int(draw, hi - lo)


@njit(cache=True)
def _handle_leadership_transfer(C, nd, i, term, transferee, admin_rpc, ob, oc):
    """election.handle_leadership_transfer -> (has reply, code, term)"""
    if nd[i, TERM] != term:
        return True, INCONSISTENT_TERM, nd[i, TERM]
    if nd[i, ROLE] != LEADER:
        return True, NOT_LEADER, nd[i, TERM]
    if nd[i, TRANSFEREE] >= 0:
        return True, LEADER_TRANSFERRING, nd[i, TERM]
    nd[i, TRANSFEREE] = transferee
    nd[i, TIF] = 1
    _push_send(ob, oc, transferee, MK_LT_REQ, term, i, transferee, nd[i, LEI], nd[i, LEADER_ID],
               CK_TRANSFER, term, transferee, admin_rpc)
    return False, 0, 0


@njit(cache=True)
def _on_leadership_transfer_response(nd, i, term, transferee, admin_rpc, has_resp, code, rterm, ob, oc):
    """election.on_leadership_transfer_response"""
    if not has_resp:
        code = NETWORK_ERROR
    nd[i, TIF] = 0
    if (code != SUCCESS or (nd[i, TERM] == term and nd[i, TRANSFEREE] >= 0)) and nd[i, ROLE] == LEADER:
        nd[i, TRANSFEREE] = -1
    _push_obs(ob, oc, OB_TRANSFER, transferee, code, 0)
    if admin_rpc != 0:
        if has_resp:
            _push_respond(ob, oc, admin_rpc, MK_LT_RESP, code, rterm)
        else:
            _push_respond(ob, oc, admin_rpc, MK_LT_RESP, NETWORK_ERROR, term)


@njit(cache=True)
def _handle_take_leadership(C, nd, i, now, ob, oc):
    """election.handle_take_leadership -> (has reply, code, term)"""
    if nd[i, TERM] != nd[i, TL_TERM]:
        _clear_take_leadership(nd, i)
        return True, INCONSISTENT_TERM, nd[i, TERM]
    target = nd[i, TL_TERM] + 1
    nd[i, TTTL] = target
    nd[i, TL_WAITING] = 0
    _change_role_to_candidate(nd, i, target, ob, oc)
    nd[i, NEEDINC] = 1
    return False, 0, 0


@njit(cache=True)
def _take_leadership_wait_step(C, nd, i, now, ob, oc):
    """election.take_leadership_wait_step -> (has reply, code, term)"""
    if nd[i, TL_IDX] - nd[i, LEI] > 0:
        if now - nd[i, TL_STARTED] > C[C_LTWT]:
            t = nd[i, TL_TERM]
            _clear_take_leadership(nd, i)
            return True, TAKE_LEADERSHIP_FAILED, t
        return False, 0, 0
    return _handle_take_leadership(C, nd, i, now, ob, oc)


@njit(cache=True)
def _server_handle_leadership_transfer(C, nd, wmk, i, term, transfer_id, transferee, take_idx, leader, rpc, now,
                                       ob, oc):
    """election.server_handle_leadership_transfer -> (has reply, code, term). The world only
    addresses requests to their remote_id in the configured group, so those guards pass."""
    n = C[C_N]
    if transfer_id == i:
        if transferee < 0 or transferee >= n:
            return True, UNKNOWN_MEMBER, term
        if nd[i, TERM] != term:
            return True, INCONSISTENT_TERM, term
        if nd[i, ROLE] != LEADER:
            return True, NOT_LEADER, term
        if nd[i, LEI] - wmk[i, transferee] >= C[C_MAXTWI]:
            return True, FALL_BEHIND_TOO_MUCH, term
        return _handle_leadership_transfer(C, nd, i, term, transferee, rpc, ob, oc)
    if transferee == i:
        if transfer_id != nd[i, LEADER_ID]:
            return True, INCONSISTENT_LEADER, term
        nd[i, TLW] = 1
        nd[i, TL_RPC] = rpc
        nd[i, TL_TERM] = term
        nd[i, TL_IDX] = take_idx
        nd[i, TL_STARTED] = now
        nd[i, TL_WAITING] = 1
        nd[i, TL_FROM] = transfer_id
        nd[i, TL_LEADER] = leader
        return _take_leadership_wait_step(C, nd, i, now, ob, oc)
    return True, UNEXPECTED_ARGUMENT, nd[i, TERM]


@njit(cache=True)
def _check_preferred_leader(C, nd, live, wmk, i, pref, self_pref, ob, oc):
    """election.check_preferred_leader; `pref`: the preferred ids that are peers, in order."""
    if nd[i, ROLE] != LEADER or C[C_PREF] == 0 or nd[i, TRANSFEREE] >= 0:
        return
    if self_pref[i] == 1:
        return
    best = -1
    min_fb = 0
    for k in range(pref.shape[0]):
        p = pref[k]
        if live[i, p] != 1:
            continue
        fb = nd[i, LEI] - wmk[i, p]
        if best < 0 or fb < min_fb:
            best = p
            min_fb = fb
    if best < 0:
        return
    if min_fb >= C[C_MAXTWI]:
        return
    _handle_leadership_transfer(C, nd, i, nd[i, TERM], best, 0, ob, oc)


@njit(cache=True, inline='always')
def _send_heartbeats(C, nd, i, now, ob, oc):
    """election.send_heartbeats (after maintain_as_leader set last_send_heart_beat_time)"""
    seq = nd[i, ROUNDSEQ] + 1
    for p in range(C[C_N]):
        if p != i:
            _push_send(ob, oc, p, MK_HB_REQ, nd[i, LEADER_ID], nd[i, TERM], 0, 0, 0, CK_HB, seq, 0, 0)
    nd[i, RTYPE] = RT_HB
    nd[i, RSEQ] = seq
    nd[i, RTERM] = nd[i, TERM]
    nd[i, RDEADLINE] = now + C[C_HBI]
    nd[i, RALL] = 1
    nd[i, RSUCC] = 1
    nd[i, RNR] = 0
    nd[i, RMAXT] = -1
    nd[i, RINC] = 0
    nd[i, RREL] = -1
    nd[i, RKMAX] = 0
    nd[i, RVALID] = 0
    nd[i, RACC] = 0
    nd[i, RBIG] = 0
    nd[i, RHASL] = 0
    nd[i, ROUNDSEQ] = seq


@njit(cache=True, inline='always')
def _on_heart_beat_response(C, nd, live, i, seq, peer, has_resp, code, rterm, now):
    """election.on_heart_beat_response"""
    if not has_resp:
        code = NETWORK_ERROR
    live[i, peer] = 1 if code != NETWORK_ERROR else 0
    if nd[i, RTYPE] != RT_HB or nd[i, RSEQ] != seq:
        return
    if code == SUCCESS:
        nd[i, RSUCC] += 1
    elif code == EXPIRED_TERM:
        nd[i, RMAXT] = rterm
    elif code == INCONSISTENT_LEADER:
        nd[i, RINC] = 1
    elif code == TERM_NOT_READY:
        nd[i, RNR] += 1
    nd[i, RALL] += 1
    if nd[i, RREL] < 0 and (_is_quorum(C, nd[i, RSUCC]) or _is_quorum(C, nd[i, RSUCC] + nd[i, RNR])
                            or nd[i, RALL] == C[C_N]):
        nd[i, RREL] = now


@njit(cache=True)
def _finish_heart_beat_round(C, nd, i, now, ob, oc):
    """election.finish_heart_beat_round"""
    if C[C_MUTANT] == MUT_LEASE_NEVER_EXPIRES:
        nd[i, LSUCC] = now
    succ = nd[i, RSUCC]
    nr = nd[i, RNR]
    hterm = nd[i, RTERM]
    maxt = nd[i, RMAXT]
    inc = nd[i, RINC]
    nd[i, RTYPE] = 0
    if _is_quorum(C, succ):
        nd[i, LSUCC] = now
        return
    if _is_quorum(C, succ + nr):
        nd[i, LSHB] = -1
        return
    if maxt > hterm:
        reason = 0
        term = maxt
    elif inc == 1:
        reason = 1
        term = hterm
    elif _elapsed(now, nd[i, LSUCC]) > C[C_LEAK] * C[C_HBI]:
        reason = 2
        term = hterm
    else:
        return
    was_leader = nd[i, ROLE] == LEADER
    k = oc[0]
    _change_role_to_candidate(nd, i, term, ob, oc)
    if was_leader and nd[i, ROLE] == CANDIDATE:
        # LeaderStepDown comes first among the outputs; observations take no ids, so
        # only their count matters to the world (the meter), and the log records counts.
        _push_obs(ob, oc, OB_STEPDOWN, hterm, reason, 0)
        if oc[0] > k + 1:
            last = oc[0] - 1
            for f in range(OF):
                tmp = ob[last, f]
                for r in range(last, k, -1):
                    ob[r, f] = ob[r - 1, f]
                ob[k, f] = tmp


@njit(cache=True, inline='always')
def _maintain_as_follower(C, nd, i, now, ob, oc):
    since = _elapsed(now, nd[i, LLHB])
    if since <= 2 * C[C_HBI]:
        return
    if since <= C[C_LEAK] * C[C_HBI]:
        return
    _push_obs(ob, oc, OB_FTO, nd[i, TERM], nd[i, LEADER_ID], 0)
    _change_role_to_candidate(nd, i, nd[i, TERM], ob, oc)


@njit(cache=True, inline='always')
def _on_vote_response(C, nd, i, seq, has_resp, result, rterm, now):
    """election.on_vote_response"""
    if nd[i, RTYPE] != RT_VOTE or nd[i, RSEQ] != seq:
        return
    if not has_resp:
        result = V_UNKNOWN
    if result != V_UNKNOWN:
        nd[i, RVALID] += 1
    if result == V_ACCEPT:
        nd[i, RACC] += 1
    elif result == V_REJECT_ALREADY_HAS_LEADER:
        nd[i, RHASL] = 1
    elif result == V_REJECT_TERM_SMALL_THAN_LEDGER or result == V_REJECT_EXPIRED_VOTE_TERM:
        if rterm > nd[i, RKMAX]:
            nd[i, RKMAX] = rterm
    elif result == V_REJECT_EXPIRED_LEDGER_TERM or result == V_REJECT_SMALL_LEDGER_END_INDEX:
        nd[i, RBIG] += 1
    elif result == V_REJECT_TERM_NOT_READY:
        nd[i, RNR] += 1
    nd[i, RALL] += 1
    if nd[i, RREL] < 0 and (nd[i, RHASL] == 1 or _is_quorum(C, nd[i, RACC])
                            or _is_quorum(C, nd[i, RACC] + nd[i, RNR]) or nd[i, RALL] == C[C_N]):
        nd[i, RREL] = now


@njit(cache=True)
def _vote_for_quorum_responses(C, nd, i, now, draw, self_pref, ob, oc):
    term = nd[i, TERM]
    seq = nd[i, ROUNDSEQ] + 1
    nd[i, ROUNDSEQ] = seq
    nd[i, RTYPE] = RT_VOTE
    nd[i, RSEQ] = seq
    nd[i, RTERM] = term
    nd[i, RKMAX] = term
    nd[i, RDEADLINE] = now + VOTE_WAIT_BASE_MS + _rand_int(draw, C[C_MAXV])
    nd[i, RALL] = 0
    nd[i, RVALID] = 0
    nd[i, RACC] = 0
    nd[i, RNR] = 0
    nd[i, RBIG] = 0
    nd[i, RHASL] = 0
    nd[i, RREL] = -1
    nd[i, RSUCC] = 0
    nd[i, RMAXT] = 0
    nd[i, RINC] = 0
    for p in range(C[C_N]):
        if p == i:
            rterm, result = _handle_vote(C, nd, i, i, term, nd[i, LEI], nd[i, LET], True, self_pref, ob, oc)
            _on_vote_response(C, nd, i, seq, True, result, rterm, now)
        else:
            _push_send(ob, oc, p, MK_VOTE_REQ, i, term, nd[i, LEI], nd[i, LET], 0, CK_VOTE, seq, 0, 0)


@njit(cache=True, inline='always')
def _maintain_as_candidate(C, nd, i, now, draw, self_pref, ob, oc):
    if C[C_MUTANT] == MUT_NEVER_INCREMENT and nd[i, LPR] == WAIT_TO_VOTE_NEXT:
        nd[i, LPR] = WAIT_TO_REVOTE
    if now < nd[i, NTRV] and nd[i, NEEDINC] == 0:
        return
    if nd[i, ROLE] != CANDIDATE:
        return
    if nd[i, LPR] == WAIT_TO_VOTE_NEXT or nd[i, NEEDINC] == 1:
        # MemberState#nextTerm
        if nd[i, KMAX] > nd[i, TERM]:
            nd[i, TERM] = nd[i, KMAX]
        else:
            nd[i, TERM] += 1
        nd[i, VOTE] = -1
        nd[i, LPR] = WAIT_TO_REVOTE
    if nd[i, NEEDINC] == 1:
        nd[i, NTRV] = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
        nd[i, NEEDINC] = 0
        return
    _vote_for_quorum_responses(C, nd, i, now, draw, self_pref, ob, oc)


@njit(cache=True)
def _finish_vote_round(C, nd, live, i, now, draw, self_pref, ob, oc):
    """election.finish_vote_round"""
    vterm = nd[i, RTERM]
    kmax = nd[i, RKMAX]
    hasl = nd[i, RHASL]
    valid = nd[i, RVALID]
    big = nd[i, RBIG]
    acc = nd[i, RACC]
    nr = nd[i, RNR]
    if C[C_MUTANT] == MUT_OWN_VOTE_QUORUM and kmax <= vterm and acc >= 1:
        acc = C[C_N]
        valid = C[C_N]
        hasl = 0
        big = 0
    nd[i, RTYPE] = 0
    nxt = nd[i, NTRV]
    if kmax > vterm:
        result = WAIT_TO_VOTE_NEXT
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
        nd[i, NTRV] = nxt
        _change_role_to_candidate(nd, i, kmax, ob, oc)
    elif hasl == 1:
        result = WAIT_TO_REVOTE
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref) + C[C_HBI] * C[C_LEAK]
    elif not _is_quorum(C, valid):
        result = WAIT_TO_REVOTE
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
    elif not _is_quorum(C, valid - big):
        result = WAIT_TO_REVOTE
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref) + C[C_MAXV]
    elif _is_quorum(C, acc):
        result = PASSED
    elif _is_quorum(C, acc + nr):
        result = REVOTE_IMMEDIATELY
    else:
        result = WAIT_TO_VOTE_NEXT
        nxt = _get_next_time_to_request_vote(C, nd, i, now, draw, self_pref)
    nd[i, NTRV] = nxt
    nd[i, LPR] = result
    _push_obs(ob, oc, OB_PARSED, vterm, result, acc)
    if result == PASSED:
        _change_role_to_leader(C, nd, live, i, vterm, ob, oc)


@njit(cache=True, inline='always')
def _maintain_state(C, nd, i, now, draw, self_pref, ob, oc):
    nd[i, NEXTLOOP] = now + C[C_SLEEP]
    role = nd[i, ROLE]
    if role == LEADER:
        if _elapsed(now, nd[i, LSHB]) <= C[C_HBI]:
            return
        nd[i, LSHB] = now
        _send_heartbeats(C, nd, i, now, ob, oc)
    elif role == FOLLOWER:
        _maintain_as_follower(C, nd, i, now, ob, oc)
    else:
        _maintain_as_candidate(C, nd, i, now, draw, self_pref, ob, oc)


@njit(cache=True, inline='always')
def _due(since, interval):
    return since + interval + 1 if since >= 0 else 0


@njit(cache=True, inline='always')
def _maintainer_due(C, nd, i):
    """server.maintainer_due"""
    role = nd[i, ROLE]
    if role == LEADER:
        return _due(nd[i, LSHB], C[C_HBI])
    if role == FOLLOWER:
        return _due(nd[i, LLHB], max(2, C[C_LEAK]) * C[C_HBI])
    if nd[i, NEEDINC] == 1:
        return 0
    return nd[i, NTRV]


@njit(cache=True, inline='always')
def _wake_slack(C, nd, i, since, wake):
    """server.wake_slack (`wake`: this node's wake_at)"""
    if nd[i, RTYPE] != 0 or C[C_ELECTOR] == 0:
        return 0
    md = _maintainer_due(C, nd, i)
    due = max(md, since)
    if due <= nd[i, NEXTLOOP] or wake < max(md, nd[i, NEXTLOOP]):
        return 0
    return C[C_SLEEP]


@njit(cache=True, inline='always')
def wake_at(C, nd, i):
    """server.wake_at"""
    wake = -1
    if nd[i, RTYPE] != 0:
        wake = nd[i, RREL] if nd[i, RREL] >= 0 else nd[i, RDEADLINE]
    elif C[C_ELECTOR] == 1:
        wake = max(_maintainer_due(C, nd, i), nd[i, NEXTLOOP])
    if C[C_PREF] == 1 and nd[i, ROLE] == LEADER and nd[i, TIF] == 0:
        wake = nd[i, NCP] if wake < 0 else min(wake, nd[i, NCP])
    if nd[i, TLW] == 1 and nd[i, TL_WAITING] == 1:
        due = nd[i, TL_STARTED] + C[C_LTWT] + 1 if nd[i, TL_IDX] > nd[i, LEI] else 0
        wake = due if wake < 0 else min(wake, due)
    return wake


@njit(cache=True, inline='always')
def _on_tick(C, nd, live, wmk, i, now, draw, pref, self_pref, ob, oc):
    """election.on_tick"""
    if nd[i, TLW] == 1 and nd[i, TL_WAITING] == 1:
        rpc = nd[i, TL_RPC]
        has, code, t = _take_leadership_wait_step(C, nd, i, now, ob, oc)
        if has:
            _push_respond(ob, oc, rpc, MK_LT_RESP, code, t)
    if C[C_PREF] == 1 and nd[i, TIF] == 0 and now >= nd[i, NCP]:
        period = C[C_CPLI]
        nd[i, NCP] = now + period - (now - nd[i, NCP]) % period
        _check_preferred_leader(C, nd, live, wmk, i, pref, self_pref, ob, oc)
    if nd[i, RTYPE] != 0:
        rel = nd[i, RREL] if nd[i, RREL] >= 0 else nd[i, RDEADLINE]
        if now >= rel:
            if nd[i, RTYPE] == RT_VOTE:
                _finish_vote_round(C, nd, live, i, now, draw, self_pref, ob, oc)
            else:
                _finish_heart_beat_round(C, nd, i, now, ob, oc)
            nd[i, NEXTLOOP] = now + C[C_SLEEP]
    elif C[C_ELECTOR] == 1 and now >= nd[i, NEXTLOOP]:
        _maintain_state(C, nd, i, now, draw, self_pref, ob, oc)


# =====================================================================================
# the network (reference_impl.network)
# =====================================================================================


@njit(cache=True, inline='always')
def _net_send(ws, fl, rp, now, src, ob, k, timeout):
    """network.send of output row k (every election Send is a scanned RPC: DLedger's
    invokeAsync vote, heartbeat and leadership-transfer requests)."""
    nf = ws[W_NF]
    nr = ws[W_NR]
    if nf >= fl.shape[0]:
        ws[W_STOP] = OVERFLOW_FLIGHT
        return
    if nr >= rp.shape[0]:
        ws[W_STOP] = OVERFLOW_RPCS
        return
    nid = ws[W_NEXT_ID]
    fl[nf, E_ID] = nid
    fl[nf, E_SRC] = src
    fl[nf, E_DST] = ob[k, 1]
    fl[nf, E_SENT] = now
    fl[nf, E_RPC] = nid
    fl[nf, E_REPLY] = 0
    fl[nf, E_MK] = ob[k, 2]
    for f in range(5):
        fl[nf, E_M0 + f] = ob[k, 3 + f]
    rp[nr, R_ID] = nid
    rp[nr, R_REQ] = src
    rp[nr, R_RESP] = ob[k, 1]
    rp[nr, R_DEADLINE] = now + timeout + SCAN_GRACE_MS
    rp[nr, R_WINDOW] = SCAN_PERIOD_MS
    rp[nr, R_CK] = ob[k, 8]
    rp[nr, R_C1] = ob[k, 9]
    rp[nr, R_C2] = ob[k, 10]
    rp[nr, R_C3] = ob[k, 11]
    ws[W_NF] = nf + 1
    ws[W_NR] = nr + 1
    ws[W_NEXT_ID] = nid + 1


@njit(cache=True, inline='always')
def _find_rpc(ws, rp, rpc_id):
    nr = ws[W_NR]
    for r in range(nr):
        if rp[r, R_ID] == rpc_id:
            return r
    return -1


@njit(cache=True, inline='always')
def _net_reply(ws, fl, rp, now, rpc_id, mk, m0, m1, m2):
    """network.reply: a no-op (no id taken) when the RPC has closed."""
    r = _find_rpc(ws, rp, rpc_id)
    if r < 0:
        return
    nf = ws[W_NF]
    if nf >= fl.shape[0]:
        ws[W_STOP] = OVERFLOW_FLIGHT
        return
    nid = ws[W_NEXT_ID]
    fl[nf, E_ID] = nid
    fl[nf, E_SRC] = rp[r, R_RESP]
    fl[nf, E_DST] = rp[r, R_REQ]
    fl[nf, E_SENT] = now
    fl[nf, E_RPC] = rpc_id
    fl[nf, E_REPLY] = 1
    fl[nf, E_MK] = mk
    fl[nf, E_M0] = m0
    fl[nf, E_M0 + 1] = m1
    fl[nf, E_M0 + 2] = m2
    fl[nf, E_M0 + 3] = 0
    fl[nf, E_M0 + 4] = 0
    ws[W_NF] = nf + 1
    ws[W_NEXT_ID] = nid + 1


@njit(cache=True, inline='always')
def _remove_env(ws, fl, k):
    nf = ws[W_NF]
    for r in range(k, nf - 1):
        for f in range(EF):
            fl[r, f] = fl[r + 1, f]
    ws[W_NF] = nf - 1


@njit(cache=True, inline='always')
def _close_rpc(ws, rp, r):
    nr = ws[W_NR]
    for q in range(r, nr - 1):
        for f in range(RF):
            rp[q, f] = rp[q + 1, f]
    ws[W_NR] = nr - 1


@njit(cache=True)
def _node_down(ws, fl, rp, node, now):
    """network.node_down with reset (an election node that dies always resets its connections)."""
    nf = ws[W_NF]
    w = 0
    for r in range(nf):
        if fl[r, E_SRC] != node and fl[r, E_DST] != node:
            if w != r:
                for f in range(EF):
                    fl[w, f] = fl[r, f]
            w += 1
    ws[W_NF] = w
    nr = ws[W_NR]
    w = 0
    for r in range(nr):
        if rp[r, R_REQ] != node:
            if w != r:
                for f in range(RF):
                    rp[w, f] = rp[r, f]
            if rp[w, R_RESP] == node and rp[w, R_DEADLINE] > now:
                rp[w, R_DEADLINE] = now
                rp[w, R_WINDOW] = 0
            w += 1
    ws[W_NR] = w


# =====================================================================================
# ghost variables (election_world) and the monitor (spec/election.py, spec/properties.py)
# =====================================================================================


@njit(cache=True, inline='always')
def _popcount(x):
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@njit(cache=True, inline='always')
def _settled(C, nd, alive):
    """election_world.settled"""
    n = C[C_N]
    for i in range(n):
        if alive[i] == 1 and nd[i, ROLE] == LEADER:
            followers = 0
            for f in range(n):
                if (alive[f] == 1 and nd[f, ROLE] == FOLLOWER and nd[f, LEADER_ID] == i
                        and nd[f, TERM] == nd[i, TERM]):
                    followers += 1
            if _is_quorum(C, followers + 1):
                return True
    return False


@njit(cache=True)
def _update_cut_since(C, alive, cut, cs, now):
    """election_world.cut_since (the ghost seeing a fault or Calm)."""
    n = C[C_N]
    for i in range(n):
        reach = False
        if alive[i] == 1:
            peers = 0
            for j in range(n):
                if j != i and alive[j] == 1 and cut[i, j] == 0 and cut[j, i] == 0:
                    peers += 1
            reach = _is_quorum(C, peers + 1)
        if alive[i] == 1 and not reach:
            if cs[i] < 0:
                cs[i] = now
        else:
            cs[i] = -1


@njit(cache=True)
def _ele4_term(C, elected, grants, t):
    """spec.election.ele4 restricted to term t."""
    n = C[C_N]
    leaders = elected[t]
    for ld in range(n):
        if leaders >> ld & 1:
            voters = 0
            for v in range(n):
                if grants[t, v] >> ld & 1:
                    voters += 1
            if not _is_quorum(C, voters):
                return False
    return True


@njit(cache=True)
def _ele1_cause(C, ws, elected, grants):
    """spec.election.ele1_expected: the nodes that lost their term file among the voters that
    accepted two candidates in a term with two leaders (bit mask; 0: no known cause)."""
    n = C[C_N]
    who = 0
    for t in range(ws[W_MAXTERM_SEEN] + 1):
        if _popcount(elected[t]) > 1:
            for v in range(n):
                if _popcount(grants[t, v]) > 1:
                    who |= 1 << v
    return who & ws[W_LOST]


@njit(cache=True)
def _ele2_cause(C, ws, grants):
    n = C[C_N]
    who = 0
    for t in range(ws[W_MAXTERM_SEEN] + 1):
        for v in range(n):
            if _popcount(grants[t, v]) > 1:
                who |= 1 << v
    return who & ws[W_LOST]


@njit(cache=True, inline='always')
def _record(vi, p, step, now, cause):
    vi[p, V_STEP] = step
    vi[p, V_T] = now
    vi[p, V_CAUSE] = cause


@njit(cache=True)
def _record_expected(C, ws, vi, elected, grants, p, step, now, event_cause):
    """Monitor._record for a property with expected_when: keep the first violation unless a
    later one has no known cause while the recorded one had one."""
    if vi[p, V_STEP] >= 0 and vi[p, V_CAUSE] == 0:
        return
    if p == P_ELE3:
        cause = event_cause
    else:
        if vi[p, V_CVER] == ws[W_GVER]:
            cause = vi[p, V_CMASK]
        else:
            cause = _ele1_cause(C, ws, elected, grants) if p == P_ELE1 else _ele2_cause(C, ws, grants)
            vi[p, V_CVER] = ws[W_GVER]
            vi[p, V_CMASK] = cause
    if vi[p, V_STEP] >= 0 and cause != 0:
        return
    _record(vi, p, step, now, cause)


@njit(cache=True, inline='always')
def _ghost_obs(C, ws, nd, alive, cut, elected, grants, vi, i, ob, k, touched):
    """election_world.ghost_update for one observation of node i (and HB-1, which reads them)."""
    kind = ob[k, 1]
    now = ws[W_NOW]
    if kind == OB_ROLE:
        term = ob[k, 2]
        role = ob[k, 3]
        if role == LEADER:
            if term >= C[C_TCAP] or term < 0:
                ws[W_STOP] = OVERFLOW_TERMS
                return
            bit = 1 << i
            if elected[term] & bit == 0:
                elected[term] |= bit
                ws[W_GVER] += 1
                if term > ws[W_MAXTERM_SEEN]:
                    ws[W_MAXTERM_SEEN] = term
                if _popcount(elected[term]) == 2:
                    ws[W_ELE1_BAD] += 1
                touched[0] = min(touched[0], term) if touched[0] >= 0 else term
                touched[1] = max(touched[1], term)
        if ws[W_CALM] == 1 and ws[W_SETTLED] < 0 and role != CANDIDATE and _settled(C, nd, alive):
            ws[W_SETTLED] = now
    elif kind == OB_GRANT:
        term = ob[k, 2]
        if term >= C[C_TCAP] or term < 0:
            ws[W_STOP] = OVERFLOW_TERMS
            return
        bit = 1 << ob[k, 3]
        if grants[term, i] & bit == 0:
            grants[term, i] |= bit
            ws[W_GVER] += 1
            if term > ws[W_MAXTERM_SEEN]:
                ws[W_MAXTERM_SEEN] = term
            if _popcount(grants[term, i]) == 2:
                ws[W_ELE2_BAD] += 1
    elif kind == OB_FTO:
        # HB-1 (spec.election.hb1): node i timed out on leader j; j's state, the links and
        # the fault history are the same before and after this step (only i changed).
        j = ob[k, 3]
        if j >= 0 and vi[P_HB1, V_STEP] < 0 and now - ws[W_LAST_FAULT] > C[C_HB1Q]:
            if alive[j] == 1 and nd[j, ROLE] == LEADER and nd[j, TERM] == ob[k, 2] and cut[j, i] == 0:
                touched[2] = 1


@njit(cache=True, inline='always')
def _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, i, now, ob, oc, touched):
    """world._route: Sends and Responds to the network in order, then the observations to
    the ghost (they read the node states after the whole transition). Returns how many
    observations the step produced."""
    nobs = 0
    for k in range(oc[0]):
        t = ob[k, 0]
        if t == OT_SEND:
            _net_send(ws, fl, rp, now, i, ob, k, C[C_RPCTO])
        elif t == OT_RESPOND:
            _net_reply(ws, fl, rp, now, ob[k, 1], ob[k, 2], ob[k, 3], ob[k, 4], 0)
    for k in range(oc[0]):
        if ob[k, 0] == OT_OBS:
            nobs += 1
            _ghost_obs(C, ws, nd, alive, cut, elected, grants, vi, i, ob, k, touched)
    return nobs


@njit(cache=True, inline='always')
def _fault(ws):
    ws[W_LAST_FAULT] = ws[W_NOW]


# =====================================================================================
# the kernel: runner.run with SeededChooser
# =====================================================================================


@njit(cache=True)
def reset(C, lei, let, down, nd, live, alive, fl, rp, cut, elected, grants, cs, ws, vi, sn):
    """world.init(cfg) in place over arrays a previous history used (or fresh ones)."""
    n = C[C_N]
    top = min(ws[W_MAXTERM_SEEN] + 1, elected.shape[0]) if ws[W_STEPS] > 0 else elected.shape[0]
    for t in range(top):
        elected[t] = 0
        for v in range(n):
            grants[t, v] = 0
    for i in range(n):
        _boot(C, nd, live, i, 0, 0, -1, lei[i], let[i], C[C_CPLI])
        alive[i] = 0 if (down >> i) & 1 else 1
        cs[i] = -1
        for j in range(n):
            cut[i, j] = 0
    for k in range(ws.shape[0]):
        ws[k] = 0
    ws[W_NEXT_ID] = 1
    ws[W_CALM_AT] = -1
    ws[W_LAST_FAULT] = -1
    ws[W_SETTLED] = -1
    ws[W_METER_SINCE] = 0
    for i in range(n):
        sn[i] = 0  # World.since
        if alive[i] == 1:
            ws[W_FRESH] |= 1 << i
    for p in range(vi.shape[0]):
        for f in range(vi.shape[1]):
            vi[p, f] = -1
        vi[p, V_CAUSE] = 0


@njit(cache=True)
def run_kernel(C, pw, pref, self_pref, isol, nd, live, wmk, alive, mt, fl, rp, cut, elected, grants, cs, ws, vi,
               sn, log, evk, eva, fev_a, fev_b, kinds, wakes, slk, ob, oc, touched, prev_terms, steps, until_ms):
    """Run a history in place over the arrays; ws[W_STOP] says why it stopped. The scratch
    arrays (evk .. prev_terms) come from the caller too (`run.new_state`): see `borrow`.
    evk/eva: the protocol events (kind; node, flight row or rpc row); fev_a/fev_b: the fault
    events of the chosen kind; ob/oc: one transition's outputs and their count."""
    C = borrow(C)
    pw = borrow(pw)
    pref = borrow(pref)
    self_pref = borrow(self_pref)
    isol = borrow(isol)
    nd = borrow(nd)
    live = borrow(live)
    wmk = borrow(wmk)
    alive = borrow(alive)
    mt = borrow(mt)
    fl = borrow(fl)
    rp = borrow(rp)
    cut = borrow(cut)
    elected = borrow(elected)
    grants = borrow(grants)
    cs = borrow(cs)
    ws = borrow(ws)
    vi = borrow(vi)
    log = borrow(log)
    evk = borrow(evk)
    eva = borrow(eva)
    fev_a = borrow(fev_a)
    fev_b = borrow(fev_b)
    kinds = borrow(kinds)
    wakes = borrow(wakes)
    slk = borrow(slk)
    sn = borrow(sn)
    ob = borrow(ob)
    oc = borrow(oc)
    touched = borrow(touched)
    prev_terms = borrow(prev_terms)
    n = C[C_N]
    java = C[C_JAVA] == 1
    stagger = C[C_STAGGER] if java else 0
    want_log = C[C_LOG] == 1
    fcap = fl.shape[0]
    for j in range(n):
        prev_terms[j] = nd[j, TERM]
    niso = isol.shape[0]
    step = ws[W_STEPS]
    stop = STOP_STEPS
    while step < steps:
        now = ws[W_NOW]
        calm = ws[W_CALM] == 1
        # --- the horizon (schedule._wakes and _horizon): wakes[j] is node j's wake_at (-1:
        # down or nothing to do), its tick may fire from max(wake_at, since) (`eff`) up to
        # slk[j] ms later ---
        h = -1
        fresh = ws[W_FRESH]
        for j in range(n):
            t = wake_at(C, nd, j) if alive[j] == 1 else -1
            wakes[j] = t
            if t >= 0:
                sl = _wake_slack(C, nd, j, sn[j], t) if java else 0
                if stagger > sl and (fresh >> j) & 1:
                    sl = stagger
                slk[j] = sl
                t = max(t, sn[j]) + sl
                if h < 0 or t < h:
                    h = t
        dmax = CALM_DELAY_MAX if calm else C[C_DMAX]
        dmin = CALM_DELAY_MIN if calm else C[C_DMIN]
        nf = ws[W_NF]
        for r in range(nf):
            t = fl[r, E_SENT] + dmax
            if h < 0 or t < h:
                h = t
        nr = ws[W_NR]
        for r in range(nr):
            t = rp[r, R_DEADLINE] + rp[r, R_WINDOW] if java else rp[r, R_DEADLINE]
            if h < 0 or t < h:
                h = t
        calm_at = C[C_CALM_AT]
        if calm_at >= 0 and not calm and (h < 0 or calm_at < h):
            h = calm_at
        if h >= 0 and h < now:
            h = now
        if until_ms >= 0 and h > until_ms:
            stop = STOP_UNTIL
            break
        # --- protocol events (world.protocol_events), in the reference's order ---
        nev = 0
        if h >= 0:
            if calm_at == h and not calm:
                evk[nev] = EV_CALM
                eva[nev] = 0
                nev += 1
            for j in range(n):
                if wakes[j] >= 0 and max(wakes[j], sn[j]) <= h:
                    evk[nev] = EV_TICK
                    eva[nev] = j
                    nev += 1
            for r in range(nf):
                if cut[fl[r, E_SRC], fl[r, E_DST]] == 1:
                    if fl[r, E_SENT] + dmax <= h:
                        evk[nev] = EV_DROP
                        eva[nev] = r
                        nev += 1
                elif fl[r, E_SENT] + dmin <= h:
                    evk[nev] = EV_DELIVER
                    eva[nev] = r
                    nev += 1
            for r in range(nr):
                if rp[r, R_DEADLINE] <= h:
                    evk[nev] = EV_RPCFAIL
                    eva[nev] = r
                    nev += 1
        # --- fault kinds (world.fault_kinds) ---
        nk = 0
        if not calm:
            if pw[K_LOSS] > 0:
                for r in range(nf):
                    if cut[fl[r, E_SRC], fl[r, E_DST]] == 0:
                        kinds[nk] = K_LOSS
                        nk += 1
                        break
            if pw[K_DUP] > 0 and nf > 0:
                kinds[nk] = K_DUP
                nk += 1
            up = False
            if pw[K_CRASH] > 0 or pw[K_OS] > 0 or pw[K_DISK] > 0:
                for j in range(n):
                    if alive[j] == 1 and (C[C_CRASHABLE] >> j) & 1:
                        up = True
                        break
            if pw[K_CRASH] > 0 and up:
                kinds[nk] = K_CRASH
                nk += 1
            if pw[K_OS] > 0 and up:
                kinds[nk] = K_OS
                nk += 1
            if pw[K_DISK] > 0 and up:
                kinds[nk] = K_DISK
                nk += 1
            if pw[K_RESTART] > 0:
                for j in range(n):
                    if alive[j] == 0:
                        kinds[nk] = K_RESTART
                        nk += 1
                        break
            if pw[K_PARTITION] > 0 and n > 1:
                kinds[nk] = K_PARTITION
                nk += 1
            if pw[K_ONEWAY] > 0 and ws[W_NCUT] < n * (n - 1):
                kinds[nk] = K_ONEWAY
                nk += 1
            if pw[K_HEAL] > 0 and ws[W_NCUT] > 0:
                kinds[nk] = K_HEAL
                nk += 1
        # --- the seeded chooser (chooser.SeededChooser.choose) ---
        fault_kind = -1
        if nk > 0:
            total = 0.0
            for q in range(nk):
                total += pw[kinds[q]]
            if nev == 0 or random53(mt) < min(MAX_FAULT_SHARE, total):
                pick = random53(mt) * total
                fault_kind = kinds[nk - 1]
                for q in range(nk):
                    pick -= pw[kinds[q]]
                    if pick < 0:
                        fault_kind = kinds[q]
                        break
        if fault_kind < 0 and nev == 0:
            stop = STOP_IDLE
            break
        step += 1
        oc[0] = 0
        oc[1] = 0
        touched[0] = -1
        touched[1] = -1
        touched[2] = 0
        nobs = 0
        ev_kind = 0
        ev_a = 0
        ev_b = 0
        draw = 0
        late = 0
        crash_os_node = -1
        if fault_kind >= 0:
            # world.fault_events(w, (kind,)), then rng.choice
            m = 0
            if fault_kind == K_LOSS:
                for r in range(nf):
                    if cut[fl[r, E_SRC], fl[r, E_DST]] == 0:
                        fev_a[m] = r
                        m += 1
            elif fault_kind == K_DUP:
                for r in range(nf):
                    fev_a[m] = r
                    m += 1
            elif fault_kind == K_CRASH or fault_kind == K_OS or fault_kind == K_DISK:
                for j in range(n):
                    if alive[j] == 1 and (C[C_CRASHABLE] >> j) & 1:
                        fev_a[m] = j
                        m += 1
            elif fault_kind == K_RESTART:
                for j in range(n):
                    if alive[j] == 0:
                        fev_a[m] = j
                        m += 1
            elif fault_kind == K_PARTITION:
                for g in range(niso):
                    fev_a[m] = g
                    m += 1
            elif fault_kind == K_ONEWAY:
                for a in range(n):
                    for b in range(n):
                        if a != b and cut[a, b] == 0:
                            fev_a[m] = a
                            fev_b[m] = b
                            m += 1
            else:
                fev_a[m] = 0
                m += 1
            sel = randbelow(mt, m)
            a = fev_a[sel]
            if fault_kind == K_LOSS:
                # world._on_drop: a loss fault (its link is up)
                ev_kind = EV_DROP
                ev_a = fl[a, E_ID]
                _remove_env(ws, fl, a)
                _fault(ws)
                ws[W_FAULT0 + 0] += 1
            elif fault_kind == K_DUP:
                ev_kind = EV_DUP
                ev_a = fl[a, E_ID]
                if nf >= fcap:
                    ws[W_STOP] = OVERFLOW_FLIGHT
                else:
                    for f in range(EF):
                        fl[nf, f] = fl[a, f]
                    fl[nf, E_ID] = ws[W_NEXT_ID]
                    ws[W_NEXT_ID] += 1
                    ws[W_NF] = nf + 1
                _fault(ws)
                ws[W_FAULT0 + 1] += 1
            elif fault_kind == K_CRASH or fault_kind == K_OS or fault_kind == K_DISK:
                # world.crash_node with election_world.crash
                ev_kind = EV_CRASH
                ev_a = a
                lose = fault_kind != K_CRASH
                ev_b = 0 if not lose else (2 if fault_kind == K_DISK else 1)
                forget = lose or C[C_MUTANT] == MUT_CRASH_LOSES_TERM
                term = 0 if forget else nd[a, TERM]
                vote = -1 if forget or C[C_MUTANT] == MUT_CRASH_LOSES_VOTE else nd[a, VOTE]
                _boot(C, nd, live, a, 0, term, vote, nd[a, LEI], nd[a, LET], 0)
                nd[a, NEXTLOOP] = 0
                if wake_at(C, nd, a) != wakes[a]:  # core.set_node: since_after
                    sn[a] = now
                alive[a] = 0
                _node_down(ws, fl, rp, a, now)
                ws[W_CRASHES] += 1
                if lose:
                    ws[W_OS_CRASHES] += 1
                    if ws[W_LOST] >> a & 1 == 0:
                        ws[W_LOST] |= 1 << a
                        ws[W_GVER] += 1
                    crash_os_node = a
                if fault_kind == K_DISK:
                    ws[W_DISK_LOSSES] += 1
                _fault(ws)
                ws[W_FAULT0 + (2 if fault_kind == K_CRASH else (3 if fault_kind == K_OS else 4))] += 1
                nobs = 1
            elif fault_kind == K_RESTART:
                ev_kind = EV_RESTART
                ev_a = a
                _boot(C, nd, live, a, now, nd[a, TERM], nd[a, VOTE], nd[a, LEI], nd[a, LET], now + C[C_CPLI])
                alive[a] = 1
                sn[a] = now  # transitions._up: a restarted process starts its threads now
                ws[W_FRESH] |= 1 << a
                _fault(ws)
                ws[W_FAULT0 + 5] += 1
                nobs = 1
            elif fault_kind == K_PARTITION:
                ev_kind = EV_PARTITION
                ev_a = a
                mino = isol[a]
                for x in range(n):
                    for y in range(n):
                        if x != y and ((mino >> x) & 1) != ((mino >> y) & 1) and cut[x, y] == 0:
                            cut[x, y] = 1
                            ws[W_NCUT] += 1
                _fault(ws)
                ws[W_FAULT0 + 6] += 1
                nobs = 1
            elif fault_kind == K_ONEWAY:
                ev_kind = EV_CUT
                ev_a = a
                ev_b = fev_b[sel]
                cut[a, ev_b] = 1
                ws[W_NCUT] += 1
                _fault(ws)
                ws[W_FAULT0 + 7] += 1
                nobs = 1
            else:
                ev_kind = EV_HEAL
                for x in range(n):
                    for y in range(n):
                        cut[x, y] = 0
                ws[W_NCUT] = 0
                _fault(ws)
                ws[W_FAULT0 + 8] += 1
                nobs = 1
            _update_cut_since(C, alive, cut, cs, now)
        else:
            q = randbelow(mt, nev) if nev > 1 else 0
            k = evk[q]
            a = eva[q]
            if k == EV_TICK:
                # the chooser's draw, then schedule.tick_window and its lateness
                draw = getrandbits(mt, 16)
                eff = max(wakes[a], sn[a])
                lo = max(0, now - eff)
                hi = max(lo, min(slk[a], h - eff))
                late = lo
                if hi > lo:
                    late = lo + randbelow(mt, hi - lo + 1)
                t = max(now, eff + late)
                ws[W_NOW] = t
                ev_kind = EV_TICK
                ev_a = a
                _on_tick(C, nd, live, wmk, a, t, draw, pref, self_pref, ob, oc)
                ws[W_FRESH] &= ~(1 << a)
                if wake_at(C, nd, a) != wakes[a]:  # world.since_after
                    sn[a] = t
                nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, a, t, ob, oc, touched)
            elif k == EV_DELIVER:
                # world._hot_deliver
                t = max(now, fl[a, E_SENT] + dmin)
                ws[W_NOW] = t
                ev_kind = EV_DELIVER
                ev_a = fl[a, E_ID]
                src = fl[a, E_SRC]
                dst = fl[a, E_DST]
                rpc_id = fl[a, E_RPC]
                mk = fl[a, E_MK]
                m0 = fl[a, E_M0]
                m1 = fl[a, E_M0 + 1]
                m2 = fl[a, E_M0 + 2]
                m3 = fl[a, E_M0 + 3]
                m4 = fl[a, E_M0 + 4]
                is_reply = fl[a, E_REPLY] == 1
                _remove_env(ws, fl, a)
                if is_reply:
                    r = _find_rpc(ws, rp, rpc_id)
                    if r >= 0 and alive[dst] == 1:
                        ck = rp[r, R_CK]
                        c1 = rp[r, R_C1]
                        c2 = rp[r, R_C2]
                        c3 = rp[r, R_C3]
                        _close_rpc(ws, rp, r)
                        # election.on_response
                        if ck == CK_HB:
                            _on_heart_beat_response(C, nd, live, dst, c1, src, True, m0, m1, t)
                        elif ck == CK_VOTE:
                            _on_vote_response(C, nd, dst, c1, True, m1, m0, t)
                        else:
                            _on_leadership_transfer_response(nd, dst, c1, c2, c3, True, m0, m1, ob, oc)
                        if wake_at(C, nd, dst) != wakes[dst]:
                            sn[dst] = t
                        nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, dst, t, ob, oc,
                                      touched)
                elif alive[dst] == 0:
                    if rpc_id != 0:
                        # network.fail_now: connection refused
                        r = _find_rpc(ws, rp, rpc_id)
                        if r >= 0 and rp[r, R_DEADLINE] > t:
                            rp[r, R_DEADLINE] = t
                            rp[r, R_WINDOW] = 0
                else:
                    # election.on_request
                    if mk == MK_HB_REQ:
                        code, rterm = _handle_heart_beat(C, nd, dst, m0, m1, t, ob, oc)
                        _net_reply(ws, fl, rp, t, rpc_id, MK_HB_RESP, code, rterm, 0)
                    elif mk == MK_VOTE_REQ:
                        rterm, result = _handle_vote(C, nd, dst, m0, m1, m2, m3, False, self_pref, ob, oc)
                        _net_reply(ws, fl, rp, t, rpc_id, MK_VOTE_RESP, rterm, result, SUCCESS)
                    else:
                        has, code, rterm = _server_handle_leadership_transfer(
                            C, nd, wmk, dst, m0, m1, m2, m3, m4, rpc_id, t, ob, oc)
                        if has:
                            _net_reply(ws, fl, rp, t, rpc_id, MK_LT_RESP, code, rterm, 0)
                    if wake_at(C, nd, dst) != wakes[dst]:
                        sn[dst] = t
                    nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, dst, t, ob, oc, touched)
            elif k == EV_DROP:
                # a window that closed behind a cut link: lost, not a new fault
                ev_kind = EV_DROP
                ev_a = fl[a, E_ID]
                _remove_env(ws, fl, a)
                ws[W_FAULT0 + 0] += 1
                _update_cut_since(C, alive, cut, cs, now)
            elif k == EV_RPCFAIL:
                # schedule.rpc_window and the chooser's lateness draw
                deadline = rp[a, R_DEADLINE]
                lo = max(0, now - deadline)
                hi = max(lo, min(rp[a, R_WINDOW] if java else 0, h - deadline))
                late = lo
                if hi > lo:
                    late = lo + randbelow(mt, hi - lo + 1)
                t = max(now, deadline + late)
                ws[W_NOW] = t
                ev_kind = EV_RPCFAIL
                ev_a = rp[a, R_ID]
                i = rp[a, R_REQ]
                peer = rp[a, R_RESP]
                ck = rp[a, R_CK]
                c1 = rp[a, R_C1]
                c2 = rp[a, R_C2]
                c3 = rp[a, R_C3]
                _close_rpc(ws, rp, a)
                if alive[i] == 1:
                    if ck == CK_HB:
                        _on_heart_beat_response(C, nd, live, i, c1, peer, False, 0, 0, t)
                    elif ck == CK_VOTE:
                        _on_vote_response(C, nd, i, c1, False, 0, 0, t)
                    else:
                        _on_leadership_transfer_response(nd, i, c1, c2, c3, False, 0, 0, ob, oc)
                    if wake_at(C, nd, i) != wakes[i]:
                        sn[i] = t
                    nobs = _route(C, ws, nd, alive, cut, fl, rp, elected, grants, vi, i, t, ob, oc, touched)
            else:
                # world._on_calm
                t = h
                ws[W_NOW] = t
                ev_kind = EV_CALM
                for x in range(n):
                    for y in range(n):
                        cut[x, y] = 0
                ws[W_NCUT] = 0
                ws[W_CALM] = 1
                ws[W_CALM_AT] = t
                ws[W_LAST_FAULT] = t
                nobs = 1
                for j in range(n):
                    if alive[j] == 0:
                        _boot(C, nd, live, j, t, nd[j, TERM], nd[j, VOTE], nd[j, LEI], nd[j, LET], t + C[C_CPLI])
                        alive[j] = 1
                        sn[j] = t  # a restarted process starts its threads now
                        ws[W_FRESH] |= 1 << j
                        nobs += 1
                _update_cut_since(C, alive, cut, cs, t)
                if _settled(C, nd, alive):
                    ws[W_SETTLED] = t
        if oc[1] != 0:
            ws[W_STOP] = OVERFLOW_OUTS
        if ws[W_STOP] < 0:
            ws[W_STEPS] = step
            return
        now = ws[W_NOW]
        # --- the monitor (spec.properties.Monitor.check): state properties, then step ones ---
        if ws[W_ELE1_BAD] > 0:
            _record_expected(C, ws, vi, elected, grants, P_ELE1, step, now, 0)
        if ws[W_ELE2_BAD] > 0:
            _record_expected(C, ws, vi, elected, grants, P_ELE2, step, now, 0)
        if vi[P_ELE4, V_STEP] < 0 and touched[0] >= 0:
            for t4 in range(touched[0], touched[1] + 1):
                if not _ele4_term(C, elected, grants, t4):
                    _record(vi, P_ELE4, step, now, 0)
                    break
        if vi[P_ELE5, V_STEP] < 0:
            for j in range(n):
                if alive[j] == 1 and nd[j, ROLE] == FOLLOWER:
                    ld = nd[j, LEADER_ID]
                    if nd[j, TERM] >= C[C_TCAP]:
                        ws[W_STOP] = OVERFLOW_TERMS
                        ws[W_STEPS] = step
                        return
                    if ld < 0 or (elected[nd[j, TERM]] >> ld) & 1 == 0:
                        _record(vi, P_ELE5, step, now, 0)
                        break
        if vi[P_HB2, V_STEP] < 0:
            for j in range(n):
                if alive[j] == 1 and nd[j, ROLE] == LEADER and cs[j] >= 0 and now - cs[j] > C[C_HB2B]:
                    _record(vi, P_HB2, step, now, 0)
                    break
        if vi[P_ELEL, V_STEP] < 0:
            if ws[W_CALM] == 1 and ws[W_SETTLED] < 0 and now - ws[W_CALM_AT] > ELE_L_BOUND_MS:
                _record(vi, P_ELEL, step, now, 0)
        decreased = False
        for j in range(n):
            if nd[j, TERM] < prev_terms[j]:
                decreased = True
            prev_terms[j] = nd[j, TERM]
        if decreased:
            _record_expected(C, ws, vi, elected, grants, P_ELE3, step, now,
                             (1 << crash_os_node) if crash_os_node >= 0 else 0)
        if touched[2] == 1 and vi[P_HB1, V_STEP] < 0:
            _record(vi, P_HB1, step, now, 0)
        # --- the LeaderlessMeter (spec.election.meter) ---
        if nobs > 0:
            if _settled(C, nd, alive):
                if ws[W_METER_SINCE] >= 0:
                    ws[W_METER_TOTAL] += now - ws[W_METER_SINCE]
                    ws[W_METER_SINCE] = -1
            elif ws[W_METER_SINCE] < 0:
                ws[W_METER_SINCE] = now
                ws[W_METER_EPISODES] += 1
        ws[W_EVENTS_TICK + ev_kind] += 1
        if want_log:
            nl = ws[W_NLOG]
            if nl >= log.shape[0]:
                ws[W_STOP] = OVERFLOW_LOG
                ws[W_STEPS] = step
                return
            log[nl, L_KIND] = ev_kind
            log[nl, L_A] = ev_a
            log[nl, L_B] = ev_b
            log[nl, L_T] = now
            log[nl, L_DRAW] = draw
            log[nl, L_LATE] = late
            log[nl, L_NOBS] = nobs
            ws[W_NLOG] = nl + 1
    ws[W_STEPS] = step
    ws[W_STOP] = stop
