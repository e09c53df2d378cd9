"""What every fast world shares: the borrowed-array intrinsic, the refusals and the
result of one history.

A fast world's kernel works on arrays its Python caller allocates and owns (the
kernel allocates nothing), so it may borrow them without reference counting (`borrow`).
A config the world does not model is refused with `Unsupported`; a bounded capacity
that runs out stops the kernel with a negative code, never truncating, and the history
goes to the reference (`CapacityError`, or `FastResult.stopped == "overflow:<what>"`).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# fault counts as spark_harness.history's Probe counts them, and the FaultProfile weight
# names (core.FAULT_KINDS) in the order the kernels keep them
FAULT_NAMES = ("drop", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "cut", "heal")
PROFILE_KINDS = ("loss", "duplicate", "crash", "os_crash", "disk_loss", "restart", "partition", "one_way", "heal")


class Unsupported(ValueError):
    """A config the fast world does not model; run it through the reference instead."""


class CapacityError(RuntimeError):
    """A bounded capacity of a fast world overflowed; the history must go to the reference."""

    def __init__(self, what: str, step: int, result: Any) -> None:
        super().__init__(f"fast world: capacity of {what} exceeded at step {step}; "
                         f"hand this history to the reference (or raise the capacity)")
        self.what = what
        self.step = step
        self.result = result


@attrs.frozen
class FastViolation:
    property: str
    step: int
    t_ms: int
    expected: str | None  # the known cause (the spec's text), None: unexpected
    who: tuple[str, ...] = ()  # the nodes the cause names


@attrs.define
class FastResult:
    """One history of a fast world: what histories.runner.run's result and the fuzzer's
    hooks would say about it (no trace, no coverage: the reference computes those)."""

    steps: int
    t_ms: int
    stopped: str  # "steps", "until", "idle"; "overflow:<what>" if a capacity ran out (strict=False)
    violations: list[FastViolation]
    stats: dict  # the spec's measure + meter (None: not measured)
    faults: dict  # fault counts as spark_harness.history's Probe counts them (zero counts omitted)
    log: np.ndarray | None  # (kind, a, b, t_ms, draw, late, observations) per event, when asked for
    prepared: Any
    state: Any  # the arrays (None for a reused Runner's results)
    seconds: float = 0.0  # CPU time in the kernel
    world_of: Any = None  # (prepared, state) -> the final World as reference objects

    @property
    def unexpected(self) -> list[FastViolation]:
        return [v for v in self.violations if v.expected is None]

    @property
    def overflow(self) -> bool:
        return self.stopped.startswith("overflow")

    def world(self):
        """The final world as reference objects (`core.World`), equal to the reference's."""
        if self.state is None or self.world_of is None:
            raise ValueError("this result keeps no state (Runner); use run_history for the final world")
        return self.world_of(self.prepared, self.state)


@intrinsic
def borrow(typingctx, arr):
    """A view of `arr` without its memory-manager pointer, so that Numba's reference counting
    on it becomes a null check instead of an atomic add (most of the kernel's time otherwise).
    Safe only while something else owns `arr`: every array of the kernel comes from the
    Python caller, which holds them for the whole call; the kernel allocates nothing."""
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
