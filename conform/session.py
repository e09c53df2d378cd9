"""Conformance runs: generated cases through a driver (Hypothesis finds and shrinks the first
mismatch), static vectors through a driver, and writing vectors.

A run needs, per protocol, a *subject*: its inputs and features, a Hypothesis strategy of
cases, its edge cases, and how to turn a case into a wire case and the reference's answer.
`election`, `dledger_log`, `ha`, `nameserver` and `offsets` have one; another protocol adds a module pair like
conform.election and conform.election_cases and one `Subject` entry here.

Hypothesis drives the generated run: each example is one case sent to the driver. The
first mismatch makes Hypothesis shrink (every shrink step is one more case sent), and
the minimal case comes back as the exception of its final replay. A driver that stops
speaking the protocol ends the run at once: `_DriverGone` is a BaseException so that
Hypothesis does not take it for a failure to shrink.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import IO, Any

import attrs
import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.errors import Flaky, Unsatisfiable

from conform import dledger_log, dledger_log_cases, election, election_cases
from conform.compare import Difference, differences
from conform.driver import WIRE, Driver, DriverError, Hello
from conform import ha, ha_cases
from conform import nameserver, nameserver_cases
from conform import offsets, offsets_cases
from conform.distinct import Distinct
from conform.vectors_file import VectorsReader, VectorsWriter
from conform.wire import JAVA_LONG
from conform.wire import show as _show
from histories import formats

VECTORS_SCHEMA = "rmqspec.vectors/1"


class BadInput(ValueError):
    """An unknown protocol or a vectors file that is not one (exit 2)."""


@attrs.frozen
class Subject:
    protocol: str
    inputs: tuple[str, ...]
    features: tuple[str, ...]
    cases: Callable[[tuple[str, ...], frozenset], Any]  # (inputs, features) -> Hypothesis strategy of cases
    edge_cases: Callable[[], Iterator[Any]]
    prepare: Callable[[Any], tuple[dict, dict, tuple[str, ...]]]  # case -> (wire case, expected, requires)
    answer: Callable[[dict], dict]  # wire case -> the reference's answer
    decode: Callable[[dict], Any]  # wire case -> case (raises wire_error)
    sections: Callable[[dict], tuple[str, ...]]  # wire case -> the state sections an answer must have
    check_answer: Callable[[dict, tuple[str, ...]], None]
    describe: Callable[[dict], list[str]]
    value_name: Callable[[str, Any], str | None]  # (difference path, value) -> its Java name, if any
    wire_error: type


def _election_prepare(case: election.Case) -> tuple[dict, dict, tuple[str, ...]]:
    after, _, outs, _ = election.run(case)
    need = election.requires(case, after, outs)
    wire = election.encode_case(case, election.sections_for(need))
    return wire, election.answer(wire), need


def _election_sections(wire: dict) -> tuple[str, ...]:
    return tuple(s for s in election.SECTIONS if s in wire["state"])


def _election_describe(wire: dict) -> list[str]:
    lines = election.describe_state(wire["state"], wire["config"], wire["now_ms"])
    inp = dict(wire["input"])
    kind = inp.pop("kind")
    return [f"state:  {lines[0]}"] + [f"        {x.strip()}" for x in lines[1:]] + \
        [f"input:  {kind} {json.dumps(inp)}"]


SUBJECTS = {
    "election": Subject(protocol="election", inputs=election.INPUTS, features=election.FEATURES,
                        cases=election_cases.cases, edge_cases=election_cases.edge_cases,
                        prepare=_election_prepare, answer=election.answer, decode=election.decode_case,
                        sections=_election_sections,
                        check_answer=election.check_answer, describe=_election_describe, value_name=election.value_name,
                        wire_error=election.WireError),
    "dledger_log": Subject(protocol="dledger_log", inputs=dledger_log.INPUTS, features=dledger_log.FEATURES,
                           cases=dledger_log_cases.cases, edge_cases=dledger_log_cases.edge_cases,
                           prepare=dledger_log.prepare, answer=dledger_log.answer, decode=dledger_log.decode_case,
                           sections=dledger_log.sections, check_answer=dledger_log.check_answer,
                           describe=dledger_log.describe, value_name=dledger_log.value_name,
                           wire_error=dledger_log.WireError),
}
SUBJECTS["ha"] = Subject(protocol="ha", inputs=ha.INPUTS, features=ha.FEATURES, cases=ha_cases.cases,
                         edge_cases=ha_cases.edge_cases, prepare=ha.prepare, answer=ha.answer, decode=ha.decode_case,
                         sections=ha.sections, check_answer=ha.check_answer, describe=ha.describe,
                         value_name=ha.value_name, wire_error=ha.WireError)
SUBJECTS["nameserver"] = Subject(
    protocol="nameserver", inputs=nameserver.INPUTS, features=nameserver.FEATURES, cases=nameserver_cases.cases,
    edge_cases=nameserver_cases.edge_cases, prepare=nameserver.prepare, answer=nameserver.answer,
    decode=nameserver.decode_case, sections=nameserver.sections, check_answer=nameserver.check_answer,
    describe=nameserver.describe, value_name=nameserver.value_name, wire_error=nameserver.WireError)
SUBJECTS["offsets"] = Subject(
    protocol="offsets", inputs=offsets.INPUTS, features=offsets.FEATURES, cases=offsets_cases.cases,
    edge_cases=offsets_cases.edge_cases, prepare=offsets.prepare, answer=offsets.answer,
    decode=offsets.decode_case, sections=offsets.sections, check_answer=offsets.check_answer,
    describe=offsets.describe, value_name=offsets.value_name, wire_error=offsets.WireError)


def subject(protocol: str) -> Subject:
    if protocol not in SUBJECTS:
        raise BadInput(f"no conformance driver for protocol {protocol!r} (known: {', '.join(SUBJECTS)})")
    return SUBJECTS[protocol]


@attrs.frozen
class Mismatch:
    case_id: int
    vector_id: str | None
    case: dict
    requires: tuple[str, ...]
    expected: dict
    got: dict
    differences: tuple[Difference, ...]


@attrs.define
class Outcome:
    protocol: str
    hello: Hello
    cases: int = 0  # cases answered before the first mismatch (all of them when none)
    shrink_cases: int = 0  # cases sent while shrinking the first mismatch
    mismatches: int = 0  # vectors only: every mismatching vector
    skipped: int = 0  # vectors only: vectors the driver's hello rules out
    kinds: Counter = attrs.Factory(Counter)  # input kinds answered
    mismatch: Mismatch | None = None
    flaky: bool = False  # the driver answered a case differently on its replay

    @property
    def ok(self) -> bool:
        return self.mismatch is None


class _Found(Exception):
    def __init__(self, mismatch: Mismatch) -> None:
        super().__init__("mismatch")
        self.mismatch = mismatch


class _DriverGone(BaseException):
    def __init__(self, error: DriverError) -> None:
        super().__init__(str(error))
        self.error = error


def ask(s: Subject, driver: Driver, case_id: int, wire: dict, expected: dict) -> tuple[dict, list[Difference]]:
    """One case through the driver: its answer (shape-checked) and how it differs from `expected`."""
    got = driver.ask(case_id, wire)
    if "error" not in got:
        try:
            s.check_answer(got, s.sections(wire))
        except s.wire_error as e:
            raise DriverError(f"the answer to case {case_id} does not have the protocol's shape: {e}") from None
    return got, differences(expected, got)


GENERATE_BATCH = 1_000  # examples per Hypothesis run of `conform` and `vectors`: a run holds 10-18 KB per example


def conform(protocol: str, driver: Driver, count: int, seed: int,
            progress: Callable[[int, str], None] | None = None) -> Outcome:
    """Hypothesis-generated cases through the driver until `count` agree or one does not (then
    shrunk); `progress(cases that agree, detail)` after each case. The cases come from Hypothesis
    runs of at most GENERATE_BATCH examples with seeds seed, seed + 1, ... (a run holds about
    10 KB per example until it ends, so one run of `count` examples grew with `count`); a run
    that adds no agreeing case ends them (a strategy with no more cases to give)."""
    s = subject(protocol)
    hello = driver.hello(protocol, s.inputs, s.features)
    out = Outcome(protocol=protocol, hello=hello)
    sent = [0]
    first: list[Mismatch] = []
    last: list[Mismatch] = []

    def check(case: Any) -> None:
        wire, expected, need = s.prepare(case)
        sent[0] += 1
        try:
            got, diffs = ask(s, driver, sent[0], wire, expected)
        except DriverError as e:
            raise _DriverGone(e) from None
        if not first and not diffs:
            out.cases += 1
            out.kinds[need[0]] += 1
            if progress:
                progress(out.cases, "")
        elif first and progress:  # shrinking: the count stands, the cases sent go on
            progress(out.cases, f"mismatch on case {first[0].case_id}; shrinking, {sent[0] - first[0].case_id:,} "
                                "cases sent")
        if diffs:
            mm = Mismatch(case_id=sent[0], vector_id=None, case={"case": sent[0], **wire}, requires=need,
                          expected=expected, got=got, differences=tuple(diffs))
            if not first:
                first.append(mm)
                if progress:
                    progress(out.cases, f"mismatch on case {sent[0]}; shrinking")
            last[:] = [mm]
            raise _Found(mm)

    strategy = s.cases(hello.inputs, hello.features)
    for attempt in range(-(-count // GENERATE_BATCH)):
        agreed = out.cases
        if agreed >= count:
            break
        run = settings(max_examples=min(count - agreed, GENERATE_BATCH), database=None, deadline=None,
                       derandomize=False, report_multiple_bugs=False, phases=[Phase.generate, Phase.shrink],
                       suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                       print_blob=False)(given(strategy)(check))
        try:
            hypothesis.seed(seed + attempt)(run)()
        except _DriverGone as gone:
            raise gone.error from None
        except _Found as found:
            out.mismatch = found.mismatch
        except Flaky:
            out.mismatch, out.flaky = (last or first)[0], True
        except Unsatisfiable:
            raise DriverError(f"no generated case fits the driver's inputs {list(hello.inputs)} "
                              f"and features {sorted(hello.features)}") from None
        if out.mismatch is not None or out.cases == agreed:
            break
    if out.mismatch is not None:
        out.shrink_cases = sent[0] - out.cases - 1  # after the agreeing ones and the first mismatch
    return out


# --- static vectors ---


class _Enough(BaseException):
    """Ends a Hypothesis run that has found enough cases (a BaseException, so that Hypothesis
    does not take it for a failure to shrink)."""



@attrs.frozen
class Written:
    vectors: int
    edge: int
    generated: int


def vectors(protocol: str, count: int, seed: int, out: IO[str],
            progress: Callable[[int, int, str], None] | None = None) -> Written:
    """The edge cases, then `count` distinct generated ones, each with the reference's answer,
    written to `out` as a vectors file as each is made (a vector that repeats an earlier one's
    case is left out); `progress(done, total, what)` after each, edge cases first. What is held
    at once is one case and the digests of the cases written (conform.distinct), whatever
    `count` is."""
    s = subject(protocol)
    writer = VectorsWriter(out, {"schema": VECTORS_SCHEMA, "wire": f"{WIRE}/1", "protocol": protocol, "seed": seed,
                                 "inputs": list(s.inputs), "features": list(s.features)})
    edge_cases = list(s.edge_cases())
    edges = Distinct()
    for i, case in enumerate(edge_cases):
        wire, expected, need = s.prepare(case)
        if edges.add(json.dumps(wire, sort_keys=True)):
            writer.vector({"id": f"edge-{i + 1:04d}", "requires": list(need), **wire, "expected": expected})
        if progress:
            progress(i + 1, len(edge_cases), "edge cases answered by the reference")
    n_edge = writer.count

    def take(k: int, key: str, wire: dict, expected: dict, need: tuple[str, ...]) -> None:
        if key not in edges:
            writer.vector({"id": f"random-{k:04d}", "requires": list(need), **wire, "expected": expected})
        if progress:
            progress(k, count, "distinct cases generated and answered")

    _generate(s, count, seed, edges, take)
    writer.close()
    return Written(vectors=writer.count, edge=n_edge, generated=writer.count - n_edge)


def _generate(s: Subject, count: int, seed: int, edges: Distinct,
              take: Callable[[int, str, dict, dict, tuple[str, ...]], None]) -> None:
    """`count` distinct generated cases, each passed to `take(k, key, wire, expected, requires)`
    as it is found (k = 1, 2, ...): Hypothesis runs of at most GENERATE_BATCH examples with
    seeds seed, seed+1, ... (a run repeats some cases, since its choices are few and small), at
    most 20 runs per GENERATE_BATCH cases asked for, until there are enough."""
    found = Distinct(min(count, GENERATE_BATCH))
    batch = min(count, GENERATE_BATCH)
    for attempt in range(20 * -(-count // GENERATE_BATCH)):
        if len(found) >= count:
            break

        @hypothesis.seed(seed + attempt)
        @settings(max_examples=batch, database=None, deadline=None, derandomize=False, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
        @given(s.cases(s.inputs, frozenset(s.features)))
        def collect(case: Any) -> None:
            wire, expected, need = s.prepare(case)
            key = json.dumps(wire, sort_keys=True)
            if found.add(key):
                take(len(found), key, wire, expected, need)
                if len(found) >= count:
                    raise _Enough

        try:
            collect()
        except _Enough:
            break


class VectorsFile:
    """A vectors file read one vector at a time (conform.vectors_file): `subject` from its
    header, then each vector checked as it is read; bad input is a FormatError naming the
    file, the line and the vector. Use as a context manager (it holds the file open)."""

    VECTOR_KEYS = ("id", "requires", "config", "state", "now_ms", "input", "expected")

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.f = open(path, "rb")
        except IsADirectoryError:
            raise BadInput(f"{path}: is a directory, not a vectors file") from None
        except OSError as e:
            raise BadInput(f"cannot read {path}: {e.strerror}") from None
        try:
            self.reader = VectorsReader(self.f, path)
            header = self.reader.header
            if header.get("schema") != VECTORS_SCHEMA:
                raise BadInput(f"{path} is not an {VECTORS_SCHEMA} file (its schema, before 'vectors', must be "
                               f"{VECTORS_SCHEMA!r})")
            if not isinstance(header.get("protocol"), str):
                raise BadInput(f"{path}: protocol must be a protocol's name (before 'vectors'), "
                               f"got {_show(header.get('protocol'))}")
            self.subject = subject(header["protocol"])
        except BaseException:
            self.f.close()
            raise
        self.count = 0

    def __enter__(self) -> VectorsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()

    def __iter__(self) -> Iterator[dict]:
        ids = Distinct()  # a million ids as digests: 32 MiB, not a set of a million strings
        for line, v in self.reader:
            self.count += 1
            self._check(v, line, ids)
            yield v
        if "vectors" not in self.reader.keys:
            raise BadInput(f"{self.path} lacks 'vectors' (a list)")

    def _check(self, v: Any, line: int, ids: Distinct) -> None:
        where = f"vector {self.count}"
        if not isinstance(v, dict):
            self._fail(line, f"{where} must be an object, got {_show(v)}")
        vid = v.get("id")
        if not isinstance(vid, str) or not 1 <= len(vid) <= 200:
            self._fail(line, f"{where}: id must be a string of 1..200 characters, got {_show(vid)}")
        where = f"vector {self.count} ({vid})"
        missing = [k for k in self.VECTOR_KEYS if k not in v]
        if missing:
            self._fail(line, f"{where} lacks {', '.join(map(repr, missing))}")
        if not ids.add(vid):
            self._fail(line, f"{where}: the id {vid!r} is an earlier vector's too")
        need = v["requires"]
        if not isinstance(need, list) or not need or not all(isinstance(x, str) for x in need):
            self._fail(line, f"{where}: requires must be a non-empty list of input and feature names")
        s = self.subject
        if need[0] not in s.inputs:
            self._fail(line, f"{where}: requires[0] must be one of the {s.protocol} inputs {list(s.inputs)}, "
                             f"got {_show(need[0])}")
        unknown = [x for x in need[1:] if x not in s.features]
        if unknown:
            self._fail(line, f"{where}: requires names {_show(unknown[0])}, which is not one of the {s.protocol} "
                             f"features {list(s.features)}")
        now = v["now_ms"]
        if isinstance(now, bool) or not isinstance(now, int) or not 0 <= now <= JAVA_LONG[1]:
            self._fail(line, f"{where}: now_ms must be an integer in 0..{JAVA_LONG[1]} (ms on the case's clock), "
                             f"got {_show(now)}")
        for part, check in (("", lambda: s.decode(_wire(v))),
                            ("expected: ", lambda: s.check_answer(v["expected"], s.sections(_wire(v))))):
            try:
                check()
            except s.wire_error as e:
                self._fail(line, f"{where}: {part}{e}")
            except KeyError as e:  # a subject's decoder that looks a key up without a message of its own
                self._fail(line, f"{where}: {part}lacks {e.args[0]!r}")
            except TypeError as e:
                self._fail(line, f"{where}: {part}{e}")

    def _fail(self, line: int, message: str) -> None:
        raise formats.FormatError(self.path, line, "", message)


KEEP_WRONG = 1000  # vectors --check: the wrong vectors whose differences are kept
MAX_DIFFERENCE_CHARS = 1000  # a kept difference's line (an answer may be a few MiB of outputs)


def check_vectors(path: str, progress: Callable[[int, str], None] | None = None,
                  keep: int = KEEP_WRONG) -> tuple[int, int, list[tuple[str, list[str]]]]:
    """Does every vector's expected answer still equal the reference's? (vectors, wrong ones,
    the first `keep` wrong ones as (id, their differences' lines, each cut at
    MAX_DIFFERENCE_CHARS)); `progress(bytes read, detail)` after each. Memory does not grow
    with the file but for the vectors' ids (conform.distinct)."""
    wrong: list[tuple[str, list[str]]] = []
    n_wrong = 0
    with VectorsFile(path) as vf:
        for v in vf:
            diffs = differences(vf.subject.answer(_wire(v)), v["expected"])
            if diffs:
                n_wrong += 1
                if len(wrong) < keep:
                    wrong.append((v["id"], [_cut(d.line()) for d in diffs]))
            if progress:
                progress(vf.reader.bytes_read, f"{vf.count:,} vectors, {n_wrong:,} wrong")
        return vf.count, n_wrong, wrong


def _cut(line: str) -> str:
    if len(line) <= MAX_DIFFERENCE_CHARS:
        return line
    return f"{line[:MAX_DIFFERENCE_CHARS]}... ({len(line) - MAX_DIFFERENCE_CHARS:,} more characters)"


def _wire(v: dict) -> dict:
    return {k: v[k] for k in ("config", "state", "now_ms", "input")}


def conform_vectors(path: str, driver: Driver, progress: Callable[[int, str], None] | None = None) -> Outcome:
    """Every vector the driver's hello allows, through the driver; the first mismatch is kept.
    `progress(bytes read, detail)` after each vector."""
    with VectorsFile(path) as vf:
        s = vf.subject
        hello = driver.hello(s.protocol, s.inputs, s.features)
        out = Outcome(protocol=s.protocol, hello=hello)
        for i, v in enumerate(vf, 1):
            need = v["requires"]
            if need[0] not in hello.inputs or not set(need[1:]) <= hello.features:
                out.skipped += 1
                continue
            wire = _wire(v)
            got, diffs = ask(s, driver, i, wire, v["expected"])
            out.cases += 1
            out.kinds[need[0]] += 1
            if diffs:
                out.mismatches += 1
                if out.mismatch is None:
                    out.mismatch = Mismatch(case_id=i, vector_id=v["id"], case={"case": i, **wire},
                                            requires=tuple(need), expected=v["expected"], got=got,
                                            differences=tuple(diffs))
            if progress:
                progress(vf.reader.bytes_read, f"{out.cases:,} vectors answered, {out.mismatches:,} differ")
        if out.cases == 0:
            raise DriverError(f"none of the {vf.count} vectors fits the driver's inputs {list(hello.inputs)} "
                              f"and features {sorted(hello.features)}")
    return out
