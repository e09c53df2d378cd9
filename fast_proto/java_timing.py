"""Test-only: the planned "Java timing" model, applied to the reference by patching it.

The reference will get it for real (the lead's change); until then this shim lets the
cross-check exercise the twin's `slack` parameter against a Python rendering of the same
planned semantics:

- the horizon is the minimum over each live node's wake_at + slack, every message's
  sent + delay_max, RPC deadlines, the script and calm_at (then at least now);
- a tick of node i is enabled when 0 <= wake_i <= horizon;
- a Tick carries `late` and fires at max(now, wake_i + late);
- the seeded chooser, after picking a Tick and drawing its 16-bit draw, draws
  late = lo + randrange(hi - lo + 1), lo = max(0, now - wake_i), hi = min(slack, horizon - wake_i),
  only when hi > lo (late = 0 otherwise, which fires at the same time as late = lo).

With slack 0 this is exactly today's reference. Use: `with java_timing(10): ...`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from reference_impl import chooser as chooser_mod
from reference_impl import world as wm
from reference_impl.state import record


@record
class LateTick(wm.Tick):
    late: int = 0


@contextlib.contextmanager
def java_timing(slack: int) -> Iterator[None]:
    saved = {name: getattr(wm, name) for name in ("_horizon", "event_time")}
    saved_choose = chooser_mod.SeededChooser.choose
    orig_horizon = wm._horizon

    def _horizon(w, wakes):
        wakes = wakes if wakes is not None else wm.wake_times(w)
        shifted = [t + slack if t >= 0 else t for t in wakes]
        return orig_horizon(w, shifted)

    def event_time(w, event):
        if isinstance(event, wm.Tick):
            wake = wm.wake_times(w)[event.node]
            return max(w.now, wake + getattr(event, "late", 0))
        return saved["event_time"](w, event)

    def choose(self, w):
        ev = saved_choose(self, w)
        if isinstance(ev, wm.Tick):
            wake = wm.wake_times(w)[ev.node]
            h = wm.horizon(w)
            lo, hi = max(0, w.now - wake), min(slack, h - wake)
            late = lo + self.rng.randrange(hi - lo + 1) if hi > lo else 0
            return LateTick(node=ev.node, draw=ev.draw, late=late)
        return ev

    wm._horizon = _horizon
    wm.event_time = event_time
    wm._LAST_HORIZON[0] = None
    wm._HOT[LateTick] = wm._HOT[wm.Tick]
    chooser_mod.SeededChooser.choose = choose
    try:
        yield
    finally:
        wm._horizon = saved["_horizon"]
        wm.event_time = saved["event_time"]
        wm._LAST_HORIZON[0] = None
        del wm._HOT[LateTick]
        chooser_mod.SeededChooser.choose = saved_choose
