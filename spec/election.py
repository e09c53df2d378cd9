"""Election and heartbeat properties (docs/properties.md: ELE-*, HB-*).

Each predicate reads a world of the `election` protocol: member states and the
ghost variables of reference_impl.election.world. Bounds are derived from the
DLedger config and the fault profile of the world being checked.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.election import records as el
from reference_impl.election import world as ew
from spec.properties import Property, register

TERM_FILE_LOST = ("{who} lost its currterm file in an OS crash: DLedger 0.2.6 persists currTerm/currVoteFor "
                  "without fsync (IOUtils.string2File), so it forgot its term and vote")


def _forgetful(w: core.World, node_ids: set[str]) -> str | None:
    """The known cause, if one of `node_ids` has lost its term file in this history."""
    lost = sorted(w.cfg.ids[i] for i in w.history.lost_writes if w.cfg.ids[i] in node_ids)
    return TERM_FILE_LOST.format(who=", ".join(lost)) if lost else None


def _double_voters(w: core.World, term: int | None = None) -> set[str]:
    return {v for (v, t), c in w.ghost.grants.items() if len(c) > 1 and (term is None or t == term)}


def ele1_expected(w: core.World, event: Any = None) -> str | None:
    """Two leaders in a term need a voter that accepted both; expected only if that voter lost its term file."""
    terms = [t for t, ids in w.ghost.elected.items() if len(ids) > 1]
    return _forgetful(w, set().union(*(_double_voters(w, t) for t in terms))) if terms else None


def ele2_expected(w: core.World, event: Any = None) -> str | None:
    return _forgetful(w, _double_voters(w))


def ele3_expected(w: core.World, event: Any = None) -> str | None:
    """A term drops at the very step its node loses the term file, and only then is it expected:
    a random OS crash or disk loss, or a scenario's `os_crash` / `disk_loss` action."""
    if isinstance(event, core.Crash) and event.os:
        return TERM_FILE_LOST.format(who=w.cfg.ids[event.node])
    if isinstance(event, core.Scripted) and w.cfg.script[event.index].do in ("os_crash", "disk_loss"):
        lost = [w.cfg.ids[i] for i in sorted(w.history.lost_writes) if not w.alive[i]]
        return TERM_FILE_LOST.format(who=", ".join(lost)) if lost else None
    return None


def _dl(w: core.World) -> el.DLedgerConfig:
    return w.cfg.proto.dledger


def _dmax(w: core.World) -> int:
    return w.cfg.profile.delay_ms[1]


# --- ELE-1: at most one leader per term ---


def ele1(w: core.World) -> bool:
    return all(len(ids) <= 1 for ids in w.ghost.elected.values())


def ele1_explain(w: core.World) -> str:
    bad = {t: sorted(ids) for t, ids in w.ghost.elected.items() if len(ids) > 1}
    return f"two leaders in one term: {bad}"


# --- ELE-2: a voter accepts at most one candidate per term, across crashes ---


def ele2(w: core.World) -> bool:
    return all(len(c) <= 1 for c in w.ghost.grants.values())


def ele2_explain(w: core.World) -> str:
    bad = {f"{v}@{t}": sorted(c) for (v, t), c in w.ghost.grants.items() if len(c) > 1}
    return f"a voter accepted two candidates in one term: {bad}"


# --- ELE-3: currTerm never decreases, across crashes ---


def ele3(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if before.nodes is after.nodes:
        return True
    return all(b.curr_term <= a.curr_term for b, a in zip(before.nodes, after.nodes))


# --- ELE-4: leader of term t only with a quorum of ACCEPTs for t ---


def ele4(w: core.World) -> bool:
    quorum = _dl(w).is_quorum
    grants = w.ghost.grants
    for term, leaders in w.ghost.elected.items():
        for leader in leaders:
            voters = sum(1 for node_id in w.cfg.ids if leader in grants.get((node_id, term), ()))
            if not quorum(voters):
                return False
    return True


def ele4_explain(w: core.World) -> str:
    quorum = _dl(w).is_quorum
    bad = []
    for term, leaders in w.ghost.elected.items():
        for leader in leaders:
            voters = sorted(v for v in w.cfg.ids if leader in w.ghost.grants.get((v, term), ()))
            if not quorum(len(voters)):
                bad.append(f"{leader} led term {term} with ACCEPTs from {voters} only")
    return "; ".join(bad)


# --- ELE-5: a follower of term t records leader L only if L became leader in t ---


def ele5(w: core.World) -> bool:
    elected = w.ghost.elected
    for m, up in zip(w.nodes, w.alive):
        if up and m.role is el.Role.FOLLOWER and m.leader_id not in elected.get(m.curr_term, ()):
            return False
    return True


def ele5_explain(w: core.World) -> str:
    bad = [f"{m.self_id} follows {m.leader_id} in term {m.curr_term}" for m, up in zip(w.nodes, w.alive)
           if up and m.role is el.Role.FOLLOWER and m.leader_id not in w.ghost.elected.get(m.curr_term, ())]
    return "; ".join(bad) + f" (leaders by term: { {t: sorted(v) for t, v in w.ghost.elected.items()} })"


# --- HB-1: no follower timeout while its leader's heartbeats arrive ---


def hb1_quiet_ms(w: core.World) -> int:
    """How long the world must have been free of faults for HB-1 to apply."""
    c = _dl(w)
    return (c.max_heart_beat_leak + 1) * c.heart_beat_time_interval_ms + c.maintainer_sleep_ms + _dmax(w)


def hb1(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    if not obs:
        return True
    for i, o in obs:
        if isinstance(o, el.FollowerTimeout) and o.leader is not None:
            if after.now - after.history.last_fault_ms <= hb1_quiet_ms(after):
                continue
            j = after.cfg.ids.index(o.leader)
            leader = before.nodes[j]
            if (before.alive[j] and leader.role is el.Role.LEADER and leader.curr_term == o.term
                    and (j, i) not in before.net.cut):
                return False
    return True


# --- HB-2: a leader cut off from a quorum steps down in bounded time ---


def hb2_bound_ms(w: core.World) -> int:
    """maxHeartBeatLeak x interval, plus one full round (the wait for it to start and its
    latch wait), the loop's sleep, and a reply that was already on its way."""
    c = _dl(w)
    return ((c.max_heart_beat_leak + 2) * c.heart_beat_time_interval_ms + c.maintainer_sleep_ms
            + 2 * _dmax(w) + 1)


def hb2(w: core.World) -> bool:
    if max(w.ghost.cut_since) < 0:
        return True  # nobody is cut off from a quorum
    bound = hb2_bound_ms(w)
    for m, up, since in zip(w.nodes, w.alive, w.ghost.cut_since):
        if up and m.role is el.Role.LEADER and since >= 0 and w.now - since > bound:
            return False
    return True


def hb2_explain(w: core.World) -> str:
    bad = [f"{m.self_id} still leads {w.now - s} ms after losing its quorum at {s} ms"
           for m, up, s in zip(w.nodes, w.alive, w.ghost.cut_since)
           if up and m.role is el.Role.LEADER and s >= 0]
    return "; ".join(bad) + f" (bound {hb2_bound_ms(w)} ms)"


# --- ELE-L: after faults stop, a leader with a quorum of followers within a bound ---

ELE_L_BOUND_MS = 30_000


def ele_l(w: core.World) -> bool:
    h = w.history
    return not h.calm or w.ghost.settled_ms >= 0 or w.now - h.calm_at_ms <= ELE_L_BOUND_MS


def ele_l_explain(w: core.World) -> str:
    roles = ", ".join(f"{m.self_id}:{m.role.value}@{m.curr_term}" for m in w.nodes)
    return f"no settled leader {w.now - w.history.calm_at_ms} ms after faults stopped ({roles})"


def measure(w: core.World) -> dict:
    """Measured quantities of one history (ELE-L and companions)."""
    g, h = w.ghost, w.history
    return {
        "settle_ms": g.settled_ms - h.calm_at_ms if h.calm and g.settled_ms >= 0 else None,
        "elections": sum(len(v) for v in g.elected.values()),
        "max_term": max(m.curr_term for m in w.nodes),
        "crashes": h.crashes,
    }


class LeaderlessMeter:
    """Time without a settled leader (a live LEADER followed by a quorum in its term,
    election_world.settled), over the whole history. Leadership changes only with a
    role change or a fault, and both come with observations, so only such steps are
    looked at."""

    def __init__(self, cfg: core.WorldConfig) -> None:
        self.since = 0  # leaderless since (ms), -1 while settled; a cluster boots leaderless
        self.total = 0
        self.episodes = 0

    def __call__(self, i: int, before: core.World, event: Any, after: core.World, obs: tuple) -> None:
        if not obs:
            return
        if ew.settled(after):
            if self.since >= 0:
                self.total += after.now - self.since
                self.since = -1
        elif self.since < 0:
            self.since = after.now
            self.episodes += 1

    def result(self, w: core.World) -> dict:
        return {"leaderless_ms": self.total + (w.now - self.since if self.since >= 0 else 0),
                "leader_losses": self.episodes}


def meter(cfg: core.WorldConfig) -> LeaderlessMeter:
    return LeaderlessMeter(cfg)


PROPERTIES = [
    Property(id="ELE-1", protocol="election", kind="safety", holds=ele1, explain=ele1_explain,
             reads=lambda w: (w.ghost.elected,), expected_when=ele1_expected,
             statement="At most one node ever becomes leader in a given term."),
    Property(id="ELE-2", protocol="election", kind="safety", holds=ele2, explain=ele2_explain,
             reads=lambda w: (w.ghost.grants,), expected_when=ele2_expected,
             statement="A node accepts at most one candidate per term, across crashes."),
    Property(id="ELE-3", protocol="election", kind="safety", holds_step=ele3, expected_when=ele3_expected,
             statement="A node's currTerm never decreases, across crashes."),
    Property(id="ELE-4", protocol="election", kind="safety", holds=ele4, explain=ele4_explain,
             reads=lambda w: (w.ghost.elected, w.ghost.grants),
             statement="A node becomes leader of term t only with a quorum of ACCEPTs for term t."),
    Property(id="ELE-5", protocol="election", kind="safety", holds=ele5, explain=ele5_explain,
             reads=lambda w: (w.nodes, w.ghost.elected),  # crash and restart replace the node
             statement="A follower of term t records leader L only if L became leader in term t."),
    Property(id="HB-1", protocol="election", kind="bounded", holds_step=hb1,
             statement="Once no fault has happened for (maxHeartBeatLeak+1) x heartBeatTimeIntervalMs, a follower "
                       "never turns candidate while its leader is alive, leads its term and can reach it."),
    Property(id="HB-2", protocol="election", kind="bounded", holds=hb2, explain=hb2_explain,
             statement="A leader cut off from a quorum steps down within maxHeartBeatLeak x "
                       "heartBeatTimeIntervalMs plus one heartbeat round."),
    Property(id="ELE-L", protocol="election", kind="bounded", holds=ele_l, explain=ele_l_explain,
             statement=f"After faults stop, a leader with a quorum of followers exists within {ELE_L_BOUND_MS} ms; "
                       "the latency is reported as a distribution."),
]

register(PROPERTIES)
