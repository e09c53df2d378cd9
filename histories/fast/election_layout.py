"""The election twin's layout: the reference's enums as integers, and the columns of
every array the kernel works on (docs/fast-worlds.md lists them).

Node ids are indices, `None` is -1, node sets are int64 bit masks. A new `Member`
field is a new column here (`NF` grows), a new message a kind `MK_*` with its five
fields, a new observation an `OB_*`.
"""

from __future__ import annotations

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
VOTE_RESULT_WAIT_MS = 10  # leader_elector.VOTE_RESULT_WAIT_MS: DLedger 0.4.0's sleep after the heartbeat latch
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
OB_TSTART = 7  # TransferStarted(transferee, term)

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
C_MUTANT = 23  # 0: the reference; k > 0: property_tests/support/election_mutants.py's mutant k (MUTANTS below)
C_STAGGER = 24  # FaultProfile.stagger_ms (the first tick of a node after it (re)starts)
C_STEPDOWN = 25  # DLedgerConfig.step_down_on_higher_term (DLedger 0.4.0)
C_ELELB = 26  # spec.election.ele_l_bound_ms (bounds from spec/bounds.py: defaults unless overridden)
C_LIVE1B = 27  # spec.election.live1_bound_ms
C_LIVE2B = 28  # spec.election.live2_bound_ms
C_LIVE3B = 29  # spec.election.live3_bound_ms
CF = 30

# property_tests/support/election_mutants.py, by the name of the function each replaces (test-only: they
# let the cross-check compare unexpected verdicts of every property)
MUT_VOTE_IGNORING_VOTE = 1  # handle_vote: vote_ignoring_curr_vote_for
MUT_OWN_VOTE_QUORUM = 2  # finish_vote_round: parse_own_vote_as_quorum
MUT_HB_NO_REFRESH = 3  # handle_heart_beat: heartbeat_not_refreshing_timer
MUT_CRASH_LOSES_TERM = 4  # crash: crash_losing_term_file
MUT_CRASH_LOSES_VOTE = 5  # crash: crash_losing_vote
MUT_HB_FOLLOW_HIGHER = 6  # handle_heart_beat: heartbeat_following_higher_term_at_old_term
MUT_LEASE_NEVER_EXPIRES = 7  # finish_heart_beat_round: leader_lease_never_expires
MUT_NEVER_INCREMENT = 8  # maintain_as_candidate: candidate_never_increments_term
# property_tests/test_fast_election.py's own mutants (RPL-1/2, LIVE-1/3)
MUT_HB_ACCEPT_LOWER = 9  # handle_heart_beat: heartbeat_accepting_lower_term
MUT_LAST_NEVER_FOLLOWS = 10  # handle_heart_beat: last_node_never_follows
MUTANTS = {"vote_ignoring_curr_vote_for": 1, "parse_own_vote_as_quorum": 2, "heartbeat_not_refreshing_timer": 3,
           "crash_losing_term_file": 4, "crash_losing_vote": 5, "heartbeat_following_higher_term_at_old_term": 6,
           "leader_lease_never_expires": 7, "candidate_never_increments_term": 8,
           "heartbeat_accepting_lower_term": 9, "last_node_never_follows": 10}

# fault kinds, in core.FAULT_KINDS order; profile weights `pw` are float64[9]
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
# 16: free
W_ELE1_BAD = 17  # terms with more than one leader
W_ELE2_BAD = 18  # (voter, term) with more than one candidate
W_METER_SINCE = 19  # LeaderlessMeter.since
W_METER_TOTAL = 20
W_METER_EPISODES = 21
W_FAULT0 = 22  # fault counts: drop, duplicate, crash, os_crash, disk_loss, restart, partition, cut, heal
W_NLOG = 31
W_EVENTS_TICK = 32  # event counts by kind (diagnostics), 32 + EV_* (up to 43)
W_FRESH = 44  # World.fresh as a bit mask: nodes that have not ticked since they (re)started
W_SEQ = 45  # ghost.terms.seq: the notes so far (rows of `nt`); also the ghost's version for cached causes
W_AGREED = 46  # ghost.agreed
W_AGREED_SINCE = 47  # ghost.agreed_since
W_SL = 48  # ghost.settled_leader: the leader's index, -1 for None
W_SL_TERM = 49  # ... and its term (0 for None)
W_TRANS_MIN = 50  # the earliest `since` in ghost.transfers (-1: none): LIVE-2 reads one number a step
W_STRAG_MIN = 51  # the earliest `since` in ghost.stragglers (-1: none): LIVE-3 likewise
WF = 52

STOP_STEPS = 0
STOP_UNTIL = 1
STOP_IDLE = 2
OVERFLOW_FLIGHT = -1
OVERFLOW_RPCS = -2
OVERFLOW_TERMS = -3
OVERFLOW_OUTS = -4
OVERFLOW_EVENTS = -5
OVERFLOW_LOG = -6
OVERFLOW_NOTES = -7

# --- properties (vi rows), in the catalogue order of spec/election.py ---

P_ELE1 = 0
P_ELE2 = 1
P_ELE3 = 2
P_ELE4 = 3
P_ELE5 = 4
P_HB1 = 5
P_HB2 = 6
P_RPL1 = 7
P_RPL2 = 8
P_ELEL = 9
P_LIVE1 = 10
P_LIVE2 = 11
P_LIVE3 = 12
NPROP = 13
PROPERTY_IDS = ("ELE-1", "ELE-2", "ELE-3", "ELE-4", "ELE-5", "HB-1", "HB-2", "RPL-1", "RPL-2", "ELE-L", "LIVE-1",
                "LIVE-2", "LIVE-3")
V_STEP = 0  # -1: none recorded
V_T = 1
V_CAUSE = 2  # ELE-3: bit mask of the node named by the expected cause; ELE-1/2: 1 if expected; 0: unexpected
V_CVER = 3  # cache: ghost version (W_SEQ) the cause below was computed at (-1: none)
V_CMASK = 4
V_SEQ = 5  # W_SEQ when recorded: the cause's text is spec's, over the notes before it (run._cause)
VF = 6

# --- the ghost's evidence notes (ghost.Terms), one row of `nt` per note, row index == seq ---

N_KIND = 0  # NOTE_*
N_NODE = 1  # voter / leader / the node that lost its term file
N_TERM = 2  # the term (for a loss: the term it had just before)
N_CAND = 3  # the candidate (votes)
N_AT = 4  # at_ms
N_NEXT = 5  # the next note of the same (voter, term) or the same lost node, -1: none
NTF = 6
NOTE_VOTE = 1
NOTE_LED = 2
NOTE_LOST = 3
# vl[term, voter]: (first, last) vote note of that key; lv[node]: per-node ghost columns
VL_HEAD = 0
VL_TAIL = 1
LV_STRAG = 0  # ghost.stragglers: since when (-1: not one)
LV_TRANS = 1  # ghost.transfers: since when (-1: none)
LV_LHEAD = 2  # first and last lost note of the node
LV_LTAIL = 3
LVF = 4

# --- events (the log, and the chooser's lists) ---

EV_TICK = 1
EV_DELIVER = 2
EV_DROP = 3
EV_DUP = 4
EV_RPCFAIL = 5
EV_CRASH = 6  # b: 0 process, 1 os, 2 disk
EV_RESTART = 7
EV_PARTITION = 8  # a: index into core.isolations(n)
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
