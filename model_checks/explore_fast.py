"""`rmqspec explore --engine fast`: the breadth-first search of model_checks/explore.py over
the election twin's arrays (histories/fast/election/explore.py) instead of reference worlds.

Same search: the same choices per state (every enabled event, each tick once per draw
value, every fault of the profile), pinned timing, the same bounds (depth, largest
currTerm), the same fingerprint (with symmetry: the orbit under node renaming, as
model_checks/symmetry.py defines it), every property of spec/election.py on every
transition. What differs is who computes: the twin's kernel applies each choice (its
own transitions and monitor), one Numba call per level.

The reference stays the judge: a violation the fast search finds is re-run in the
reference world, choice by choice (model_checks.explore.events lists the same choices in
the same order), and the property must fail there too; its expected cause is the
reference's. property_tests/test_explore_fast.py holds the distinct-state counts per
depth equal to the reference explorer's.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import numpy as np
from numba import typed, types

from histories.fast import CapacityError
from histories.fast.election import explore as X
from histories.fast.election import layout as election_layout
from histories.fast.election import runner as fast_run
from model_checks import symmetry
from model_checks.explore import EXTREMES, ExploreResult, Found, events
from reference_impl import core
from reference_impl.core import faults
from spec import properties

FLIGHT = 32  # capacities of one explored state (a bounded search stays far below; more overflow loudly)
RPCS = 32
FIRST_BUFFER = 1 << 20  # int64s of packed successors at first (doubled as needed)


def _room(a: np.ndarray, used: int, need: int) -> np.ndarray:
    """`a` with at least `need` elements, its first `used` kept (doubling: copies stay linear)."""
    if a.shape[0] >= need:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[:used] = a[:used]
    return b


class MismatchError(AssertionError):
    """The fast search found a violation the reference does not reproduce (a twin bug)."""


class FastExplorer:
    """Breadth-first search over the twin's states of `cfg` (an election WorldConfig)."""

    def __init__(self, cfg: core.WorldConfig, depth: int, limit: int | None = None, use_symmetry: bool = True,
                 draws: tuple[int, ...] = EXTREMES, max_states: int | None = None, mutant: str | None = None) -> None:
        """`mutant`: a test-only broken twin (histories.fast.election.runner.prepare); install the same one in the
        reference, which judges every violation found."""
        # pinned timing, as the reference explorer (a tick at its wake time, no lateness draws)
        cfg = cfg.evolve(profile=cfg.profile.evolve(timing="pinned"))
        self.cfg, self.depth, self.limit, self.draws, self.max_states = cfg, depth, limit, draws, max_states
        n = len(cfg.ids)
        # a candidate raises its term by one a step: terms stay below limit + 2 (depth + 2 unbounded)
        terms = (limit if limit is not None else depth) + 3
        # the search counts its own states (its fingerprints): the twin's sketch is not kept
        self.p = fast_run.prepare(cfg, terms=terms, mutant=mutant, see_states=False)
        self.s = fast_run.new_state(self.p, flight=FLIGHT, rpcs=RPCS, notes=2 * depth + 16)
        fast_run.reset(self.p, self.s, 0)
        self.mutant = None if self.p.mutant is None else np.int64(self.p.mutant)
        self.sym = use_symmetry and symmetry.symmetric(cfg)
        perms = list(itertools.permutations(range(n))) if self.sym else [tuple(range(n))]
        self.perms = np.array(perms, np.int64)
        self.invs = np.argsort(self.perms, axis=1).astype(np.int64)
        props = properties.for_protocol(cfg.protocol)
        self.props = {p.id: p for p in props}
        self.is_state = np.array([1 if self.props[pid].holds is not None else 0
                                  for pid in election_layout.PROPERTY_IDS], np.int64)
        niso = self.p.isolations.shape[0]
        nch = (1 + n + FLIGHT + RPCS) * len(draws) + 2 * FLIGHT + 5 * n + niso + n * n + 1
        self.ch = np.zeros((nch, 3), np.int64)
        self.rh = np.zeros(RPCS, np.int64)
        self.sig = np.zeros((2, n), np.int64)
        self.par = np.full(1024, -1, np.int64)
        self.evc = np.full(1024, -1, np.int64)
        bound = f"depth {depth}" + (f", max currTerm <= {limit}" if limit is not None else "")
        self.result = ExploreResult(protocol=cfg.protocol, nodes=n, depth=depth, bound=bound, symmetry=self.sym,
                                    draws=draws, profile=cfg.profile.name, engine="fast")

    def _key(self) -> int:
        return int(X.key(self.s.table, len(self.cfg.ids), self._symmetry()))

    def _symmetry(self) -> tuple:
        return self.perms, self.invs, self.sym, self.rh, self.sig

    def _grow(self, nstates: int) -> None:
        if nstates + self.ch.shape[0] + 1 >= self.par.shape[0]:
            size = max(2 * self.par.shape[0], nstates + 2 * self.ch.shape[0] + 2)
            self.par = _room(self.par, nstates, size)
            self.evc = _room(self.evc, nstates, size)

    def run(self, on_level: Callable[[int, int, int], None] | None = None) -> ExploreResult:
        res = self.result
        start = time.perf_counter()
        s, n = self.s, len(self.cfg.ids)
        w0 = core.init(self.cfg)
        for prop in self.props.values():  # the initial state, judged by the reference itself
            if prop.holds is not None and not prop.holds(w0):
                res.found[prop.id] = Found(property=prop.id, expected=None, depth=0, events=[])
        fixed = int(X.fixed_size(n, s.elected.shape[0]))
        rec = (fixed + s.flight.shape[0] * s.flight.shape[1] + s.rpcs.shape[0] * s.rpcs.shape[1]
               + s.notes.shape[0] * s.notes.shape[1])  # a packed state at most
        front = np.zeros(rec, np.int64)
        foff = np.zeros(2, np.int64)
        foff[1] = X.pack(s.table, front, 0, n)
        seen = typed.Dict.empty(types.int64, types.int64)
        seen[self._key()] = 0
        nstates, base, nfront = 1, 0, 1
        hits = np.full((len(election_layout.PROPERTY_IDS), 2), -1, np.int64)
        counts = np.zeros(2, np.int64)
        draws = np.array(self.draws, np.int64)
        res.levels.append(1)
        complete = True
        out = np.empty(FIRST_BUFFER, np.int64)
        ooff = np.zeros(1 << 12, np.int64)
        limit = -1 if self.limit is None else self.limit
        for level in range(1, self.depth + 1):
            f, nout, nxt_base = 0, 0, nstates
            while True:
                self._grow(nstates)
                status, f, nout, nstates = X.expand(
                    s.table, self.mutant, (front, foff, out, ooff), (draws, self.ch),
                    (seen, self.par, self.evc, hits, self.is_state, counts), self._symmetry(),
                    (f, nfront, base, nout, nstates, limit, self.max_states or 0, level < self.depth))
                if status == X.NEED_SPACE:  # room for every successor of one more state, then go on
                    out = _room(out, int(ooff[nout]), int(ooff[nout]) + rec * (1 + self.ch.shape[0]) + 1)
                    ooff = _room(ooff, nout + 1, nout + self.ch.shape[0] + 3)
                    continue
                if status < 0:
                    raise CapacityError(election_layout.OVERFLOW_NAMES.get(int(status), str(status)), level, None)
                break
            res.levels.append(nout)
            if on_level is not None:
                on_level(level, nout, nstates)
            # the new level becomes the frontier; the next one starts in a buffer of about its size
            front, foff = out, ooff[:nout + 1].copy()
            out = np.empty(max(FIRST_BUFFER, int(ooff[nout]) * 2), np.int64)
            base, nfront = nxt_base, nout
            if status == X.MAX_STATES:
                complete = False
                break
            if nout == 0:
                break
        res.transitions = int(counts[0])
        res.complete = complete
        res.distinct_states = nstates
        res.seconds = time.perf_counter() - start
        for k, pid in enumerate(election_layout.PROPERTY_IDS):
            if hits[k, 0] >= 0 and pid not in res.found:
                res.found[pid] = self._judge(pid, self.path(int(hits[k, 0])) + [int(hits[k, 1])])
        return res

    def path(self, sid: int) -> list[int]:
        """The choices (indices into `events`' list) from the initial state to state `sid`."""
        out = []
        while sid > 0:
            out.append(int(self.evc[sid]))
            sid = int(self.par[sid])
        return out[::-1]

    def _judge(self, pid: str, choices: list[int]) -> Found:
        """Re-run the choices in the reference: the property must fail at the last step there;
        its expected cause is the reference's."""
        prop = self.props[pid]
        w = core.init(self.cfg)
        evs: list = []
        for c in choices:
            ev = events(w, self.draws)[c]
            before = w
            w, obs = core.step(w, ev)
            evs.append(ev)
        if prop.holds is not None:
            bad = not prop.holds(w)
        else:
            bad = not prop.holds_step(before, ev, w, obs)
        if not bad:
            raise MismatchError(f"the fast explorer found {pid} violated after {evs}; the reference does not")
        cause = prop.expected_when(w, ev) if prop.expected_when else None
        return Found(property=pid, expected=cause, depth=len(choices), events=evs)


def compile_seconds() -> float:
    """Wall time to get the explorer's kernels ready in this process (compile, or load the cache):
    a depth-1 search of a 3-node election with no faults, with and without symmetry."""
    cfg = core.protocol("election").make_config(3, {}).evolve(profile=faults.profile("none", "election"))
    t0 = time.perf_counter()
    for use_symmetry in (True, False):
        FastExplorer(cfg, 1, 2, use_symmetry).run()
    return time.perf_counter() - t0
