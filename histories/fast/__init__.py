"""Fast worlds: compiled twins of reference worlds, for fuzzing at millions of events per second.

A fast world runs the history `histories.runner.run(cfg, SeededChooser(seed).choose,
steps, until_ms)` runs, event for event: the same enabled events in the same order, the
same draws from the same MT19937 sequence, the same transitions, ghost variables and
properties checked at every step. It is a second implementation of the protocol, in
Numba over fixed-layout arrays; the reference stays the specification and the judge
(the fuzzer re-runs histories with a violation through the reference: docs/fuzzing.md, and
`histories.fast.crosscheck` holds the twin to the reference event for event).

| module | what |
|---|---|
| `cache` | where Numba keeps the compiled kernels: a folder per version of the package (`DigestLocator`) |
| `common` | the borrowed-array intrinsic, `Unsupported`, `CapacityError`, `FastResult` |
| `mt` | MT19937 as CPython's `random.Random` |
| `election` | the election twin's kernel (`run_kernel`), re-exporting `election_layout` (enums, array columns), `election_node` (the node logic) and `election_world` (network, ghost, properties) |
| `election_schedule` | the horizon, the enabled events and the fault events (`schedule.py`), shared by the kernel and the explorer |
| `election_explore` | exhaustive exploration over the election arrays: fingerprints, packed states, one BFS level (`rmqspec explore --engine fast`, model_checks/explore_fast.py) |
| `run` | the election world's Python side: config arrays, `run_history`, `Runner` (the package's `run_history` and `Runner` dispatch on the protocol) |
| `decode` | the election arrays back to reference objects (`core.World`) |
| `dledger_log*` | the dledger_log twin: `_layout` (arrays, the state table), `_store`, `_pusher`, `_quorum_ack`, `_dispatcher`, `_handler`, `_node` (the server), `_client`, `_net`, `_monitor` (ghost maps, state properties), `_ghost` (drops, thin commits, Terms, liveness), `_steps` and `_replies` (step properties, RPL-*), `_world` (init, routing), the kernel (the loop), `_run` (Python side), `_causes` (expected causes by the spec's own functions), `_decode`, `_crosscheck` |
| `crosscheck` | twin vs reference, history by history (`python -m histories.fast.crosscheck`) |

docs/fast-worlds.md has the layouts, capacities and what is covered;
docs/architecture.md how to change a transition in both worlds.
"""

from typing import Any

from histories.fast import cache

cache.install()  # before the kernels below are decorated

from histories.fast import dledger_log_run  # noqa: E402 - after the cache locator is set
from histories.fast import run as election_run  # noqa: E402
from histories.fast.common import CapacityError, FastResult, FastViolation, Unsupported

# protocol -> the module with its prepare, run_history and Runner
WORLDS = {"election": election_run, "dledger_log": dledger_log_run}
PROTOCOLS = tuple(WORLDS)  # protocols with a fast world


def _world(cfg) -> Any:
    world = WORLDS.get(cfg.protocol)
    if world is None:
        raise Unsupported(f"no fast world for the {cfg.protocol!r} protocol; it has: {', '.join(PROTOCOLS)}")
    return world


def prepare(cfg, **kw) -> Any:
    """The fast world's arrays for `cfg`; raises Unsupported when it does not model it."""
    return _world(cfg).prepare(cfg, **kw)


def supports(cfg) -> bool:
    """Whether a fast world runs `cfg` (its protocol has one and it models the config)."""
    try:
        prepare(cfg)
    except Unsupported:
        return False
    return True


def run_history(cfg, seed: Any, steps: int, until_ms: int | None = None, **kw) -> FastResult:
    """One seeded history: what histories.runner.run(cfg, SeededChooser(seed).choose, steps, until_ms) runs."""
    return _world(cfg).run_history(cfg, seed, steps, until_ms, **kw)


def Runner(cfg, **kw) -> Any:  # noqa: N802 - a constructor by another module's name
    """Many histories of one config on one set of arrays: `.run(seed, steps, until_ms) -> FastResult`."""
    return _world(cfg).Runner(cfg, **kw)


def compile_seconds() -> float:
    """Wall time to get the election kernel ready in this process (compile, or load the cache)."""
    return election_run.compile_seconds()


__all__ = ["PROTOCOLS", "WORLDS", "CapacityError", "FastResult", "FastViolation", "Runner", "Unsupported",
           "compile_seconds", "prepare", "run_history", "supports"]
