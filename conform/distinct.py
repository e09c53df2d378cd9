"""Which texts have been seen, in memory that does not hold the texts: a vectors file's ids
(its vectors must have distinct ids) and the generated cases of `vectors --count` (they must
be distinct), up to millions of them.

A Python set of the texts themselves costs about 100 bytes per member (a 2.3 GB vectors file
has a million ids; `vectors --count 1000000` keyed each case by its whole JSON, 1.5 KB). Here
each text is held as its 128-bit BLAKE2b digest in one flat table (open addressing, linear
probing, at most three quarters full): at most 43 bytes per member, 32 MiB for a million
(48 MiB for the moment the table doubles to hold them).
Two different texts share a digest with a probability of about n^2 / 2^129 (10^-26 for two
million texts), so a digest seen before is taken for the text seen before.
"""

from __future__ import annotations

import hashlib
from array import array

_EMPTY = 0  # a slot's first word; a digest whose first word is 0 is stored with 1 there


class Distinct:
    def __init__(self, expected: int = 0) -> None:
        """`expected`: how many members to make room for at once (the table grows past it)."""
        slots = 1024
        while 3 * slots < 4 * expected:
            slots *= 2
        self._table = array("Q", bytes(16 * slots))  # two 64-bit words per slot, all empty
        self._slots, self.size = slots, 0

    def add(self, text: str) -> bool:
        """Add `text`: True if it is new, False if it was added before."""
        if 4 * (self.size + 1) > 3 * self._slots:
            self._grow()
        return self._put(*_digest(text), add=True)

    def __contains__(self, text: str) -> bool:
        return not self._put(*_digest(text), add=False)

    def __len__(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        """The table's memory."""
        return self._table.itemsize * len(self._table)

    def _put(self, first: int, second: int, add: bool) -> bool:
        """Whether the digest was missing (then added if `add`)."""
        table, mask = self._table, self._slots - 1
        i = first & mask
        while True:
            word = table[2 * i]
            if word == _EMPTY:
                if add:
                    table[2 * i], table[2 * i + 1] = first, second
                    self.size += 1
                return True
            if word == first and table[2 * i + 1] == second:
                return False
            i = (i + 1) & mask

    def _grow(self) -> None:
        old = self._table
        self._table, self._slots, self.size = array("Q", bytes(32 * self._slots)), 2 * self._slots, 0
        for k in range(0, len(old), 2):
            if old[k] != _EMPTY:
                self._put(old[k], old[k + 1], add=True)


def _digest(text: str) -> tuple[int, int]:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest[:8], "little") or 1, int.from_bytes(digest[8:], "little")
