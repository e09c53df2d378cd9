"""The dledger_log twin's layout: its codes and push types, the config after the member's,
the columns of the store, the pusher, the dispatchers, the entry handler, the clients, the
messages and the ghost, the world scalars, the properties, and the state table's slots.

All int64. Node indexes: servers 0..n-1 (the DLedger peers, in DLedgerConfig.peers order),
clients n..n+k-1 (`c0..`). `None` is -1 unless said. An entry is four numbers (term, pos,
size, body) at an index; its body is `(client + 1) << 32 | seq` for the client's
`c<client>-<seq>` request and 0 for the no-op of FastAdvanceCommitIndexService. Tables
keyed by entry index (pending pushes, write requests, the ghost's committed and
acknowledged entries) are indexed by it directly, so the entries capacity bounds every
index the world may use. The member of a server is the election twin's, at the election
layout's slots and config columns (histories.fast.election.layout); these come after them.
"""

from __future__ import annotations

from histories.fast.core import layout as core
from histories.fast.core.table import accessor
from histories.fast.election import layout as member
from reference_impl.dledger_log.entry_pusher import PushType
from reference_impl.dledger_log.store import BODY_OFFSET, MIN_BLANK_LEN  # noqa: F401 - folded by Numba
from reference_impl.dledger_log.world import CLIENT_RPC_TIMEOUT_MS  # noqa: F401
from reference_impl.election.records import Code
from spec.dledger_log import LOG_L_BOUND_MS  # noqa: F401

# --- DLedgerResponseCode (reference_impl.election.records.Code) beyond the member's ---

UNKNOWN_GROUP = int(Code.UNKNOWN_GROUP)
NOT_FOLLOWER = int(Code.NOT_FOLLOWER)
INCONSISTENT_STATE = int(Code.INCONSISTENT_STATE)
INCONSISTENT_INDEX = int(Code.INCONSISTENT_INDEX)
INDEX_OUT_OF_RANGE = int(Code.INDEX_OUT_OF_RANGE)
REPEATED_PUSH = int(Code.REPEATED_PUSH)
DISK_ERROR = int(Code.DISK_ERROR)
DISK_FULL = int(Code.DISK_FULL)  # never a reference answer: the twin's entries capacity ran out (the kernel stops)
INDEX_LESS_THAN_LOCAL_BEGIN = int(Code.INDEX_LESS_THAN_LOCAL_BEGIN)
PUSH_REQUEST_IS_FULL = int(Code.PUSH_REQUEST_IS_FULL)
TERM_CHANGED = int(Code.TERM_CHANGED)
WAIT_QUORUM_ACK_TIMEOUT = int(Code.WAIT_QUORUM_ACK_TIMEOUT)
LEADER_PENDING_FULL = int(Code.LEADER_PENDING_FULL)
CODE_SLOTS = 512  # result counts are kept by code value

# PushEntryRequest.Type, in declaration order
PUSH_TYPES = tuple(PushType)
TYPE_APPEND = PUSH_TYPES.index(PushType.APPEND)
TYPE_COMMIT = PUSH_TYPES.index(PushType.COMMIT)
TYPE_COMPARE = PUSH_TYPES.index(PushType.COMPARE)
TYPE_TRUNCATE = PUSH_TYPES.index(PushType.TRUNCATE)

REQUEST_TERM = -1  # entry_pusher.REQUEST_TERM: the term of a response copied from an AppendEntryRequest
NO_INDEX = -(1 << 62)  # PushEntryResponse.index None (a COMMIT's answer); -1 is a real value there
BIG = 1 << 62  # above any index: "none" where the smallest of a set is kept

# --- config: the core's and the member's columns, then these ---

_CONFIG_BASE = member.MEMBER_CONFIG
C_CLIENTS = _CONFIG_BASE + 0
C_CLIENT_INTERVAL_MS = _CONFIG_BASE + 1
C_BODY_LENGTH = _CONFIG_BASE + 2  # a client body's length: max(body_size, 1)
C_FORCED_LEADER = _CONFIG_BASE + 3  # forced_leader (server index) or -1
C_V026 = _CONFIG_BASE + 4  # LogConfig.v026 (not 0.3.1.2)
C_CURRENT_TERM_COMMIT = _CONFIG_BASE + 5  # LogConfig.current_term_commit ("fixed")
C_FRESH_COMPARE = _CONFIG_BASE + 6  # LogConfig.fresh_compare ("fixed")
C_ORDERED_PUSHES = _CONFIG_BASE + 7  # LogConfig.ordered_pushes (single_thread or "fixed")
C_COMPARE_QUEUE_CAPACITY = _CONFIG_BASE + 8
C_FAST_ADVANCE_COMMIT_INDEX = _CONFIG_BASE + 9  # enable_fast_advance_commit_index
C_MAX_PENDING_REQUESTS_NUM = _CONFIG_BASE + 10
C_MAX_WAIT_ACK_TIME_MS = _CONFIG_BASE + 11
C_MAX_PUSH_TIME_OUT_MS = _CONFIG_BASE + 12
C_MAPPED_FILE_SIZE_FOR_ENTRY_DATA = _CONFIG_BASE + 13
C_FLUSH_FILE_INTERVAL = _CONFIG_BASE + 14
C_CHECK_POINT_INTERVAL = _CONFIG_BASE + 15
C_DISPATCHER_MAX_PENDING_SIZE = _CONFIG_BASE + 16
C_DISPATCHER_ERROR_SLEEP_MS = _CONFIG_BASE + 17
C_COMMIT_PUSH_INTERVAL_MS = _CONFIG_BASE + 18
C_LEAK_CHECK_INTERVAL_MS = _CONFIG_BASE + 19
C_CHECK_FAST_FORWARD_INTERVAL_MS = _CONFIG_BASE + 20
C_PUSH_FUTURE_TIMEOUT_MS = _CONFIG_BASE + 21
C_LIVE1_BOUND_MS = _CONFIG_BASE + 22  # spec.election.live1_bound_ms (bounds from spec/bounds.py and the overrides)
C_LIVE2_BOUND_MS = _CONFIG_BASE + 23
C_LIVE3_BOUND_MS = _CONFIG_BASE + 24
C_ASTRAY_BOUND_MS = _CONFIG_BASE + 25  # spec.election.astray_bound_ms
C_PUSH_WAIT_MS = _CONFIG_BASE + 26  # LogConfig.push_wait_ms: doCompare / doTruncate's get(3, SECONDS)
C_THREAD_WAIT_MS = _CONFIG_BASE + 27  # LogConfig.thread_wait_ms: an idle EntryPusher thread's waitForRunning(1)
CONFIG_COLUMNS = _CONFIG_BASE + 28

# --- Store scalars (STORE rows) and entries (ENTRIES[server, k]: the entry at begin_index + k) ---

S_ENTRIES = 0  # how many entries the store holds
S_BEGIN_INDEX = 1
S_END_TERM = 2
S_COMMITTED_INDEX = 3
S_COMMITTED_POS = 4
S_MIN_POS = 5
S_FLUSHED_INDEX = 6
S_FLUSH_DUE_MS = 7
S_CHECK_POINT = 8
S_LAST_CHECK_POINT_MS = 9
S_CHECK_POINT_DUE_MS = 10
STORE_COLUMNS = 11

ET_TERM = 0
ET_POS = 1
ET_SIZE = 2
ET_BODY = 3
ENTRY_COLUMNS = 4

# --- the Pusher (PUSHER rows) and its PendingAppend futures (PENDING[server, r]) ---

P_LAST_QUORUM_INDEX = 0
P_LAST_CHECK_LEAK_MS = 1
P_EPOCH = 2
P_WATER_MARK_TERMS = 3  # rows of WATER_MARK_TERMS in use
P_PENDING_TERMS = 4  # terms in PENDING_TERMS
P_PENDING = 5  # rows of PENDING in use
P_CHECKER_WOKEN = 6  # Pusher.checker_woken: the QuorumAckChecker's next pass comes at once
PUSHER_COLUMNS = 7

PD_TERM = 0
PD_INDEX = 1
PD_POS = 2
PD_CREATED_MS = 3
PD_REF = 4  # the body
PD_RPC = 5
PD_DONE = 6
PENDING_COLUMNS = 7

# --- a Dispatcher (DISPATCHERS[server, peer]) ---

D_TYPE = 0
D_COMPARE_INDEX = 1
D_WRITE_INDEX = 2
D_TERM = 3
D_LEADER_ID = 4
D_LAST_PUSH_COMMIT_MS = 5
D_LAST_CHECK_LEAK_MS = 6
D_WAITING = 7
D_TRUNCATE_INDEX = 8
D_SLEEP_UNTIL = 9
D_SEQ = 10
D_PENDING = 11  # entries in the pending map
D_PENDING_LOW = 12  # every key of the pending map lies in [D_PENDING_LOW, D_PENDING_HIGH] (BIG, -1 when empty)
D_PENDING_HIGH = 13
# the thread blocked in responseFuture.get(3, SECONDS): Dispatcher.blocked (a push type, -1: None),
# wait_until, and the response the future completed with (D_HAS_RESPONSE 0: None)
D_BLOCKED = 14
D_WAIT_UNTIL = 15
D_HAS_RESPONSE = 16
D_RESPONSE_CODE = 17
D_RESPONSE_TERM = 18
D_RESPONSE_INDEX = 19  # NO_INDEX: None
D_RESPONSE_BEGIN = 20
D_RESPONSE_END = 21
DISPATCHER_COLUMNS = 22

# --- the EntryHandler (HANDLER rows) ---

H_LAST_CHECK_FAST_FORWARD_MS = 0
H_WRITE_REQUESTS = 1  # entries in the write requests
H_WRITE_LOW = 2  # key range of the write requests (BIG, -1 when empty)
H_WRITE_HIGH = 3
H_QUEUE = 4  # the queue's length
H_WOKEN = 5  # EntryHandler.woken: its next pass comes at once
HANDLER_COLUMNS = 6

# A PushEntryRequest: the message's fields (envelopes, outputs, PushWait rows)
RQ_LEADER_ID = 0
RQ_TERM = 1
RQ_TYPE = 2
RQ_HAS_ENTRY = 3  # entry is not None
RQ_ENTRY_INDEX = 4
RQ_ENTRY_TERM = 5
RQ_ENTRY_POS = 6
RQ_ENTRY_SIZE = 7
RQ_ENTRY_BODY = 8
RQ_COMMIT_INDEX = 9
RQ_SEQ_EPOCH = 10  # seq = (epoch, count)
RQ_SEQ_COUNT = 11
MESSAGE_FIELDS = 12
# a PushWait row: present, the request's fields, rpc, created_ms, answered
PW_PRESENT = 0
PW_REQUEST = 1  # request field j at PW_REQUEST + j
PW_RPC = 13
PW_CREATED_MS = 14
PW_ANSWERED = 15
PUSH_WAIT_COLUMNS = 16

# --- a LogClient (CLIENTS rows) ---

CL_LEADER_ID = 0
CL_NEXT_APPEND_MS = 1
CL_SEQ = 2
CL_WAITING = 3
CLIENT_COLUMNS = 4

# what the monitor needs of a store's change in this step (STORE_CHANGES rows)
SC_DIRTY = 0  # lowest index whose entry changed (added, replaced, removed) in this step; BIG: none
SC_SAVED_FROM = 1  # SAVED_ENTRIES holds the step's first entries from this index ..
SC_SAVED = 2  # .. this many (to the old end)
SC_OLD_BEGIN = 3  # the begin and end index when the step began
SC_OLD_END = 4
SC_BEGIN_MOVED = 5  # the begin index moved (LOG-1 and LOG-7 look at the whole log)
STORE_CHANGE_COLUMNS = 6

# --- messages: envelope rows (id order, as network.Network.flight) ---

ENVELOPE_COLUMNS = core.E_FIELDS + MESSAGE_FIELDS
# the member's kinds (election.layout: five fields each) and these:
APPEND_ENTRY_REQUEST = 7  # AppendEntryRequest: body
APPEND_ENTRY_RESPONSE = 8  # AppendEntryResponse: code, index, pos, term, leader_id
PUSH_ENTRY_REQUEST = 9  # PushEntryRequest: RQ_* fields
PUSH_ENTRY_RESPONSE = 10  # PushEntryResponse: code, term, index (NO_INDEX: null), begin_index, end_index

# what an open RPC's requester waits for, after the member's CTX_*
CTX_PUSH = 4  # ("push", type, peer, seq, term): context 1 the type + term << CTX_TERM_SHIFT, 2 the peer, 3 the seq
CTX_TERM_SHIFT = 4  # a push type fits in 4 bits
CTX_APPEND = 5  # ("append", key): context 1 the body

# --- one transition's outputs: the member's columns, then the sixth message field on ---

OUTPUT_COLUMNS = core.O_MORE_FIELDS + MESSAGE_FIELDS - member.ELECTION_FIELDS
# a push response's row also carries the request it answers (RPL-1/3 read it) and whether
# network.reply put it in flight
RP_SENT = core.O_CONTEXT
RP_TYPE = core.O_CONTEXT_1
RP_LEADER_ID = core.O_MORE_FIELDS
RP_HAS_ENTRY = core.O_MORE_FIELDS + 1
RP_ENTRY_INDEX = core.O_MORE_FIELDS + 2
RP_ENTRY_TERM = core.O_MORE_FIELDS + 3
RP_ENTRY_POS = core.O_MORE_FIELDS + 4
RP_ENTRY_SIZE = core.O_MORE_FIELDS + 5
RP_ENTRY_BODY = core.O_MORE_FIELDS + 6
# observations after the member's (election.layout OBS_*)
OBS_COMMIT_ADVANCED = 21  # CommitAdvanced: old, new, term, leader, entry_term
OBS_APPEND_RESULT = 22  # AppendResult: code, index, term, pos, ref, rpc, future_pos
OBS_CLIENT_RESULT = 23  # ClientResult: key (body), server, code, index
OBS_ENTRIES_DROPPED = 24  # EntriesDropped: the truncating leader (-1: none), its term (the entries: saved against now)

# --- world scalars after the core's ---

_WORLD_BASE = core.CORE_WORLD
W_APPENDS = _WORLD_BASE + 0  # LogGhost.appends
W_FIRST_ACK = _WORLD_BASE + 1  # LogGhost.first_ack_after_calm_ms
W_TOP_LEADER_TERM = _WORLD_BASE + 2  # the largest term in ELECTED / REGRESSED (-1: none)
W_COMMITTED = _WORLD_BASE + 3  # indexes in LogGhost.committed (and their order in COMMITTED_ORDER)
W_CONFLICTS = _WORLD_BASE + 4  # indexes in LogGhost.conflicts (order in CONFLICT_ORDER)
W_ACKED = _WORLD_BASE + 5  # indexes in LogGhost.acked (order in ACKED_ORDER)
W_COUNTED = _WORLD_BASE + 6  # indexes in LogGhost.counted (order in COUNTED_ORDER)
W_EVIDENCE = _WORLD_BASE + 7  # bumped when what an expected cause reads changes (caches LOG-1 / LOG-5 causes)
W_TOP_INDEX = _WORLD_BASE + 8  # the largest index any index-keyed table used (reset clears up to it)
W_TOP_TERM = _WORLD_BASE + 9  # the largest term any term-keyed table used
W_NOTES = _WORLD_BASE + 10  # Terms.seq: votes, leaderships, lost term files and drops noted so far
W_DROPS = _WORLD_BASE + 11  # rows of LogGhost.drops (DROPS)
W_DROPPED_ENTRIES = _WORLD_BASE + 12  # rows of the drops' entries (DROPPED_ENTRIES)
W_THIN = _WORLD_BASE + 13  # indexes in LogGhost.thin (order in THIN_ORDER)
W_VOTES = _WORLD_BASE + 14  # rows of Terms.votes (VOTES), in history order
W_LEADERSHIPS = _WORLD_BASE + 15  # rows of Terms.led (LEADERSHIPS)
W_TERMS_LOST = _WORLD_BASE + 16  # rows of Terms.term_lost (TERMS_LOST)
W_AGREED = _WORLD_BASE + 17  # LogGhost.agreed
W_AGREED_SINCE = _WORLD_BASE + 18
W_SETTLED_LEADER = _WORLD_BASE + 19  # settled_leader: server index (-1: None) ..
W_SETTLED_LEADER_TERM = _WORLD_BASE + 20  # .. and its term
W_REPLIES = _WORLD_BASE + 21  # this step's RPL findings, bits 1 << RPL_* (replies)
W_LEADER_PARTITIONS = _WORLD_BASE + 22  # leader_partition faults (the profile's own kind)
WORLD_COLUMNS = _WORLD_BASE + 24

# the protocol's own fault kind (world.LeaderPartition), after the core's kinds and events
K_LEADER_PARTITION = core.CORE_FAULT_KINDS  # its weight: WEIGHTS[K_LEADER_PARTITION]
EV_LEADER_PARTITION = 12  # L_ARG: the leader

OVERFLOW_ENTRIES = -7
OVERFLOW_MARKS = -8
OVERFLOW_PENDING = -9
OVERFLOW_QUEUE = -10
OVERFLOW_SETS = -11
OVERFLOW_HISTORY = -12  # drops (rows or their entries), votes, leaderships or lost term files (ghost)
DIVERGED = -20  # a state the twin assumes never happens did (say what in docs); the reference decides
OVERFLOW_NAMES = core.OVERFLOW_NAMES | {
    OVERFLOW_ENTRIES: "entries (log indexes)", OVERFLOW_MARKS: "water-mark terms",
    OVERFLOW_PENDING: "pending appends", OVERFLOW_QUEUE: "entry handler queue",
    OVERFLOW_SETS: "entries acknowledged or conflicting at one index",
    OVERFLOW_HISTORY: "ghost history (drops, votes, leaderships, lost term files)",
    DIVERGED: "a non-prefix truncation (log positions out of order)"}

# --- properties (VERDICTS rows), in the catalogue order of spec/dledger_log.py ---

PROPERTY_IDS = ("LOG-1", "LOG-2", "LOG-3", "LOG-4", "LOG-5", "LOG-6", "LOG-7", "LOG-L", "LOG-8", "RPL-1", "RPL-2",
                "RPL-3", "LIVE-1", "LIVE-2", "LIVE-3")
(P_LOG1, P_LOG2, P_LOG3, P_LOG4, P_LOG5, P_LOG6, P_LOG7, P_LOGL, P_LOG8, P_RPL1, P_RPL2, P_RPL3, P_LIVE1, P_LIVE2,
 P_LIVE3) = range(len(PROPERTY_IDS))
PROPERTIES = len(PROPERTY_IDS)
V_STEP = 0  # -1: none recorded
V_TIME = 1
V_CAUSE = 2  # CAUSE_NONE (unexpected) or CAUSE_KNOWN, and the cause's arguments
V_CAUSE_A = 3
V_CAUSE_B = 4
V_CAUSE_MARK_1 = 5
V_CAUSE_MARK_2 = 6
VERDICT_COLUMNS = 7

# A recorded violation's cause: CAUSE_NONE (unexpected) or CAUSE_KNOWN, whose text the caller
# computed with spec/dledger_log.py's own functions on the world of that step (CAUSE_REQUESTS).
CAUSE_NONE = 0
CAUSE_KNOWN = 1

# Requests for expected causes CAUSE_REQUESTS[property]: the kernel pauses after a step that
# left one, and histories.fast.dledger_log.causes answers it (V_CAUSE of the property's row).
RQ_ON = 0
RQ_A = 1  # LOG-2 / LOG-6: the new leader; LOG-3 / LOG-4: the node
RQ_B = 2  # LOG-2 / LOG-6: its term; LOG-4: the new commit index
RQ_C = 3  # LOG-4: the old commit index
CAUSE_REQUEST_COLUMNS = 4

# LogGhost.drops rows (DROPS)
DR_SERVER = 0
DR_AT = 1
DR_SEQ = 2
DR_HOW = 3  # HOW_*
DR_LOW = 4  # the entries: indexes low..high, at DROPPED_ENTRIES rows DR_ENTRIES..
DR_HIGH = 5
DR_FLUSHED = 6
DR_LEADER = 7  # -1: None
DR_TERM = 8
DR_STALE = 9
DR_ENTRIES = 10
DROP_COLUMNS = 11
HOW_OS = 0
HOW_DISK = 1
HOW_TRUNCATE = 2
HOW_PROCESS = 3
HOW_NAMES = ("os-crash", "disk-loss", "truncate", "process-crash")
# LogGhost.thin per index (THIN)
TH_ON = 0
TH_LEADER = 1
TH_TERM = 2
TH_ENTRY_TERM = 3
TH_HOLDERS = 4  # bit mask of servers
TH_AT = 5
TH_WHAT = 6  # 0 committed, 1 acknowledged
THIN_COLUMNS = 7
# liveness per node (LIVENESS): since when a straggler (-1: not one), since when transferring (-1: not)
LV_STRAGGLER_SINCE = 0
LV_TRANSFER_SINCE = 1

# --- the state table's slots after the member's ---

_SLOT_BASE = member.MEMBER_SLOTS
STORE = _SLOT_BASE + 0  # [servers, STORE_COLUMNS]
ENTRIES = _SLOT_BASE + 1  # [servers, entries, ENTRY_COLUMNS]
PUSHER = _SLOT_BASE + 2  # [servers, PUSHER_COLUMNS]
WATER_MARK_TERMS = _SLOT_BASE + 3  # [servers, marks, 1 + servers] Pusher.water_marks rows: term, a mark per peer
PENDING_TERMS = _SLOT_BASE + 4  # [servers, pending] the terms of Pusher.pending, in the map's insertion order
PENDING = _SLOT_BASE + 5  # [servers, pending, PENDING_COLUMNS] Pusher.pending's futures (sorted where the reference sorts)
DISPATCHERS = _SLOT_BASE + 6  # [servers, servers, DISPATCHER_COLUMNS] server i's dispatcher for peer j (j != i)
PENDING_MAPS = _SLOT_BASE + 7  # [servers, servers, entries] Dispatcher.pending_map, index -> ms pushed (-1: absent)
HANDLER = _SLOT_BASE + 8  # [servers, HANDLER_COLUMNS]
WRITE_REQUESTS = _SLOT_BASE + 9  # [servers, entries, PUSH_WAIT_COLUMNS] EntryHandler.write_requests by entry index
HANDLER_QUEUE = _SLOT_BASE + 10  # [servers, queue, PUSH_WAIT_COLUMNS] EntryHandler.queue, in order
LAST_SEQS = _SLOT_BASE + 11  # [servers, servers, 3] EntryHandler.last_seq: present, epoch, count per leader
CLIENTS = _SLOT_BASE + 12  # [clients, CLIENT_COLUMNS]
STORE_CHANGES = _SLOT_BASE + 13  # [servers, STORE_CHANGE_COLUMNS]
SAVED_ENTRIES = _SLOT_BASE + 14  # [servers, entries, ENTRY_COLUMNS] the entries a store held when the step began, from SC_SAVED_FROM
ROLLBACK = _SLOT_BASE + 15  # scratch: a dispatcher row saved before its work, and the pending map's undo log
# the ghost (dledger_log.ghost, dledger_log.monitor)
ELECTED = _SLOT_BASE + 16  # [terms] the servers that led each term, a mask
REGRESSED = _SLOT_BASE + 17  # [terms] -1: absent
COMMITTED = _SLOT_BASE + 18  # [entries, 5] the first entry committed at each index: present, term, pos, size, body
COMMITTED_ORDER = _SLOT_BASE + 19  # [entries] the committed indexes in insertion order
CONFLICTS = _SLOT_BASE + 20  # [entries, sets, 4] other entries committed at an index later
CONFLICT_COUNTS = _SLOT_BASE + 21  # [entries]
CONFLICT_ORDER = _SLOT_BASE + 22  # [entries]
ACKED = _SLOT_BASE + 23  # [entries, sets, 4] entries acknowledged SUCCESS at an index
ACKED_COUNTS = _SLOT_BASE + 24
ACKED_ORDER = _SLOT_BASE + 25
COUNTED_COUNTS = _SLOT_BASE + 26  # [entries] entries in COUNTED per index
DROPS = _SLOT_BASE + 27  # [history, DROP_COLUMNS]
RESULTS = _SLOT_BASE + 28  # [CODE_SLOTS] AppendResult counts by code
DROPPED_ENTRIES = _SLOT_BASE + 29  # [16 x history, 4]
THIN = _SLOT_BASE + 30  # [entries, THIN_COLUMNS]
THIN_ORDER = _SLOT_BASE + 31  # [entries]
VOTES = _SLOT_BASE + 32  # [4 x history, 5] voter, term, candidate, at, seq
LEADERSHIPS = _SLOT_BASE + 33  # [history, 5] term, leader, at, seq, end term
TERMS_LOST = _SLOT_BASE + 34  # [history, 4] node, at, term, seq
LIVENESS = _SLOT_BASE + 35  # [servers, 2] LV_*
CAUSE_REQUESTS = _SLOT_BASE + 36  # [PROPERTIES, CAUSE_REQUEST_COLUMNS]
MEMBER_BEFORE = _SLOT_BASE + 37  # [MEMBER_COLUMNS] scratch: a server's member before the step (RPL-*)
COUNTED = _SLOT_BASE + 38  # [entries, sets, 4] entries a leader committed by counting an older term
COUNTED_ORDER = _SLOT_BASE + 39
CONFLICT_TERMS = _SLOT_BASE + 40  # [entries] LogGhost.conflict_terms per index
LOG_PAIRS = _SLOT_BASE + 41  # [servers, servers] LOG-1's bookkeeping per pair of logs
CAUSE_CACHE = _SLOT_BASE + 42  # [16] LOG-1 / LOG-5 cause caches
COMMIT_BEFORE = _SLOT_BASE + 43  # [servers] scratch: commit indexes when the step began
ALIVE_BEFORE = _SLOT_BASE + 44  # [servers] .. and liveness
NEW_LEADERS = _SLOT_BASE + 45  # [64] scratch: the step's new leaders (monitor_steps)
REPLY_FIELDS = _SLOT_BASE + 46  # [MESSAGE_FIELDS] scratch: a reply's fields
MESSAGE = _SLOT_BASE + 47  # [MESSAGE_FIELDS] scratch: a delivered message's fields
LOG_SUMS = _SLOT_BASE + 48  # [servers, entries + 2] how many positions are summed, then each log's running sums (world_observe)
# the threads as actors (server.thread_wakes, schedule._wakes): per node and thread (a server's
# MAINTAINER, HANDLER, a dispatcher per peer, the checker, the flush service; a client's one)
THREAD_WAKES = _SLOT_BASE + 49  # [nodes, threads] each thread's wake time (-1: nothing to do, or no such thread)
THREAD_SINCE = _SLOT_BASE + 50  # [nodes, threads] World.since per thread
THREAD_SLACK = _SLOT_BASE + 51  # [nodes, threads] how much later than max(wake, since) its tick may fire
SLOTS = _SLOT_BASE + 52
store = accessor(2, STORE)
entries = accessor(3, ENTRIES)
pusher = accessor(2, PUSHER)
water_mark_terms = accessor(3, WATER_MARK_TERMS)
pending_terms = accessor(2, PENDING_TERMS)
pending = accessor(3, PENDING)
dispatchers = accessor(3, DISPATCHERS)
pending_maps = accessor(3, PENDING_MAPS)
handler = accessor(2, HANDLER)
write_requests = accessor(3, WRITE_REQUESTS)
handler_queue = accessor(3, HANDLER_QUEUE)
last_seqs = accessor(3, LAST_SEQS)
clients = accessor(2, CLIENTS)
store_changes = accessor(2, STORE_CHANGES)
saved_entries = accessor(3, SAVED_ENTRIES)
rollback = accessor(1, ROLLBACK)
elected = accessor(1, ELECTED)
regressed = accessor(1, REGRESSED)
committed = accessor(2, COMMITTED)
committed_order = accessor(1, COMMITTED_ORDER)
conflicts = accessor(3, CONFLICTS)
conflict_counts = accessor(1, CONFLICT_COUNTS)
conflict_order = accessor(1, CONFLICT_ORDER)
acked = accessor(3, ACKED)
acked_counts = accessor(1, ACKED_COUNTS)
acked_order = accessor(1, ACKED_ORDER)
counted_counts = accessor(1, COUNTED_COUNTS)
drops = accessor(2, DROPS)
results = accessor(1, RESULTS)
dropped_entries = accessor(2, DROPPED_ENTRIES)
thin = accessor(2, THIN)
thin_order = accessor(1, THIN_ORDER)
votes = accessor(2, VOTES)
leaderships = accessor(2, LEADERSHIPS)
terms_lost = accessor(2, TERMS_LOST)
liveness = accessor(2, LIVENESS)
cause_requests = accessor(2, CAUSE_REQUESTS)
member_before = accessor(1, MEMBER_BEFORE)
counted = accessor(3, COUNTED)
counted_order = accessor(1, COUNTED_ORDER)
conflict_terms = accessor(1, CONFLICT_TERMS)
log_pairs = accessor(2, LOG_PAIRS)
cause_cache = accessor(1, CAUSE_CACHE)
commit_before = accessor(1, COMMIT_BEFORE)
alive_before = accessor(1, ALIVE_BEFORE)
new_leaders = accessor(1, NEW_LEADERS)
reply_fields = accessor(1, REPLY_FIELDS)
message = accessor(1, MESSAGE)
log_sums = accessor(2, LOG_SUMS)
thread_wakes = accessor(2, THREAD_WAKES)
thread_since = accessor(2, THREAD_SINCE)
thread_slack = accessor(2, THREAD_SLACK)

# a server's threads (reference_impl.dledger_log.server): 0 the state maintainer, 1 the entry
# handler, 2.. one dispatcher per peer in peers order, then the QuorumAckChecker and the flush service
MAINTAINER = 0
HANDLER_THREAD = 1
FIRST_DISPATCHER = 2
