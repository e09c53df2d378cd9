"""The Mersenne Twister (MT19937) in Numba, drawing exactly what CPython's `random.Random` draws.

A twin must make the reference's choices from the same seed, so it carries CPython's generator as a 625-word
array (624 words of state and the position) and reproduces `random()`, `getrandbits()` and `randbelow()` bit
for bit. `state_of` seeds an array the way `random.Random(seed)` does; `to_random` hands one back to Python."""

from __future__ import annotations

import random

import numpy as np
from numba import njit

N = 624


M = 397


MATRIX_A = 0x9908B0DF


UPPER = 0x80000000


LOWER = 0x7FFFFFFF


MASK32 = 0xFFFFFFFF


def state_of(seed) -> np.ndarray:
    """The generator state of `random.Random(seed)` as the kernel's int64[625] array."""
    version, words, _gauss = random.Random(seed).getstate()
    assert version == 3 and len(words) == N + 1
    return np.array(words, dtype=np.int64)


def to_random(mt: np.ndarray) -> random.Random:
    """A `random.Random` in the state of `mt` (to continue or compare in Python)."""
    r = random.Random()
    r.setstate((3, tuple(int(x) for x in mt), None))
    return r


@njit(cache=True)
def twist(mt):
    for kk in range(N - M):
        y = (mt[kk] & UPPER) | (mt[kk + 1] & LOWER)
        mt[kk] = mt[kk + M] ^ (y >> 1) ^ (MATRIX_A if y & 1 else 0)
    for kk in range(N - M, N - 1):
        y = (mt[kk] & UPPER) | (mt[kk + 1] & LOWER)
        mt[kk] = mt[kk + (M - N)] ^ (y >> 1) ^ (MATRIX_A if y & 1 else 0)
    y = (mt[N - 1] & UPPER) | (mt[0] & LOWER)
    mt[N - 1] = mt[M - 1] ^ (y >> 1) ^ (MATRIX_A if y & 1 else 0)


@njit(cache=True, inline='always')
def genrand(mt):
    idx = mt[N]
    if idx >= N:
        twist(mt)
        idx = 0
    y = mt[idx]
    mt[N] = idx + 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y & MASK32


@njit(cache=True, inline='always')
def random53(mt):
    a = genrand(mt) >> 5
    b = genrand(mt) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline='always')
def getrandbits(mt, k):
    return genrand(mt) >> (32 - k)


@njit(cache=True, inline='always')
def bit_length(n):
    k = 0
    while n > 0:
        k += 1
        n >>= 1
    return k


@njit(cache=True, inline='always')
def randbelow(mt, n):
    k = bit_length(n)
    r = getrandbits(mt, k)
    while r >= n:
        r = getrandbits(mt, k)
    return r


@njit(cache=True)
def init_by_array(mt, key, keylen):
    """CPython's `random_seed` for an int seed: init_genrand(19650218), then init_by_array
    over the 32-bit words of abs(seed), little end first. Leaves the index at N, as
    `Random(seed)` does."""
    mt[0] = 19650218
    for i in range(1, N):
        mt[i] = (1812433253 * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i) & MASK32
    i = 1
    j = 0
    k = N if N > keylen else keylen
    while k > 0:
        mt[i] = ((mt[i] ^ (((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525) & MASK32)) + key[j] + j) & MASK32
        i += 1
        j += 1
        if i >= N:
            mt[0] = mt[N - 1]
            i = 1
        if j >= keylen:
            j = 0
        k -= 1
    k = N - 1
    while k > 0:
        mt[i] = ((mt[i] ^ (((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941) & MASK32)) - i) & MASK32
        i += 1
        if i >= N:
            mt[0] = mt[N - 1]
            i = 1
        k -= 1
    mt[0] = 0x80000000
    mt[N] = N


def seed_key(seed) -> np.ndarray | None:
    """The init_by_array key of an int seed (None for other seed types, which go through
    `random.Random(seed).getstate()`)."""
    if type(seed) is not int:
        return None
    a = abs(seed)
    words = []
    while a:
        words.append(a & MASK32)
        a >>= 32
    return np.array(words or [0], np.int64)


def seed_into(mt: np.ndarray, seed) -> None:
    """Put `mt` in the state of `random.Random(seed)`."""
    key = seed_key(seed)
    if key is None:
        mt[:] = state_of(seed)
    else:
        init_by_array(mt, key, len(key))
