"""A progress bar for fuzz runs, on stderr.

On a terminal it redraws one line (`\\r`) at most five times a second; otherwise
(logs, CI) it prints a line at every tenth of the way, so logs stay short.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

WIDTH = 30


class Progress:
    def __init__(self, total: int, label: str = "fuzz", out: IO[str] | None = None, enabled: bool = True) -> None:
        self.total = max(1, total)
        self.label = label
        self.out = out if out is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.out, "isatty") and self.out.isatty()
        self.done = 0
        self.detail = ""
        self.start = time.monotonic()
        self._last_draw = 0.0
        self._last_tenth = -1
        self._lock = threading.Lock()

    def advance(self, n: int = 1, detail: str = "") -> None:
        self.update(self.done + n, detail)

    def update(self, done: int, detail: str = "") -> None:
        with self._lock:
            self.done = min(done, self.total)
            self.detail = detail
            self._draw(final=False)

    def _line(self) -> str:
        frac = self.done / self.total
        bar = "#" * int(frac * WIDTH) + "." * (WIDTH - int(frac * WIDTH))
        elapsed = time.monotonic() - self.start
        eta = f", eta {elapsed / frac - elapsed:.0f} s" if 0 < frac < 1 else ""
        detail = f"  {self.detail}" if self.detail else ""
        return (f"{self.label} [{bar}] {frac:4.0%}  {self.done:,}/{self.total:,} histories  "
                f"{elapsed:.0f} s{eta}{detail}")

    def _draw(self, final: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            if final or now - self._last_draw >= 0.2:
                self.out.write("\r" + self._line().ljust(100) + ("\n" if final else ""))
                self.out.flush()
                self._last_draw = now
            return
        tenth = int(10 * self.done / self.total)
        if tenth > self._last_tenth or final:
            self._last_tenth = tenth
            self.out.write(self._line() + "\n")
            self.out.flush()

    def finish(self) -> None:
        with self._lock:
            if self.tty:
                self._draw(final=True)
            elif self.enabled and self._last_tenth < 10:
                self._last_tenth = 10
                self.out.write(self._line() + "\n")
                self.out.flush()
