"""What the dledger_log twin covers and observes, as the reference's fuzz probe sees it:
world.observe (reference_impl/dledger_log/world.py) of each server and client as a digest
(histories.fast.core.sketch), the distinct observable states of a history, and the coverage
labels (spark_harness.coverage: a live server's role is its record's class, DLedgerNode, a
client's LogClient; message and observation kinds; the protocol's branches `world.BRANCHES`).

A server's `log_terms` is hashed as a sum over its entries (core.sketch.list_item), kept as
running sums per log (LOG_SUMS): a step adds the entries it appended and recomputes from
the lowest index it changed (the store's change marks), never the whole log again.
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import coverage, sketch, table
from histories.fast.core.layout import (
    C_NODES,
    C_SEE_STATES,
    CV_CUT_CHANGED,
    CV_NODE_DIGESTS,
    CV_TOUCHED,
    LB_KEYS,
    LB_PARSE_RESULTS,
    LB_PUSH_TYPES,
    LB_ROLE_NAMES,
    LB_ROLES,
    LB_VOTE_RESULTS,
    ROLE_DOWN,
    W_STOP,
)
from histories.fast.dledger_log import layout
from histories.fast.dledger_log import store as log_store
from histories.fast.dledger_log.layout import (
    APPEND_ENTRY_REQUEST,
    APPEND_ENTRY_RESPONSE,
    BIG,
    CL_LEADER_ID,
    CL_SEQ,
    ET_TERM,
    OBS_APPEND_RESULT,
    OBS_CLIENT_RESULT,
    OBS_COMMIT_ADVANCED,
    OBS_ENTRIES_DROPPED,
    PUSH_ENTRY_REQUEST,
    PUSH_ENTRY_RESPONSE,
    PUSH_TYPES,
    S_BEGIN_INDEX,
    S_COMMITTED_INDEX,
    S_COMMITTED_POS,
    S_END_TERM,
    S_ENTRIES,
    S_MIN_POS,
    SC_BEGIN_MOVED,
    SC_DIRTY,
)
from histories.fast.election import layout as member
from histories.fast.election import world_observe as election_observe
from histories.fast.election.layout import (
    C_PEERS,
    CURR_TERM,
    CURR_VOTE_FOR,
    LEADER_ID,
    PARSE_RESULTS,
    ROLE,
    ROLES,
    VOTE_RESULTS,
)

SERVER = ROLE_DOWN + 1  # coverage roles: a live server (DLedgerNode), a live client (LogClient)
CLIENT = ROLE_DOWN + 2
MESSAGES = election_observe.MESSAGES | {APPEND_ENTRY_REQUEST: "AppendEntryRequest",
                                        APPEND_ENTRY_RESPONSE: "AppendEntryResponse",
                                        PUSH_ENTRY_REQUEST: "PushEntryRequest",
                                        PUSH_ENTRY_RESPONSE: "PushEntryResponse"}
OBSERVATIONS = election_observe.OBSERVATIONS | {OBS_COMMIT_ADVANCED: "CommitAdvanced",
                                                OBS_APPEND_RESULT: "AppendResult",
                                                OBS_CLIENT_RESULT: "ClientResult",
                                                OBS_ENTRIES_DROPPED: "EntriesDropped"}
# world.observe's keys, in its order: a server's, then a client's
SERVER_KEYS = ("alive", "role", "term", "voted_for", "leader", "ledger_begin_index", "ledger_end_index",
               "ledger_end_term", "committed_index", "committed_pos", "max_wrote_pos", "log_terms")
CLIENT_KEYS = ("alive", "role", "leader", "appended")
CLIENT_ROLE_NAME = len(ROLES)  # "CLIENT", after the member's role names

_SPECS: dict = {}


def spec(cfg) -> coverage.Spec:
    """The dledger_log twin's coverage spec for `cfg` (its node ids)."""
    ids = tuple(cfg.ids)
    hit = _SPECS.get(ids)
    if hit is None:
        branches, labels = coverage.labels(
            "dledger_log", ids, {LB_VOTE_RESULTS: VOTE_RESULTS, LB_PARSE_RESULTS: PARSE_RESULTS, LB_ROLES: ROLES,
                                 LB_PUSH_TYPES: PUSH_TYPES},
            tuple(r.value for r in ROLES) + ("CLIENT",), SERVER_KEYS + CLIENT_KEYS)
        hit = _SPECS[ids] = coverage.Spec(roles=("DLedgerNode", "LogClient"), actions=("ext:LeaderPartition",),
                                          messages=MESSAGES, observations=OBSERVATIONS, twin_event="LeaderPartition",
                                          branches=branches, labels=labels)
    return hit


# --- the kernel's side ---


@njit(cache=True, inline='always')
def role(S, node):
    """spark_harness.coverage.role_of: a live server or client by its record's class, or down."""
    if table.alive(S)[node] == 0:
        return ROLE_DOWN
    return SERVER if node < table.config(S)[C_PEERS] else CLIENT


@njit(cache=True)
def log_sum(S, i):
    """The sum over server i's entries of their terms' digests, each with its position
    (core.sketch.list_item): the running sums are brought up to the log's end from the lowest
    position this step changed."""
    store = layout.store(S)
    entries = layout.entries(S)
    changes = layout.store_changes(S)
    sums = layout.log_sums(S)
    count = store[i, S_ENTRIES]
    valid = sums[i, 0]  # column 0: how many positions the running sums are good for
    if changes[i, SC_BEGIN_MOVED] == 1:
        valid = 0
    elif changes[i, SC_DIRTY] != BIG:
        valid = min(valid, max(0, changes[i, SC_DIRTY] - store[i, S_BEGIN_INDEX]))
    valid = min(valid, count)
    for k in range(valid, count):
        sums[i, k + 2] = sums[i, k + 1] + sketch.list_item(k, sketch.of_int(entries[i, k, ET_TERM]))
    sums[i, 0] = count
    return sums[i, count + 1]


@njit(cache=True, inline='always')
def keyed(h, keys, k, value):
    return sketch.fold(sketch.fold(h, keys[LB_KEYS + k]), value)


@njit(cache=True)
def server_digest(S, i):
    """core.sketch.digest of world.observe(server i)."""
    members = member.members(S)
    store = layout.store(S)
    keys = table.labels(S)
    alive = table.alive(S)[i] == 1
    h = keyed(sketch.DICT, keys, 0, sketch.of_bool(alive))
    h = keyed(h, keys, 1, keys[LB_ROLE_NAMES + members[i, ROLE]] if alive else sketch.NONE)
    h = keyed(h, keys, 2, sketch.of_int(members[i, CURR_TERM]))
    h = keyed(h, keys, 3, election_observe.node_or_none(S, members[i, CURR_VOTE_FOR]))
    h = keyed(h, keys, 4, election_observe.node_or_none(S, members[i, LEADER_ID]) if alive else sketch.NONE)
    h = keyed(h, keys, 5, sketch.of_int(store[i, S_BEGIN_INDEX]))
    h = keyed(h, keys, 6, sketch.of_int(log_store.end_index(store, i)))
    h = keyed(h, keys, 7, sketch.of_int(store[i, S_END_TERM]))
    h = keyed(h, keys, 8, sketch.of_int(store[i, S_COMMITTED_INDEX]))
    h = keyed(h, keys, 9, sketch.of_int(store[i, S_COMMITTED_POS]))
    h = keyed(h, keys, 10, sketch.of_int(log_store.max_wrote_pos(store, layout.entries(S), i)))
    return keyed(h, keys, 11, sketch.of_list(store[i, S_ENTRIES], log_sum(S, i)))


@njit(cache=True)
def client_digest(S, c, node):
    """core.sketch.digest of world.observe(client c, node `node`)."""
    clients = layout.clients(S)
    keys = table.labels(S)
    base = len(SERVER_KEYS)
    h = keyed(sketch.DICT, keys, base, sketch.of_bool(table.alive(S)[node] == 1))
    h = keyed(h, keys, base + 1, keys[LB_ROLE_NAMES + CLIENT_ROLE_NAME])
    h = keyed(h, keys, base + 2, election_observe.node_or_none(S, clients[c, CL_LEADER_ID]))
    return keyed(h, keys, base + 3, sketch.of_int(clients[c, CL_SEQ]))


@njit(cache=True)
def server_unchanged(S, i):
    """Whether server i's observed fields are what they were at its last digest (and note them);
    a log that changed in this step is never unchanged (its terms are summed again)."""
    members = member.members(S)
    store = layout.store(S)
    changes = layout.store_changes(S)
    alive = coverage.same(S, i, 0, table.alive(S)[i])
    role = coverage.same(S, i, 1, members[i, ROLE])
    term = coverage.same(S, i, 2, members[i, CURR_TERM])
    vote = coverage.same(S, i, 3, members[i, CURR_VOTE_FOR])
    leader = coverage.same(S, i, 4, members[i, LEADER_ID])
    begin = coverage.same(S, i, 5, store[i, S_BEGIN_INDEX])
    count = coverage.same(S, i, 6, store[i, S_ENTRIES])
    end_term = coverage.same(S, i, 7, store[i, S_END_TERM])
    committed = coverage.same(S, i, 8, store[i, S_COMMITTED_INDEX])
    committed_pos = coverage.same(S, i, 9, store[i, S_COMMITTED_POS])
    min_pos = coverage.same(S, i, 10, store[i, S_MIN_POS])  # max_wrote_pos of an empty log
    log = changes[i, SC_DIRTY] == BIG and changes[i, SC_BEGIN_MOVED] == 0
    return alive and role and term and vote and leader and begin and count and end_term and committed \
        and committed_pos and min_pos and log


@njit(cache=True, inline='always')
def client_unchanged(S, c, node):
    clients = layout.clients(S)
    alive = coverage.same(S, node, 0, table.alive(S)[node])
    leader = coverage.same(S, node, 1, clients[c, CL_LEADER_ID])
    seq = coverage.same(S, node, 2, clients[c, CL_SEQ])
    return alive and leader and seq


@njit(cache=True)
def see_state(S, every_node):
    """After a step (or at the start, `every_node`): the nodes it touched are observed again; if
    one's digest or the cut changed, the world's fingerprint joins the distinct states."""
    cover = table.coverage(S)
    config = table.config(S)
    if config[C_SEE_STATES] == 0:
        return True
    n = config[C_PEERS]
    nodes = config[C_NODES]
    moved = cover[CV_CUT_CHANGED] == 1 or every_node
    touched = cover[CV_TOUCHED]
    for i in range(nodes):
        if every_node or (touched >> i) & 1:
            if (server_unchanged(S, i) if i < n else client_unchanged(S, i - n, i)) and not every_node:
                continue
            d = server_digest(S, i) if i < n else client_digest(S, i - n, i)
            if d != cover[CV_NODE_DIGESTS + i]:
                cover[CV_NODE_DIGESTS + i] = d
                moved = True
    cover[CV_TOUCHED] = 0
    cover[CV_CUT_CHANGED] = 0
    if moved:
        coverage.add_state(S, coverage.world_fingerprint(S, nodes))
    return table.world(S)[W_STOP] >= 0
