"""The dledger_log clients: mirrors the client part of
reference_impl/dledger_log/world.py.

A client appends entries through whichever server it believes leads, retries on failure and remembers what
was acknowledged, so the monitor can judge durability."""

from __future__ import annotations

from numba import njit

from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    O_CONTEXT,
    O_CONTEXT_1,
    O_KIND,
    O_OBSERVED,
    O_TARGET,
    OUT_OBSERVATION,
    OUT_SEND,
)
from histories.fast.dledger_log import layout
from histories.fast.dledger_log.layout import (
    APPEND_ENTRY_REQUEST,
    C_CLIENT_INTERVAL_MS,
    C_FORCED_LEADER,
    CL_LEADER_ID,
    CL_NEXT_APPEND_MS,
    CL_SEQ,
    CL_WAITING,
    CTX_APPEND,
    OBS_CLIENT_RESULT,
)
from histories.fast.election.layout import (
    C_PEERS,
    NOT_LEADER,
    SUCCESS,
)


@njit(cache=True, inline='always')
def client_wake_at(S, c):
    clients = layout.clients(S)
    return -1 if clients[c, CL_WAITING] == 1 else clients[c, CL_NEXT_APPEND_MS]


@njit(cache=True)
def client_on_tick(S, c, now, draw):
    """world.client_on_tick: send the next body to the believed leader (a drawn peer if none)."""
    config = core_table.config(S)
    outputs = core_table.outputs(S)
    clients = layout.clients(S)
    if clients[c, CL_WAITING] == 1 or now < clients[c, CL_NEXT_APPEND_MS]:
        return
    target = clients[c, CL_LEADER_ID] if clients[c, CL_LEADER_ID] >= 0 else draw % config[C_PEERS]
    seq = clients[c, CL_SEQ] + 1
    body = ((c + 1) << 32) | seq
    clients[c, CL_SEQ] = seq
    clients[c, CL_WAITING] = 1
    k = core_outputs.new_row(S, OUT_SEND)
    outputs[k, O_TARGET] = target
    outputs[k, O_KIND] = APPEND_ENTRY_REQUEST
    outputs[k, core_outputs.message_column(0)] = body
    outputs[k, O_CONTEXT] = CTX_APPEND
    outputs[k, O_CONTEXT_1] = body


@njit(cache=True)
def client_on_response(S, c, body, peer, has, code, index, leader, now):
    """world.client_on_response: NOT_LEADER names the leader to try next; a failure forgets it."""
    config = core_table.config(S)
    outputs = core_table.outputs(S)
    clients = layout.clients(S)
    believed_leader = clients[c, CL_LEADER_ID]
    if not has:
        believed_leader = -1
    elif code == NOT_LEADER:
        believed_leader = leader
    elif code == SUCCESS:
        believed_leader = peer
    k = core_outputs.new_row(S, OUT_OBSERVATION)
    outputs[k, O_TARGET] = OBS_CLIENT_RESULT
    outputs[k, O_OBSERVED] = body
    outputs[k, O_OBSERVED + 1] = peer
    outputs[k, O_OBSERVED + 2] = code if has else 0
    outputs[k, O_OBSERVED + 3] = index if has else -1
    clients[c, CL_WAITING] = 0
    clients[c, CL_LEADER_ID] = believed_leader
    clients[c, CL_NEXT_APPEND_MS] = now + config[C_CLIENT_INTERVAL_MS]


@njit(cache=True)
def boot_client(S, c, now, restart):
    """world.boot of a client (and restart: waiting cleared, next append an interval on)."""
    config = core_table.config(S)
    clients = layout.clients(S)
    if not restart:
        clients[c, CL_LEADER_ID] = config[C_FORCED_LEADER]
        clients[c, CL_SEQ] = 0
    clients[c, CL_WAITING] = 0
    clients[c, CL_NEXT_APPEND_MS] = now + config[C_CLIENT_INTERVAL_MS]


@njit(cache=True)
def crash_client(S, c):
    """world.crash of a client: it forgets the append it waited for."""
    layout.clients(S)[c, CL_WAITING] = 0
