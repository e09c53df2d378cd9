"""Pictures: a counterexample's timeline, and a fuzz report's distributions and coverage.

They are SVG files written directly (spark_harness.svg): no plotting library, the same
bytes for the same input, a few kilobytes each, opened by any browser or Markdown viewer.
matplotlib drew them before, and its text layout cost more CPU than the histories of a
short fuzz run (docs/benchmarks.md).

The timeline is drawn from a trace file alone (docs/trace-format.md), so it works for
any protocol and for traces from elsewhere: one lane per node coloured by its
observed `role` (hatched grey when down) with its `term` where the state has one, fault
events as marks, message deliveries as thin lines from sender to receiver, the
chosen events of a shrunk history ringed, and the violating step as a red line.
"""

from __future__ import annotations

import json
import math
from typing import Any

from histories import files
from spark_harness import svg

ROLE_COLORS = {"LEADER": "#d62728", "MASTER": "#d62728", "SYNC_MASTER": "#d62728", "ASYNC_MASTER": "#e377c2",
               "FOLLOWER": "#1f77b4", "SLAVE": "#1f77b4", "CANDIDATE": "#ff7f0e"}
OTHER_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f")
DOWN_COLOR = "#d9d9d9"
MAX_MESSAGE_LINES = 400
STEP_AXIS_MAX = 80  # traces up to this many steps get one x position per step
EXTENSION = ".svg"

WIDTH = 1200
LANE = 44  # pixels per node lane
MARKS = {  # style -> (marker, colour, hollow, size in pixels, stroke width)
    "crash": ("x", "black", False, 10, 2), "os_crash": ("x", "red", False, 10, 2),
    "restart": ("^", "green", False, 9, 1), "drop": ("s", "brown", True, 6, 1), "duplicate": ("o", "brown", True, 6, 1),
    "to_higher": (">", "#737373", False, 6, 1), "to_lower": ("<", "#737373", False, 6, 1)}
FAULT_LINES = {"partition": ("purple", "2 2"), "cut": ("purple", "6 2 2 2"), "heal": ("green", "2 2"),
               "calm": ("gray", "5 3")}
HATCH = ('<pattern id="down" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
         f'<rect width="6" height="6" fill="{DOWN_COLOR}"/>'
         '<line x1="0" y1="0" x2="0" y2="6" stroke="#999999" stroke-width="1.5"/></pattern>')


def _save(drawing: svg.Drawing, path: str) -> str:
    """The picture at `path`, written whole and never through a symlink there."""
    files.write_text(path, drawing.render())
    return path


def _role_color(role: Any, palette: dict) -> str:
    key = str(role)
    if key in ROLE_COLORS:
        return ROLE_COLORS[key]
    if key not in palette:
        palette[key] = OTHER_COLORS[len(palette) % len(OTHER_COLORS)]
    return palette[key]


Step = tuple[int, dict, dict]  # (t_ms, event, the states of the nodes it changed, or of all)


def _read_trace(path: str) -> tuple[list[str], dict | None, list[Step]]:
    """(nodes, the initial states or None, the steps i = 1, 2, ...) of a trace file."""
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    body = [d for d in lines[1:] if "result" not in d]
    init = body[0] if body and body[0].get("event") is None else None
    steps = body[1:] if init is not None else body
    return ([str(n) for n in lines[0]["nodes"]], (init.get("state") or {}) if init is not None else None,
            [(d["t_ms"], d.get("event") or {}, d.get("state") or {}) for d in steps])


def _from_page(data: dict) -> tuple[list[str], dict | None, list[Step]]:
    """The same from a trace's page data (histories.view: each step keeps the states that changed)."""
    rows = data["steps"]
    init = (rows[0].get("s") or {}) if rows and rows[0]["e"] is None else None
    steps = rows[1:] if init is not None else rows
    return [str(n) for n in data["nodes"]], init, [(r["t"], r["e"] or {}, r.get("s") or {}) for r in steps]


class _Frame:
    """The timeline's coordinates: data x (step or ms) and lane y (0 at the bottom) to pixels."""

    def __init__(self, left: float, top: float, width: float, lanes: int, x0: float, x1: float) -> None:
        self.left, self.top, self.width, self.lanes = left, top, width, lanes
        self.x0, self.x1 = x0, x1
        self.height = (lanes + 0.6) * LANE  # lanes from -0.8 to lanes - 0.2, as lane units

    def x(self, t: float) -> float:
        return self.left + (t - self.x0) / max(self.x1 - self.x0, 1e-9) * self.width

    def y(self, lane: float) -> float:
        return self.top + (self.lanes - 0.2 - lane) * LANE


def timeline(trace_path: str, out_path: str, title: str, violation_step: int | None = None,
             violation_label: str = "", chosen: tuple[int, ...] = (), page: dict | None = None) -> str:
    """Draw the trace's timeline picture (module docstring) into `out_path` (SVG). `page`: the
    trace's page data (histories.view.check_trace) when the caller has it: the file, up to
    megabytes of JSON, is not parsed again."""
    nodes, init, steps = _from_page(page) if page is not None else _read_trace(trace_path)
    lane = {n: i for i, n in enumerate(nodes)}
    # Short histories are drawn step by step (events at one instant stay apart), long ones over time.
    by_step = len(steps) <= STEP_AXIS_MAX
    xs = [float(i) if by_step else float(t) for i, (t, _, _) in enumerate(steps, 1)]
    t_end = max(1.0, xs[-1] if xs else 1.0)
    left = 20 + max([svg.text_width(n, 11) for n in nodes] + [20])
    legend_w = 120
    frame = _Frame(left, 30, WIDTH - left - legend_w - 10, len(nodes), 0.0, t_end + 0.6 if by_step else t_end * 1.02)
    bottom = 58 if by_step else 44
    drawing = svg.Drawing(WIDTH, frame.top + frame.height + bottom, title)
    drawing.defs(HATCH)
    drawing.text(WIDTH / 2, 18, title, size=12, anchor="middle")
    drawing.rect(frame.left, frame.top, frame.width, frame.height, "none", stroke="#333333", stroke_width=1)

    palette: dict = {}
    seen_roles: dict[str, str] = {}
    # Role segments per node, from consecutive observed states; one path per lane and colour.
    bars: dict[tuple[int, str], list[tuple[float, float]]] = {}
    terms: list[tuple[float, int, Any]] = []
    open_seg: dict[str, tuple[float, Any, Any, bool]] = {}
    states = [(init, 0.0)] if init is not None else []
    for state, t in states + [(state, t) for (_, _, state), t in zip(steps, xs)]:
        if by_step and t > 0:
            t -= 0.5  # a state holds from the middle of the step that made it
        for node, st in state.items():
            if node not in lane:
                continue
            key = (st.get("role") if st.get("alive", True) else None, st.get("term"), st.get("alive", True))
            prev = open_seg.get(node)
            if prev is None or prev[1:] != key:
                if prev is not None:
                    _segment(bars, terms, lane[node], prev[0], t, *prev[1:], palette, seen_roles)
                open_seg[node] = (t, *key)
    for node, (t0, role, term, alive) in open_seg.items():
        _segment(bars, terms, lane[node], t0, t_end, role, term, alive, palette, seen_roles)
    for (y, color), spans in bars.items():
        top, height = frame.y(y + 0.25), 0.5 * LANE
        d = "".join(f"M{svg.point(frame.x(a), top)}h{svg.number(max(frame.x(a + w) - frame.x(a), 0.5))}"
                    f"v{svg.number(height)}H{svg.number(frame.x(a))}Z" for a, w in spans)
        drawing.path(d, fill="url(#down)" if color == "down" else color, fill_opacity=None if color == "down" else 0.85)
    for t0, y, term in terms:
        drawing.text(frame.x(t0) + 1, frame.y(y + 0.3) - 1, f"t{term}", size=8)

    # Events: fault lines and their labels, marks batched by style, deliveries as thin lines.
    marks: dict[str, list[tuple[float, float]]] = {}
    deliveries: list[str] = []
    for (_, ev, _), t in zip(steps, xs):
        kind = ev.get("kind")
        if kind == "crash" and ev.get("node") in lane:
            marks.setdefault("os_crash" if ev.get("os") else "crash", []).append((t, lane[ev["node"]]))
        elif kind == "restart" and ev.get("node") in lane:
            marks.setdefault("restart", []).append((t, lane[ev["node"]]))
        elif kind in FAULT_LINES:
            color, dash = FAULT_LINES[kind]
            x = frame.x(t)
            drawing.line(x, frame.top, x, frame.top + frame.height, color, 1, stroke_dasharray=dash)
            label = {"partition": "partition " + " | ".join(" ".join(map(str, g)) for g in ev.get("groups", [])),
                     "cut": f"cut {ev.get('src')}->{ev.get('dst')}", "heal": "heal", "calm": "faults stop"}[kind]
            drawing.text(x - 2, frame.y(len(nodes) - 0.4), label, size=8, anchor="end", color=color, rotate=True)
        elif kind in ("drop", "duplicate") and ev.get("dst") in lane:
            marks.setdefault(kind, []).append((t, lane[ev["dst"]]))
        elif kind == "deliver" and ev.get("src") in lane and ev.get("dst") in lane \
                and len(deliveries) < MAX_MESSAGE_LINES:
            x = frame.x(t)
            deliveries.append(f"M{svg.point(x, frame.y(lane[ev['src']]))}V{svg.number(frame.y(lane[ev['dst']]))}")
            marks.setdefault("to_higher" if lane[ev["dst"]] > lane[ev["src"]] else "to_lower", []).append(
                (t, lane[ev["dst"]]))
    drawing.path("".join(deliveries), stroke="#8c8c8c", stroke_width=0.6, fill="none")
    for style in sorted(marks, key=lambda s: s not in ("to_higher", "to_lower")):  # arrows under the faults
        drawing.path(_marks(style, [(frame.x(t), frame.y(y)) for t, y in marks[style]]), **_mark_paint(style))
    rings = []
    for i in chosen:
        if 1 <= i <= len(steps):
            ev = steps[i - 1][1]
            node = ev.get("node") or ev.get("dst") or ev.get("requester")
            rings.append((frame.x(xs[i - 1]), frame.y(lane.get(node, len(nodes) - 0.5))))
    for x, y in rings:
        drawing.circle(x, y, 8, fill="none", stroke="orange", stroke_width=1.5)
    if violation_step is not None and 1 <= violation_step <= len(steps):
        x = frame.x(xs[violation_step - 1])
        drawing.line(x, frame.top, x, frame.top + frame.height, "red", 2)
        drawing.text(x + 3, frame.y(-0.45) + 10, f"{violation_label} (step {violation_step})", size=10, color="red")

    _timeline_axes(drawing, frame, nodes, steps, by_step, t_end)
    _timeline_legend(drawing, WIDTH - legend_w + 5, frame.top, seen_roles)
    return _save(drawing, out_path)


def _segment(bars: dict, terms: list, y: int, t0: float, t1: float, role: Any, term: Any, alive: bool, palette: dict,
             seen: dict) -> None:
    if not alive:
        bars.setdefault((y, "down"), []).append((t0, max(t1 - t0, 0.5)))
        seen.setdefault("down", "down")
        return
    color = _role_color(role, palette)
    seen.setdefault(str(role), color)
    bars.setdefault((y, color), []).append((t0, max(t1 - t0, 0.5)))
    if term is not None:
        terms.append((t0, y, term))


def _marks(style: str, points: list[tuple[float, float]]) -> str:
    marker, _, _, size, _ = MARKS[style]
    if marker == "o":
        r = size / 2
        return "".join(f"M{svg.point(x - r, y)}a{svg.number(r)} {svg.number(r)} 0 1 0 {svg.number(2 * r)} 0"
                       f"a{svg.number(r)} {svg.number(r)} 0 1 0 {svg.number(-2 * r)} 0" for x, y in points)
    return "".join(svg.marker_path(marker, x, y, size) for x, y in points)


def _mark_paint(style: str) -> dict:
    marker, color, hollow, _, stroke = MARKS[style]
    if marker == "x" or hollow:
        return {"fill": "none", "stroke": color, "stroke_width": stroke}
    return {"fill": color}


def _timeline_axes(drawing: svg.Drawing, frame: _Frame, nodes: list[str], steps: list[Step], by_step: bool,
                   t_end: float) -> None:
    for i, node in enumerate(nodes):
        drawing.text(frame.left - 6, frame.y(i) + 4, node, size=11, anchor="end")
    base = frame.top + frame.height
    if by_step:
        ticks = [(float(i), [f"{i}", f"{steps[i - 1][0]:,}"])
                 for i in range(1, len(steps) + 1, max(1, len(steps) // 12))]
        label = "step (and its time in ms)"
    else:
        ticks = [(v, [svg.tick_label(v)]) for v in svg.ticks(0.0, frame.x1) if v <= frame.x1]
        label = "time (ms)"
    for v, texts in ticks:
        x = frame.x(v)
        drawing.line(x, base, x, base + 4, "#333333", 1)
        for k, text in enumerate(texts):
            drawing.text(x, base + 15 + 10 * k, text, size=8 if k else 9, anchor="middle")
    drawing.text(frame.left + frame.width / 2, drawing.height - 6, label, size=10, anchor="middle")


def _timeline_legend(drawing: svg.Drawing, x: float, y: float, roles: dict[str, str]) -> None:
    for name, color in roles.items():
        drawing.rect(x, y, 12, 10, "url(#down)" if color == "down" else color)
        drawing.text(x + 17, y + 9, name, size=9)
        y += 15
    for style, name in (("crash", "crash"), ("os_crash", "OS crash"), ("restart", "restart")):
        drawing.path(_marks(style, [(x + 6, y + 5)]), **_mark_paint(style))
        drawing.text(x + 17, y + 9, name, size=9)
        y += 15
    drawing.circle(x + 6, y + 5, 6, fill="none", stroke="orange", stroke_width=1.5)
    drawing.text(x + 17, y + 9, "chosen event", size=9)


# --- report plots ---

CELL_W, CELL_H = 400, 230


def distributions(out_path: str, title: str, dists: dict[str, dict]) -> str:
    """One small histogram per distribution (log-bucketed counts, as aggregated)."""
    names = [n for n, d in dists.items() if d.get("count")]
    cols = 3
    rows = max(1, math.ceil(len(names) / cols))
    drawing = svg.Drawing(cols * CELL_W, 34 + rows * CELL_H, title)
    drawing.text(cols * CELL_W / 2, 20, title, size=13, anchor="middle")
    for k, name in enumerate(names):
        _histogram(drawing, (k % cols) * CELL_W, 34 + (k // cols) * CELL_H, name, dists[name])
    return _save(drawing, out_path)


def _histogram(drawing: svg.Drawing, x0: float, y0: float, name: str, d: dict) -> None:
    left, top, width, height = x0 + 52, y0 + 26, CELL_W - 70, CELL_H - 64
    drawing.text(x0 + CELL_W / 2, y0 + 14, f"{name}  (n={d['count']:,}, p50={d['p50']}, p99={d['p99']})", size=10,
                 anchor="middle")
    buckets = [(float(lo), float(hi), int(n)) for lo, hi, n in d.get("buckets") or []]
    log = d["min"] > 0 and d["max"] / max(d["min"], 1e-9) > 50
    lows = [lo for lo, _, _ in buckets] or [float(d["min"])]
    highs = [max(hi, lo + 1e-9) for lo, hi, _ in buckets] or [float(d["max"]) or 1.0]
    lo_x, hi_x = min(lows), max(highs)
    if log:
        lo_x = max(lo_x, 1e-9)
        scale = (math.log10(lo_x), math.log10(max(hi_x, lo_x * 10)))

        def fx(v: float) -> float:
            return left + (math.log10(max(v, lo_x)) - scale[0]) / (scale[1] - scale[0]) * width
    else:
        if hi_x <= lo_x:
            hi_x = lo_x + 1

        def fx(v: float) -> float:
            return left + (v - lo_x) / (hi_x - lo_x) * width
    top_n = max([n for _, _, n in buckets] + [1])
    y_ticks = svg.ticks(0, top_n, 4)
    y_max = max(y_ticks[-1], top_n)

    def fy(n: float) -> float:
        return top + height - n / y_max * height

    drawing.path("".join(f"M{svg.point(fx(lo), fy(n))}H{svg.number(max(fx(max(hi, lo + 1e-9)), fx(lo) + 0.5))}"
                         f"V{svg.number(fy(0))}H{svg.number(fx(lo))}Z" for lo, hi, n in buckets if n), fill="#1f77b4")
    drawing.rect(left, top, width, height, "none", stroke="#333333", stroke_width=1)
    for n in y_ticks:
        drawing.line(left - 4, fy(n), left, fy(n), "#333333")
        drawing.text(left - 6, fy(n) + 3, svg.tick_label(n), size=8, anchor="end")
    if log:
        x_ticks = [10.0 ** e for e in range(math.ceil(scale[0] - 1e-9), math.floor(scale[1] + 1e-9) + 1)]
    else:
        x_ticks = [v for v in svg.ticks(lo_x, hi_x, 5) if lo_x <= v <= hi_x]
    for v in x_ticks:
        drawing.line(fx(v), top + height, fx(v), top + height + 4, "#333333")
        drawing.text(fx(v), top + height + 15, svg.tick_label(v) if not log else f"1e{round(math.log10(v))}",
                     size=8, anchor="middle")


def coverage(out_path: str, title: str, actions: dict[str, tuple[int, int]], branches: dict[str, tuple[int, int]]
             ) -> str:
    """Hit/total bars: actions by event kind (over roles), branches by enum."""
    rows = max(len(actions), len(branches), 4)
    panel_w = 600
    drawing = svg.Drawing(2 * panel_w, 70 + 22 * rows, title)
    drawing.text(panel_w, 20, title, size=13, anchor="middle")
    for k, (name, groups) in enumerate((("actions (kind, over roles)", actions), ("branches (result codes)", branches))):
        _coverage_panel(drawing, k * panel_w, 34, panel_w, name, groups)
    return _save(drawing, out_path)


def _coverage_panel(drawing: svg.Drawing, x0: float, y0: float, panel_w: float, name: str,
                    groups: dict[str, tuple[int, int]]) -> None:
    labels = list(groups)
    hit = sum(groups[k][0] for k in labels)
    total = sum(groups[k][1] for k in labels)
    left = x0 + 14 + max([svg.text_width(k, 9) for k in labels] + [30])
    width = x0 + panel_w - 50 - left  # room for the "hit/total" after the longest bar
    drawing.text(x0 + panel_w / 2, y0 + 10, f"{name}: {hit}/{total}", size=11, anchor="middle")
    most = max([groups[k][1] for k in labels] + [1])
    for i, k in enumerate(labels):
        y = y0 + 22 + 22 * i
        h, t = groups[k]
        drawing.rect(left, y, t / most * width, 16, "#d9d9d9")
        drawing.rect(left, y, h / most * width, 16, "#2ca02c")
        drawing.text(left - 6, y + 12, k, size=9, anchor="end")
        drawing.text(left + t / most * width + 4, y + 12, f"{h}/{t}", size=8)
    y = y0 + 22 + 22 * len(labels) + 4
    drawing.rect(x0 + panel_w - 150, y, 12, 10, "#2ca02c")
    drawing.text(x0 + panel_w - 134, y + 9, "hit", size=9)
    drawing.rect(x0 + panel_w - 100, y, 12, 10, "#d9d9d9")
    drawing.text(x0 + panel_w - 84, y + 9, "total", size=9)
