"""What every twin's arrays share: the state table's first slots, the core config columns,
the network's envelope and RPC columns, a transition's output rows, the world scalars the
generic world keeps, events, fault kinds, the event log and the stop codes.

A twin adds its own after each block (`CORE_SLOTS`, `CORE_CONFIG`, `CORE_WORLD`): the
election twin its members, ghost and properties; the dledger_log twin the member (the
election twin's slots, at their places), the log, the threads, the clients and its ghost.
All int64; node ids are indices, `None` is -1, node sets are bit masks.
"""

from __future__ import annotations

from reference_impl.core.chooser import MAX_FAULT_SHARE  # noqa: F401 - the chooser's, folded by Numba
from reference_impl.core.network import SCAN_GRACE_MS, SCAN_PERIOD_MS  # noqa: F401
from reference_impl.core.schedule import CALM_DELAY_MS

CALM_DELAY_MIN_MS, CALM_DELAY_MAX_MS = CALM_DELAY_MS  # message delays once the quiet tail has begun

# --- the state table's slots every twin has (histories.fast.core.table) ---

CONFIG = 0  # int64[config columns]: the world's config (below, then the twin's)
WEIGHTS = 1  # float64[fault kinds]: FaultProfile weights in FAULT_KINDS order (the twin's own kinds after)
ALIVE = 2  # [nodes] 1 up, 0 down
SINCE = 3  # [nodes] World.since: when each node's wake_at last changed, or it restarted
WAKE_TIMES = 4  # [nodes] each node's wake_at (-1: down, or nothing to do)
SLACK = 5  # [nodes] how much later than max(wake_at, since) the node's tick may fire
FLIGHT = 6  # [flight capacity, envelope columns] envelopes in flight, in id order
RPCS = 7  # [rpc capacity, RPC_COLUMNS] open RPCs, in id order
CUT = 8  # [nodes, nodes] 1: the link src -> dst is cut
WORLD = 9  # [world scalars] W_* below, then the twin's
MT = 10  # [625] the seeded chooser's MT19937 (histories.fast.core.mt)
EVENT_LOG = 11  # [events, LOG_COLUMNS] the events, when the config asks for a log
EVENT_KINDS = 12  # scratch: the enabled protocol events' kinds (EV_*) ..
EVENT_ARGS = 13  # .. and what each is about: a node, a flight row or an RPC row
FAULT_TARGETS = 14  # scratch: the fault events of the chosen kind: a flight row, a node, an isolation ..
FAULT_PEERS = 15  # .. and a one-way cut's destination
KINDS = 16  # scratch: the fault kinds enabled now (K_*)
LINKS = 17  # scratch: per source node, the destinations a FIFO message was seen to this pass
OUTPUTS = 18  # scratch: one transition's outputs, in the reference's order (O_* columns)
OUTPUT_COUNT = 19  # [2] outputs in use, and 1 when they overflowed
ISOLATIONS = 20  # [partitions] each of core.isolations(nodes) as the mask of its minority
VERDICTS = 21  # [properties, the twin's columns] the first violation of each property
FORCE = 22  # [3] the explorer's choice (core.chooser): SEEDED, or (fault kind or -1, index, draw)
COVERAGE = 23  # [COVERAGE_WORDS] what the history covered (histories.fast.core.coverage)
STATES = 24  # [state-set capacity] the distinct observable states' fingerprints, an open-addressing set
STATE_LIST = 25  # [state-set capacity] the same fingerprints in the order they were first seen
LABELS = 26  # [LABEL_WORDS] what coverage and the sketch name: labels of codes, digests of names
EVENT = 27  # [LOG_COLUMNS] this step's event as its log row (L_* columns)
OBSERVED = 28  # [nodes, OBSERVED_COLUMNS] what each node's observable state was when its digest was taken
OBSERVED_COLUMNS = 16
CORE_SLOTS = 32  # a twin's own slots start here

# --- the config's first columns (CONFIG) ---

C_NODES = 0  # nodes a fault may hit (the election's peers; dledger_log's servers and clients)
C_DELAY_MIN_MS = 1  # FaultProfile.delay_ms
C_DELAY_MAX_MS = 2
C_CALM_AT_MS = 3  # -1: no quiet tail
C_JAVA_TIMING = 4  # 1: FaultProfile.timing "java" (ticks and scanned RPC failures fire within windows)
C_STAGGER_MS = 5  # FaultProfile.stagger_ms: the first tick of a node after it (re)starts
C_CRASHABLE = 6  # bit mask of the nodes random crashes may pick
C_WRITE_LOG = 7  # 1: write the event log
C_SEE_STATES = 8  # 1: count the distinct observable states (core.coverage; the explorer counts its own)
CORE_CONFIG = 9

# --- fault kinds, in core.FAULT_KINDS order (WEIGHTS); a twin's own kinds come after ---

K_LOSS = 0
K_DUPLICATE = 1
K_CRASH = 2
K_OS_CRASH = 3
K_DISK_LOSS = 4
K_RESTART = 5
K_PARTITION = 6
K_ONE_WAY = 7
K_HEAL = 8
CORE_FAULT_KINDS = 9
# fault counts as spark_harness.history's Probe counts them (W_FAULT_COUNTS + k), and the
# FaultProfile weight of each kind (WEIGHTS[k])
FAULT_NAMES = ("drop", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "cut", "heal")
PROFILE_KINDS = ("loss", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "one_way", "heal")

# --- events (the log, and the chooser's lists); a twin's own events come after ---

EV_TICK = 1
EV_DELIVER = 2
EV_DROP = 3
EV_DUPLICATE = 4
EV_RPC_FAIL = 5
EV_CRASH = 6  # L_ARG2: 0 process, 1 os, 2 disk
EV_RESTART = 7
EV_PARTITION = 8  # L_ARG: the index into core.isolations(n)
EV_CUT = 9  # L_ARG the source, L_ARG2 the destination
EV_HEAL = 10
EV_CALM = 11
EVENT_NAMES = {EV_TICK: "Tick", EV_DELIVER: "Deliver", EV_DROP: "Drop", EV_DUPLICATE: "Duplicate",
               EV_RPC_FAIL: "RpcFail", EV_CRASH: "Crash", EV_RESTART: "Restart", EV_PARTITION: "Partition",
               EV_CUT: "CutLink", EV_HEAL: "Heal", EV_CALM: "Calm"}
EVENT_KIND_SLOTS = 16  # W_EVENT_COUNTS holds this many kinds

# the event log's columns (EVENT_LOG)
L_KIND = 0
L_ARG = 1  # a node, an envelope or RPC id, an isolation's index
L_ARG2 = 2  # a crash's kind, a cut's destination
L_TIME = 3
L_DRAW = 4  # a tick's draw
L_LATE = 5  # a tick's or an RPC failure's lateness
L_OBSERVATIONS = 6  # how many observations the step made
LOG_COLUMNS = 7

# the explorer's forced choice (FORCE[0]); the seeded chooser picks otherwise
SEEDED = -2
PROTOCOL_EVENT = -1

# --- envelopes (network.Envelope): rows of FLIGHT, in id order as the reference's tuple ---

E_ID = 0
E_SRC = 1
E_DST = 2
E_SENT = 3
E_RPC = 4
E_REPLY = 5
E_KIND = 6  # the message's kind (a twin's *_REQUEST / *_RESPONSE)
E_FIELDS = 7  # the message's fields, by kind (the twin's layout)

# --- open RPCs (network.Rpc): rows of RPCS, in id order ---

R_ID = 0
R_REQUESTER = 1
R_RESPONDER = 2
R_DEADLINE = 3
R_CONTEXT = 4  # what the requester waits for (the twin's CTX_*), and up to three values of it
R_CONTEXT_1 = 5
R_CONTEXT_2 = 6
R_CONTEXT_3 = 7
R_WINDOW = 8  # network.Rpc.window: how much later than its deadline its failure may fire
RPC_COLUMNS = 9

# --- a transition's outputs, in order (OUTPUTS): Send / Respond / observations ---

O_TYPE = 0  # OUT_*
O_TARGET = 1  # Send: the destination; Respond: the RPC; an observation: its kind (the twin's OBS_*)
O_KIND = 2  # a message's kind
O_FIELDS = 3  # its first five fields (3..7)
O_OBSERVED = 2  # an observation's values (2..)
O_CONTEXT = 8  # a Send's RPC context (R_CONTEXT ..), and its three values
O_CONTEXT_1 = 9
O_CONTEXT_2 = 10
O_CONTEXT_3 = 11
O_MORE_FIELDS = 13  # message fields from the sixth on (a twin whose messages have more)
OUT_SEND = 1
OUT_RESPOND = 2
OUT_OBSERVATION = 3

# --- world scalars (WORLD); a twin's own come after CORE_WORLD ---

W_NOW = 0
W_NEXT_ID = 1  # the network's next envelope / RPC id
W_FLIGHT = 2  # envelopes in flight
W_RPCS = 3  # open RPCs
W_CUT_LINKS = 4  # links cut
W_CALM = 5  # 1 once the quiet tail began
W_CALM_AT = 6
W_LAST_FAULT = 7  # History.last_fault_ms
W_CRASHES = 8
W_OS_CRASHES = 9
W_DISK_LOSSES = 10
W_LOST_WRITES = 11  # History.lost_writes, bit mask of nodes
W_STEPS = 12
W_STOP = 13  # why the kernel stopped: STOP_*, or an overflow (negative)
W_FRESH = 14  # World.fresh as a bit mask: nodes that have not ticked since they (re)started
W_LOGGED = 15  # rows of EVENT_LOG in use
W_FAULT_COUNTS = 16  # fault counts (FAULT_NAMES order): 16 .. 24
W_EVENT_COUNTS = 25  # event counts by kind, W_EVENT_COUNTS + EV_* (diagnostics): 25 .. 40
W_PAUSE = 41  # 1: the kernel returned mid-history for work its Python side does (dledger_log's causes)
CORE_WORLD = 48

# --- why a kernel stopped (W_STOP) ---

STOP_STEPS = 0
STOP_UNTIL = 1
STOP_IDLE = 2
STOP_NAMES = {STOP_STEPS: "steps", STOP_UNTIL: "until", STOP_IDLE: "idle"}
OVERFLOW_FLIGHT = -1
OVERFLOW_RPCS = -2
OVERFLOW_TERMS = -3
OVERFLOW_OUTPUTS = -4
OVERFLOW_EVENTS = -5
OVERFLOW_LOG = -6
OVERFLOW_STATES = -19  # the distinct observable states of one history (STATES)
OVERFLOW_NAMES = {OVERFLOW_FLIGHT: "messages in flight", OVERFLOW_RPCS: "open RPCs",
                  OVERFLOW_TERMS: "terms (ghost tables)", OVERFLOW_OUTPUTS: "outputs of one transition",
                  OVERFLOW_EVENTS: "enabled events", OVERFLOW_LOG: "event log",
                  OVERFLOW_STATES: "distinct observable states"}

# --- coverage (COVERAGE): flags of what a history did, as spark_harness.coverage names it ---

CV_ACTIONS = 0  # [ACTION_KINDS x ACTION_ROLES]: kind@role, the event and its node's role before it
ACTION_ROLES = 8
CV_MESSAGES = 256  # [32]: the kinds of the messages delivered (msg:<Type>), by the twin's message kind
CV_OBSERVATIONS = 288  # [64]: the kinds of the step's observations (obs:<Type>), by OBS_* (world ones below)
CV_BRANCHES = 352  # [256]: the result codes seen (the protocol's branches), by LABELS' label index
CV_STATES = 608  # the distinct observable states so far
CV_NODE_DIGESTS = 609  # [64]: each node's observed-state digest (the last computed)
CV_TOUCHED = 673  # the nodes whose observable state may have changed in this step (a mask)
CV_CUT_CHANGED = 674  # 1: the cut links changed in this step
COVERAGE_WORDS = 680
# action kinds (spark_harness.coverage.classify), a twin's own after ACTION_TWIN
AK_TICK, AK_DELIVER_REQUEST, AK_DELIVER_REPLY, AK_DELIVER_MESSAGE, AK_RPC_FAIL, AK_DROP, AK_DUPLICATE = range(7)
AK_CRASH, AK_OS_CRASH, AK_DISK_LOSS, AK_RESTART, AK_PARTITION, AK_CUT, AK_HEAL, AK_CALM = range(7, 15)
ACTION_TWIN = 15
ACTION_KIND_NAMES = ("tick", "deliver_request", "deliver_reply", "deliver_message", "rpc_fail", "drop", "duplicate",
                     "crash", "os_crash", "disk_loss", "restart", "partition", "cut", "heal", "calm")
ROLE_WORLD = 0  # "-": a world event
ROLE_DOWN = 1  # a node that is not running; a twin's roles after
# the world's own observations (the event itself), in CV_OBSERVATIONS after the twins' OBS_*
WORLD_OBSERVATION = 48
OB_CRASH, OB_RESTART, OB_PARTITION, OB_CUT_LINK, OB_HEAL, OB_CALM = range(48, 54)
OB_TWIN_EVENT = 54  # a twin's own fault event (dledger_log: LeaderPartition)
WORLD_OBSERVATION_NAMES = ("Crash", "Restart", "Partition", "CutLink", "Heal", "Calm")

# --- what coverage and the sketch read by number (LABELS) ---

LB_CODES = 0  # [1024] a result code + 1 -> its label's index in the branches (-1: not one)
LB_VOTE_RESULTS = 1024  # [16] VoteResult's index -> label index
LB_PARSE_RESULTS = 1040  # [8] ParseResult's
LB_ROLES = 1048  # [8] the twin's role numbers (Role) -> label index
LB_PUSH_TYPES = 1056  # [8] PushType's
LB_NODE_IDS = 1064  # [64] each node id's digest (core.sketch.text)
LB_ROLE_NAMES = 1128  # [8] each role's name's digest (a member's role value, a client's "CLIENT")
LB_KEYS = 1136  # [32] the observed keys' digests, in the protocol's observe order
LABEL_WORDS = 1168
