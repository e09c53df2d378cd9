"""What the command line accepts: the bounds on its numbers and the bounded flag types that
hold them, the one-line error for bad input (exit 2), and what several commands share:
`--config` overrides, `--import` and `--no-progress`."""

from __future__ import annotations

import argparse
import math
import os
import re
from typing import Any

from histories import formats


class UsageError(Exception):
    """Bad input: reported in one line, exit 2."""


INT64 = (-(1 << 63), (1 << 63) - 1)
MAX_STEPS = 10_000_000  # events of one history (simulate): a few minutes of the slowest world
MAX_HISTORIES = 1_000_000  # histories per protocol of one fuzz run
MAX_BUDGET = 100_000_000  # replayed steps of one shrink
MAX_LINES = 1_000_000
MAX_COVERAGE = 1_000_000  # random histories per explore --coverage figure
CORES = os.cpu_count() or 1


def config_overrides(text: str | None) -> dict | None:
    """`--config`: protocol config overrides as a strict JSON object (None when not given)."""
    if not text:
        return None
    if len(text.encode("utf-8", "surrogatepass")) > 1 << 20:
        raise UsageError("--config is longer than 1 MiB")
    return formats.check_overrides(formats.loads(text, "--config"), "--config")


def int_in(lo: int, hi: int) -> Any:
    """An integer flag within lo..hi (digits only: no '1e3', no 5,000-digit numbers)."""
    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*[-+]?\d{1,20}\s*", text):
            raise argparse.ArgumentTypeError(f"not an integer: {formats.escape(text[:40])!r}")
        v = int(text)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be in {lo:,}..{hi:,}, got {v:,}")
        return v
    return parse


def float_in(lo: float, hi: float) -> Any:
    """A finite number flag within lo..hi (nan and inf refused)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {formats.escape(text[:40])!r}") from None
        if not math.isfinite(v) or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be a number in {lo:g}..{hi:g}, got {formats.escape(text[:40])}")
        return v
    return parse


int64 = int_in(*INT64)


def comma_list(kind: Any, name: str = "") -> Any:
    """A comma-separated list of at most 64 values, each parsed by `kind`."""
    def parse(text: str) -> list:
        parts = [x for x in text.split(",") if x.strip()]
        if len(parts) > 64:
            raise argparse.ArgumentTypeError("at most 64 values")
        try:
            out = [kind(x) for x in parts]
        except (ValueError, argparse.ArgumentTypeError) as e:
            raise argparse.ArgumentTypeError(f"not a comma-separated list of {name or kind.__name__}: "
                                             f"{formats.escape(text[:60])!r} ({e})") from None
        if not out:
            raise argparse.ArgumentTypeError("empty list")
        return out
    return parse


def add_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                        help="import MODULE first (it may register extra protocols, e.g. a test mutant)")


def add_progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
