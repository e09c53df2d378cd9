"""Pictures: a counterexample's timeline, and a fuzz report's distributions and coverage.

matplotlib (Agg backend, no display) draws them as PNG files. It is needed on the
driver only; where it is missing, `available()` is False and reports say so instead
of embedding pictures.

The timeline is drawn from a trace file alone (docs/trace-format.md), so it works for
any protocol and for traces from elsewhere: one lane per node coloured by its
observed `role` (grey when down) with its `term` where the state has one, fault
events as marks, message deliveries as thin lines from sender to receiver, the
chosen events of a shrunk history ringed, and the violating step as a red line.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

from histories import files

ROLE_COLORS = {"LEADER": "#d62728", "MASTER": "#d62728", "SYNC_MASTER": "#d62728", "ASYNC_MASTER": "#e377c2",
               "FOLLOWER": "#1f77b4", "SLAVE": "#1f77b4", "CANDIDATE": "#ff7f0e"}
OTHER_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f")
MAX_MESSAGE_LINES = 400
STEP_AXIS_MAX = 80  # traces up to this many steps get one x position per step


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, png_path: str, dpi: int) -> None:
    """The figure as a PNG at `png_path`, written whole and never through a symlink there."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    files.write_bytes(png_path, buf.getvalue())


def _role_color(role: Any, palette: dict) -> str:
    key = str(role)
    if key in ROLE_COLORS:
        return ROLE_COLORS[key]
    if key not in palette:
        palette[key] = OTHER_COLORS[len(palette) % len(OTHER_COLORS)]
    return palette[key]


def _read_trace(path: str) -> tuple[dict, dict | None, list[dict]]:
    """(header, the initial-state line or None, the step lines i = 1, 2, ...)."""
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    body = [d for d in lines[1:] if "result" not in d]
    init = body[0] if body and body[0].get("event") is None else None
    return lines[0], init, body[1:] if init is not None else body


def timeline(trace_path: str, png_path: str, title: str, violation_step: int | None = None,
             violation_label: str = "", chosen: tuple[int, ...] = ()) -> str:
    """Draw the trace's timeline picture (module docstring) into `png_path`."""
    plt = _plt()
    header, init, steps = _read_trace(trace_path)
    nodes = list(header["nodes"])
    lane = {n: i for i, n in enumerate(nodes)}
    # Short histories are drawn step by step (events at one instant stay apart), long ones over time.
    by_step = len(steps) <= STEP_AXIS_MAX
    xs = [float(i) if by_step else float(d["t_ms"]) for i, d in enumerate(steps, 1)]
    t_end = max(1.0, xs[-1] if xs else 1.0)
    fig_w = 12
    fig, ax = plt.subplots(figsize=(fig_w, 1.1 + 0.55 * len(nodes)))
    palette: dict = {}
    seen_roles: dict[str, str] = {}
    # Role segments per node, from consecutive observed states; drawn in batches (one
    # artist per lane and colour, one per marker kind: long traces stay quick to draw).
    bars: dict[tuple[int, str, bool], list[tuple[float, float]]] = {}
    open_seg: dict[str, tuple[float, Any, Any, bool]] = {}
    for d, t in ([(init, 0.0)] if init is not None else []) + list(zip(steps, xs)):
        if by_step and t > 0:
            t -= 0.5  # a state holds from the middle of the step that made it
        for node, st in (d.get("state") or {}).items():
            if node not in lane:
                continue
            key = (st.get("role") if st.get("alive", True) else None, st.get("term"), st.get("alive", True))
            prev = open_seg.get(node)
            if prev is None or prev[1:] != key:
                if prev is not None:
                    _segment(ax, bars, lane[node], prev[0], t, prev[1], prev[2], prev[3], palette, seen_roles)
                open_seg[node] = (t, *key)
    for node, (t0, role, term, alive) in open_seg.items():
        _segment(ax, bars, lane[node], t0, t_end, role, term, alive, palette, seen_roles)
    for (y, color, alive), spans in bars.items():
        if alive:
            ax.broken_barh(spans, (y - 0.25, 0.5), facecolors=color, alpha=0.85, lw=0)
        else:
            ax.broken_barh(spans, (y - 0.25, 0.5), facecolors="0.85", hatch="//", edgecolor="0.6", lw=0)
    # Events.
    marks: dict[tuple[str, str, bool], tuple[list[float], list[float]]] = {}

    def mark(style: tuple[str, str, bool], t: float, y: float) -> None:
        px, py = marks.setdefault(style, ([], []))
        px.append(t)
        py.append(y)

    lines = []
    for d, t in zip(steps, xs):
        ev = d.get("event") or {}
        kind = ev.get("kind")
        if kind == "crash" and ev.get("node") in lane:
            mark(("x", "red" if ev.get("os") else "black", False), t, lane[ev["node"]])
        elif kind == "restart" and ev.get("node") in lane:
            mark(("^", "green", False), t, lane[ev["node"]])
        elif kind in ("partition", "cut", "heal", "calm"):
            style = {"partition": ("purple", ":"), "cut": ("purple", "-."), "heal": ("green", ":"),
                     "calm": ("gray", "--")}[kind]
            ax.axvline(t, color=style[0], ls=style[1], lw=1, zorder=1)
            label = {"partition": "partition " + " | ".join(" ".join(g) for g in ev.get("groups", [])),
                     "cut": f"cut {ev.get('src')}->{ev.get('dst')}", "heal": "heal", "calm": "faults stop"}[kind]
            ax.text(t, len(nodes) - 0.4, label, rotation=90, fontsize=6, color=style[0], va="top", ha="right")
        elif kind in ("drop", "duplicate") and ev.get("dst") in lane:
            mark(("o" if kind == "duplicate" else "s", "brown", True), t, lane[ev["dst"]])
        elif kind == "deliver" and ev.get("src") in lane and ev.get("dst") in lane \
                and len(lines) < MAX_MESSAGE_LINES:
            lines.append([(t, lane[ev["src"]]), (t, lane[ev["dst"]])])
            mark((">" if lane[ev["dst"]] > lane[ev["src"]] else "<", "0.45", False), t, lane[ev["dst"]])
    if lines:
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(lines, colors="0.55", linewidths=0.5, zorder=2))
    sizes = {"x": 10, "^": 8, "o": 5, "s": 5, ">": 3, "<": 3}
    for (marker, color, hollow), (px, py) in marks.items():
        kw = {"mfc": "none"} if hollow else {}
        ax.plot(px, py, marker, color=color, ms=sizes[marker], mew=2 if marker == "x" else 1, ls="",
                zorder=2 if marker in "<>" else 5, **kw)
    ring_x, ring_y = [], []
    for i in chosen:
        if 1 <= i <= len(steps):
            ev = steps[i - 1].get("event") or {}
            node = ev.get("node") or ev.get("dst") or ev.get("requester")
            ring_x.append(xs[i - 1])
            ring_y.append(lane.get(node, len(nodes) - 0.5))
    if ring_x:
        ax.plot(ring_x, ring_y, "o", mfc="none", mec="orange", ms=13, mew=1.5, ls="", zorder=6)
    if violation_step is not None and 1 <= violation_step <= len(steps):
        tv = xs[violation_step - 1]
        ax.axvline(tv, color="red", lw=2, zorder=7)
        ax.text(tv, -0.45, f" {violation_label} (step {violation_step})", color="red", fontsize=8, va="top")
    ax.set_yticks(range(len(nodes)), nodes)
    ax.set_ylim(-0.8, len(nodes) - 0.2)
    if by_step:
        ax.set_xlim(0, t_end + 0.6)
        ticks = list(range(1, len(steps) + 1, max(1, len(steps) // 12)))
        ax.set_xticks(ticks, [f"{i}\n{steps[i - 1]['t_ms']:,}" for i in ticks], fontsize=7)
        ax.set_xlabel("step (and its time in ms)")
    else:
        ax.set_xlim(0, t_end * 1.02)
        ax.set_xlabel("time (ms)")
    ax.set_title(title, fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in seen_roles.values()]
    labels = list(seen_roles)
    handles += [plt.Line2D([], [], marker="x", color="black", ls=""), plt.Line2D([], [], marker="x", color="red", ls=""),
                plt.Line2D([], [], marker="^", color="green", ls=""),
                plt.Line2D([], [], marker="o", mfc="none", mec="orange", ls="")]
    labels += ["crash", "OS crash", "restart", "chosen event"]
    ax.legend(handles, labels, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    _save(fig, png_path, 110)
    plt.close(fig)
    return png_path


def _segment(ax, bars: dict, y: int, t0: float, t1: float, role: Any, term: Any, alive: bool, palette: dict,
             seen: dict) -> None:
    if not alive:
        bars.setdefault((y, "down", False), []).append((t0, max(t1 - t0, 0.5)))
        seen.setdefault("down", "0.85")
        return
    color = _role_color(role, palette)
    seen.setdefault(str(role), color)
    bars.setdefault((y, color, True), []).append((t0, max(t1 - t0, 0.5)))
    if term is not None:
        ax.text(t0, y + 0.3, f"t{term}", fontsize=6, va="bottom")


# --- report plots ---


def distributions(png_path: str, title: str, dists: dict[str, dict]) -> str:
    """One small histogram per distribution (log-bucketed counts, as aggregated)."""
    plt = _plt()
    names = [n for n, d in dists.items() if d.get("count")]
    cols = 3
    rows = max(1, math.ceil(len(names) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.6 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        d = dists[name]
        if d["buckets"]:
            a, b, n = zip(*d["buckets"])
            ax.bar(a, n, width=[max(hi - lo, 1e-9) for lo, hi in zip(a, b)], align="edge", color="#1f77b4")
        if d["min"] > 0 and d["max"] / max(d["min"], 1e-9) > 50:
            ax.set_xscale("log")
        ax.set_title(f"{name}  (n={d['count']:,}, p50={d['p50']}, p99={d['p99']})", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    # Fixed spacing: tight_layout measures every tick label of every axis (seconds per figure).
    fig.subplots_adjust(left=0.05, right=0.98, bottom=0.5 / (2.6 * rows), top=1 - 0.45 / (2.6 * rows),
                        wspace=0.22, hspace=0.55)
    _save(fig, png_path, 100)
    plt.close(fig)
    return png_path


def coverage(png_path: str, title: str, actions: dict[str, tuple[int, int]], branches: dict[str, tuple[int, int]]
             ) -> str:
    """Hit/total bars: actions by event kind (over roles), branches by enum."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.3 * max(len(actions), len(branches), 4) + 1.2))
    for ax, (name, groups) in zip(axes, (("actions (kind, over roles)", actions), ("branches (result codes)", branches))):
        labels = list(groups)
        hit = [groups[k][0] for k in labels]
        total = [groups[k][1] for k in labels]
        ax.barh(labels, total, color="0.85", label="total")
        ax.barh(labels, hit, color="#2ca02c", label="hit")
        ax.invert_yaxis()
        ax.set_title(f"{name}: {sum(hit)}/{sum(total)}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    _save(fig, png_path, 100)
    plt.close(fig)
    return png_path
