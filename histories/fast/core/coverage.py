"""Coverage and distinct observable states, computed by a twin over every history: what
spark_harness.history's Probe records on the reference (spark_harness.coverage: actions
`kind@role`, the result codes among delivered messages and observations, the kinds of
messages and observations; spark_harness.sketch: the distinct observable states), so the
reference need not run a history to cover it.

The kernel side records flags in COVERAGE as a step happens (`action`, `message_kind`,
`observation_kind`, `branch`, and `touch` for a node whose observable state may have
changed); at the end of a step `see_state` adds the world's fingerprint (histories.fast.core
.sketch, the same number the reference computes) to the history's set of distinct states
when a touched node's digest or the cut changed. The twin gives each node's digest
(`node_digests`: it knows the layout) and the labels (LABELS: which code is which branch,
the digests of node ids, roles and observed keys), from its `Spec` below.

The Python side turns the flags back into the reference's words (`of`): a twin's `Spec`
names its roles, message kinds, observation kinds and the labels.
"""

from __future__ import annotations

import attrs
import numpy as np
from numba import njit

from histories.fast.core import layout, sketch, table
from histories.fast.core.layout import (
    ACTION_KIND_NAMES,
    ACTION_ROLES,
    COVERAGE_WORDS,
    CV_ACTIONS,
    CV_BRANCHES,
    CV_CUT_CHANGED,
    CV_MESSAGES,
    CV_NODE_DIGESTS,
    CV_OBSERVATIONS,
    CV_STATES,
    CV_TOUCHED,
    LABEL_WORDS,
    LB_CODES,
    LB_KEYS,
    LB_NODE_IDS,
    LB_ROLE_NAMES,
    OVERFLOW_STATES,
    W_STOP,
    WORLD_OBSERVATION,
    WORLD_OBSERVATION_NAMES,
)
from reference_impl.core.plugin import protocol

STATE_CAPACITY = 1 << 17  # distinct observable states of one history (more overflow loudly: the reference runs it)

# --- the kernel's side ---


@njit(cache=True, inline='always')
def action(S, kind, role):
    """kind@role happened (the role of the event's node before the event)."""
    table.coverage(S)[CV_ACTIONS + kind * ACTION_ROLES + role] = 1


@njit(cache=True, inline='always')
def message_kind(S, kind):
    table.coverage(S)[CV_MESSAGES + kind] = 1


@njit(cache=True, inline='always')
def observation_kind(S, kind):
    table.coverage(S)[CV_OBSERVATIONS + kind] = 1


@njit(cache=True, inline='always')
def branch(S, table_offset, value):
    """The label at LABELS[table_offset + value], if it is one of the protocol's branches."""
    label = table.labels(S)[table_offset + value]
    if label >= 0:
        table.coverage(S)[CV_BRANCHES + label] = 1


@njit(cache=True, inline='always')
def code(S, value):
    """A result code (DLedgerResponseCode) in a message or an observation."""
    branch(S, LB_CODES, value + 1)


@njit(cache=True, inline='always')
def touch(S, node):
    """Node's observable state may have changed in this step."""
    table.coverage(S)[CV_TOUCHED] |= 1 << node


@njit(cache=True, inline='always')
def cut_changed(S):
    table.coverage(S)[CV_CUT_CHANGED] = 1


@njit(cache=True, inline='always')
def same(S, node, column, value):
    """Whether `value` is what node's observed column held at its last digest; it holds it now."""
    observed = table.observed(S)
    if observed[node, column] == value:
        return True
    observed[node, column] = value
    return False


@njit(cache=True)
def add_state(S, fingerprint):
    """Into the history's set of distinct states (STATES, open addressing; 0 marks a free
    slot, so a fingerprint of 0 is kept as 1: one number in 2^64). False: the set is full."""
    states = table.states(S)
    seen = table.state_list(S)
    cover = table.coverage(S)
    if fingerprint == 0:
        fingerprint = 1
    capacity = states.shape[0]
    at = (fingerprint ^ (fingerprint >> 17)) & (capacity - 1)
    while states[at] != 0:
        if states[at] == fingerprint:
            return True
        at = (at + 1) & (capacity - 1)
    count = cover[CV_STATES]
    if 2 * (count + 1) > capacity:
        table.world(S)[W_STOP] = OVERFLOW_STATES
        return False
    states[at] = fingerprint
    seen[count] = fingerprint
    cover[CV_STATES] = count + 1
    return True


@njit(cache=True, inline='always')
def world_fingerprint(S, nodes):
    """core.sketch.world_fingerprint over the node digests (CV_NODE_DIGESTS) and the cut."""
    cover = table.coverage(S)
    cut = table.cut(S)
    h = sketch.WORLD
    for i in range(nodes):
        h = sketch.fold(h, cover[CV_NODE_DIGESTS + i])
    for a in range(nodes):
        for b in range(nodes):
            if cut[a, b] == 1:
                h = sketch.fold(sketch.fold(h, a), b)
    return h


@njit(cache=True)
def clear(S):
    """A new history: no flags, no states (only the slots a history used are cleared)."""
    cover = table.coverage(S)
    states = table.states(S)
    seen = table.state_list(S)
    capacity = states.shape[0]
    for k in range(cover[CV_STATES]):
        fingerprint = seen[k]
        at = (fingerprint ^ (fingerprint >> 17)) & (capacity - 1)
        while states[at] != 0:
            states[at] = 0
            at = (at + 1) & (capacity - 1)
    for k in range(COVERAGE_WORDS):
        cover[k] = 0


# --- the Python side ---


@attrs.frozen
class Spec:
    """What a twin's coverage flags mean in the reference's words."""

    roles: tuple  # role names after "-" and "down" (spark_harness.coverage.role_of)
    actions: tuple  # action kind names after the core's (a twin's own events: "ext:<Type>")
    messages: dict  # message kind -> the message's class name
    observations: dict  # OBS_* -> the observation's class name
    twin_event: str | None  # the class name of the twin's own fault event's observation, if any
    branches: tuple  # the protocol's branch labels (spark_harness.coverage.branch_universe), in index order
    labels: np.ndarray  # LABELS


@attrs.frozen
class Coverage:
    """What one history covered, as spark_harness.history's Probe records it."""

    actions: list  # sorted "kind@role"
    branches: list  # sorted labels
    kinds: list  # sorted "msg:<Type>" / "obs:<Type>"
    fingerprints: np.ndarray  # the distinct observable states (unsigned 64-bit, in the order first seen)

    @property
    def states(self) -> int:
        return len(self.fingerprints)


def label(member) -> str:
    """spark_harness.coverage.label: `Enum.MEMBER`."""
    return f"{type(member).__name__}.{member.name}"


def labels(protocol_name: str, ids: tuple, enums: dict, role_names: tuple, keys: tuple) -> tuple[tuple, np.ndarray]:
    """The protocol's branch labels (spark_harness.coverage.branch_universe's order) and the
    LABELS array: each result code's label index, and each member of the enums a twin keeps
    by number (`enums`: LABELS offset -> the members in the twin's order), then the digests of
    the node ids, the role names and the observed keys (core.sketch.text)."""
    members = protocol(protocol_name).branches
    branches = tuple(sorted({label(m) for m in members}))
    index = {name: k for k, name in enumerate(branches)}
    out = np.full(LABEL_WORDS, -1, np.int64)
    for m in members:
        if isinstance(m, int) and not isinstance(m, bool):  # DLedgerResponseCode, an IntEnum
            out[LB_CODES + int(m) + 1] = index[label(m)]
    for offset, values in enums.items():
        for k, v in enumerate(values):
            out[offset + k] = index.get(label(v), -1)
    for k, node_id in enumerate(ids):
        out[LB_NODE_IDS + k] = sketch.text(node_id)
    for k, name in enumerate(role_names):
        out[LB_ROLE_NAMES + k] = sketch.text(name)
    for k, key in enumerate(keys):
        out[LB_KEYS + k] = sketch.text(key)
    return branches, out


def add_arrays(s, nodes: int) -> None:
    """The coverage slots of a twin's state table."""
    s.put(layout.COVERAGE, "coverage", np.zeros(COVERAGE_WORDS, np.int64))
    s.put(layout.STATES, "states", np.zeros(STATE_CAPACITY, np.int64))
    s.put(layout.STATE_LIST, "state_list", np.zeros(STATE_CAPACITY // 2 + 1, np.int64))
    s.put(layout.LABELS, "labels", np.zeros(LABEL_WORDS, np.int64))
    s.put(layout.OBSERVED, "observed", np.zeros((nodes, layout.OBSERVED_COLUMNS), np.int64))


def reset(s) -> None:
    clear(s.table)


def of(spec: Spec, s) -> Coverage:
    """The flags of the history that just ran, in the reference's words."""
    cover = s.coverage
    roles = ("-", "down") + spec.roles
    kinds = ACTION_KIND_NAMES + spec.actions
    flags = cover[CV_ACTIONS:CV_ACTIONS + len(kinds) * ACTION_ROLES].reshape(len(kinds), ACTION_ROLES)
    actions = sorted(f"{kinds[k]}@{roles[r]}" for k, r in zip(*np.nonzero(flags)))
    branches = sorted(spec.branches[i] for i in np.nonzero(cover[CV_BRANCHES:CV_BRANCHES + len(spec.branches)])[0])
    seen = [f"msg:{spec.messages[int(k)]}" for k in np.nonzero(cover[CV_MESSAGES:CV_OBSERVATIONS])[0]]
    for k in np.nonzero(cover[CV_OBSERVATIONS:CV_BRANCHES])[0]:
        k = int(k)
        if k in spec.observations:
            seen.append(f"obs:{spec.observations[k]}")
        elif k - WORLD_OBSERVATION < len(WORLD_OBSERVATION_NAMES):
            seen.append(f"obs:{WORLD_OBSERVATION_NAMES[k - WORLD_OBSERVATION]}")
        else:
            seen.append(f"obs:{spec.twin_event}")
    fingerprints = s.state_list[:int(cover[CV_STATES])].view(np.uint64).copy()
    return Coverage(actions=actions, branches=branches, kinds=sorted(seen), fingerprints=fingerprints)
