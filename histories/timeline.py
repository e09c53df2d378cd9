"""A readable terminal timeline of a history: who led when, term changes, faults."""

from __future__ import annotations

from typing import IO, Any

from histories import presentation
from histories.formats import escape
from reference_impl import core
from reference_impl.core import codec, scenario

HEADLINE = ("alive", "role", "term", "leader")  # fields whose changes make the timeline


def describe_node(now: dict, before: dict | None) -> str | None:
    if before is not None and all(now.get(k) == before.get(k) for k in HEADLINE):
        return None
    if not now.get("alive"):
        return "down" + (f" (term {now.get('term')} on disk)" if "term" in now else "")
    role = now.get("role")
    term = now.get("term")
    if role == "FOLLOWER" and now.get("leader"):
        return f"FOLLOWER of {now['leader']}, term {term}"
    return f"{role}, term {term}" if term is not None else str(role)


def describe_event(w: core.World, ev: Any) -> str | None:
    ids = w.cfg.ids
    if isinstance(ev, core.Crash):
        return f"{ {'process': 'crash', 'os': 'OS crash', 'disk': 'disk lost +crash'}[ev.kind()]} {ids[ev.node]}"
    if isinstance(ev, core.Restart):
        return f"restart {ids[ev.node]}"
    if isinstance(ev, core.Partition):
        return "partition " + " | ".join(" ".join(ids[i] for i in g) for g in ev.groups)
    if isinstance(ev, core.CutLink):
        return f"cut link {ids[ev.src]} -> {ids[ev.dst]}"
    if isinstance(ev, core.Heal):
        return "heal all links"
    if isinstance(ev, core.Calm):
        return "faults stop (quiet tail): links heal, down nodes restart"
    if isinstance(ev, core.Scripted):
        a = w.cfg.script[ev.index]
        return f"script: {a.do}" + (f" {scenario.resolve(w, a.node)}" if a.node is not None else "")
    return None


class Timeline:
    """A step hook that prints one line per notable change."""

    def __init__(self, out: IO[str], max_lines: int = 400) -> None:
        self.out = out
        self.max_lines = max_lines
        self.lines = 0
        self.prev: dict | None = None
        self.out.write(f"{'t (ms)':>10}  {'node':<5} what\n")

    def _line(self, t: int, who: str, what: str) -> None:
        if self.lines < self.max_lines:  # text from a trace or script is escaped: no raw terminal codes
            self.out.write(f"{t:>10,}  {escape(who):<5} {escape(what)}\n")
        elif self.lines == self.max_lines:
            self.out.write(f"{'':>10}  ...   (more; --max-lines to see them)\n")
        self.lines += 1

    def __call__(self, i: int, before: core.World, ev: Any, after: core.World, obs: tuple) -> None:
        p = presentation.of(after.cfg.protocol)
        describe = p.describe or (lambda node_id, now, prev: describe_node(now, prev))
        if self.prev is None:
            self.prev = scenario.observed(before)
            for node_id, o in self.prev.items():
                text = describe(node_id, o, None)
                if text:
                    self._line(before.now, node_id, text)
        what = describe_event(before, ev)
        if what:
            self._line(after.now, "--", what)
        for k, o in obs:
            if isinstance(o, scenario.Expectation):
                self._line(after.now, "--", ("expect ok: " if o.ok else "EXPECT FAILED: ") + o.message)
            elif hasattr(o, "reply") and hasattr(o, "request"):
                self._line(after.now, "--", f"reply {codec.encode(o.reply)}")
            elif p.describe_obs is not None:
                node_id = after.cfg.ids[k] if k >= 0 else "--"
                text = p.describe_obs(after, node_id, o)
                if text:
                    self._line(after.now, node_id, text)
        changed = [i for i, (a, b) in enumerate(zip(before.nodes, after.nodes)) if a is not b] + [
            i for i, (a, b) in enumerate(zip(before.alive, after.alive)) if a != b]
        if not changed:
            return
        now = scenario.observed(after)
        for node_id in sorted({after.cfg.ids[i] for i in changed}):
            text = describe(node_id, now[node_id], self.prev.get(node_id))
            if text:
                self._line(after.now, node_id, text)
        self.prev = now
