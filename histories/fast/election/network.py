"""Sending and replying for the election twin, through core/network.py.

`send` puts a vote or heart-beat request in flight, `reply` answers an open RPC, `route` delivers a member's
outputs; coverage of message kinds is counted in `observed`."""

from __future__ import annotations

from numba import njit

from histories.fast.core import coverage
from histories.fast.core import network as core_network
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    E_FIELDS,
    LB_PARSE_RESULTS,
    LB_ROLES,
    O_CONTEXT,
    O_CONTEXT_1,
    O_CONTEXT_2,
    O_CONTEXT_3,
    O_FIELDS,
    O_KIND,
    O_OBSERVED,
    O_TARGET,
    O_TYPE,
    OUT_OBSERVATION,
    OUT_RESPOND,
    OUT_SEND,
    SCAN_GRACE_MS,
    SCAN_PERIOD_MS,
)
from histories.fast.election import ghost
from histories.fast.election.layout import (
    C_RPC_TIMEOUT_MS,
    ELECTION_FIELDS,
    OBS_ROLE_CHANGED,
    OBS_TRANSFER_DONE,
    OBS_VOTE_PARSED,
)


@njit(cache=True)
def send(S, now, src, k):
    """network.send of output row k: every election Send is a scanned RPC (DLedger's invokeAsync
    vote, heartbeat and leadership-transfer requests: Netty's response table fails it once
    begin + timeout + SCAN_GRACE_MS has passed, at a scan within SCAN_PERIOD_MS)."""
    config = core_table.config(S)
    flight = core_table.flight(S)
    outputs = core_table.outputs(S)
    row = core_network.new_request(S, src, outputs[k, O_TARGET], outputs[k, O_KIND], now,
                                   now + config[C_RPC_TIMEOUT_MS] + SCAN_GRACE_MS, SCAN_PERIOD_MS,
                                   outputs[k, O_CONTEXT], outputs[k, O_CONTEXT_1], outputs[k, O_CONTEXT_2],
                                   outputs[k, O_CONTEXT_3])
    if row >= 0:
        for f in range(ELECTION_FIELDS):
            flight[row, E_FIELDS + f] = outputs[k, O_FIELDS + f]


@njit(cache=True, inline='always')
def reply(S, now, rpc_id, message_kind, m0, m1, m2):
    """network.reply with up to three fields: whether a reply went out (none once the RPC has
    closed: then no id is taken)."""
    flight = core_table.flight(S)
    row = core_network.new_reply(S, rpc_id, message_kind, now)
    if row < 0:
        return False
    flight[row, E_FIELDS] = m0
    flight[row, E_FIELDS + 1] = m1
    flight[row, E_FIELDS + 2] = m2
    flight[row, E_FIELDS + 3] = 0
    flight[row, E_FIELDS + 4] = 0
    return True


@njit(cache=True, inline='always')
def observed(S, k):
    """Coverage of output row k, an observation: its kind and the result codes among its values."""
    outputs = core_table.outputs(S)
    kind = outputs[k, O_TARGET]
    coverage.observation_kind(S, kind)
    if kind == OBS_ROLE_CHANGED:
        coverage.branch(S, LB_ROLES, outputs[k, O_OBSERVED + 1])
    elif kind == OBS_VOTE_PARSED:
        coverage.branch(S, LB_PARSE_RESULTS, outputs[k, O_OBSERVED + 1])
    elif kind == OBS_TRANSFER_DONE:
        coverage.code(S, outputs[k, O_OBSERVED + 1])


@njit(cache=True)
def route(S, i, now):
    """transitions.route: Sends and Responds to the network in order, then the observations to
    the ghost (they read the node states after the whole transition). Returns how many
    observations the step produced."""
    outputs = core_table.outputs(S)
    output_count = core_table.output_count(S)
    observations = 0
    for k in range(output_count[0]):
        t = outputs[k, O_TYPE]
        if t == OUT_SEND:
            send(S, now, i, k)
        elif t == OUT_RESPOND:
            reply(S, now, outputs[k, O_TARGET], outputs[k, O_KIND], outputs[k, O_FIELDS], outputs[k, O_FIELDS + 1], 0)
    for k in range(output_count[0]):
        if outputs[k, O_TYPE] == OUT_OBSERVATION:
            observations += 1
            observed(S, k)
            ghost.see_observation(S, i, k)
    return observations
