"""Why a dledger_log property was violated: the expected-cause answers a paused kernel asks Python for.

Some causes need the reference's own reasoning over the decoded world (which entries a crash dropped, what a
leader lacks). The kernel pauses with the question in the state table; `answer` decodes the world, asks
spec/dledger_log.py and writes the answer back before the kernel resumes."""

from __future__ import annotations

from histories.fast.core.layout import (
    W_NOW,
    W_STEPS,
)
from histories.fast.dledger_log import decode
from histories.fast.dledger_log.layout import (
    CAUSE_KNOWN,
    CAUSE_NONE,
    CAUSE_REQUESTS,
    P_LIVE1,
    P_LIVE3,
    P_LOG1,
    P_LOG2,
    P_LOG3,
    P_LOG4,
    P_LOG5,
    P_LOG6,
    PROPERTIES,
    PROPERTY_IDS,
    RQ_A,
    RQ_B,
    RQ_C,
    RQ_ON,
    SAVED_ENTRIES,
    SC_SAVED,
    SC_SAVED_FROM,
    STORE_CHANGES,
    V_CAUSE,
    V_STEP,
    V_TIME,
)
from reference_impl.dledger_log import store as st
from reference_impl.election import records as el
from spec import dledger_log as spec
from spec import election as espec


class Diverged(AssertionError):
    """The kernel saw a violation the spec's own functions do not see on the same world."""


def leader_lacks(w, i: int, term: int, acked: bool) -> str | None:
    """spec.dledger_log.log2 / log6 for the leader the kernel found lacking entries."""
    obs = ((i, el.RoleChanged(term=term, role=el.Role.LEADER, leader=w.cfg.ids[i])),)
    wanted = w.ghost.acked if acked else w.ghost.committed
    if spec._leader_lacks(w, obs, wanted, "acknowledged" if acked else "committed"):
        raise Diverged(f"{w.cfg.ids[i]} became leader lacking entries in the twin only")
    return spec._recall(w)[1]


def dropped(p, s, i: int, w) -> list:
    """spec.dledger_log._dropped(before, after) of server i: the step's saved tail (sv) against
    its log now, walking down from the old end."""
    changes = s.slots[STORE_CHANGES][i]
    saved = s.slots[SAVED_ENTRIES][i]
    base, count = int(changes[SC_SAVED_FROM]), int(changes[SC_SAVED])
    after = w.nodes[i].store
    out = []
    for r in range(count - 1, -1, -1):
        e = decode.entry(p.config, base + r, *saved[r])
        if st.entry_at(after, e.index) == e:
            break
        out.append(e)
    return out


def log3(p, s, w, i: int) -> str | None:
    committed = w.ghost.committed
    lost = [e for e in dropped(p, s, i, w) if committed.get(e.index) == e]
    if not lost:
        raise Diverged(f"{w.cfg.ids[i]} lost committed entries in the twin only")
    return spec._loss_cause(None, None, w, i, lost)


def cause(p, s, w, prop: int, a: int, b: int, c: int) -> str | None:
    """Property `prop`'s expected_when on world `w` (the kernel's request arguments a, b, c)."""
    if prop == P_LOG1:
        return spec.log1_expected(w)
    if prop == P_LOG5:
        return spec.log5_expected(w)
    if prop == P_LOG2:
        return leader_lacks(w, a, b, False)
    if prop == P_LOG6:
        return leader_lacks(w, a, b, True)
    if prop == P_LOG3:
        return log3(p, s, w, a)
    if prop == P_LOG4:
        return spec._decrease_cause(w, a, None, None, b, c)
    if prop == P_LIVE1:
        return espec.live1_expected(w)
    if prop == P_LIVE3:
        return espec.live3_expected(w)
    raise ValueError(f"no expected cause for property {PROPERTY_IDS[prop]}")


def answer(p, s) -> None:
    """Monitor._record for every property the kernel asked about at its last step."""
    requests = s.slots[CAUSE_REQUESTS]
    step, now = int(s.world[W_STEPS]), int(s.world[W_NOW])
    w = decode.cause_world(p, s)
    for prop in range(PROPERTIES):
        if requests[prop, RQ_ON] != 1:
            continue
        requests[prop, RQ_ON] = 0
        row = s.verdicts[prop]
        text = cause(p, s, w, prop, int(requests[prop, RQ_A]), int(requests[prop, RQ_B]), int(requests[prop, RQ_C]))
        if row[V_STEP] >= 0 and (row[V_CAUSE] == CAUSE_NONE or text is not None):
            continue  # still explained (or already unexpected): the first violation stands
        row[V_STEP] = step
        row[V_TIME] = now
        row[V_CAUSE] = CAUSE_NONE if text is None else CAUSE_KNOWN
        if text is None:
            s.texts.pop(prop, None)
        else:
            s.texts[prop] = text
