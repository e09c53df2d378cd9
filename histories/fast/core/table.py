"""The state table: every array of a twin's world as one int64 array of (address, shape).

A kernel function that took the arrays themselves spent most of the kernel's time passing
them: Numba flattens each array into about ten machine words per call (the dledger_log
kernel ran at 0.4 M events per CPU-second with twenty array arguments, 2.2 M with the
table). So every kernel function takes the table `S` (and a few numbers), and builds the
views it reads: `S[4 * k]` is the address of slot k's array and `S[4 * k + 1 ..]` its
shape, so a view is a few loads, with no reference counting (the arrays belong to the
Python caller, which holds them for the whole call; the kernel allocates nothing).

Slots are numbered in layouts: `histories.fast.core.layout` the ones every twin has, each
twin's layout its own after them, with an accessor per slot (`members(S)`) that says the
slot's dimensions once.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from histories.fast.core import layout

SLOT_WORDS = 4  # address and up to three dimensions


class State:
    """The arrays of a twin's world and their table (`table`, what the kernel takes). Each
    array is also an attribute named after its slot's accessor (`state.members`). The state
    holds the arrays for as long as the table is used: the kernel's views do not."""

    def __init__(self, slots: int) -> None:
        self.table = np.zeros(SLOT_WORDS * slots, np.int64)
        self.slots: list = [None] * slots

    def put(self, slot: int, name: str, array: np.ndarray) -> np.ndarray:
        """Slot `slot` is `array` (C-contiguous int64 or float64, 1 to 3 dimensions) from now on."""
        assert array.dtype in (np.int64, np.float64) and array.flags.c_contiguous and 1 <= array.ndim <= 3, name
        self.slots[slot] = array
        setattr(self, name, array)
        base = SLOT_WORDS * slot
        self.table[base] = array.ctypes.data
        self.table[base + 1:base + SLOT_WORDS] = 0
        self.table[base + 1:base + 1 + array.ndim] = array.shape
        return array


def _viewer(ndim: int, dtype):
    arrty = types.Array(dtype, ndim, 'C')

    @intrinsic
    def view(typingctx, table, k):
        if not isinstance(table, types.Array) or not isinstance(k, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            tab = context.make_array(sig.args[0])(context, builder, value=args[0])
            slot_index = context.cast(builder, args[1], sig.args[1], types.intp)
            base = builder.mul(slot_index, context.get_constant(types.intp, SLOT_WORDS))

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


view1 = _viewer(1, types.int64)
view2 = _viewer(2, types.int64)
view3 = _viewer(3, types.int64)
view_float1 = _viewer(1, types.float64)


def accessor(ndim: int, slot: int, dtype=types.int64):
    """`name = accessor(2, SLOT)`: `name(S)` is slot SLOT's array, a view with `ndim`
    dimensions. An intrinsic, so a kernel function's view costs its compile nothing (a njit
    function inlined at every use would: most of the twins' compile memory went there)."""
    arrty = types.Array(dtype, ndim, 'C')

    @intrinsic
    def get(typingctx, table):
        if not isinstance(table, types.Array):
            return None

        def codegen(context, builder, sig, args):
            tab = context.make_array(sig.args[0])(context, builder, value=args[0])
            base = context.get_constant(types.intp, SLOT_WORDS * slot)

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

        return arrty(table), codegen

    return get


@intrinsic
def borrow(typingctx, arr):
    """A view of `arr` without its memory-manager pointer, so that Numba's reference counting
    on it becomes a null check instead of an atomic add. Safe only while something else owns
    `arr` (the explorer's buffers, which its Python side holds for the whole call)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        src = context.make_array(arr)(context, builder, value=args[0])
        out = context.make_array(arr)(context, builder)
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        out.nitems = src.nitems
        out.itemsize = src.itemsize
        out.data = src.data
        out.shape = src.shape
        out.strides = src.strides
        return out._getvalue()

    return arr(arr), codegen


# --- the slots every twin has (histories.fast.core.layout), one accessor each ---
config = accessor(1, layout.CONFIG)
weights = accessor(1, layout.WEIGHTS, types.float64)
alive = accessor(1, layout.ALIVE)
since = accessor(1, layout.SINCE)
wake_times = accessor(1, layout.WAKE_TIMES)
slack = accessor(1, layout.SLACK)
flight = accessor(2, layout.FLIGHT)
rpcs = accessor(2, layout.RPCS)
cut = accessor(2, layout.CUT)
world = accessor(1, layout.WORLD)
mt = accessor(1, layout.MT)
event_log = accessor(2, layout.EVENT_LOG)
event_kinds = accessor(1, layout.EVENT_KINDS)
event_args = accessor(1, layout.EVENT_ARGS)
fault_targets = accessor(1, layout.FAULT_TARGETS)
fault_peers = accessor(1, layout.FAULT_PEERS)
kinds = accessor(1, layout.KINDS)
links = accessor(1, layout.LINKS)
outputs = accessor(2, layout.OUTPUTS)
output_count = accessor(1, layout.OUTPUT_COUNT)
isolations = accessor(1, layout.ISOLATIONS)
verdicts = accessor(2, layout.VERDICTS)
force = accessor(1, layout.FORCE)
coverage = accessor(1, layout.COVERAGE)
states = accessor(1, layout.STATES)
state_list = accessor(1, layout.STATE_LIST)
labels = accessor(1, layout.LABELS)
event = accessor(1, layout.EVENT)
observed = accessor(2, layout.OBSERVED)
