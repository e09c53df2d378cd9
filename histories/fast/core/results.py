"""What a twin says about one history, and how it refuses: `FastResult`, `FastViolation`,
`Unsupported` (a config the twin does not model: the reference runs it) and `CapacityError`
(a bounded capacity ran out: the kernel stopped, never truncating, and the history goes to
the reference).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np


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
    hooks (coverage, distinct observable states) say about it (no trace: the reference
    writes those)."""

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
    coverage: Any = None  # histories.fast.core.coverage.Coverage: actions, branches, kinds, states

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
