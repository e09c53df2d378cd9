"""Traces: JSON Lines, schema `histories.trace/1` (docs/trace-format.md).

The writer streams one line per step as the history runs, so memory does not grow
with its length. The reader is hardened for files from elsewhere: lines longer than
MAX_LINE_BYTES, non-JSON lines, a missing header or schema are errors naming the
line, and a reader never holds more than one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from reference_impl import core
from reference_impl.core import codec
from reference_impl.core.scenario import observed

SCHEMA = "histories.trace/1"
MAX_LINE_BYTES = 4 << 20
MAX_NODES = 64
MAX_SCRIPT_ACTIONS = 10_000


class TraceError(ValueError):
    """A trace that cannot be read or does not describe a world of ours."""


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
                  "nodes": list(w.cfg.ids), "seed": seed}
        if extra:
            header.update(extra)
        self._write(header)
        self._write({"i": 0, "t_ms": w.now, "event": None, "state": state_of(w), "obs": []})

    def _write(self, d: dict) -> None:
        self.out.write(json.dumps(d, separators=(",", ":")))
        self.out.write("\n")

    def step(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        self._write({"i": i, "t_ms": after.now, "event": codec.encode_event(before, event),
                     "state": state_of(after), "obs": obs_of(after, obs)})

    def close(self, result: dict) -> None:
        self._write({"result": result})
        self.out.flush()


def read_lines(f: IO[str]) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each line, refusing overlong or non-object lines."""
    n = 0
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        n += 1
        if len(line) > MAX_LINE_BYTES:
            raise TraceError(f"line {n}: longer than {MAX_LINE_BYTES} bytes")
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except (json.JSONDecodeError, RecursionError, ValueError) as e:
            raise TraceError(f"line {n}: not JSON ({e})") from None
        if not isinstance(d, dict):
            raise TraceError(f"line {n}: not a JSON object")
        yield n, d


def read_header(lines: Iterator[tuple[int, dict]]) -> tuple[dict, core.WorldConfig]:
    try:
        n, header = next(lines)
    except StopIteration:
        raise TraceError("empty trace") from None
    if header.get("schema") != SCHEMA:
        raise TraceError(f"line {n}: schema is {header.get('schema')!r}, expected {SCHEMA!r}")
    cfg_d = header.get("config")
    if not isinstance(cfg_d, dict):
        raise TraceError(f"line {n}: header lacks 'config'")
    ids = cfg_d.get("ids")
    if not isinstance(ids, list) or not 1 <= len(ids) <= MAX_NODES or not all(isinstance(x, str) for x in ids):
        raise TraceError(f"line {n}: config.ids must list 1..{MAX_NODES} node ids")
    if len(cfg_d.get("script", [])) > MAX_SCRIPT_ACTIONS:
        raise TraceError(f"line {n}: script longer than {MAX_SCRIPT_ACTIONS} actions")
    try:
        cfg = codec.load_config(cfg_d)
    except codec.DecodeError as e:
        raise TraceError(f"line {n}: {e}") from None
    except Exception as e:  # a config our constructors reject
        raise TraceError(f"line {n}: bad config: {e}") from None
    return header, cfg
