"""A minimal SVG writer: the few shapes the report's pictures use, written as text.

The pictures (spark_harness.plots) are drawn here rather than with matplotlib: its text
layout and rasterising took about 11 CPU-seconds per fuzz run (docs/benchmarks.md), and
an SVG is small, deterministic (the same input gives the same bytes: coordinates are
rounded to one decimal) and opens in every browser and Markdown viewer. Text is not
measured: `text_width` estimates it from the font size, which is all the layouts need
(labels are placed left of an axis or clipped by the reader's viewer, never wrapped).
"""

from __future__ import annotations

from html import escape

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
CHAR_WIDTH = 0.6  # average advance of a sans-serif character, in font sizes


def text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR_WIDTH


def number(x: float) -> str:
    """A coordinate: one decimal, no trailing zeros (deterministic and short)."""
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _attrs(attrs: dict[str, object]) -> str:
    return "".join(f' {k.replace("_", "-")}="{escape(v if isinstance(v, str) else number(v))}"'
                   for k, v in attrs.items() if v is not None)


class Drawing:
    """Shapes appended in order (later ones on top), rendered by `text()`."""

    def __init__(self, width: float, height: float, title: str = "") -> None:
        self.width = width
        self.height = height
        self.parts: list[str] = []
        if title:
            self.parts.append(f"<title>{escape(title)}</title>")

    def defs(self, markup: str) -> None:
        """Definitions (a fill pattern) that later shapes name as url(#id), given as SVG markup."""
        self.parts.append(f"<defs>{markup}</defs>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, **attrs: object) -> None:
        self.parts.append(f"<rect{_attrs({'x': x, 'y': y, 'width': max(w, 0.0), 'height': max(h, 0.0), 'fill': fill} | attrs)}/>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 1.0, **attrs: object) -> None:
        self.parts.append(f"<line{_attrs({'x1': x1, 'y1': y1, 'x2': x2, 'y2': y2, 'stroke': stroke, 'stroke_width': width} | attrs)}/>")

    def path(self, d: str, **attrs: object) -> None:
        """A path given as SVG path data (callers build it from `point` and `number`)."""
        if d:
            self.parts.append(f'<path d="{d}"{_attrs(attrs)}/>')

    def circle(self, x: float, y: float, r: float, **attrs: object) -> None:
        self.parts.append(f"<circle{_attrs({'cx': x, 'cy': y, 'r': r} | attrs)}/>")

    def text(self, x: float, y: float, text: str, size: float = 10, anchor: str = "start", color: str = "black",
             rotate: bool = False, baseline: str | None = None, bold: bool = False) -> None:
        """`text` at (x, y): `anchor` start/middle/end, `rotate` turns it to read upwards from (x, y)."""
        extra = {"transform": f"rotate(-90 {number(x)} {number(y)})" if rotate else None,
                 "dominant_baseline": baseline, "font_weight": "bold" if bold else None}
        self.parts.append(f"<text{_attrs({'x': x, 'y': y, 'font_size': size, 'text_anchor': anchor, 'fill': color} | extra)}>"
                          f"{escape(text)}</text>")

    def render(self) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{number(self.width)}" height="{number(self.height)}" '
                f'viewBox="0 0 {number(self.width)} {number(self.height)}" font-family="{FONT}">\n'
                f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(self.parts) + "\n</svg>\n")


def point(x: float, y: float) -> str:
    return f"{number(x)} {number(y)}"


def marker_path(kind: str, x: float, y: float, size: float) -> str:
    """Path data of one marker centred on (x, y): x (a cross), ^ < > (triangles), s (a square)."""
    h = size / 2
    if kind == "x":
        return f"M{point(x - h, y - h)}L{point(x + h, y + h)}M{point(x - h, y + h)}L{point(x + h, y - h)}"
    if kind == "^":
        return f"M{point(x, y - h)}L{point(x + h, y + h)}L{point(x - h, y + h)}Z"
    if kind == ">":
        return f"M{point(x + h, y)}L{point(x - h, y - h)}L{point(x - h, y + h)}Z"
    if kind == "<":
        return f"M{point(x - h, y)}L{point(x + h, y - h)}L{point(x + h, y + h)}Z"
    if kind == "s":
        return f"M{point(x - h, y - h)}h{number(size)}v{number(size)}h{number(-size)}Z"
    raise ValueError(f"no marker {kind!r}")


def ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values covering [low, high] (1, 2 or 5 times a power of ten apart)."""
    if high <= low:
        return [low]
    raw = (high - low) / max(count, 1)
    power = 10 ** _floor_log10(raw)
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = -(-low // step) * step
    out = []
    v = first
    while v <= high + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _floor_log10(x: float) -> int:
    n = 0
    while x >= 10:
        x /= 10
        n += 1
    while x < 1:
        x *= 10
        n -= 1
    return n


def tick_label(v: float) -> str:
    if v == int(v):
        return f"{int(v):,}"
    return f"{v:g}"
