"""Election and heartbeat properties (docs/properties.md: ELE-*, HB-*).

Each predicate reads a world of the `election` protocol: member states and the
ghost variables of reference_impl.election.world. Bounds are derived from the
DLedger config and the fault profile of the world being checked.
"""

from __future__ import annotations

from typing import Any

from reference_impl import core
from reference_impl.election import ghost as eg
from reference_impl.election import records as el
from reference_impl.election import world as ew
from spec import bounds, replies
from spec.properties import Property, register

TERM_FILE_LOST = ("{who} lost its currterm file in an OS crash: DLedger 0.2.6 persists currTerm/currVoteFor "
                  "without fsync (IOUtils.string2File), so it forgot its term and vote")
REVOTED = ("{voter} accepted {first} in term {term} at {t1} ms, lost its currterm file in an OS crash or disk loss "
           "at {lost} ms (it was at term {was}; DLedger 0.2.6 writes currTerm/currVoteFor without fsync, "
           "IOUtils.string2File), restarted with no vote and accepted {second} in term {term} at {t2} ms")


def revote_cause(terms: eg.Terms, voter: str, term: int, a: str, b: str) -> str | None:
    """The evidence that `voter` accepted both `a` and `b` in `term` only because it lost its term
    file in between: an ACCEPT of one, then a lost currterm file, then an ACCEPT of the other."""
    votes = terms.votes.get((voter, term), ())
    for k, (c1, t1, s1) in enumerate(votes):
        if c1 not in (a, b):
            continue
        for c2, t2, s2 in votes[k + 1:]:
            if c2 in (a, b) and c2 != c1:
                lost = eg.lost_between(terms, voter, s1, s2)
                if lost is not None:
                    return REVOTED.format(voter=voter, first=c1, second=c2, term=term, t1=t1, t2=t2,
                                          lost=lost[0], was=lost[1])
    return None


def two_leaders_cause(terms: eg.Terms, voters: tuple[str, ...], term: int, leaders: list[str]) -> str | None:
    """Two leaders of one term need a voter that accepted both (quorums intersect): expected only
    when, for every pair of them, some voter's second ACCEPT came after it lost its term file."""
    causes = []
    for k, a in enumerate(leaders):
        for b in leaders[k + 1:]:
            cause = next((c for v in voters if (c := revote_cause(terms, v, term, a, b)) is not None), None)
            if cause is None:
                return None
            causes.append(cause)
    return "; ".join(dict.fromkeys(causes)) or None


def ele1_expected(w: core.World, event: Any = None) -> str | None:
    """Two leaders in a term: expected only with a voter that accepted both, its term file lost between."""
    terms = {t: sorted(ids) for t, ids in w.ghost.elected.items() if len(ids) > 1}
    causes = [two_leaders_cause(w.ghost.terms, w.cfg.ids, t, leaders) for t, leaders in sorted(terms.items())]
    return "; ".join(causes) if causes and all(causes) else None


def ele2_expected(w: core.World, event: Any = None) -> str | None:
    """A voter with two candidates in a term: expected only if each change of candidate followed a
    loss of its term file (an ACCEPT, the OS crash, then the other ACCEPT)."""
    causes = []
    terms = w.ghost.terms
    for (voter, term), cands in sorted(w.ghost.grants.items()):
        if len(cands) < 2:
            continue
        votes = terms.votes.get((voter, term), ())
        for (c1, _, _), (c2, _, _) in zip(votes, votes[1:]):
            if c1 != c2:
                cause = revote_cause(terms, voter, term, c1, c2)
                if cause is None:
                    return None
                causes.append(cause)
        if not causes:
            return None  # the grants were not seen in order (a hand-built ghost): no evidence
    return "; ".join(dict.fromkeys(causes)) or None


def ele3_expected(w: core.World, event: Any = None) -> str | None:
    """A term drops at the very step its node loses the term file, and only then is it expected:
    that node's OS crash or disk loss (a random fault, or a scenario's `os_crash` / `disk_loss`).
    `_term_drops` names the nodes whose term went down at this step (ele3 leaves them)."""
    dropped = _DROPS.get(id(w))
    nodes = dropped[1] if dropped is not None and dropped[0] is w else None
    if not nodes:
        return None
    if isinstance(event, core.Crash) and event.os and nodes == {event.node}:
        return TERM_FILE_LOST.format(who=w.cfg.ids[event.node])
    if isinstance(event, core.Scripted) and w.cfg.script[event.index].do in ("os_crash", "disk_loss") \
            and all(not w.alive[i] for i in nodes) and len(nodes) == 1:
        return TERM_FILE_LOST.format(who=w.cfg.ids[next(iter(nodes))])
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


_DROPS: dict[int, tuple] = {}  # id(world after a violating step) -> (that world, the nodes whose term dropped)


def ele3(before: core.World, event: Any, after: core.World, obs: tuple) -> bool:
    bn, an = before.nodes, after.nodes
    if bn is an:
        return True
    for b, a in zip(bn, an):
        if a is not b and a.curr_term < b.curr_term:
            break
    else:
        return True
    dropped = {i for i, (b, a) in enumerate(zip(bn, an)) if a is not b and a.curr_term < b.curr_term}
    if len(_DROPS) > 64:
        _DROPS.clear()
    _DROPS[id(after)] = (after, dropped)
    return False


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


_FOLLOWER = el.Role.FOLLOWER


def ele5(w: core.World) -> bool:
    get = w.ghost.elected.get
    for m, up in zip(w.nodes, w.alive):
        if up and m.role is _FOLLOWER and m.leader_id not in get(m.curr_term, ()):
            return False
    return True


def ele5_explain(w: core.World) -> str:
    bad = [f"{m.self_id} follows {m.leader_id} in term {m.curr_term}" for m, up in zip(w.nodes, w.alive)
           if up and m.role is el.Role.FOLLOWER and m.leader_id not in w.ghost.elected.get(m.curr_term, ())]
    return "; ".join(bad) + f" (leaders by term: { {t: sorted(v) for t, v in w.ghost.elected.items()} })"


# --- HB-1: no follower timeout while its leader's heartbeats arrive ---


LIVENESS = ("LIVE-1", "LIVE-2", "LIVE-3")  # also checked in the DLedger log worlds (spec/dledger_log.py)


def _hb(w: core.World) -> tuple[int, int, int]:
    """(heartBeatTimeIntervalMs, maxHeartBeatLeak, the StateMaintainer's sleep): DLedger's defaults
    (spec/bounds.py) unless the user overrode them."""
    s = bounds.setting
    return s(w, "heart_beat_time_interval_ms"), s(w, "max_heart_beat_leak"), s(w, "maintainer_sleep_ms")


def hb1_quiet_ms(w: core.World) -> int:
    """How long the world must have been free of faults for HB-1 to apply."""
    hb, leak, sleep = _hb(w)
    return (leak + 1) * hb + sleep + _dmax(w)


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
    hb, leak, sleep = _hb(w)
    return (leak + 2) * hb + sleep + 2 * _dmax(w) + 1


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


# --- ELE-L and LIVE-*: liveness as bounded properties over the quiet tail ---

VOTE_ROUNDS = 5  # the vote rounds the bounds allow for (randomized back-off; split votes resolve in one or two)


def vote_round_ms(w: core.World) -> int:
    """One vote round at its slowest (maintainAsCandidate): the wait before it (getNextTimeToRequestVote:
    below maxVoteIntervalMs), its latch wait (2000 + nextInt(maxVoteIntervalMs)), and the extra back-off
    a parse adds for a bigger ledger (maxVoteIntervalMs)."""
    mv = bounds.setting(w, "max_vote_interval_ms")
    return mv + bounds.VOTE_LATCH_BASE_MS + mv + mv


def ele_l_bound_ms(w: core.World) -> int:
    """A leader with a quorum: a follower notices its leader gone (maxHeartBeatLeak x interval and a
    loop), VOTE_ROUNDS vote rounds, and the new leader's first heartbeat round reaching a quorum."""
    hb, leak, sleep = _hb(w)
    return leak * hb + sleep + VOTE_ROUNDS * vote_round_ms(w) + hb + 2 * _dmax(w)


def live1_bound_ms(w: core.World) -> int:
    """Every live node following that leader: one more heartbeat round, for a node of a lower term,
    which a heartbeat only turns into a candidate of the leader's term (TERM_NOT_READY; the next one
    makes it a follower)."""
    hb, _, sleep = _hb(w)
    return ele_l_bound_ms(w) + hb + 2 * _dmax(w) + sleep


def live3_bound_ms(w: core.World) -> int:
    """A node outside a leadership a quorum follows joins it within two heartbeat rounds after
    the next one starts: the first makes it a candidate of the leader's term, its loop adopts
    the term, the second makes it follow. A round starts once more than the interval has passed
    since the last (maintainAsLeader: elapsed > interval), noticed by a loop up to its sleep
    late, and the node may fall out just after a round went out: three periods in all. Its own
    loop may be blocked in a vote round's latch wait (maintainAsCandidate: 2000 + nextInt(
    maxVoteIntervalMs)) before it can adopt the term."""
    hb, _, sleep = _hb(w)
    vote_wait = bounds.VOTE_LATCH_BASE_MS + bounds.setting(w, "max_vote_interval_ms")
    return 3 * (hb + sleep + 1) + vote_wait + 4 * _dmax(w) + 2 * sleep


def live2_bound_ms(w: core.World) -> int:
    """A transfer's RPC completes or fails: a failure by rpcTimeout plus Netty's response-table
    scan (bounds.NETTY_SCAN_MS: expired a scan period after the timeout, found at the next scan);
    the reply may be a delay away, and the loop's sleep."""
    return (bounds.setting(w, "rpc_timeout_ms") + 2 * bounds.NETTY_SCAN_MS + 2 * _dmax(w)
            + bounds.setting(w, "maintainer_sleep_ms") + 1)


def _elector_on(w: core.World) -> bool:
    return replies._dledger(w).enable_leader_elector


def _members(w: core.World) -> list:
    """The live DLedger members (in the log worlds, the servers' members; clients left out)."""
    return [m for n, up in zip(w.nodes, w.alive) if up and (m := replies.member(n)) is not None]


def ele_l(w: core.World) -> bool:
    h = w.history
    return (not h.calm or w.ghost.settled_ms >= 0 or w.now - h.calm_at_ms <= ele_l_bound_ms(w)
            or not _elector_on(w))


def ele_l_explain(w: core.World) -> str:
    roles = ", ".join(f"{m.self_id}:{m.role.value}@{m.curr_term}" for m in _members(w))
    return f"no settled leader {w.now - w.history.calm_at_ms} ms after faults stopped ({roles})"


STUCK = ("{who} is a CANDIDATE of term {t}, above {leader}'s term {lt}, and its log ({let}/{lei}) is behind "
         "{ahead}'s: voters reject its vote requests on the log before they look at the term (handleVote's "
         "ledger check comes first), so nobody adopts term {t}, and {leader}, which keeps a quorum of heartbeat "
         "successes, ignores its EXPIRED_TERM answers (sendHeartbeats looks at maxTerm only without a quorum; "
         "DLedger 0.4.0 looks first): it stays a candidate, outside the leadership, for good")


def stuck_candidates(w: core.World, node_ids: Any) -> str | None:
    """The 0.2.6 / 0.3.1.2 evidence that each of `node_ids` is a candidate nothing can bring back: its
    term is above the leadership a quorum follows, and enough live peers hold a longer log that
    its vote rounds never count a quorum past the ledger rejections (parse: !isQuorum(valid -
    biggerLedger)), while the leader keeps its quorum and ignores the higher term."""
    dl = replies._dledger(w)
    lead = w.ghost.settled_leader
    if dl.step_down_on_higher_term or lead is None or not node_ids:
        return None
    live = {m.self_id: m for m in _members(w)}
    quorum = len(dl.peers) // 2 + 1
    causes = []
    for x in sorted(node_ids):
        m = live.get(x)
        if m is None or m.role is not el.Role.CANDIDATE or m.curr_term <= lead[1]:
            return None
        ahead = sorted(o.self_id for o in live.values() if o is not m and (
            m.ledger_end_term < o.ledger_end_term
            or (m.ledger_end_term == o.ledger_end_term and m.ledger_end_index < o.ledger_end_index)))
        if len(dl.peers) - len(ahead) >= quorum:
            return None
        causes.append(STUCK.format(who=x, t=m.curr_term, leader=lead[0], lt=lead[1], let=m.ledger_end_term,
                                   lei=m.ledger_end_index, ahead=", ".join(ahead)))
    return "; ".join(causes)


def live1_expected(w: core.World, event: Any = None) -> str | None:
    """Every live node outside the followed leadership is a stuck candidate (stuck_candidates)."""
    lead = w.ghost.settled_leader
    if lead is None:
        return None
    return stuck_candidates(w, {m.self_id for m in _members(w) if m.self_id != lead[0] and not (
        m.role is el.Role.FOLLOWER and m.leader_id == lead[0] and m.curr_term == lead[1])})


ASTRAY = ("{who} followed {other}, which also led term {t} at {at} ms ({why}): a follower of one leader of a "
          "term answers another's heartbeats INCONSISTENT_LEADER (handleHeartBeat), and leaves only once its own "
          "leader, which no quorum follows, has stepped down and maxHeartBeatLeak heartbeats went missing, so it "
          "joins {leader} within {bound} ms of that leadership")


def astray_bound_ms(w: core.World) -> int:
    """How long after a second leader of the followed term won a node may stay outside the followed
    leadership on its account: that leader steps down (HB-2's bound), the node notices its heartbeats
    missing (maxHeartBeatLeak x interval and a loop), then joins as any straggler does (LIVE-3)."""
    hb, leak, sleep = _hb(w)
    return hb2_bound_ms(w) + leak * hb + sleep + live3_bound_ms(w)


def astray(w: core.World, x: str) -> str | None:
    """The evidence that node x stays outside the followed leadership (leader L of term t) because it
    followed another leader of term t: that one won t after L's voters' quorum had, with ELE-1's
    lost-term-file evidence for the two (two_leaders_cause), x accepted it in t (or is it), and it
    won no longer ago than astray_bound_ms (from the quiet tail on)."""
    lead = w.ghost.settled_leader
    if lead is None:
        return None
    leader, t = lead
    terms = w.ghost.terms
    bound = astray_bound_ms(w)
    for other, at, _ in reversed(terms.led.get(t, ())):
        if other == leader or w.now - max(at, w.history.calm_at_ms) > bound:
            continue
        if other != x and not any(c == other for c, _, _ in terms.votes.get((x, t), ())):
            continue
        why = two_leaders_cause(terms, w.cfg.ids, t, sorted((leader, other)))
        if why is not None:
            return ASTRAY.format(who=x, other=other, t=t, at=at, why=why, leader=leader, bound=bound)
    return None


def live3_expected(w: core.World, event: Any = None) -> str | None:
    """Every late straggler is a stuck candidate (0.2.6 / 0.3.1.2) or astray behind a second leader of
    the followed term."""
    bound = live3_bound_ms(w)
    late = sorted(n for n, since in w.ghost.stragglers.items() if w.now - max(since, w.history.calm_at_ms) > bound)
    causes = []
    for x in late:
        cause = stuck_candidates(w, {x}) or astray(w, x)
        if cause is None:
            return None
        causes.append(cause)
    return "; ".join(causes) or None


def live1(w: core.World) -> bool:
    h, g = w.history, w.ghost
    return (not h.calm or g.agreed or w.now - max(g.agreed_since, h.calm_at_ms) <= live1_bound_ms(w)
            or not _elector_on(w))


def live1_explain(w: core.World) -> str:
    roles = ", ".join(f"{m.self_id}:{m.role.value}@{m.curr_term}->{m.leader_id}" for m in _members(w))
    since = max(w.ghost.agreed_since, w.history.calm_at_ms)
    return f"the live nodes have not all followed one leader for {w.now - since} ms ({roles}; bound " \
           f"{live1_bound_ms(w)} ms)"


def live2(w: core.World) -> bool:
    t = w.ghost.transfers
    if not t:
        return True
    bound = live2_bound_ms(w)
    return all(w.now - since <= bound for since in t.values())


def live2_explain(w: core.World) -> str:
    return "; ".join(f"{n} began a leadership transfer {w.now - t} ms ago and has not ended it (bound "
                     f"{live2_bound_ms(w)} ms)" for n, t in w.ghost.transfers.items())


def live3(w: core.World) -> bool:
    h, g = w.history, w.ghost
    if not h.calm or not g.stragglers:
        return True
    bound = live3_bound_ms(w)
    return all(w.now - max(since, h.calm_at_ms) <= bound for since in g.stragglers.values())


def live3_explain(w: core.World) -> str:
    g = w.ghost
    lead = g.settled_leader
    out = []
    for n, since in g.stragglers.items():
        m = replies.member(w.nodes[w.cfg.ids.index(n)])
        out.append(f"{n} ({m.role.value}@{m.curr_term}, leader {m.leader_id}) has been outside {lead[0]}'s "
                   f"leadership of term {lead[1]} for {w.now - max(since, w.history.calm_at_ms)} ms")
    return "; ".join(out) + f" (bound {live3_bound_ms(w)} ms)"


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
             cause_reads=lambda w: (w.ghost.terms, w.cfg.ids),
             statement="At most one node ever becomes leader in a given term."),
    Property(id="ELE-2", protocol="election", kind="safety", holds=ele2, explain=ele2_explain,
             reads=lambda w: (w.ghost.grants,), expected_when=ele2_expected,
             cause_reads=lambda w: (w.ghost.terms,),
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
    Property(id="RPL-1", protocol="election", kind="safety", holds_step=replies.rpl1, explain=replies.explain,
             statement=replies.RPL1),
    Property(id="RPL-2", protocol="election", kind="safety", holds_step=replies.rpl2, explain=replies.explain,
             statement=replies.RPL2),
    Property(id="ELE-L", protocol="election", kind="bounded", holds=ele_l, explain=ele_l_explain,
             statement="After faults stop, a leader with a quorum of followers exists within maxHeartBeatLeak x "
                       "heartBeatTimeIntervalMs, five vote rounds and a heartbeat round (33,010 ms + 2 x the largest "
                       "message delay with DLedger's defaults); the latency is reported as a distribution."),
    Property(id="LIVE-1", protocol="election", kind="bounded", holds=live1, explain=live1_explain,
             statement="After faults stop, every live node follows one and the same leader in its term within "
                       "ELE-L's bound plus one heartbeat round, and again within that bound whenever it stops "
                       "doing so."),
    Property(id="LIVE-2", protocol="election", kind="bounded", holds=live2, explain=live2_explain,
             statement="A leadership transfer a leader begins ends (its transferee cleared, or it no longer leads) "
                       "within rpcTimeoutMs plus a message's round trip: the transfer RPC's timeout bounds it, "
                       "faults or not."),
    Property(id="LIVE-3", protocol="election", kind="bounded", holds=live3, explain=live3_explain,
             statement="After faults stop, a live node outside the leadership a quorum follows (an isolated node "
                       "back from a partition, a restarted one) follows that leader within two heartbeat rounds, "
                       "unless the leadership changes meanwhile."),
]

register(PROPERTIES)
