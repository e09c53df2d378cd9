"""Sending and replying for the dledger_log twin, through core/network.py.

`send` puts a push, append or wait request in flight with the message columns this protocol uses; `reply`
answers an open RPC. Coverage of message kinds is counted here."""

from __future__ import annotations

from numba import njit

from histories.fast.core import network as core_network
from histories.fast.core import outputs as core_outputs
from histories.fast.core import table as core_table
from histories.fast.core.layout import (
    E_FIELDS,
    O_CONTEXT,
    O_CONTEXT_1,
    O_CONTEXT_2,
    O_CONTEXT_3,
    O_KIND,
    O_TARGET,
    SCAN_GRACE_MS,
    SCAN_PERIOD_MS,
)
from histories.fast.dledger_log import layout
from histories.fast.dledger_log.layout import (
    APPEND_ENTRY_REQUEST,
    CLIENT_RPC_TIMEOUT_MS,
    CTX_APPEND,
    MESSAGE_FIELDS,
    PUSH_ENTRY_REQUEST,
)
from histories.fast.election.layout import (
    C_RPC_TIMEOUT_MS,
    HEART_BEAT_REQUEST,
    HEART_BEAT_RESPONSE,
    LEADERSHIP_TRANSFER_RESPONSE,
    VOTE_REQUEST,
    VOTE_RESPONSE,
)


@njit(cache=True, inline='always')
def fields_of(message_kind):
    """How many message fields a kind carries (the others are 0 in an envelope)."""
    if message_kind == PUSH_ENTRY_REQUEST:
        return MESSAGE_FIELDS
    if message_kind == VOTE_REQUEST:
        return 4
    if message_kind == VOTE_RESPONSE:
        return 3
    if message_kind == APPEND_ENTRY_REQUEST:
        return 1
    if message_kind == HEART_BEAT_REQUEST or message_kind == HEART_BEAT_RESPONSE or message_kind == LEADERSHIP_TRANSFER_RESPONSE:
        return 2
    return 5  # LeadershipTransferRequest, AppendEntryResponse, PushEntryResponse


@njit(cache=True)
def send(S, now, src, k):
    """network.send of output row k: every dledger_log Send is an RPC; DLedger's are
    invokeAsync (scanned by Netty's response table), the client's append is not."""
    config = core_table.config(S)
    flight = core_table.flight(S)
    outputs = core_table.outputs(S)
    message_kind = outputs[k, O_KIND]
    context = outputs[k, O_CONTEXT]
    if context == CTX_APPEND:
        deadline = now + CLIENT_RPC_TIMEOUT_MS
        window = 0
    else:
        deadline = now + config[C_RPC_TIMEOUT_MS] + SCAN_GRACE_MS
        window = SCAN_PERIOD_MS
    row = core_network.new_request(S, src, outputs[k, O_TARGET], message_kind, now, deadline, window, context,
                                   outputs[k, O_CONTEXT_1], outputs[k, O_CONTEXT_2], outputs[k, O_CONTEXT_3])
    if row >= 0:
        fields = fields_of(message_kind)
        for j in range(MESSAGE_FIELDS):
            flight[row, E_FIELDS + j] = outputs[k, core_outputs.message_column(j)] if j < fields else 0


@njit(cache=True)
def reply(S, now, rpc_id, message_kind):
    """network.reply with the fields in REPLY_FIELDS: whether a reply went out (none once the
    RPC has closed: then no id is taken)."""
    flight = core_table.flight(S)
    reply_fields = layout.reply_fields(S)
    row = core_network.new_reply(S, rpc_id, message_kind, now)
    if row < 0:
        return False
    fields = fields_of(message_kind)
    for j in range(MESSAGE_FIELDS):
        flight[row, E_FIELDS + j] = reply_fields[j] if j < fields else 0
    return True
