"""Traces: JSON Lines, schema `rmqspec.trace/1` (docs/trace-format.md).

A public format is named after the product: traces are written as `rmqspec.trace/1` and
read under that name and under `histories.trace/1`, the name one earlier release wrote.
The header says which reference wrote it (`reference`: a digest of the reference's and the
properties' modules), so a replay that diverges can say whether the model has changed since.

The writer streams one line per step as the history runs, so memory does not grow
with its length. The reader is hardened for files from elsewhere: lines longer than
MAX_LINE_BYTES, lines that are not strict JSON objects, a header or step that does not fit
its schema (histories.formats), and lines after the result line are errors naming the
file, line and field; a reader never holds more than one line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import IO, Any

import attrs

from histories import formats
from reference_impl import core
from reference_impl.core import codec, inputs
from reference_impl.core.inputs import InputError
from reference_impl.core.scenario import observed

SCHEMA = "rmqspec.trace/1"
READABLE = (SCHEMA, "histories.trace/1")  # what earlier releases wrote, read the same way
MAX_LINE_BYTES = formats.MAX_LINE_BYTES
MAX_NODES = codec.MAX_NODES
MAX_SCRIPT_ACTIONS = formats.MAX_SCRIPT_ACTIONS


TraceError = formats.FormatError  # a trace that cannot be read or does not describe a world of ours

# The changes of a protocol's model that make the traces written before them replay differently,
# oldest first. A trace names the model it was written for (`model`: how many of these it had;
# absent: none), so a replay that diverges can say which change it crossed. A change that alters
# a history without a line here is caught by the traces of property_tests/snapshots/old-traces/.
_THREADS = ("issue 22: a server's threads are separate actors (a tick runs one of them), and a candidate's "
            "loop is two steps, the locked part of maintainAsCandidate then voteForQuorumResponses")
MODEL_CHANGES: dict[str, tuple[str, ...]] = {
    "election": ("issue 22: a candidate's loop is two steps, the locked part of maintainAsCandidate then "
                 "voteForQuorumResponses (docs/election.md)",),
    "dledger_log": (_THREADS,),
    "dledger_commitlog": (_THREADS,),
}


def model_of(protocol: str) -> int:
    """The model of `protocol` this reference runs: the number of its MODEL_CHANGES."""
    return len(MODEL_CHANGES.get(protocol, ()))


@cache
def reference_digest() -> str:
    """A digest of the modules that decide what a replay does (the reference and the
    properties), by name and content: two traces with the same digest came from one model."""
    h = hashlib.sha256()
    for package in ("reference_impl", "spec"):
        stack = [resources.files(package)]
        while stack:
            folder = stack.pop()
            for f in sorted(folder.iterdir(), key=lambda f: f.name):
                if f.is_dir() and f.name != "__pycache__":
                    stack.append(f)
                elif f.name.endswith(".py"):
                    h.update(f"{package}/{f.name}".encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def written_elsewhere(header: dict) -> str | None:
    """Why a replay of this trace may diverge for a reason of ours: it was written by another
    version of the reference (None when it names ours)."""
    theirs = header.get("reference")
    if theirs == reference_digest():
        return None
    who = f"reference {theirs}" if isinstance(theirs, str) else f"an earlier release ({header.get('schema')})"
    protocol = header.get("protocol")
    model = header.get("model")
    model = model if isinstance(model, int) and not isinstance(model, bool) else 0
    crossed = MODEL_CHANGES.get(protocol, ())[model:]  # type: ignore[call-overload]
    if crossed:
        return (f"this trace was written by {who} for model {model} of {protocol}, and the reference here "
                f"({reference_digest()}) runs model {model_of(protocol)}, which changed since: "
                f"{'; '.join(crossed)}; its histories replay only up to the first step a change alters "
                f"(record the history again with this release)")
    return (f"this trace was written by {who}, and the reference here is {reference_digest()}: a divergence may "
            f"be a change of the model since, not a fault of the trace")


def state_of(w: core.World) -> dict:
    return observed(w)


def obs_of(w: core.World, obs: tuple) -> list[dict]:
    out = []
    for i, o in obs:
        d = codec.encode_observation(w, o)
        d["node"] = w.cfg.ids[i] if i >= 0 else None
        out.append(d)
    return out


class TraceWriter:
    """Writes a trace line by line as the history is produced."""

    def __init__(self, out: IO[str], w: core.World, seed: int | None, extra: dict | None = None) -> None:
        self.out = out
        header = {"schema": SCHEMA, "protocol": w.cfg.protocol, "config": codec.dump_config(w.cfg),
                  "nodes": list(w.cfg.ids), "seed": seed, "reference": reference_digest(),
                  "model": model_of(w.cfg.protocol)}
        if extra:
            header.update(extra)
        self._write(header)
        self._write({"i": 0, "t_ms": w.now, "event": None, "state": state_of(w), "obs": []})

    def _write(self, d: dict) -> None:
        # allow_nan=False: what we write, check-trace reads (formats.loads refuses NaN and infinities)
        self.out.write(json.dumps(d, separators=(",", ":"), allow_nan=False))
        self.out.write("\n")

    def step(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        self._write({"i": i, "t_ms": after.now, "event": codec.encode_event(before, event),
                     "state": state_of(after), "obs": obs_of(after, obs)})

    def close(self, result: dict) -> None:
        self._write({"result": result})
        self.out.flush()


def read_lines(f: IO[bytes] | IO[str], where: str = "trace") -> Iterator[tuple[int, dict]]:
    """(line number, object) for each line up to the result line, refusing lines longer than
    MAX_LINE_BYTES bytes, lines that are not strict JSON objects (formats.loads), and any
    line after the result line: a trace ends there, so a suffix cannot ride along unchecked.
    Reads one line at a time; a binary file is measured in bytes, a text file in its UTF-8."""
    n = 0
    ended = 0
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        n += 1
        size = len(line) if isinstance(line, bytes) else len(line.encode("utf-8", "surrogatepass"))
        if size > MAX_LINE_BYTES:
            raise TraceError(where, n, "", f"longer than {MAX_LINE_BYTES} bytes")
        if not line.strip():
            continue
        if ended:
            raise TraceError(where, n, "", f"a line after the result line (line {ended}): a trace ends with its result")
        d = formats.loads(line, where, n)
        if not isinstance(d, dict):
            raise TraceError(where, n, "", f"not a JSON object, got {formats.show(d)}")
        if "result" in d:
            formats.check(d, formats.TraceResult, where, n)
            ended = n
        yield n, d


def read_header(lines: Iterator[tuple[int, dict]], where: str = "trace") -> tuple[dict, core.WorldConfig]:
    """The header line, checked (formats.TraceHeader), and the world config it names."""
    try:
        n, header = next(lines)
    except StopIteration:
        raise TraceError(where, None, "", "empty trace") from None
    if header.get("schema") not in READABLE:
        raise TraceError(where, n, "schema", f"is {formats.show(header.get('schema'))}, expected {SCHEMA!r}")
    h = _check(formats.extension(header), formats.TraceHeader, where, n)
    try:
        cfg = codec.load_config(h.config)
    except InputError as e:
        raise TraceError(where, n, inputs.join("config", e.path), e.message) from None
    if cfg.protocol != h.protocol:
        raise TraceError(where, n, "protocol", f"is {h.protocol!r} but config.protocol is {cfg.protocol!r}")
    if h.nodes is not None and h.nodes != cfg.ids:
        raise TraceError(where, n, "nodes", f"must be config.ids {list(cfg.ids)}")
    return header, cfg


def check_step(d: dict, where: str, n: int) -> formats.TraceStep:
    """A step line, checked (formats.TraceStep). Built directly, not through cattrs: its fields
    are JSON values already, the record's own checks are the whole schema, and replay reads
    one per step."""
    d = formats.extension(d)
    unknown = d.keys() - _STEP_KEYS
    if unknown:
        raise TraceError(where, n, "", f"has unknown key(s): {', '.join(sorted(map(str, unknown)))}")
    try:
        return formats.TraceStep(**d)
    except InputError as e:
        raise TraceError(where, n, e.path, e.message) from None


_STEP_KEYS = {f.name for f in attrs.fields(formats.TraceStep)}


def _check(d: dict, schema: type, where: str, n: int) -> Any:
    try:
        return formats.check(d, schema, where, n)
    except formats.FormatError as e:
        raise TraceError(e.where, e.line, e.path, e.message) from None
