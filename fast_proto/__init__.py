"""A compiled twin ("fast world") of the `election` protocol world (Numba).

`run_history(cfg, seed, steps, until_ms)` runs the history the reference runs with
`rmqspec.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms)`, event for event,
with every election property checked at every step. See fast_proto/README.md.
"""

from fast_proto.run import (CapacityError, FastResult, FastViolation, Unsupported, compile_seconds,
                            history_summary, run_history)

__all__ = ["CapacityError", "FastResult", "FastViolation", "Unsupported", "compile_seconds", "history_summary",
           "run_history"]
