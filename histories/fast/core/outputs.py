"""One transition's outputs, in the reference's output order: the rows of OUTPUTS.

A node transition of the reference returns a tuple of `network.Send`, `network.Respond` and
observations; the twin's transitions push rows here in the same order, and the twin's
`route` hands them to the network and the ghost (core.transitions.route). Envelope and RPC
ids follow this order. `OUTPUT_COUNT[0]` counts the rows in use, `OUTPUT_COUNT[1]` is 1
once a transition made more than the capacity (the kernel then stops: never truncated).
"""

from __future__ import annotations

from numba import njit

from histories.fast.core import table
from histories.fast.core.layout import (
    O_CONTEXT,
    O_CONTEXT_1,
    O_CONTEXT_2,
    O_CONTEXT_3,
    O_FIELDS,
    O_KIND,
    O_MORE_FIELDS,
    O_OBSERVED,
    O_TARGET,
    O_TYPE,
    OUT_OBSERVATION,
    OUT_RESPOND,
    OUT_SEND,
)


@njit(cache=True)
def new_row(S, kind):
    """A new output row of `kind` (OUT_*), zeroed; past the capacity every write goes to the
    spare last row and the overflow is noted."""
    outputs = table.outputs(S)
    count = table.output_count(S)
    k = count[0]
    if k >= outputs.shape[0] - 1:
        count[1] = 1
        k = outputs.shape[0] - 1
    else:
        count[0] = k + 1
    for f in range(outputs.shape[1]):
        outputs[k, f] = 0
    outputs[k, O_TYPE] = kind
    return k


@njit(cache=True, inline='always')
def message_column(j):
    """The output column of message field j (the first five at O_FIELDS, the rest at O_MORE_FIELDS)."""
    return O_FIELDS + j if j < 5 else O_MORE_FIELDS + j - 5


@njit(cache=True)
def push_send(S, dst, message_kind, m0, m1, m2, m3, m4, context, context_1, context_2, context_3):
    """A `Send` of a message with five fields, as an RPC whose requester waits for `context`."""
    outputs = table.outputs(S)
    count = table.output_count(S)
    k = count[0]
    if k >= outputs.shape[0]:
        count[1] = 1
        return
    outputs[k, O_TYPE] = OUT_SEND
    outputs[k, O_TARGET] = dst
    outputs[k, O_KIND] = message_kind
    outputs[k, O_FIELDS] = m0
    outputs[k, O_FIELDS + 1] = m1
    outputs[k, O_FIELDS + 2] = m2
    outputs[k, O_FIELDS + 3] = m3
    outputs[k, O_FIELDS + 4] = m4
    outputs[k, O_CONTEXT] = context
    outputs[k, O_CONTEXT_1] = context_1
    outputs[k, O_CONTEXT_2] = context_2
    outputs[k, O_CONTEXT_3] = context_3
    count[0] = k + 1


@njit(cache=True)
def push_respond(S, rpc, message_kind, m0, m1):
    """A `Respond` to RPC `rpc` with a two-field message."""
    outputs = table.outputs(S)
    count = table.output_count(S)
    k = count[0]
    if k >= outputs.shape[0]:
        count[1] = 1
        return
    outputs[k, O_TYPE] = OUT_RESPOND
    outputs[k, O_TARGET] = rpc
    outputs[k, O_KIND] = message_kind
    outputs[k, O_FIELDS] = m0
    outputs[k, O_FIELDS + 1] = m1
    count[0] = k + 1


@njit(cache=True)
def push_observation(S, kind, a, b, c):
    """An observation of `kind` with three values."""
    outputs = table.outputs(S)
    count = table.output_count(S)
    k = count[0]
    if k >= outputs.shape[0]:
        count[1] = 1
        return
    outputs[k, O_TYPE] = OUT_OBSERVATION
    outputs[k, O_TARGET] = kind
    outputs[k, O_OBSERVED] = a
    outputs[k, O_OBSERVED + 1] = b
    outputs[k, O_OBSERVED + 2] = c
    count[0] = k + 1
