"""A progress line for long runs, on stderr (fuzz histories, shrinking, and the CLI's
`prove`, `bench` and `check` rows).

On a terminal it redraws one line (`\\r`) at most five times a second; otherwise
(logs, CI) it prints a line per item when there are few (at most ITEM_LINES), else at
every tenth of the way, so logs stay short, and at least every QUIET_S seconds while it is
updated (a long history must not look like a hang, issue 29). The times it shows are wall-clock seconds
since the bar started; the eta is a straight-line guess from the items done so far.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

WIDTH = 30
ITEM_LINES = 60  # below this many items, a log gets a line per item
QUIET_S = 10.0  # a log gets a line at least this often while updates come


class Progress:
    def __init__(self, total: int, label: str = "fuzz", out: IO[str] | None = None, enabled: bool = True,
                 unit: str = "histories") -> None:
        self.total = max(1, total)
        self.label = label
        self.unit = unit
        self.out = out if out is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.out, "isatty") and self.out.isatty()
        self.done = 0
        self.detail = ""
        self.start = time.monotonic()
        self._last_draw = 0.0
        self._last_write = self.start
        self._last_tenth = -1
        self._last_key: tuple | None = None
        self._finished = False
        self._lock = threading.Lock()

    def advance(self, n: int = 1, detail: str = "") -> None:
        self.update(self.done + n, detail)

    def update(self, done: int, detail: str = "") -> None:
        with self._lock:
            moved = min(done, self.total) != self.done
            self.done = min(done, self.total)
            self.detail = detail
            self._draw(final=False, moved=moved)

    def note(self, detail: str) -> None:
        """Say what is running now without moving (a phase that has begun, a row inside
        a part): redrawn on a terminal, a line of its own in a log."""
        with self._lock:
            self.detail = detail
            if self.enabled and not self.tty:
                self._write()
            else:
                self._draw(final=False, moved=False)

    def _line(self, final: bool = False) -> str:
        frac = self.done / self.total
        bar = "#" * int(frac * WIDTH) + "." * (WIDTH - int(frac * WIDTH))
        elapsed = time.monotonic() - self.start
        eta = f", eta {elapsed / frac - elapsed:.0f} s" if 0 < frac < 1 and not final else ""
        detail = f"  {self.detail}" if self.detail else ""
        return (f"{self.label} [{bar}] {frac:4.0%}  {self.done:,}/{self.total:,} {self.unit}  "
                f"{elapsed:.0f} s{eta}{detail}")

    def _write(self, final: bool = False, quiet_too_long: bool = False) -> None:
        """A log line, unless it would repeat the last one's count and detail (but for the
        line that breaks a silence of QUIET_S seconds: its time has moved)."""
        key = (self.done, self.detail)
        if key == self._last_key and not (final and self.done < self.total) and not quiet_too_long:
            return  # an early end drops the eta: that last line is written
        self._last_key = key
        self._last_write = time.monotonic()
        self.out.write(self._line(final) + "\n")
        self.out.flush()

    def _draw(self, final: bool, moved: bool = True) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if final or now - self._last_draw >= 0.2:
                self.out.write("\r" + self._line(final).ljust(100) + ("\n" if final else ""))
                self.out.flush()
                self._last_draw = now
            return
        if final or (moved and self.total <= ITEM_LINES):
            self._write(final)
            return
        tenth = int(10 * self.done / self.total)
        if tenth > self._last_tenth:
            self._last_tenth = tenth
            self._write()
        elif now - self._last_write >= QUIET_S:
            self._write(quiet_too_long=True)

    def clear(self) -> None:
        """On a terminal, blank the line so that other output can be printed; the next
        update draws it again."""
        with self._lock:
            if self.tty:
                self.out.write("\r" + " " * 100 + "\r")
                self.out.flush()
                self._last_draw = 0.0

    def finish(self, done: int | None = None, detail: str | None = None) -> None:
        """The last line: where it ended (`done` and `detail` if given), without an eta;
        once, however often called."""
        with self._lock:
            if done is not None:
                self.done = min(done, self.total)
            if detail is not None:
                self.detail = detail
            if self.enabled and not self._finished:
                self._finished = True
                self._draw(final=True)
