"""Fast worlds: compiled twins of reference worlds, for fuzzing at millions of events per second.

A twin runs the history `histories.runner.run(cfg, SeededChooser(seed).choose, steps,
until_ms)` runs, event for event: the same enabled events in the same order, the same draws
from the same MT19937 sequence, the same transitions, ghost variables and properties checked
at every step. It is a second implementation of the protocol in Numba over fixed-layout
arrays; the reference stays the specification and the judge (the fuzzer re-runs histories
through it: docs/fuzzing.md, and each twin's `crosscheck` holds it to the reference event for
event).

The house mirrors the reference's: a package per twin, its modules named after the
reference modules they mirror, and what every twin shares once in `core`:

| package | mirrors | what |
|---|---|---|
| `core` | reference_impl/core | the state table, the core layout, MT19937, the seeded chooser, the schedule, the network, the generic faults and the step's record, outputs, coverage and distinct states, results, the kernels' cache, the cross-check's comparison |
| `election` | reference_impl/election | the election twin: member_state, leader_elector (+ _transfer), server, world (the kernel), ghost, monitor, replies, network; mutants (test-only); runner, decode, crosscheck, explore |
| `dledger_log` | reference_impl/dledger_log | the dledger_log twin: store, entry_pusher (+ _quorum_ack), entry_dispatcher, entry_handler, server, world (+ _client), ghost, monitor (+ _steps), replies, network, causes; runner, decode, crosscheck |

This module is the interface: `PROTOCOLS`, `supports`, `prepare`, `run_history`, `Runner`.
docs/fast-worlds.md has the layouts, capacities, what is covered and how to change a
transition in both worlds.
"""

from typing import Any

from histories.fast.core import cache

cache.install()  # before any kernel of the package is decorated

from histories.fast.core.results import CapacityError, FastResult, FastViolation, Unsupported  # noqa: E402
from histories.fast.election import runner as election_runner  # noqa: E402
from histories.fast.dledger_log import runner as dledger_log_runner  # noqa: E402

# protocol -> the module with its prepare, run_history and Runner
WORLDS = {"election": election_runner, "dledger_log": dledger_log_runner}
PROTOCOLS = tuple(WORLDS)  # protocols with a fast world


def _world(cfg) -> Any:
    world = WORLDS.get(cfg.protocol)
    if world is None:
        raise Unsupported(f"no fast world for the {cfg.protocol!r} protocol; it has: {', '.join(PROTOCOLS)}")
    return world


def prepare(cfg, **options) -> Any:
    """The fast world's arrays for `cfg`; raises Unsupported when it does not model it."""
    return _world(cfg).prepare(cfg, **options)


def supports(cfg) -> bool:
    """Whether a fast world runs `cfg` (its protocol has one and it models the config)."""
    try:
        prepare(cfg)
    except Unsupported:
        return False
    return True


def run_history(cfg, seed: Any, steps: int, until_ms: int | None = None, **options) -> FastResult:
    """One seeded history: what histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms) runs."""
    return _world(cfg).run_history(cfg, seed, steps, until_ms, **options)


def Runner(cfg, **options) -> Any:  # noqa: N802 - a constructor by another module's name
    """Many histories of one config on one set of arrays: `.run(seed, steps, until_ms) -> FastResult`."""
    return _world(cfg).Runner(cfg, **options)


def compile_seconds() -> float:
    """Wall time to get both kernels ready in this process (compile, or load the cache)."""
    return election_runner.compile_seconds() + dledger_log_runner.compile_seconds()


__all__ = ["PROTOCOLS", "WORLDS", "CapacityError", "FastResult", "FastViolation", "Runner", "Unsupported",
           "compile_seconds", "prepare", "run_history", "supports"]
