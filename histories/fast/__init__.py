"""Fast worlds: compiled twins of reference worlds, for fuzzing at millions of events per second.

A fast world runs the history `histories.runner.run(cfg, SeededChooser(seed).choose,
steps, until_ms)` runs, event for event: the same enabled events in the same order, the
same draws from the same MT19937 sequence, the same transitions, ghost variables and
properties checked at every step. It is a second implementation of the protocol, in
Numba over fixed-layout arrays; the reference stays the specification and the judge
(the fuzzer re-runs every history with a violation through the reference, and
`histories.fast.crosscheck` holds the twin to the reference event for event).

| module | what |
|---|---|
| `common` | the borrowed-array intrinsic, `Unsupported`, `CapacityError`, `FastResult` |
| `mt` | MT19937 as CPython's `random.Random` |
| `election` | the election kernel: array layouts, node logic, world, chooser, monitor |
| `run` | the election world's Python side: config arrays, `run_history`, `Runner` |
| `dledger_log*` | the dledger_log world: `_layout`, `_store`, `_pusher`, `_node`, `_monitor`, the kernel, `_run`, `_decode`, `_crosscheck` |
| `decode` | the election arrays back to reference objects (`core.World`) |
| `crosscheck` | twin vs reference, history by history (`python -m histories.fast.crosscheck`) |

docs/fast-worlds.md has the layouts, capacities and what is covered;
docs/architecture.md how to change a transition in both worlds.
"""

from histories.fast import dledger_log_run
from histories.fast import run as election_run
from histories.fast.common import CapacityError, FastResult, FastViolation, Unsupported
from histories.fast.run import compile_seconds

WORLDS = {"election": election_run, "dledger_log": dledger_log_run}  # protocol -> its fast world's Python side
PROTOCOLS = tuple(WORLDS)  # protocols with a fast world


def _world(cfg):
    world = WORLDS.get(cfg.protocol)
    if world is None:
        raise Unsupported(f"no fast world models the {cfg.protocol!r} protocol")
    return world


def prepare(cfg, **kw):
    """The config arrays of `cfg`'s fast world (Unsupported: it does not model `cfg`)."""
    return _world(cfg).prepare(cfg, **kw)


def run_history(cfg, seed, steps: int, until_ms: int | None = None, **kw) -> FastResult:
    """One seeded history in `cfg`'s fast world (its module's run_history)."""
    return _world(cfg).run_history(cfg, seed, steps, until_ms, **kw)


def Runner(cfg, **kw):  # noqa: N802 - constructs the protocol's Runner
    """A reusable runner of `cfg`'s fast world: `.run(seed, steps, until_ms)`."""
    return _world(cfg).Runner(cfg, **kw)


def supports(cfg) -> bool:
    """Whether a fast world runs `cfg` (its protocol has one and it models the config)."""
    if cfg.protocol not in PROTOCOLS:
        return False
    try:
        prepare(cfg)
    except Unsupported:
        return False
    return True


__all__ = ["PROTOCOLS", "CapacityError", "FastResult", "FastViolation", "Runner", "Unsupported", "compile_seconds",
           "prepare", "run_history", "supports"]
