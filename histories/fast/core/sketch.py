"""The fingerprint of an observable state, as both worlds compute it.

A world's observable state is what its protocol's `observe` returns for every node (the
trace's `state`) and the set of cut links; spark_harness.sketch counts the distinct ones
of a history (exactly) and of a run (HyperLogLog). The reference computes a fingerprint
from the observed dicts (`digest`, `world_fingerprint`); a twin computes the same 64-bit
number from its arrays (its own `observed` functions, with `fold` and `mix` below), so
a twin's distinct-state sketch is the reference's.

The fingerprint is a fold of 64-bit tokens through splitmix64's finalizer (`mix`): an int
is mixed with a tag, a string is its 64-bit BLAKE2b (a twin gets the few strings it needs,
node ids, role names and the observed keys, as numbers: `text`), None, True and False are
constants, a dict folds its keys and values in order, a list folds its length and the sum
of its items' digests each mixed with its position (so a twin adds a log entry's term
without hashing the whole log again). It is not cryptographic; 64 bits keep collisions
out of any count a fuzz run reaches.
"""

from __future__ import annotations

import hashlib

import numpy as np
from numba import njit

MASK = (1 << 64) - 1
_SPLITMIX_1 = 0xBF58476D1CE4E5B9
_SPLITMIX_2 = 0x94D049BB133111EB
GOLDEN = 0x9E3779B97F4A7C15


def _mix_python(z: int) -> int:
    z &= MASK
    z = ((z ^ (z >> 30)) * _SPLITMIX_1) & MASK
    z = ((z ^ (z >> 27)) * _SPLITMIX_2) & MASK
    return z ^ (z >> 31)


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


# the tags, as signed 64-bit numbers (Numba folds them as constants)
NONE = _signed(_mix_python(1))
TRUE = _signed(_mix_python(2))
FALSE = _signed(_mix_python(3))
LIST = _signed(_mix_python(4))
DICT = _signed(_mix_python(5))
INT = _signed(_mix_python(6))
WORLD = _signed(_mix_python(7))
GOLDEN_SIGNED = _signed(GOLDEN)
M1_SIGNED = _signed(_SPLITMIX_1)
M2_SIGNED = _signed(_SPLITMIX_2)
LOW34 = (1 << 34) - 1  # int64 >> 30 with the sign's bits cleared: a logical shift
LOW37 = (1 << 37) - 1
LOW33 = (1 << 33) - 1


# --- in Numba (int64 arithmetic wraps as uint64 does; right shifts are made logical) ---


@njit(cache=True, inline='always')
def mix(z):
    """splitmix64's finalizer."""
    z = (z ^ ((z >> 30) & LOW34)) * M1_SIGNED
    z = (z ^ ((z >> 27) & LOW37)) * M2_SIGNED
    return z ^ ((z >> 31) & LOW33)


@njit(cache=True, inline='always')
def fold(h, x):
    return mix((h ^ x) + GOLDEN_SIGNED)


@njit(cache=True, inline='always')
def of_int(v):
    return mix(v ^ INT)


@njit(cache=True, inline='always')
def of_bool(v):
    return TRUE if v else FALSE


@njit(cache=True, inline='always')
def list_item(position, item_digest):
    """One item's share of a list's sum."""
    return mix(item_digest + position * GOLDEN_SIGNED)


@njit(cache=True, inline='always')
def of_list(length, item_sum):
    return fold(fold(LIST, length), item_sum)


# --- in Python (the reference's side) ---


def text(s: str) -> int:
    """A string's digest (signed 64-bit)."""
    return _signed(int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "big"))


def _fold_python(h: int, x: int) -> int:
    return _mix_python(((h ^ x) & MASK) + GOLDEN)


def _int_list_sum(values: list) -> int:
    a = np.array(values, dtype=np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        z = a ^ np.uint64(INT & MASK)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_SPLITMIX_1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_SPLITMIX_2)
        d = z ^ (z >> np.uint64(31))
        z = d + np.arange(len(values), dtype=np.uint64) * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_SPLITMIX_1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_SPLITMIX_2)
        z = z ^ (z >> np.uint64(31))
        return int(z.sum(dtype=np.uint64))


def digest(v) -> int:
    """The digest of an observed value (unsigned 64-bit)."""
    if v is None:
        return NONE & MASK
    if v is True:
        return TRUE & MASK
    if v is False:
        return FALSE & MASK
    t = type(v)
    if t is int:
        return _mix_python((v & MASK) ^ (INT & MASK))
    if t is str:
        return text(v) & MASK
    if t is list or t is tuple:
        if len(v) > 16 and all(type(x) is int for x in v):
            total = _int_list_sum(v)
        else:
            total = 0
            for k, x in enumerate(v):
                total = (total + _mix_python(digest(x) + k * GOLDEN)) & MASK
        return _fold_python(_fold_python(LIST & MASK, len(v)), total)
    if t is dict:
        h = DICT & MASK
        for key, value in v.items():
            h = _fold_python(_fold_python(h, digest(key)), digest(value))
        return h
    if isinstance(v, int):  # an IntEnum, say: its number
        return digest(int(v))
    return text(repr(v)) & MASK


def world_fingerprint(node_digests: list, cut) -> int:
    """The fingerprint of a world's observable state from its nodes' digests (in node order)
    and its cut links (unsigned 64-bit)."""
    h = WORLD & MASK
    for d in node_digests:
        h = _fold_python(h, d)
    for a, b in sorted(cut):
        h = _fold_python(_fold_python(h, a), b)
    return h
