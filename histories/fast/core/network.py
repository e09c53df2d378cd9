"""The network of reference_impl/core/network.py over FLIGHT and RPCS: envelopes and open
RPCs in id order (removal shifts the rows, as removing from the reference's tuple does),
a request with its RPC, a reply, a node going down with its connections reset.

A twin's own network module fills the message fields of the rows these open (their number
is the twin's layout) and decides the RPC's deadline (DLedger's invokeAsync is scanned by
Netty's response table, a client's RPC is not). Row widths are passed where a loop copies
rows: a constant once inlined (a loop over the array's own width ran the election kernel a
third slower).
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import table
from histories.fast.core.layout import (
    E_DST,
    E_ID,
    E_KIND,
    E_REPLY,
    E_RPC,
    E_SENT,
    E_SRC,
    OVERFLOW_FLIGHT,
    OVERFLOW_RPCS,
    R_CONTEXT,
    R_CONTEXT_1,
    R_CONTEXT_2,
    R_CONTEXT_3,
    R_DEADLINE,
    R_ID,
    R_REQUESTER,
    R_RESPONDER,
    R_WINDOW,
    W_FLIGHT,
    W_NEXT_ID,
    W_RPCS,
    W_STOP,
)


@njit(cache=True, inline='always')
def find_rpc(S, rpc_id):
    """The row of the open RPC `rpc_id`, -1 if it has closed."""
    world = table.world(S)
    rpcs = table.rpcs(S)
    for r in range(world[W_RPCS]):
        if rpcs[r, R_ID] == rpc_id:
            return r
    return -1


@njit(cache=True)
def new_request(S, src, dst, message_kind, now, deadline, window, context, context_1, context_2, context_3):
    """network.send of a request with a timeout: an envelope and its open RPC, both with the
    next id. Returns the envelope's row (its fields are the caller's to fill), -1 when the
    flight or the RPC table is full (the kernel then stops)."""
    world = table.world(S)
    flight = table.flight(S)
    rpcs = table.rpcs(S)
    row = world[W_FLIGHT]
    rpc_row = world[W_RPCS]
    if row >= flight.shape[0]:
        world[W_STOP] = OVERFLOW_FLIGHT
        return -1
    if rpc_row >= rpcs.shape[0]:
        world[W_STOP] = OVERFLOW_RPCS
        return -1
    new_id = world[W_NEXT_ID]
    flight[row, E_ID] = new_id
    flight[row, E_SRC] = src
    flight[row, E_DST] = dst
    flight[row, E_SENT] = now
    flight[row, E_RPC] = new_id
    flight[row, E_REPLY] = 0
    flight[row, E_KIND] = message_kind
    rpcs[rpc_row, R_ID] = new_id
    rpcs[rpc_row, R_REQUESTER] = src
    rpcs[rpc_row, R_RESPONDER] = dst
    rpcs[rpc_row, R_DEADLINE] = deadline
    rpcs[rpc_row, R_WINDOW] = window
    rpcs[rpc_row, R_CONTEXT] = context
    rpcs[rpc_row, R_CONTEXT_1] = context_1
    rpcs[rpc_row, R_CONTEXT_2] = context_2
    rpcs[rpc_row, R_CONTEXT_3] = context_3
    world[W_FLIGHT] = row + 1
    world[W_RPCS] = rpc_row + 1
    world[W_NEXT_ID] = new_id + 1
    return row


@njit(cache=True)
def new_reply(S, rpc_id, message_kind, now):
    """network.reply: the reply's envelope (its fields are the caller's to fill), or -1 when
    the RPC has closed (then no id is taken) or the flight is full."""
    world = table.world(S)
    flight = table.flight(S)
    rpcs = table.rpcs(S)
    r = find_rpc(S, rpc_id)
    if r < 0:
        return -1
    row = world[W_FLIGHT]
    if row >= flight.shape[0]:
        world[W_STOP] = OVERFLOW_FLIGHT
        return -1
    new_id = world[W_NEXT_ID]
    flight[row, E_ID] = new_id
    flight[row, E_SRC] = rpcs[r, R_RESPONDER]
    flight[row, E_DST] = rpcs[r, R_REQUESTER]
    flight[row, E_SENT] = now
    flight[row, E_RPC] = rpc_id
    flight[row, E_REPLY] = 1
    flight[row, E_KIND] = message_kind
    world[W_FLIGHT] = row + 1
    world[W_NEXT_ID] = new_id + 1
    return row


@njit(cache=True, inline='always')
def remove_envelope(S, row, width):
    """network.remove: the rows after `row` move up one (`width`: the flight's columns)."""
    world = table.world(S)
    flight = table.flight(S)
    count = world[W_FLIGHT]
    for r in range(row, count - 1):
        for f in range(width):
            flight[r, f] = flight[r + 1, f]
    world[W_FLIGHT] = count - 1


@njit(cache=True, inline='always')
def close_rpc(S, row, width):
    """network.close_rpc: the rows after `row` move up one (`width`: RPC_COLUMNS)."""
    world = table.world(S)
    rpcs = table.rpcs(S)
    count = world[W_RPCS]
    for q in range(row, count - 1):
        for f in range(width):
            rpcs[q, f] = rpcs[q + 1, f]
    world[W_RPCS] = count - 1


@njit(cache=True, inline='always')
def refuse(S, rpc_id, now):
    """network.fail_now: a request to a node that is down is refused at once (its RPC fails
    now, with no scan window), unless it already failed."""
    rpcs = table.rpcs(S)
    r = find_rpc(S, rpc_id)
    if r >= 0 and rpcs[r, R_DEADLINE] > now:
        rpcs[r, R_DEADLINE] = now
        rpcs[r, R_WINDOW] = 0


@njit(cache=True)
def node_down(S, node, now):
    """network.node_down with reset: the node's envelopes are gone, its own RPCs closed, and
    the RPCs waiting on it fail now (its connections were reset)."""
    world = table.world(S)
    flight = table.flight(S)
    rpcs = table.rpcs(S)
    w = 0
    for r in range(world[W_FLIGHT]):
        if flight[r, E_SRC] != node and flight[r, E_DST] != node:
            if w != r:
                for f in range(flight.shape[1]):
                    flight[w, f] = flight[r, f]
            w += 1
    world[W_FLIGHT] = w
    w = 0
    for r in range(world[W_RPCS]):
        if rpcs[r, R_REQUESTER] != node:
            if w != r:
                for f in range(rpcs.shape[1]):
                    rpcs[w, f] = rpcs[r, f]
            if rpcs[w, R_RESPONDER] == node and rpcs[w, R_DEADLINE] > now:
                rpcs[w, R_DEADLINE] = now
                rpcs[w, R_WINDOW] = 0
            w += 1
    world[W_RPCS] = w
