"""Distinct-state sketches: stable fingerprints of observable states, and HyperLogLog.

A history's *state* here is its observable state (the trace's `state`: what the
protocol's `observe` returns for every node) plus the set of cut links. Node records
also hold timers and round counters that change at nearly every step; the observable
state is what a user (and another implementation) can see, so its distinct values are
a meaningful measure of how much of the protocol a fuzz run reached.

Fingerprints are 64-bit folds of the observed dicts (histories.fast.core.sketch: ints,
strings, lists and dicts mixed through splitmix64's finalizer, strings by their BLAKE2b
digest; protocols build those dicts in a fixed key order), so they are the same in every
process (Python's own `hash` of strings changes with PYTHONHASHSEED) and in both worlds: a
compiled twin computes the same numbers from its arrays over every history it runs.

Each history counts its distinct fingerprints exactly and keeps them as a sparse
HyperLogLog (p = 12: 4096 registers); sketches merge by register-wise max, so the
distinct states of a whole run are estimated with a standard error of
1.04 / sqrt(4096) = 1.6 % (Flajolet et al. 2007), whatever the number of histories.
Below 2.5 x 4096 distinct values the estimate switches to linear counting, which is
nearly exact there.
"""

from __future__ import annotations

import marshal
import math
from typing import Any

import numpy as np

from histories.fast.core import sketch as fingerprints
from reference_impl import core

P = 12
M = 1 << P
RELATIVE_ERROR = 1.04 / math.sqrt(M)
_RANK_BITS = 64 - P
_LOW_MASK = (1 << _RANK_BITS) - 1


class StateFingerprints:
    """Fingerprints of a world's observable state, computed incrementally: only nodes
    whose record (immutable) or liveness changed are observed again, equal observed
    states share one digest, and `changed` answers None when nothing observable moved."""

    def __init__(self, cfg: core.WorldConfig) -> None:
        p = core.protocol(cfg.protocol)
        self._observe = p.observe
        self._c = cfg.proto
        n = len(cfg.ids)
        self._objs: list[Any] = [None] * n
        self._ups: list[Any] = [None] * n
        self._digs: list[int] = [-1] * n
        self._cut: Any = None
        self._digests: dict[bytes, int] = {}  # encoded observed state -> its digest

    def _digest(self, n: Any, up: bool) -> int:
        observed = self._observe(self._c, n, up)
        try:
            data = marshal.dumps(observed, 0)
        except ValueError:  # a value marshal cannot write: no memo (it keys the digests only)
            return fingerprints.digest(observed)
        digest = self._digests.get(data)
        if digest is None:
            if len(self._digests) > 4096:
                self._digests.clear()
            digest = self._digests[data] = fingerprints.digest(observed)
        return digest

    def changed(self, w: core.World) -> int | None:
        """The fingerprint of `w`, or None if its observable state equals the last one asked."""
        objs, ups, digs = self._objs, self._ups, self._digs
        alive = w.alive
        moved = False
        for i, n in enumerate(w.nodes):
            up = alive[i]
            if n is objs[i] and up is ups[i]:
                continue
            objs[i], ups[i] = n, up
            d = self._digest(n, up)
            if d != digs[i]:
                digs[i] = d
                moved = True
        cut = w.net.cut
        if cut is not self._cut:
            moved = moved or cut != self._cut
            self._cut = cut
        if not moved:
            return None
        return fingerprints.world_fingerprint(digs, cut)


def register_of(fp: int) -> tuple[int, int]:
    """(register index, rank): the top P bits choose the register; the rank is the
    position of the first 1 in the remaining bits."""
    low = fp & _LOW_MASK
    return fp >> _RANK_BITS, _RANK_BITS - low.bit_length() + 1


def sparse(fps) -> bytes:
    """A history's sketch: the non-zero registers, 3 bytes each (index << 6 | rank). `fps`: a
    set of fingerprints, or a twin's array of them (unsigned 64-bit)."""
    if isinstance(fps, np.ndarray):
        return _sparse_array(fps)
    regs: dict[int, int] = {}
    for fp in fps:
        idx, rank = register_of(fp)
        if rank > regs.get(idx, 0):
            regs[idx] = rank
    return b"".join(((idx << 6) | rank).to_bytes(3, "big") for idx, rank in sorted(regs.items()))


def _sparse_array(fps: np.ndarray) -> bytes:
    """`sparse` of an array of distinct fingerprints (numpy, no Python loop over them)."""
    if len(fps) == 0:
        return b""
    fps = fps.astype(np.uint64)
    idx = (fps >> np.uint64(_RANK_BITS)).astype(np.int64)
    low = fps & np.uint64(_LOW_MASK)
    # the rank: position of the first 1 in the low bits (bit_length of low, from the top)
    bits = np.zeros(len(fps), np.int64)
    value = low.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        big = value >= (np.uint64(1) << np.uint64(shift))
        bits += big * shift
        value = np.where(big, value >> np.uint64(shift), value)
    bits += (value > 0).astype(np.int64)
    rank = _RANK_BITS - bits + 1
    regs = np.zeros(M, np.int64)
    np.maximum.at(regs, idx, rank)
    nz = np.nonzero(regs)[0]
    packed = (nz << 6) | regs[nz]
    # 3 big-endian bytes each, as `sparse` writes them: the top three bytes of a big-endian int32
    return (packed.astype(">u4").view(np.uint8).reshape(-1, 4)[:, 1:]).tobytes()


def merge_sparse(registers: bytearray, data: bytes) -> None:
    """Fold a sparse sketch into dense registers (register-wise max)."""
    if not data:
        return
    entries = np.frombuffer(data, np.uint8).reshape(-1, 3).astype(np.int64)
    v = entries[:, 0] << 16 | entries[:, 1] << 8 | entries[:, 2]
    np.maximum.at(np.frombuffer(registers, np.uint8), v >> 6, (v & 63).astype(np.uint8))


def merge_dense(into: bytearray, other: bytes) -> None:
    for i, r in enumerate(other):
        into[i] = max(into[i], r)


def estimate(registers: bytes) -> int:
    """The HyperLogLog estimate of the number of distinct fingerprints folded in."""
    zeros = registers.count(0)
    if zeros == M:
        return 0
    alpha = 0.7213 / (1 + 1.079 / M)
    raw = alpha * M * M / sum(2.0 ** -r for r in registers)
    if raw <= 2.5 * M and zeros:
        return round(M * math.log(M / zeros))
    return round(raw)


def empty() -> bytearray:
    return bytearray(M)
