"""Array layouts of the dledger_log fast world (histories/fast/dledger_log.py).

All int64. Node indexes: servers 0..n-1 (the DLedger peers, in DLedgerConfig.peers
order), clients n..n+k-1 (`c0..`). `None` is -1 unless said. An entry is four numbers
(term, pos, size, body) at an index; its body is `(client + 1) << 32 | seq` for the
client's `c<client>-<seq>` request and 0 for the no-op of FastAdvanceCommitIndexService.
Tables keyed by entry index (pending pushes, write requests, the ghost's committed and
acknowledged entries) are indexed by it directly, so the entries capacity bounds every
index the world may use. docs/fast-worlds.md draws the same picture in prose.

The election member of a server is the election twin's `nd` row (histories.fast.election),
unchanged; these layouts add the log, the replication threads, the clients and the ghost.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

import histories.fast.election as E

# --- DLedgerResponseCode (reference_impl.election.records.Code) ---

SUCCESS = 200
NETWORK_ERROR = 302
UNKNOWN_GROUP = 400
UNKNOWN_MEMBER = 401
NOT_LEADER = 404
NOT_FOLLOWER = 405
INCONSISTENT_STATE = 406
INCONSISTENT_TERM = 407
INCONSISTENT_INDEX = 408
INCONSISTENT_LEADER = 409
INDEX_OUT_OF_RANGE = 410
UNEXPECTED_ARGUMENT = 411
REPEATED_PUSH = 413
DISK_ERROR = 414
DISK_FULL = 415  # never a reference answer: the twin's entries capacity ran out (the kernel stops)
INDEX_LESS_THAN_LOCAL_BEGIN = 419
PUSH_REQUEST_IS_FULL = 421
TERM_CHANGED = 501
WAIT_QUORUM_ACK_TIMEOUT = 502
LEADER_PENDING_FULL = 503
LEADER_TRANSFERRING = 506
CODE_SLOTS = 512  # result counts are kept by code value

# PushEntryRequest.Type
T_APPEND = 0
T_COMMIT = 1
T_COMPARE = 2
T_TRUNCATE = 3
PUSH_TYPE_NAMES = ("APPEND", "COMMIT", "COMPARE", "TRUNCATE")

NONE = -(1 << 62)  # PushEntryResponse.index None (a COMMIT's answer); -1 is a real value there
BIG = 1 << 62
HEADER = 48  # store.BODY_OFFSET: an entry is 48 bytes + its body
MIN_BLANK_LEN = 8  # store.MIN_BLANK_LEN
CLIENT_RPC_TIMEOUT_MS = 3000  # dledger_log.world.CLIENT_RPC_TIMEOUT_MS

# --- config C: the election twin's fields (E.C_*, C_N = number of servers), then these ---

_B = E.CF
C_NT = _B + 0  # nodes: servers + clients
C_NCL = _B + 1  # clients
C_CIV = _B + 2  # client_interval_ms
C_BLEN = _B + 3  # a client body's length: max(body_size, 1)
C_FORCED = _B + 4  # forced_leader (server index) or -1
C_V026 = _B + 5  # LogConfig.v026 (not 0.3.1.2)
C_CTC = _B + 6  # current_term_commit ("fixed")
C_FRESHCMP = _B + 7  # fresh_compare ("fixed")
C_ORDERED = _B + 8  # ordered_pushes (single_thread or "fixed")
C_QCAP = _B + 9  # compare_queue_capacity
C_FASTADV = _B + 10  # enable_fast_advance_commit_index
C_MAXPEND = _B + 11  # max_pending_requests_num
C_MAXWAIT = _B + 12  # max_wait_ack_time_ms
C_MAXPUSHTO = _B + 13  # max_push_time_out_ms
C_FILESIZE = _B + 14  # mapped_file_size_for_entry_data
C_FLUSHI = _B + 15  # flush_file_interval
C_CPI = _B + 16  # check_point_interval
C_DMAXPEND = _B + 17  # dispatcher_max_pending_size
C_ERRSLEEP = _B + 18  # dispatcher_error_sleep_ms
C_COMMITPI = _B + 19  # commit_push_interval_ms
C_LEAKI = _B + 20  # leak_check_interval_ms
C_CFFI = _B + 21  # check_fast_forward_interval_ms
C_PFTO = _B + 22  # push_future_timeout_ms
C_LIVE1B = _B + 23  # spec.election.live1_bound_ms (bounds from spec/bounds.py and the overrides)
C_LIVE2B = _B + 24  # live2_bound_ms
C_LIVE3B = _B + 25  # live3_bound_ms
C_ASTRAYB = _B + 26  # spec.election.astray_bound_ms
CF = _B + 27

# --- the node state tuple S (every array of the nodes, one per entry) ---

I_ND = 0  # nd[n, E.NF]: the election Member of each server
I_LIVE = 1  # live[n, n]: Member.peers_live_table (-1 absent, 0, 1)
I_WMK = 2  # wmk[n, n + 1]: Member.peer_water_marks (-1 absent); column n: 1 when the map is set
I_STO = 3  # sto[n, SF]: Store scalars
I_ENT = 4  # ent[n, cap, ETF]: Store.entries, entry k at index begin + k
I_PU = 5  # pu[n, PUF]: Pusher scalars
I_WMT = 6  # wmt[n, WMCAP, 1 + n]: Pusher.water_marks rows: term, one mark per peer
I_PTM = 7  # ptm[n, PTCAP]: the terms of Pusher.pending, in the map's insertion order
I_PEND = 8  # pend[n, PCAP, PDF]: Pusher.pending's futures (any order; sorted where the reference sorts)
I_DP = 9  # dp[n, n, DF]: Dispatcher of server i for peer j (j != i; Pusher.dispatchers in peer order)
I_PM = 10  # pm[n, n, cap]: Dispatcher.pending_map, index -> ms pushed (-1: absent)
I_EH = 11  # eh[n, HF]: EntryHandler scalars
I_WR = 12  # wr[n, cap, PWF]: EntryHandler.write_requests by entry index
I_HQ = 13  # hq[n, QCAP, PWF]: EntryHandler.queue, in order
I_LSEQ = 14  # lseq[n, n, 3]: EntryHandler.last_seq: present, epoch, count per leader
I_CL = 15  # cl[k, CLF]: LogClient of client k
I_MD = 16  # md[n, MDF]: what the monitor needs of a store's change in this step
I_SV = 17  # sv[n, cap, ETF]: the entries a store held when the step began, from MD_SVB on
I_WS = 18  # ws[WF]: world scalars (the node logic only writes W_STOP on an overflow)
I_RES = 19  # scratch: rollback copy of one dispatcher row, and the pending_map undo log

# Store scalars
S_NENT = 0
S_BEGIN = 1
S_END_TERM = 2
S_COMMITTED = 3
S_CPOS = 4
S_MINPOS = 5
S_FLUSHED = 6
S_FLUSH_DUE = 7
S_CP = 8  # check_point
S_LAST_CP = 9
S_CP_DUE = 10
SF = 11

ET_TERM = 0
ET_POS = 1
ET_SIZE = 2
ET_BODY = 3
ETF = 4

# Pusher scalars
P_LQI = 0  # last_quorum_index
P_LCL = 1  # last_check_leak_ms
P_EPOCH = 2
P_NWM = 3  # rows of wmt in use
P_NPT = 4  # terms in ptm
P_NPEND = 5  # rows of pend in use
PUF = 6

# PendingAppend rows
PD_TERM = 0
PD_INDEX = 1
PD_POS = 2
PD_CREATED = 3
PD_REF = 4  # the body
PD_RPC = 5
PD_DONE = 6
PDF = 7

# Dispatcher
D_TYPE = 0
D_CI = 1  # compare_index
D_WI = 2  # write_index
D_TERM = 3
D_LEADER = 4
D_LPC = 5  # last_push_commit_ms
D_LCL = 6  # last_check_leak_ms
D_WAITING = 7
D_TI = 8  # truncate_index
D_SLEEP = 9  # sleep_until
D_SEQ = 10
D_PMN = 11  # entries in pending_map
D_PMLO = 12  # every key of pending_map lies in [D_PMLO, D_PMHI] (BIG, -1 when empty)
D_PMHI = 13
DF = 14

# EntryHandler scalars
H_LCFF = 0  # last_check_fast_forward_ms
H_NWR = 1  # entries in write_requests
H_WRLO = 2  # key range of write_requests (BIG, -1 when empty)
H_WRHI = 3
H_NQ = 4  # queue length
HF = 5

# A PushEntryRequest: the message fields m0..m11 (envelopes, outputs, PushWait rows)
RQ_LEADER = 0
RQ_TERM = 1
RQ_TYPE = 2
RQ_HAS = 3  # entry is not None
RQ_EIDX = 4
RQ_ETERM = 5
RQ_EPOS = 6
RQ_ESIZE = 7
RQ_EBODY = 8
RQ_COMMIT = 9
RQ_SEQE = 10  # seq = (epoch, count)
RQ_SEQC = 11
NMF = 12  # message fields
# a PushWait row: present flag, the request, rpc, created_ms, answered
PW_ON = 0
PW_RQ = 1  # request field j at PW_RQ + j
PW_RPC = 13
PW_CREATED = 14
PW_ANSWERED = 15
PWF = 16

# LogClient
CL_LEADER = 0
CL_NEXT = 1  # next_append_ms
CL_SEQ = 2
CL_WAITING = 3
CLF = 4

# monitor bookkeeping per server and step
MD_DIRTY = 0  # lowest index whose entry changed (added, replaced, removed) in this step; BIG: none
MD_SVB = 1  # sv holds the step's first entries from this index ..
MD_SVN = 2  # .. this many (to the old end)
MD_OBEG = 3  # begin index and end index when the step began
MD_OEND = 4
MD_BCHG = 5  # the begin index moved (LOG-1 and LOG-7 look at the whole log)
MDF = 6

# --- messages: envelope rows fl[F, EF] (id order, as network.Network.flight) ---

E_ID = 0
E_SRC = 1
E_DST = 2
E_SENT = 3
E_RPC = 4
E_REPLY = 5
E_MK = 6
E_M0 = 7  # m0..m11
EF = E_M0 + NMF
# election kinds (E.MK_*, five fields as in the election twin) and these:
MK_APPEND_REQ = 7  # AppendEntryRequest: m0 body
MK_APPEND_RESP = 8  # AppendEntryResponse: m0 code, m1 index, m2 pos, m3 term, m4 leader_id
MK_PUSH_REQ = 9  # PushEntryRequest: RQ_* fields
MK_PUSH_RESP = 10  # PushEntryResponse: m0 code, m1 term, m2 index (NONE: null), m3 begin_index, m4 end_index

# open RPCs rp[R, RF] (id order)
R_ID = 0
R_REQ = 1
R_RESP = 2
R_DEADLINE = 3
R_CK = 4  # ctx kind: E.CK_HB, E.CK_VOTE, E.CK_TRANSFER and these
R_C1 = 5
R_C2 = 6
R_C3 = 7
R_WINDOW = 8
RF = 9
CK_PUSH = 4  # ("push", type, peer, seq): c1 type, c2 peer, c3 seq
CK_APPEND = 5  # ("append", key): c1 body

# --- one transition's outputs ob[k, OF]: the election twin's 13 columns, then m5..m11 ---

O_TYPE = 0  # E.OT_SEND / E.OT_RESPOND / E.OT_OBS
O_A = 1  # Send: dst; Respond: rpc; observation: its kind
O_MK = 2
O_M0 = 3  # m0..m4 at 3..7, m5..m11 at 13..19 (`mcol`)
O_CK = 8
O_C1 = 9
O_C2 = 10
O_C3 = 11
O_M5 = 13
OF = O_M5 + NMF - 5
O_F0 = 2  # an observation's fields a.. at 2..8
# a push response's row also carries the request it answers (RPL-1/3 read it) and whether
# network.reply put it in flight
RP_SENT = O_CK
RP_TYPE = O_C1
RP_LEADER = O_M5
RP_HAS = O_M5 + 1
RP_EIDX = O_M5 + 2
RP_ETERM = O_M5 + 3
RP_EPOS = O_M5 + 4
RP_ESIZE = O_M5 + 5
RP_EBODY = O_M5 + 6
# observation kinds after the election twin's (E.OB_*)
OB_COMMIT = 21  # CommitAdvanced: old, new, term, leader, entry_term
OB_RESULT = 22  # AppendResult: code, index, term, pos, ref, rpc, future_pos
OB_CLIENT = 23  # ClientResult: key (body), server, code, index
OB_DROPPED = 24  # EntriesDropped: truncate leader (-1: none), its term (the entries: sv against the log now)


def mcol(j: int) -> int:
    """The output column of message field j."""
    return O_M0 + j if j < 5 else O_M5 + j - 5


# --- world scalars ws ---

W_NOW = 0
W_NEXT_ID = 1
W_NF = 2
W_NR = 3
W_NCUT = 4
W_CALM = 5
W_CALM_AT = 6
W_LAST_FAULT = 7
W_CRASHES = 8
W_OS_CRASHES = 9
W_DISK_LOSSES = 10
W_LOST = 11  # History.lost_writes, bit mask of nodes
W_STEPS = 12
W_STOP = 13
W_FRESH = 14  # World.fresh, bit mask
W_NLOG = 15
W_FAULT0 = 16  # fault counts (common.FAULT_NAMES), 9 of them
W_APPENDS = 25  # LogGhost.appends
W_FIRST_ACK = 26  # LogGhost.first_ack_after_calm_ms
W_MAXTERM = 27  # largest term in elected / regressed (-1: none)
W_NCOMMITTED = 28  # indexes in LogGhost.committed (and their order in gco)
W_NCONFLICT = 29  # indexes in LogGhost.conflicts (order in gxo)
W_NACKED = 30  # indexes in LogGhost.acked (order in gao)
W_NCOUNTED = 31  # indexes in LogGhost.counted (order in gko)
W_NOSLOST = 32  # rows of LogGhost.os_lost
W_GVER = 33  # bumped when what an expected cause reads changes (caches LOG-1 / LOG-5 causes)
W_MAXIDX = 34  # the largest index any index-keyed table used (reset clears up to it)
W_TOPTERM = 35  # the largest term any term-keyed table used
# 36..47: free
W_SEQ = 48  # Terms.seq: votes, leaderships, lost term files and drops noted so far
W_NDROPS = 49  # rows of LogGhost.drops (gdr)
W_NDPAY = 50  # rows of the drops' entries (gdp)
W_NTHIN = 51  # indexes in LogGhost.thin (order in gtho)
W_NVOTES = 52  # rows of Terms.votes (gvo), in history order
W_NLED = 53  # rows of Terms.led (gled)
W_NTL = 54  # rows of Terms.term_lost (gtl)
W_AGREED = 55  # LogGhost.agreed
W_AGREED_SINCE = 56
W_SETTLED = 57  # settled_leader: server index (-1: None) ..
W_SETTLED_T = 58  # .. and its term
W_PAUSE = 59  # 1: the kernel returned mid-history for expected causes the caller computes (rq)
W_RPL = 60  # this step's RPL findings, bits 1 << RPL_* (dledger_log_replies)
W_LP_FAULTS = 61  # leader_partition faults (the profile's own kind)
W_EVENTS0 = 64  # event counts by kind, 64 + EV_* (up to 79)
WF = 80

# the protocol's own fault kind (world.LeaderPartition), after the election twin's K_* and EV_*
K_LP = 9  # its weight: pw[K_LP]
EV_LP = 12  # a: the leader

STOP_STEPS = 0
STOP_UNTIL = 1
STOP_IDLE = 2
OVERFLOW_FLIGHT = -1
OVERFLOW_RPCS = -2
OVERFLOW_TERMS = -3
OVERFLOW_OUTS = -4
OVERFLOW_EVENTS = -5
OVERFLOW_LOG = -6
OVERFLOW_ENTRIES = -7
OVERFLOW_MARKS = -8
OVERFLOW_PENDING = -9
OVERFLOW_QUEUE = -10
OVERFLOW_SETS = -11
OVERFLOW_OSLOST = -12  # drops (rows or their entries), votes, leaderships or lost term files (ghost)
DIVERGED = -20  # a state the twin assumes never happens did (say what in docs); the reference decides
OVERFLOW_NAMES = {OVERFLOW_FLIGHT: "messages in flight", OVERFLOW_RPCS: "open RPCs",
                  OVERFLOW_TERMS: "terms (ghost tables)", OVERFLOW_OUTS: "outputs of one transition",
                  OVERFLOW_EVENTS: "enabled events", OVERFLOW_LOG: "event log",
                  OVERFLOW_ENTRIES: "entries (log indexes)", OVERFLOW_MARKS: "water-mark terms",
                  OVERFLOW_PENDING: "pending appends", OVERFLOW_QUEUE: "entry handler queue",
                  OVERFLOW_SETS: "entries acknowledged or conflicting at one index",
                  OVERFLOW_OSLOST: "ghost history (drops, votes, leaderships, lost term files)",
                  DIVERGED: "a non-prefix truncation (log positions out of order)"}

# --- properties (vi rows), in the catalogue order of spec/dledger_log.py ---

P_LOG1 = 0
P_LOG2 = 1
P_LOG3 = 2
P_LOG4 = 3
P_LOG5 = 4
P_LOG6 = 5
P_LOG7 = 6
P_LOGL = 7
P_LOG8 = 8
P_RPL1 = 9
P_RPL2 = 10
P_RPL3 = 11
P_LIVE1 = 12
P_LIVE2 = 13
P_LIVE3 = 14
NPROP = 15
PROPERTY_IDS = ("LOG-1", "LOG-2", "LOG-3", "LOG-4", "LOG-5", "LOG-6", "LOG-7", "LOG-L", "LOG-8", "RPL-1", "RPL-2",
                "RPL-3", "LIVE-1", "LIVE-2", "LIVE-3")
V_STEP = 0  # -1: none recorded
V_T = 1
V_CK = 2  # the cause (CA_*; 0: unexpected) and its arguments
V_CA = 3
V_CB = 4
V_CM1 = 5
V_CM2 = 6
VF = 7

# A recorded violation's cause: CA_NONE (unexpected) or CA_KNOWN, whose text the caller
# computed with spec/dledger_log.py's own functions on the world of that step (rq below).
CA_NONE = 0
CA_KNOWN = 1

# Requests for expected causes rq[NPROP, RQF]: the kernel pauses after a step that left one,
# and histories.fast.dledger_log_causes answers it (V_CK of the property's vi row).
RQ_ON = 0
RQ_A = 1  # LOG-2 / LOG-6: the new leader; LOG-3 / LOG-4: the node
RQ_B = 2  # LOG-2 / LOG-6: its term; LOG-4: the new commit index
RQ_C = 3  # LOG-4: the old commit index
RQF = 4
# what a cached state-property cause was computed on (lcache): the evidence version, LOG-1's term


# =====================================================================================
# the state table: every array of the world as one int64 array of (address, shape)
# =====================================================================================

# A kernel function that took the arrays themselves (a tuple of twenty) spent most of the
# kernel's time passing them: Numba flattens each array into about ten machine words per
# call. The kernel gets one int64 array instead, T[4 * k .. 4 * k + 3] = (address of
# array k, its shape), and a function builds the views it reads (`view1/2/3`: a few
# instructions, no reference counting: the arrays belong to the Python caller, which
# holds them for the whole call, as for `common.borrow`).

T_GHOST = 20  # ghost arrays (dledger_log_monitor.G_*) follow the node arrays in the table
T_ENTRIES = T_GHOST + 25
TABLE_SIZE = 4 * T_ENTRIES


def table_of(arrays) -> np.ndarray:
    """The state table of `arrays` (C-contiguous int64 arrays, the caller keeps them alive)."""
    t = np.zeros(TABLE_SIZE, np.int64)
    for k, a in enumerate(arrays):
        assert a.dtype == np.int64 and a.flags.c_contiguous and a.ndim <= 3
        t[4 * k] = a.ctypes.data
        t[4 * k + 1:4 * k + 1 + a.ndim] = a.shape
    return t


def _viewer(ndim):
    arrty = types.Array(types.int64, ndim, 'C')

    @intrinsic
    def view(typingctx, table, k):
        if not isinstance(table, types.Array) or not isinstance(k, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            tab = context.make_array(sig.args[0])(context, builder, value=args[0])
            kk = context.cast(builder, args[1], sig.args[1], types.intp)
            base = builder.mul(kk, context.get_constant(types.intp, 4))

            def load(off):
                idx = builder.add(base, context.get_constant(types.intp, off))
                return builder.load(builder.gep(tab.data, [idx]))

            out = context.make_array(arrty)(context, builder)
            dims = [load(1 + d) for d in range(ndim)]
            itemsize = context.get_constant(types.intp, 8)
            strides = []
            acc = itemsize
            for d in reversed(dims):
                strides.insert(0, acc)
                acc = builder.mul(acc, d)
            data = builder.inttoptr(load(0), out.data.type)
            populate_array(out, data=data, shape=cgutils.pack_array(builder, dims),
                           strides=cgutils.pack_array(builder, strides), itemsize=itemsize, meminfo=None)
            return out._getvalue()

        return arrty(table, k), codegen

    return view


view1 = _viewer(1)
view2 = _viewer(2)
view3 = _viewer(3)


def _accessor(view, k):
    @njit(cache=True, inline='always')
    def get(S):
        return view(S, k)
    return get


nd_ = _accessor(view2, I_ND)
live_ = _accessor(view2, I_LIVE)
wmk_ = _accessor(view2, I_WMK)
sto_ = _accessor(view2, I_STO)
ent_ = _accessor(view3, I_ENT)
pu_ = _accessor(view2, I_PU)
wmt_ = _accessor(view3, I_WMT)
ptm_ = _accessor(view2, I_PTM)
pend_ = _accessor(view3, I_PEND)
dp_ = _accessor(view3, I_DP)
pm_ = _accessor(view3, I_PM)
eh_ = _accessor(view2, I_EH)
wr_ = _accessor(view3, I_WR)
hq_ = _accessor(view3, I_HQ)
lseq_ = _accessor(view3, I_LSEQ)
cl_ = _accessor(view2, I_CL)
md_ = _accessor(view2, I_MD)
sv_ = _accessor(view3, I_SV)
ws_ = _accessor(view1, I_WS)
res_ = _accessor(view1, I_RES)
g_elected = _accessor(view1, T_GHOST + 0)
g_regressed = _accessor(view1, T_GHOST + 1)
g_gc = _accessor(view2, T_GHOST + 2)
g_gco = _accessor(view1, T_GHOST + 3)
g_gx = _accessor(view3, T_GHOST + 4)
g_gxn = _accessor(view1, T_GHOST + 5)
g_gxo = _accessor(view1, T_GHOST + 6)
g_ga = _accessor(view3, T_GHOST + 7)
g_gan = _accessor(view1, T_GHOST + 8)
g_gao = _accessor(view1, T_GHOST + 9)
g_gcnt = _accessor(view1, T_GHOST + 10)
g_gdr = _accessor(view2, T_GHOST + 11)
g_gres = _accessor(view1, T_GHOST + 12)
g_gdp = _accessor(view2, T_GHOST + 13)
g_gth = _accessor(view2, T_GHOST + 14)
g_gtho = _accessor(view1, T_GHOST + 15)
g_gvo = _accessor(view2, T_GHOST + 16)
g_gled = _accessor(view2, T_GHOST + 17)
g_gtl = _accessor(view2, T_GHOST + 18)
g_glv = _accessor(view2, T_GHOST + 19)
rq_ = _accessor(view2, T_GHOST + 20)
mb_ = _accessor(view1, T_GHOST + 21)  # scratch: a server's election row before the step (RPL-*)
g_gk = _accessor(view3, T_GHOST + 22)
g_gko = _accessor(view1, T_GHOST + 23)
g_gxt = _accessor(view1, T_GHOST + 24)  # LogGhost.conflict_terms per index

# LogGhost.drops rows gdr[k, DRF]
DR_SERVER = 0
DR_AT = 1
DR_SEQ = 2
DR_HOW = 3  # HOW_*
DR_LO = 4  # the entries: indexes lo..hi, at gdp rows DR_PAY..
DR_HI = 5
DR_FLUSHED = 6
DR_LEADER = 7  # -1: None
DR_TERM = 8
DR_STALE = 9
DR_PAY = 10
DRF = 11
HOW_OS = 0
HOW_DISK = 1
HOW_TRUNCATE = 2
HOW_PROCESS = 3
HOW_NAMES = ("os-crash", "disk-loss", "truncate", "process-crash")
# LogGhost.thin per index gth[index, THF]
TH_ON = 0
TH_LEADER = 1
TH_TERM = 2
TH_ETERM = 3
TH_HOLDERS = 4  # bit mask of servers
TH_AT = 5
TH_WHAT = 6  # 0 committed, 1 acknowledged
THF = 7
# liveness per node glv[node, 2]: since when a straggler (-1: not one), since when transferring (-1: not)
LV_STRAG = 0
LV_TRANSFER = 1
