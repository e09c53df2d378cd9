"""The election twin's layout: the reference's enums as integers, the columns of a member's
row and of the election messages, the config, the world scalars, the ghost and the
properties, and the state table's slots (docs/fast-worlds.md lists them).

The member (its config columns and its slots, MEMBERS .. SELF_PREFERRED) is shared with
the dledger_log twin, whose servers run the same member: its layout keeps them at these
places and adds its own after `MEMBER_CONFIG` and `MEMBER_SLOTS`. A new `Member` field is a
new column here (`MEMBER_COLUMNS` grows), a new message a kind with its five fields, a new
observation an `OBS_*`.
"""

from __future__ import annotations

from histories.fast.core import layout as core
from histories.fast.core.table import accessor
from reference_impl.election.leader_elector import VOTE_LATCH_BASE_MS, VOTE_RESULT_WAIT_MS  # noqa: F401
from reference_impl.election.records import LONG_AGO_MS, Code, ParseResult, Role, VoteResult  # noqa: F401

# --- enums as the reference declares them ---

ROLES = (Role.CANDIDATE, Role.LEADER, Role.FOLLOWER)  # a member's ROLE (UNKNOWN is never one)
CANDIDATE = ROLES.index(Role.CANDIDATE)
LEADER = ROLES.index(Role.LEADER)
FOLLOWER = ROLES.index(Role.FOLLOWER)

PARSE_RESULTS = tuple(ParseResult)
WAIT_TO_REVOTE = PARSE_RESULTS.index(ParseResult.WAIT_TO_REVOTE)
REVOTE_IMMEDIATELY = PARSE_RESULTS.index(ParseResult.REVOTE_IMMEDIATELY)
PASSED = PARSE_RESULTS.index(ParseResult.PASSED)
WAIT_TO_VOTE_NEXT = PARSE_RESULTS.index(ParseResult.WAIT_TO_VOTE_NEXT)

VOTE_RESULTS = tuple(VoteResult)  # VoteResponse.RESULT in declaration order
V_UNKNOWN = VOTE_RESULTS.index(VoteResult.UNKNOWN)
V_ACCEPT = VOTE_RESULTS.index(VoteResult.ACCEPT)
V_REJECT_UNKNOWN_LEADER = VOTE_RESULTS.index(VoteResult.REJECT_UNKNOWN_LEADER)
V_REJECT_UNEXPECTED_LEADER = VOTE_RESULTS.index(VoteResult.REJECT_UNEXPECTED_LEADER)
V_REJECT_EXPIRED_VOTE_TERM = VOTE_RESULTS.index(VoteResult.REJECT_EXPIRED_VOTE_TERM)
V_REJECT_ALREADY_VOTED = VOTE_RESULTS.index(VoteResult.REJECT_ALREADY_VOTED)
V_REJECT_ALREADY_HAS_LEADER = VOTE_RESULTS.index(VoteResult.REJECT_ALREADY_HAS_LEADER)
V_REJECT_TERM_NOT_READY = VOTE_RESULTS.index(VoteResult.REJECT_TERM_NOT_READY)
V_REJECT_TERM_SMALL_THAN_LEDGER = VOTE_RESULTS.index(VoteResult.REJECT_TERM_SMALL_THAN_LEDGER)
V_REJECT_EXPIRED_LEDGER_TERM = VOTE_RESULTS.index(VoteResult.REJECT_EXPIRED_LEDGER_TERM)
V_REJECT_SMALL_LEDGER_END_INDEX = VOTE_RESULTS.index(VoteResult.REJECT_SMALL_LEDGER_END_INDEX)
V_REJECT_TAKING_LEADERSHIP = VOTE_RESULTS.index(VoteResult.REJECT_TAKING_LEADERSHIP)

# DLedgerResponseCode values (election.records.Code, an IntEnum)
SUCCESS = int(Code.SUCCESS)
NETWORK_ERROR = int(Code.NETWORK_ERROR)
UNKNOWN_MEMBER = int(Code.UNKNOWN_MEMBER)
UNEXPECTED_MEMBER = int(Code.UNEXPECTED_MEMBER)
EXPIRED_TERM = int(Code.EXPIRED_TERM)
NOT_LEADER = int(Code.NOT_LEADER)
INCONSISTENT_TERM = int(Code.INCONSISTENT_TERM)
INCONSISTENT_LEADER = int(Code.INCONSISTENT_LEADER)
UNEXPECTED_ARGUMENT = int(Code.UNEXPECTED_ARGUMENT)
TERM_NOT_READY = int(Code.TERM_NOT_READY)
FALL_BEHIND_TOO_MUCH = int(Code.FALL_BEHIND_TOO_MUCH)
TAKE_LEADERSHIP_FAILED = int(Code.TAKE_LEADERSHIP_FAILED)
INTERNAL_ERROR = int(Code.INTERNAL_ERROR)
LEADER_TRANSFERRING = int(Code.LEADER_TRANSFERRING)

# --- a member (election.Member): one row of MEMBERS per server, columns named after its fields ---

CURR_TERM = 0
CURR_VOTE_FOR = 1  # node index or -1
ROLE = 2
LEADER_ID = 3  # node index or -1
LEDGER_END_INDEX = 4
LEDGER_END_TERM = 5
KNOWN_MAX_TERM_IN_GROUP = 6
TRANSFEREE = 7  # node index or -1
TERM_TO_TAKE_LEADERSHIP = 8
LAST_LEADER_HEART_BEAT_TIME = 9
LAST_SEND_HEART_BEAT_TIME = 10
LAST_SUCC_HEART_BEAT_TIME = 11
NEXT_TIME_TO_REQUEST_VOTE = 12
NEED_INCREASE_TERM_IMMEDIATELY = 13
LAST_PARSE_RESULT = 14
NEXT_LOOP_MS = 15
# Member.round: a VoteRound or a HeartBeatRound (ROUND_KIND), their fields
ROUND_KIND = 16  # 0 none, ROUND_VOTE, ROUND_HEART_BEAT
ROUND_SEQ = 17
ROUND_TERM = 18
ROUND_DEADLINE = 19
ROUND_KNOWN_MAX_TERM_IN_GROUP = 20  # VoteRound
ROUND_ALL_NUM = 21
ROUND_VALID_NUM = 22  # VoteRound
ROUND_ACCEPTED_NUM = 23  # VoteRound
ROUND_NOT_READY_NUM = 24  # VoteRound.not_ready_term_num, HeartBeatRound.not_ready_num
ROUND_BIGGER_LEDGER_NUM = 25  # VoteRound
ROUND_ALREADY_HAS_LEADER = 26  # VoteRound
ROUND_RELEASED_AT = 27
ROUND_SUCC_NUM = 28  # HeartBeatRound
ROUND_MAX_TERM = 29  # HeartBeatRound
ROUND_INCONSIST_LEADER = 30  # HeartBeatRound
MEMBER_ROUND_SEQ = 31  # Member.round_seq: the seq of the member's last round
NEXT_CHECK_PREFERRED_MS = 32
TRANSFER_IN_FLIGHT = 33
# Member.take_leadership (a TakeLeadershipWait, or None when TAKE_LEADERSHIP is 0)
TAKE_LEADERSHIP = 34
TAKE_LEADERSHIP_RPC = 35
TAKE_LEADERSHIP_TERM = 36  # request.term
TAKE_LEADERSHIP_LEDGER_INDEX = 37  # request.take_leadership_ledger_index
TAKE_LEADERSHIP_STARTED = 38
TAKE_LEADERSHIP_WAITING_FOR_INDEX = 39
TAKE_LEADERSHIP_TRANSFER_ID = 40  # request.transfer_id (index or -1)
TAKE_LEADERSHIP_LEADER_ID = 41  # request.leader_id (index or -1)
# Member.vote_start (a VoteStart, or None when VOTE_START is 0): a candidate's loop between
# nextTerm under the MemberState lock and voteForQuorumResponses
VOTE_START = 42
VOTE_START_TERM = 43
VOTE_START_LEDGER_END_INDEX = 44
VOTE_START_LEDGER_END_TERM = 45
MEMBER_COLUMNS = 46

ROUND_VOTE = 1
ROUND_HEART_BEAT = 2

# --- the election messages: their kind (E_KIND, O_KIND) and five fields ---

ELECTION_FIELDS = 5
# VoteRequest: leader_id (the candidate), term, ledger_end_index, ledger_end_term
# VoteResponse: term, vote_result, code
# HeartBeatRequest: leader_id, term (local_id is the envelope's source)
# HeartBeatResponse: code, term
# LeadershipTransferRequest: term, transfer_id, transferee_id, take_leadership_ledger_index, leader_id
# LeadershipTransferResponse: code, term
VOTE_REQUEST = 1
VOTE_RESPONSE = 2
HEART_BEAT_REQUEST = 3
HEART_BEAT_RESPONSE = 4
LEADERSHIP_TRANSFER_REQUEST = 5
LEADERSHIP_TRANSFER_RESPONSE = 6
ENVELOPE_COLUMNS = core.E_FIELDS + ELECTION_FIELDS

# what an open RPC's requester waits for (R_CONTEXT): ("hb", seq), ("vote", seq),
# ("transfer", term, transferee, admin_rpc)
CTX_HEART_BEAT = 1
CTX_VOTE = 2
CTX_TRANSFER = 3

# observations (O_TARGET of an OUT_OBSERVATION row), with their values from O_OBSERVED on
OBS_ROLE_CHANGED = 1  # RoleChanged(term, role, leader)
OBS_VOTE_GRANTED = 2  # VoteGranted(term, candidate)
OBS_VOTE_PARSED = 3  # VoteParsed(term, result, accepted)
OBS_FOLLOWER_TIMEOUT = 4  # FollowerTimeout(term, leader)
OBS_LEADER_STEP_DOWN = 5  # LeaderStepDown(term, reason)
OBS_TRANSFER_DONE = 6  # TransferDone(transferee, code)
OBS_TRANSFER_STARTED = 7  # TransferStarted(transferee, term)
OUTPUT_COLUMNS = core.O_CONTEXT_3 + 2

# --- config: the core columns, then the member's (both twins), then the election world's ---

C_PEERS = core.CORE_CONFIG + 0  # DLedgerConfig.peers: the servers, nodes 0 .. C_PEERS - 1
C_HEART_BEAT_TIME_INTERVAL_MS = core.CORE_CONFIG + 1
C_MAX_HEART_BEAT_LEAK = core.CORE_CONFIG + 2
C_MIN_VOTE_INTERVAL_MS = core.CORE_CONFIG + 3
C_MAX_VOTE_INTERVAL_MS = core.CORE_CONFIG + 4
C_ENABLE_LEADER_ELECTOR = core.CORE_CONFIG + 5
C_PREFERRED_LEADERS = core.CORE_CONFIG + 6  # 1: preferred_leader_ids is not None
C_MIN_TAKE_LEADERSHIP_VOTE_INTERVAL_MS = core.CORE_CONFIG + 7
C_MAX_TAKE_LEADERSHIP_VOTE_INTERVAL_MS = core.CORE_CONFIG + 8
C_MAX_LEADERSHIP_TRANSFER_WAIT_INDEX = core.CORE_CONFIG + 9
C_LEADERSHIP_TRANSFER_WAIT_TIMEOUT = core.CORE_CONFIG + 10
C_RPC_TIMEOUT_MS = core.CORE_CONFIG + 11
C_MAINTAINER_SLEEP_MS = core.CORE_CONFIG + 12
C_CHECK_PREFERRED_LEADER_INTERVAL_MS = core.CORE_CONFIG + 13
C_STEP_DOWN_ON_HIGHER_TERM = core.CORE_CONFIG + 14  # DLedger 0.4.0
C_TERMS = core.CORE_CONFIG + 15  # capacity of the per-term ghost tables
MEMBER_CONFIG = core.CORE_CONFIG + 16
# the election world's property bounds (spec/election.py's functions of spec/bounds.py's defaults)
C_HB1_QUIET_MS = MEMBER_CONFIG + 0
C_HB2_BOUND_MS = MEMBER_CONFIG + 1
C_ELE_L_BOUND_MS = MEMBER_CONFIG + 2
C_LIVE1_BOUND_MS = MEMBER_CONFIG + 3
C_LIVE2_BOUND_MS = MEMBER_CONFIG + 4
C_LIVE3_BOUND_MS = MEMBER_CONFIG + 5
CONFIG_COLUMNS = MEMBER_CONFIG + 6

# --- world scalars after the core's (WORLD) ---

W_SETTLED = core.CORE_WORLD + 0  # ghost.settled_ms
W_TOP_TERM = core.CORE_WORLD + 1  # the largest term the ghost tables used
W_TERMS_WITH_TWO_LEADERS = core.CORE_WORLD + 2  # ELE-1 is violated while this is positive
W_VOTERS_WITH_TWO_CANDIDATES = core.CORE_WORLD + 3  # (voter, term) pairs; ELE-2 likewise
W_LEADERLESS_SINCE = core.CORE_WORLD + 4  # LeaderlessMeter.since
W_LEADERLESS_MS = core.CORE_WORLD + 5
W_LEADER_LOSSES = core.CORE_WORLD + 6
W_NOTES = core.CORE_WORLD + 7  # ghost.terms.seq: the notes so far (rows of NOTES); the ghost's version
W_AGREED = core.CORE_WORLD + 8  # ghost.agreed
W_AGREED_SINCE = core.CORE_WORLD + 9
W_SETTLED_LEADER = core.CORE_WORLD + 10  # ghost.settled_leader: the leader's index, -1 for None ..
W_SETTLED_LEADER_TERM = core.CORE_WORLD + 11  # .. and its term (0 for None)
W_FIRST_TRANSFER = core.CORE_WORLD + 12  # the earliest `since` in ghost.transfers (-1: none)
W_FIRST_STRAGGLER = core.CORE_WORLD + 13  # the earliest `since` in ghost.stragglers (-1: none)
WORLD_COLUMNS = core.CORE_WORLD + 14

OVERFLOW_NOTES = -7
OVERFLOW_NAMES = core.OVERFLOW_NAMES | {OVERFLOW_NOTES: "ghost notes (votes, leaderships, lost term files)"}

# --- properties (VERDICTS rows), in the catalogue order of spec/election.py ---

PROPERTY_IDS = ("ELE-1", "ELE-2", "ELE-3", "ELE-4", "ELE-5", "HB-1", "HB-2", "RPL-1", "RPL-2", "ELE-L", "LIVE-1",
                "LIVE-2", "LIVE-3")
P_ELE1, P_ELE2, P_ELE3, P_ELE4, P_ELE5, P_HB1, P_HB2, P_RPL1, P_RPL2, P_ELEL, P_LIVE1, P_LIVE2, P_LIVE3 = \
    range(len(PROPERTY_IDS))
PROPERTIES = len(PROPERTY_IDS)
V_STEP = 0  # -1: none recorded
V_TIME = 1
V_CAUSE = 2  # ELE-3: the mask of the node its expected cause names; ELE-1/2: 1 if expected; 0: unexpected
V_CAUSE_VERSION = 3  # cache: the ghost's version (W_NOTES) the cause below was decided at (-1: none)
V_CAUSE_CACHED = 4
V_NOTES = 5  # W_NOTES when recorded: the cause's text is spec's, over the notes before it (runner)
VERDICT_COLUMNS = 6

# --- the ghost's evidence notes (ghost.Terms), one row of NOTES per note, row index == seq ---

N_KIND = 0  # NOTE_*
N_NODE = 1  # the voter / the leader / the node that lost its term file
N_TERM = 2  # the term (for a loss: the term it had just before)
N_CANDIDATE = 3  # the candidate (votes)
N_AT = 4  # at_ms
N_NEXT = 5  # the next note of the same (voter, term) or the same lost node, -1: none
NOTE_COLUMNS = 6
NOTE_VOTE = 1
NOTE_LED = 2
NOTE_LOST = 3
# VOTE_CHAINS[term, voter]: the first and last vote note of that key
CHAIN_HEAD = 0
CHAIN_TAIL = 1
# NODE_NOTES[node]: the ghost's per-node columns
NN_STRAGGLER_SINCE = 0  # ghost.stragglers: since when (-1: not one)
NN_TRANSFER_SINCE = 1  # ghost.transfers: since when (-1: none)
NN_LOST_HEAD = 2  # the first and last lost note of the node
NN_LOST_TAIL = 3
NODE_NOTE_COLUMNS = 4

# what a step did that the monitor reads (STEP_MARKS)
SM_FIRST_NEW_LEADER_TERM = 0  # the terms whose leaders changed: ELE-4 looks at these (-1: none)
SM_LAST_NEW_LEADER_TERM = 1
SM_HB1 = 2  # 1: a follower timed out on a leader that HB-1 says it should have heard
SM_REPLIES = 3  # RPL-1 / RPL-2 findings (election.replies bits)
SM_OS_CRASHED = 4  # the node an OS crash or a disk loss took in this step (ELE-3's cause), -1: none
STEP_MARK_COLUMNS = 5

# --- the state table's slots after the core's ---

MEMBERS = core.CORE_SLOTS + 0  # [servers, MEMBER_COLUMNS]
PEERS_LIVE = core.CORE_SLOTS + 1  # [servers, servers] Member.peers_live_table (-1 absent, 0, 1)
WATER_MARKS = core.CORE_SLOTS + 2  # [servers, servers (+1)] Member.peer_water_marks (-1 absent)
PREFERRED = core.CORE_SLOTS + 3  # [preferred] the preferred leaders' indexes, in the config's order
SELF_PREFERRED = core.CORE_SLOTS + 4  # [servers] 1: the server is a preferred leader
MEMBER_SLOTS = core.CORE_SLOTS + 5  # the dledger_log twin's own slots start here
ELECTED = MEMBER_SLOTS + 0  # [terms] the leaders of each term, a mask
GRANTS = MEMBER_SLOTS + 1  # [terms, servers] the candidates each voter accepted in each term, a mask
CUT_SINCE = MEMBER_SLOTS + 2  # [servers] ghost.cut_since (-1: not cut off)
NOTES = MEMBER_SLOTS + 3  # [notes, NOTE_COLUMNS]
VOTE_CHAINS = MEMBER_SLOTS + 4  # [terms, servers, 2]
NODE_NOTES = MEMBER_SLOTS + 5  # [servers, NODE_NOTE_COLUMNS]
STEP_MARKS = MEMBER_SLOTS + 6  # [STEP_MARK_COLUMNS]
PREVIOUS_TERMS = MEMBER_SLOTS + 7  # [servers] each one's term before the step (ELE-3)
INITIAL_LEDGER = MEMBER_SLOTS + 8  # [servers, 2] ledger_end_index and _term each server boots with
SLOTS = MEMBER_SLOTS + 9
members = accessor(2, MEMBERS)
peers_live = accessor(2, PEERS_LIVE)
water_marks = accessor(2, WATER_MARKS)
preferred = accessor(1, PREFERRED)
self_preferred = accessor(1, SELF_PREFERRED)
elected = accessor(1, ELECTED)
grants = accessor(2, GRANTS)
cut_since = accessor(1, CUT_SINCE)
notes = accessor(2, NOTES)
vote_chains = accessor(3, VOTE_CHAINS)
node_notes = accessor(2, NODE_NOTES)
step_marks = accessor(1, STEP_MARKS)
previous_terms = accessor(1, PREVIOUS_TERMS)
initial_ledger = accessor(2, INITIAL_LEDGER)
