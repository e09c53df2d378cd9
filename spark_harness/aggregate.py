"""Aggregating per-history summaries into a run's totals, in bounded memory.

An `Aggregate` folds summaries in one by one (`add`) and merges with another
(`merge`); both are commutative and associative with exact integer arithmetic, so
any split of the histories into tasks, and any order of arrival, gives the same
result. Its size does not grow with the number of histories: counters, sets of
coverage items (bounded by the protocol), HyperLogLog registers, fixed-resolution
histograms, and the shortest failing history of each property.

Histograms bucket values on a log scale, 8 buckets per power of two (the bucket of v
spans at most 1/8 of v; small integers fall in buckets of their own), keeping the
exact count, minimum, maximum and sum; quantiles are bucket midpoints clamped to the
observed range (for integer-valued data, the one integer such a narrow bucket holds).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from spark_harness import sketch

SUB = 8  # histogram buckets per power of two


class Histogram:
    __slots__ = ("buckets", "count", "hi", "integral", "lo", "sum_milli")

    def __init__(self) -> None:
        self.buckets: Counter = Counter()
        self.count = 0
        self.integral = True
        self.lo: float | None = None
        self.hi: float | None = None
        self.sum_milli = 0  # exact: sums of floats would depend on the order of addition

    @staticmethod
    def key(v: float) -> tuple[int, int, int]:
        if v == 0:
            return (0, 0, 0)
        m, e = math.frexp(abs(v))
        return (1 if v > 0 else -1, e, int((m - 0.5) * 2 * SUB))

    @staticmethod
    def bounds(key: tuple[int, int, int]) -> tuple[float, float]:
        sign, e, sub = key
        if sign == 0:
            return 0.0, 0.0
        a, b = (0.5 + sub / (2 * SUB)) * 2.0 ** e, (0.5 + (sub + 1) / (2 * SUB)) * 2.0 ** e
        return (a, b) if sign > 0 else (-b, -a)

    def add(self, v: float) -> None:
        self.buckets[self.key(v)] += 1
        self.count += 1
        self.lo = v if self.lo is None or v < self.lo else self.lo
        self.hi = v if self.hi is None or v > self.hi else self.hi
        self.sum_milli += round(v * 1000)
        self.integral = self.integral and float(v).is_integer()

    def merge(self, other: Histogram) -> None:
        self.buckets.update(other.buckets)
        self.count += other.count
        for v in (other.lo, other.hi):
            if v is not None:
                self.lo = v if self.lo is None or v < self.lo else self.lo
                self.hi = v if self.hi is None or v > self.hi else self.hi
        self.sum_milli += other.sum_milli
        self.integral = self.integral and other.integral

    def sorted_buckets(self) -> list[tuple[float, float, int]]:
        return sorted((*self.bounds(k), n) for k, n in self.buckets.items())

    def quantile(self, q: float) -> float | None:
        if not self.count:
            return None
        want = q * self.count
        seen = 0
        for a, b, n in self.sorted_buckets():
            seen += n
            if seen >= want:
                v = math.ceil(a) if self.integral and b - a <= 1 else (a + b) / 2
                return min(max(v, self.lo), self.hi)
        return self.hi

    def summary(self) -> dict:
        if not self.count:
            return {"count": 0}
        r = lambda v: round(v, 3)
        return {"count": self.count, "min": r(self.lo), "max": r(self.hi),
                "mean": r(self.sum_milli / 1000 / self.count), "p50": r(self.quantile(0.5)),
                "p90": r(self.quantile(0.9)), "p99": r(self.quantile(0.99)),
                "buckets": [[r(a), r(b), n] for a, b, n in self.sorted_buckets()]}


def _first(a: dict | None, b: dict | None) -> dict | None:
    """The shorter failing history (fewest steps to the violation; then the smaller seed):
    the one worth shrinking."""
    if a is None or b is None:
        return a or b
    key = lambda x: (x["step"], x["seed"], x["profile"], x["nodes"])
    return a if key(a) <= key(b) else b


def cause_template(text: str) -> str:
    """Causes name nodes and numbers; counting them by template keeps the table bounded."""
    return re.sub(r"\d+", "#", text)


class PropertyTally:
    __slots__ = ("causes", "expected", "first_expected", "first_unexpected", "histories", "unexpected")

    def __init__(self) -> None:
        self.histories = self.unexpected = self.expected = 0
        self.causes: Counter = Counter()
        self.first_unexpected: dict | None = None  # the shortest history violating it unexpectedly
        self.first_expected: dict | None = None  # the shortest violating it with a known cause

    def merge(self, o: PropertyTally) -> None:
        self.histories += o.histories
        self.unexpected += o.unexpected
        self.expected += o.expected
        self.causes.update(o.causes)
        self.first_unexpected = _first(self.first_unexpected, o.first_unexpected)
        self.first_expected = _first(self.first_expected, o.first_expected)


MAX_MISMATCHES = 20  # fast-world disagreements listed by seed (all are counted)


class ProtocolAggregate:
    def __init__(self) -> None:
        self.histories = self.steps = self.sim_ms = 0
        self.engines: Counter = Counter()  # rows by the world that made them (spark_harness.history)
        self.coverage_histories = 0  # rows with coverage and a state sketch
        self.mismatches: list[dict] = []  # the smallest seeds where the fast world disagreed
        self.stopped: Counter = Counter()
        self.profiles: dict[str, Counter] = {}  # profile -> histories, steps, violating, unexpected, faults by kind
        self.nodes: Counter = Counter()
        # "axis=value" (spark_harness/variants.py) -> histories, steps, violating, unexpected,
        # viol:<ID> and unexp:<ID> (histories), cause:<template> (expected violations)
        self.variants: dict[str, Counter] = {}
        self.violations: dict[str, PropertyTally] = {}
        self.actions: set[str] = set()
        self.branches: set[str] = set()
        self.kinds: set[str] = set()
        self.registers = sketch.empty()
        self.dists: dict[str, Histogram] = {}

    def _dist(self, name: str, v: float) -> None:
        h = self.dists.get(name)
        if h is None:
            h = self.dists[name] = Histogram()
        h.add(v)

    def add(self, row: dict) -> None:
        self.histories += 1
        self.steps += row["steps"]
        self.sim_ms += row["t_ms"]
        self.stopped[row["stopped"]] += 1
        self.nodes[row["nodes"]] += 1
        engine = row.get("engine") or "reference"
        self.engines[engine] += 1
        if engine == "mismatch":
            self._mismatch([{"seed": row["seed"], "profile": row["profile"], "nodes": row["nodes"]}])
        prof = self.profiles.setdefault(row["profile"], Counter())
        prof["histories"] += 1
        prof["steps"] += row["steps"]
        prof["violating"] += bool(row["violations"])
        prof["unexpected"] += bool(row["unexpected"])
        faults = row["faults"] or {}
        for kind, n in faults.items():
            prof["fault:" + kind] += n
        variant = row.get("variant") or {}
        for axis, value in variant.items():
            c = self.variants.setdefault(f"{axis}={value}", Counter())
            c["histories"] += 1
            c["steps"] += row["steps"]
            c["violating"] += bool(row["violations"])
            c["unexpected"] += bool(row["unexpected"])
            for v in row["violations"]:
                c["viol:" + v["property"]] += 1
                if v["expected"] is None:
                    c["unexp:" + v["property"]] += 1
                else:
                    c["cause:" + cause_template(v["expected"])] += 1
        for v in row["violations"]:
            t = self.violations.setdefault(v["property"], PropertyTally())
            t.histories += 1
            first = {"seed": row["seed"], "profile": row["profile"], "nodes": row["nodes"], "step": v["step"],
                     "t_ms": v["t_ms"], "detail": v["detail"], "expected": v["expected"],
                     "variant": dict(sorted(variant.items())), "config": row.get("config", "{}")}
            if v["expected"] is None:
                t.unexpected += 1
                t.first_unexpected = _first(t.first_unexpected, first)
            else:
                t.expected += 1
                t.causes[cause_template(v["expected"])] += 1
                t.first_expected = _first(t.first_expected, first)
        if row["states"] >= 0:  # -1: no coverage in this row (the fast world's)
            self.coverage_histories += 1
            self.actions.update(row["actions"])
            self.branches.update(row["branches"])
            self.kinds.update(row["kinds"])
            sketch.merge_sparse(self.registers, bytes(row["state_sketch"]))
            self._dist("distinct_states", row["states"])
        self._dist("steps", row["steps"])
        self._dist("sim_s", row["t_ms"] / 1000)
        self._dist("faults", sum(faults.values()))
        for k, v in (row["stats"] or {}).items():
            if v is not None and not math.isnan(v):
                self._dist("stat:" + k, v)

    def _mismatch(self, rows: list[dict]) -> None:
        self.mismatches = sorted(self.mismatches + rows, key=lambda x: (x["seed"], x["profile"], x["nodes"]))
        del self.mismatches[MAX_MISMATCHES:]

    def merge(self, o: ProtocolAggregate) -> None:
        self.histories += o.histories
        self.engines.update(o.engines)
        self.coverage_histories += o.coverage_histories
        self._mismatch(o.mismatches)
        self.steps += o.steps
        self.sim_ms += o.sim_ms
        self.stopped.update(o.stopped)
        self.nodes.update(o.nodes)
        for name, c in o.profiles.items():
            self.profiles.setdefault(name, Counter()).update(c)
        for name, c in o.variants.items():
            self.variants.setdefault(name, Counter()).update(c)
        for prop, t in o.violations.items():
            self.violations.setdefault(prop, PropertyTally()).merge(t)
        self.actions |= o.actions
        self.branches |= o.branches
        self.kinds |= o.kinds
        sketch.merge_dense(self.registers, o.registers)
        for name, h in o.dists.items():
            self.dists.setdefault(name, Histogram()).merge(h)


class Aggregate:
    """Per-protocol aggregates of a fuzz run."""

    def __init__(self) -> None:
        self.protocols: dict[str, ProtocolAggregate] = {}

    def add(self, row: dict) -> None:
        p = self.protocols.get(row["protocol"])
        if p is None:
            p = self.protocols[row["protocol"]] = ProtocolAggregate()
        p.add(row)

    def merge(self, other: Aggregate) -> Aggregate:
        for name, p in other.protocols.items():
            self.protocols.setdefault(name, ProtocolAggregate()).merge(p)
        return self

    @property
    def histories(self) -> int:
        return sum(p.histories for p in self.protocols.values())

    @property
    def steps(self) -> int:
        return sum(p.steps for p in self.protocols.values())

    @classmethod
    def of(cls, rows: Any) -> Aggregate:
        agg = cls()
        for row in rows:
            agg.add(row)
        return agg
