"""Expected causes for the dledger_log twin, computed by spec/dledger_log.py itself.

A cause must name the concrete event in this history (this entry was in the unflushed
tail this OS crash dropped; this truncation was decided on COMPARE state that was stale
then; this voter lost its term file between these two grants). Rather than restate that
logic over arrays, the kernel keeps the evidence in its ghost (histories.fast.
dledger_log_ghost), and when a violation may still be recorded as expected it asks
(`rq`, one row per property) and pauses after the step. `answer` decodes what the cause
functions read of that step's world (dledger_log_decode.cause_world) and applies
spec.properties.Monitor._record's rule with the spec's own functions, so the texts are
the reference's by construction. Pauses are rare: step violations, and a state
violation only when the evidence it reads changed (dledger_log_monitor.check_states).
"""

from __future__ import annotations

import histories.fast.dledger_log_decode as decode
import histories.fast.dledger_log_layout as L
import histories.fast.dledger_log_monitor as M
from reference_impl.dledger_log import store as st
from reference_impl.election import records as el
from spec import dledger_log as spec
from spec import election as espec


class Diverged(AssertionError):
    """The kernel saw a violation the spec's own functions do not see on the same world."""


def _leader_lacks(w, i: int, term: int, acked: bool) -> str | None:
    """spec.dledger_log.log2 / log6 for the leader the kernel found lacking entries."""
    obs = ((i, el.RoleChanged(term=term, role=el.Role.LEADER, leader=w.cfg.ids[i])),)
    wanted = w.ghost.acked if acked else w.ghost.committed
    if spec._leader_lacks(w, obs, wanted, "acknowledged" if acked else "committed"):
        raise Diverged(f"{w.cfg.ids[i]} became leader lacking entries in the twin only")
    return spec._recall(w)[1]


def _dropped(p, s, i: int, w) -> list:
    """spec.dledger_log._dropped(before, after) of server i: the step's saved tail (sv) against
    its log now, walking down from the old end."""
    md = s.S[L.I_MD][i]
    sv = s.S[L.I_SV][i]
    base, count = int(md[L.MD_SVB]), int(md[L.MD_SVN])
    after = w.nodes[i].store
    out = []
    for r in range(count - 1, -1, -1):
        e = decode.entry(p.C, base + r, *sv[r])
        if st.entry_at(after, e.index) == e:
            break
        out.append(e)
    return out


def _log3(p, s, w, i: int) -> str | None:
    committed = w.ghost.committed
    lost = [e for e in _dropped(p, s, i, w) if committed.get(e.index) == e]
    if not lost:
        raise Diverged(f"{w.cfg.ids[i]} lost committed entries in the twin only")
    return spec._loss_cause(None, None, w, i, lost)


def cause(p, s, w, prop: int, a: int, b: int, c: int) -> str | None:
    """Property `prop`'s expected_when on world `w` (the kernel's request arguments a, b, c)."""
    if prop == L.P_LOG1:
        return spec.log1_expected(w)
    if prop == L.P_LOG5:
        return spec.log5_expected(w)
    if prop == L.P_LOG2:
        return _leader_lacks(w, a, b, False)
    if prop == L.P_LOG6:
        return _leader_lacks(w, a, b, True)
    if prop == L.P_LOG3:
        return _log3(p, s, w, a)
    if prop == L.P_LOG4:
        return spec._decrease_cause(w, a, None, None, b, c)
    if prop == L.P_LIVE1:
        return espec.live1_expected(w)
    if prop == L.P_LIVE3:
        return espec.live3_expected(w)
    raise ValueError(f"no expected cause for property {L.PROPERTY_IDS[prop]}")


def answer(p, s) -> None:
    """Monitor._record for every property the kernel asked about at its last step."""
    rq = s.G[M.G_RQ]
    step, now = int(s.ws[L.W_STEPS]), int(s.ws[L.W_NOW])
    w = decode.cause_world(p, s)
    for prop in range(L.NPROP):
        if rq[prop, L.RQ_ON] != 1:
            continue
        rq[prop, L.RQ_ON] = 0
        row = s.vi[prop]
        text = cause(p, s, w, prop, int(rq[prop, L.RQ_A]), int(rq[prop, L.RQ_B]), int(rq[prop, L.RQ_C]))
        if row[L.V_STEP] >= 0 and (row[L.V_CK] == L.CA_NONE or text is not None):
            continue  # still explained (or already unexpected): the first violation stands
        row[L.V_STEP] = step
        row[L.V_T] = now
        row[L.V_CK] = L.CA_NONE if text is None else L.CA_KNOWN
        if text is None:
            s.texts.pop(prop, None)
        else:
            s.texts[prop] = text
