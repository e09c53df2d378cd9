"""`rmqspec view TRACE`: a self-contained interactive HTML page to step through a
history (docs/view.md).

The page is one file: the template (`view_template.html`, package data beside this
module: inline CSS and JS, no network) with the history embedded as JSON. Lanes are
drawn on a canvas, only the rows on screen, so a 20,000-step trace scrolls like a
20-step one; the selected step's state table is the only DOM built from trace data,
and it is built with `textContent`, never `innerHTML`. The embedded JSON escapes `<`,
`>`, `&` and every non-ASCII character (U+2028/2029 among them), and a
Content-Security-Policy allows only the page's own script (by hash), so a hostile
string in a trace is shown, never run.

Reading a trace reuses histories.trace's reader (its one-line errors), and, unless told
not to, replays it through the reference (histories.runner's TraceChooser) to find the
step at which each delivered message was sent (for the arrows) and whether the trace
matches.

    load_trace(f) -> data                 a trace as the page's data (dict)
    check_trace(path) -> data, violations the same, and the violations its replay found
    render(data) -> str                   the page (pure)
    write_trace_view(path_in, path_out)   read, render, write; returns a summary

A fuzz report's index page (one page per counterexample) is the fuzz harness's:
spark_harness/report_view.py.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import math
import os
import shlex
from collections.abc import Iterator
from importlib import resources
from typing import IO, Any

from histories import files, runner
from histories import trace as trace_mod
from reference_impl import core

SCHEMA = "rmqspec.view/1"
TEMPLATE = "view_template.html"
DATA_MARK = "/*@RMQSPEC_DATA@*/"
CSP_MARK = "@RMQSPEC_SCRIPT_HASH@"
MESSAGE_EVENTS = ("deliver", "drop", "duplicate")


class ViewError(ValueError):
    """Input `view` cannot show: reported in one line (exit 2)."""


# --- reading a trace ---


def _step_line(n: int, d: dict, prev_i: int) -> tuple[int, Any, dict | None, list]:
    """(i, event, state, obs) of a step line, refusing shapes the page cannot show."""
    i = d.get("i", prev_i + 1)
    if not isinstance(i, int) or isinstance(i, bool):
        raise trace_mod.TraceError(f"line {n}: step number 'i' must be an integer")
    event = d.get("event")
    if event is not None and not isinstance(event, dict):
        raise trace_mod.TraceError(f"line {n}: 'event' must be an object")
    if event is None and i != 0:
        raise trace_mod.TraceError(f"line {n}: step lacks an 'event' object")
    state = d.get("state")
    if state is not None and (not isinstance(state, dict) or not all(isinstance(v, dict) for v in state.values())):
        raise trace_mod.TraceError(f"line {n}: 'state' must map node ids to objects")
    obs = d.get("obs") or []
    if not isinstance(obs, list):
        raise trace_mod.TraceError(f"line {n}: 'obs' must be a list")
    return i, event, state, obs


class _Collector:
    """Keeps each step line compactly as it streams past: the node states that changed
    since the step before, the event, the observations."""

    def __init__(self) -> None:
        self.steps: list[dict] = []
        self.last: dict[str, Any] = {}
        self.result: dict | None = None

    def add(self, n: int, d: dict) -> None:
        i, event, state, obs = _step_line(n, d, self.steps[-1]["i"] if self.steps else 0)
        row: dict[str, Any] = {"i": i, "t": d.get("t_ms") if isinstance(d.get("t_ms"), int) else None,
                               "e": event}
        if obs:
            row["o"] = obs
        if state:
            changed = {k: v for k, v in state.items() if self.last.get(k) != v}
            self.last.update(changed)
            if changed:
                row["s"] = changed
        self.steps.append(row)

    def feed(self, lines: Iterator[tuple[int, dict]]) -> Iterator[tuple[int, dict]]:
        """Records every line and passes step lines (and the result line) on to a replay."""
        for n, d in lines:
            if self.result is not None:
                continue  # nothing after the result line counts
            if "result" in d:
                if not isinstance(d["result"], dict):
                    raise trace_mod.TraceError(f"line {n}: 'result' must be an object")
                self.result = d["result"]
                yield n, d
                continue
            self.add(n, d)
            yield n, d


def _replay(cfg: core.WorldConfig, col: _Collector, lines: Iterator[tuple[int, dict]]) -> dict:
    """Runs the trace through the reference while it is read. Returns where each
    message event's envelope was sent (row index), the violations the reference finds
    and whether the trace matched; the collector sees every line either way."""
    has_initial = bool(col.steps) and col.steps[0]["e"] is None
    init = core.init(cfg)
    next_ids = [init.net.next_id]  # the network's next envelope id after each step (0: boot)
    env_ids: dict[int, int] = {}  # run step -> envelope id of its message event

    def hook(i: int, before: core.World, ev: Any, after: core.World, obs: tuple) -> None:
        next_ids.append(after.net.next_id)
        if isinstance(ev, (core.Deliver, core.Drop, core.Duplicate)):
            env_ids[i] = ev.env  # the envelope's id

    feeder = runner.TraceChooser(lines)
    if has_initial and col.steps[0].get("s") is not None:
        feeder.expected_state = col.steps[0]["s"]
        feeder.compare(0, init, None, init, ())
    error = None
    try:
        run = runner.run(cfg, feeder.choose, steps=1 << 62, hooks=(feeder.compare, hook))
    except trace_mod.TraceError:
        raise
    except Exception as e:  # the reference refused something the trace did: show it, keep reading
        run, error = None, f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    for _ in lines:  # the rest of the trace, for the page
        pass
    mm = feeder.mismatch
    trusted = mm.step if mm is not None else (len(next_ids) if error else 1 << 62)
    offset = 0 if has_initial else -1
    sends = {}
    for i, env_id in env_ids.items():
        if i <= trusted:
            j = bisect.bisect_right(next_ids, env_id)  # the first step after which the id existed
            sends[i + offset] = j + offset
    return {
        "sends": sends,
        "violations": [{"property": v.property, "step": v.step, "t_ms": v.t_ms, "expected": v.expected,
                        "detail": v.detail} for v in (run.violations if run is not None else [])],
        "info": {"checked": len(next_ids) - 1, "ok": mm is None and error is None,
                 "mismatch": None if mm is None else {"step": mm.step, "line": mm.line, "message": mm.message},
                 "error": error},
    }


def load_trace(f: IO[str], replay: bool = True, source: str = "") -> dict:
    """A trace as the page's data. Raises trace.TraceError (one line) on bad input."""
    return _load(f, replay, source)[0]


def _load(f: IO[str], replay: bool, source: str) -> tuple[dict, list[dict] | None]:
    """(the page's data, the violations the reference found replaying it, or None unreplayed)."""
    lines = trace_mod.read_lines(f)
    header, cfg = trace_mod.read_header(lines)
    col = _Collector()
    fed = col.feed(lines)
    rep = None
    if replay:
        # The initial state line (i = 0), if any, is compared with a fresh world, not fed as an event.
        first = next(fed, None)
        initial = first is not None and first[1].get("i") == 0 and first[1].get("event") is None
        if initial and "result" not in first[1]:
            rep = _replay(cfg, col, fed)
        else:
            rep = _replay(cfg, col, _chain(first, fed) if first is not None else fed)
    else:
        for _ in fed:
            pass
    if not col.steps:
        raise trace_mod.TraceError("the trace has no steps")
    for k, src in (rep["sends"] if rep else {}).items():
        if 0 <= k < len(col.steps) and col.steps[k]["e"] is not None and \
                col.steps[k]["e"].get("kind") in MESSAGE_EVENTS:
            col.steps[k]["f"] = src
    result = col.result
    if result is not None and isinstance(result.get("violations"), list):
        violations, vsource = [v for v in result["violations"] if isinstance(v, dict)], "trace"
    elif rep is not None and rep["info"]["ok"]:
        violations, vsource = rep["violations"], "replay"
    else:
        violations, vsource = [], "none"
    profile = cfg.profile
    return {
        "schema": SCHEMA,
        "source": source,
        "protocol": cfg.protocol,
        "nodes": list(cfg.ids),
        "seed": header.get("seed"),
        "note": header.get("x_note"),  # an extension key (docs/view.md)
        "profile": {"name": profile.name, "calm_at_ms": profile.calm_at_ms},
        "script_actions": header["config"].get("script") or [],
        "steps": col.steps,
        "violations": violations,
        "violations_from": vsource,
        "result": None if result is None else {k: result.get(k) for k in
                                               ("ok", "steps", "t_ms", "stopped", "expectations", "stats")},
        "replay": None if rep is None else rep["info"],
        "links": {},
        "replay_command": None,
    }, None if rep is None else rep["violations"]


def _chain(first: tuple[int, dict], rest: Iterator[tuple[int, dict]]) -> Iterator[tuple[int, dict]]:
    yield first
    yield from rest


# --- the page ---


def _template() -> str:
    return resources.files("histories").joinpath(TEMPLATE).read_text(encoding="utf-8")


def _finite(x: Any) -> Any:
    """JSON has no NaN or Infinity (Python's reader accepts them): show them as strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def embed_json(data: Any) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&' (so no '</script>' or
    '<!--'), and ASCII only (so no U+2028/U+2029 either)."""
    try:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _script_hash(template: str) -> str:
    """The CSP hash of the template's one executable <script> (the data block is JSON)."""
    start = template.index("<script>") + len("<script>")
    end = template.index("</script>", start)
    return "sha256-" + base64.b64encode(hashlib.sha256(template[start:end].encode("utf-8")).digest()).decode()


def render(data: dict) -> str:
    """The page for one history's data (load_trace's output)."""
    template = _template()
    head, sep, tail = template.partition(DATA_MARK)
    if not sep or DATA_MARK in tail:
        raise RuntimeError("view template must hold the data mark exactly once")
    head = head.replace(CSP_MARK, _script_hash(template))
    return head + embed_json(data) + tail


# --- files ---


def _open(path: str) -> IO[str]:
    try:
        return open(path, encoding="utf-8", errors="strict")
    except IsADirectoryError:
        raise ViewError(f"{path} is a directory") from None
    except OSError as e:
        raise ViewError(f"cannot read {path}: {e.strerror}") from None


def read_trace(path: str, replay: bool = True) -> dict:
    return _read(path, replay)[0]


def check_trace(path: str) -> tuple[dict, list[dict]]:
    """The trace's page data, replayed, and the violations the reference found replaying it
    (whatever the trace's own result line says): one replay serves a caller that verifies a
    trace it wrote and the page it writes next (`write_trace_view(..., data=)`)."""
    data, violations = _read(path, True)
    return data, violations or []


def _read(path: str, replay: bool) -> tuple[dict, list[dict] | None]:
    with _open(path) as f:
        try:
            return _load(f, replay, os.path.basename(path))
        except trace_mod.TraceError as e:
            raise ViewError(f"{path}: not a readable trace: {e}") from None
        except UnicodeDecodeError:
            raise ViewError(f"{path}: not UTF-8 text") from None


def write_page(path: str, text: str) -> None:
    d = os.path.dirname(path)
    try:
        if d:
            files.out_folder(d)
        files.write_text(path, text)
    except OSError as e:
        raise ViewError(f"cannot write {path}: {e.strerror}") from None


def default_out(trace_path: str) -> str:
    root, ext = os.path.splitext(trace_path)
    return (root if ext in (".jsonl", ".json", ".trace") else trace_path) + ".html"


def violation_tags(data: dict) -> list[str]:
    return [f"{v.get('property')}@{v.get('step')}" for v in data["violations"]]


def write_trace_view(path_in: str, path_out: str | None = None, replay: bool = True,
                     links: dict | None = None, replay_command: str | None = None, data: dict | None = None) -> dict:
    """A trace's page (default: TRACE with .html). `data`: what `check_trace(path_in)` (or
    `read_trace(path_in, replay)`) returned for the file as it is now, read and replayed
    once already. Returns a summary; raises ViewError (one line) on bad input."""
    if os.path.isdir(path_in):
        raise ViewError(f"{path_in} is a directory")
    if not os.path.exists(path_in):
        raise ViewError(f"cannot read {path_in}: No such file or directory")
    out = path_out or default_out(path_in)
    if os.path.abspath(out) == os.path.abspath(path_in):
        raise ViewError(f"--out {out} would overwrite the trace")
    data = dict(data) if data is not None else read_trace(path_in, replay)
    data["links"] = links or {}
    data["replay_command"] = replay_command or shlex.join(["rmqspec", "replay", path_in])
    write_page(out, render(data))
    rep = data["replay"]
    steps_of: dict[str, Any] = {}
    for v in data["violations"]:
        steps_of.setdefault(str(v.get("property")), v.get("step"))
    return {"ok": True, "kind": "trace", "out": out, "trace": path_in, "protocol": data["protocol"],
            "steps": len(data["steps"]), "violations": violation_tags(data), "steps_of": steps_of,
            "replay": None if rep is None else ("match" if rep["ok"] else "mismatch")}
