"""Expected causes need evidence, not presence: a nearby mutant is reported unexpected under every profile.

A violation RocketMQ is known to allow is *expected* only when the history shows the link
from its cause to it (the OS crash dropped this very entry from this node's unflushed tail,
and that node then elected the leader lacking it; this voter lost its term file between its
two grants). Each test here breaks one rule next to a known cause and runs the seeded fuzzer
under every fault profile of the protocol, the profiles where the real cause is present
included (the masking case): the mutant's violation must come out unexpected.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histories import runner, scenario_file
from histories.mutants import election as em
from reference_impl import core
from reference_impl.core import faults
from reference_impl.core.state import FrozenMap
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.dledger_log import store as st
from reference_impl.election import records as el
from reference_impl.ha import commit_log as ha_st
from reference_impl.nameserver import route_info as ri
from spec import dledger_log as dspec
from spec import dledger_log_causes as dcauses
from spec import election as espec
from spec import nameserver as nspec

SCENARIOS = Path(__file__).parent / "scenarios" / "dledger_log"


def _profiles(protocol: str, crashes: bool = False) -> list[str]:
    out = []
    for name in faults.names(protocol):
        p = faults.profile(name, protocol)
        if p.any_faults() and (not crashes or p.crash > 0 or p.os_crash > 0):
            out.append(name)
    return out


def _unexpected(protocol: str, profile: str, seeds: range, steps: int, nodes: int = 3,
                want: set | None = None) -> tuple[int, list] | None:
    """The first seed whose history has an unexpected violation (of `want`, if given)."""
    p = core.protocol(protocol)
    cfg = p.make_config(nodes, {}).evolve(profile=faults.profile(profile, protocol))
    for seed in seeds:
        r = runner.simulate(cfg, seed, steps)
        bad = [v for v in r.unexpected if want is None or v.property in want]
        if bad:
            return seed, bad
    return None


# --- dledger_log: a leader that commits an entry no majority holds ---


def _max_mark(p: ep.Pusher, term: int) -> int:
    """The quorum index as the highest water mark: the leader's own, with nobody else's ack."""
    marks = p.water_marks.get(term)
    return -1 if marks is None else max(marks)


@pytest.mark.parametrize("profile", _profiles("dledger_log"))
def test_commit_without_a_majority_is_unexpected_under_every_profile(monkeypatch, profile):
    """LOG-8 reports it at once, and no OS crash of the history explains it away: under `hostile`
    and `os_crash` the LOG-2/3/5 violations it leads to used to be called "an OS crash may have
    dropped the tail"."""
    monkeypatch.setattr(ep, "quorum_index", _max_mark)
    found = _unexpected("dledger_log", profile, range(4), 2500, want={"LOG-8"})
    assert found is not None, profile


@pytest.mark.parametrize("profile", ["hostile", "os_crash"])
def test_commit_without_a_majority_is_unexpected_in_dledger_commitlog(monkeypatch, profile):
    monkeypatch.setattr(ep, "quorum_index", _max_mark)
    assert _unexpected("dledger_commitlog", profile, range(4), 4000, want={"LOG-8"}) is not None


def test_no_violation_at_a_thin_index_is_expected(monkeypatch):
    """Under the mutant every LOG-2/3/5/6 violation at an index committed without a majority stays
    unexpected, whatever OS crashes the history holds (hostile, several seeds)."""
    monkeypatch.setattr(ep, "quorum_index", _max_mark)
    cfg = core.protocol("dledger_log").make_config(3, {}).evolve(profile=faults.profile("hostile", "dledger_log"))
    seen = 0
    for seed in range(6):
        r = runner.simulate(cfg, seed, 2500)
        for v in r.violations:
            if v.property in ("LOG-2", "LOG-5", "LOG-6") and v.expected is None:
                seen += 1
        assert any(v.property == "LOG-8" and v.expected is None for v in r.violations), seed
    assert seen > 0


def _crash_dropping_a_flushed_entry(s: st.Store, kind: str) -> st.Store:
    """An OS crash that also loses the last flushed entry (as if the flush never reached the disk)."""
    if kind != "os" or not s.entries:
        return st_crash(s, kind)
    return st_crash(s.evolve(flushed_index=s.flushed_index - 1), kind)


st_crash = st.crash
ORIG_REGISTER = ri.register_broker


@pytest.mark.parametrize("profile", ["os_crash", "hostile"])
def test_an_os_crash_that_drops_flushed_entries_is_unexpected(monkeypatch, profile):
    """"An OS crash dropped the unflushed tail" is a cause only for entries past the flushed index."""
    monkeypatch.setattr(st, "crash", _crash_dropping_a_flushed_entry)
    assert _unexpected("dledger_log", profile, range(8), 6000, want={"LOG-3"}) is not None


def _compare_never_matching(s: st.Store, req: ep.PushEntryRequest) -> el.Code:
    return el.Code.INCONSISTENT_STATE


@pytest.mark.parametrize("profile", ["standard", "hostile"])
def test_a_follower_failing_every_compare_is_unexpected(monkeypatch, profile):
    """The leader then truncates entries it holds itself, which looks like the stale-COMPARE finding;
    RPL-3 sees the dishonest COMPARE answer."""
    monkeypatch.setattr(eh, "handle_do_compare", _compare_never_matching)
    assert _unexpected("dledger_log", profile, range(3), 1500, want={"RPL-3"}) is not None


def test_figure_8_needs_the_counted_entry_and_a_log_ending_above_it():
    """Figure 8 explains a leader lacking an entry only for *that* entry committed by counting, and
    only when the lacking leader's log ended in a higher term than the entry's when it won (what
    its voters compared; a log that does not outrank the counted majority's can win only if the
    vote's log check is broken). Checked on the Figure-8 script's own history."""
    d = json.loads((SCENARIOS / "figure8_commit_by_counting.json").read_text(encoding="utf-8"))
    sc = scenario_file.parse(d, "figure8")
    w = runner.simulate(sc.cfg, 1, 1_000_000, sc.until_ms).world
    e1 = w.ghost.committed[0]
    assert e1 in w.ghost.counted[0]
    top = max(w.ghost.elected)
    assert "counting replicas" in dcauses.lacks(w, 0, e1, top, e1.term + 1)
    assert dcauses.lacks(w, 0, e1, top, e1.term) is None  # B's log would not have outranked C's
    other = e1.evolve(body=st.Body(key="never-counted", length=e1.body.length))
    assert dcauses.lacks(w, 0, other, top, e1.term + 1) is None  # index 0 was counted, not this entry


def _astray_world(votes: dict, lost: dict, now: int):
    """A 5-server dledger_log world in its quiet tail (calm at 60,000 ms) whose ghost says: n3 leads
    term 3 with a quorum and n0 led term 3 too (61,594 ms); `votes`: voter -> its ACCEPTs in term 3
    as (candidate, seq); `lost`: node -> the seq at which it lost its currterm file; n2 is a
    straggler since the calm. The scene of the 100,000-history fuzz's LIVE-3 (docs/properties.md)."""
    cfg = core.world_config("dledger_log", 5, "standard", {})
    w = runner.simulate(cfg, 1, 200).world
    g = w.ghost
    terms = g.terms.evolve(
        led=FrozenMap({3: (("n3", 57530, 10), ("n0", 61594, 40))}),
        votes=FrozenMap({(v, 3): tuple((c, 57000 + 100 * seq, seq) for c, seq in cs) for v, cs in votes.items()}),
        term_lost=FrozenMap({x: ((57000 + 100 * seq, 3, seq),) for x, seq in lost.items()}), seq=50)
    return w.evolve(now=now, history=w.history.evolve(calm=True, calm_at_ms=60_000),
                    ghost=g.evolve(terms=terms, settled_leader=("n3", 3), stragglers=FrozenMap({"n2": 60_000})))


def test_astray_needs_the_vote_the_lost_file_and_holds_only_for_its_bound():
    """A late straggler is astray behind a second leader of the followed term only if it accepted that
    leader in the term, two_leaders_cause has the lost-file evidence for the pair (a voter that
    accepted both, its term file lost between), and within astray_bound_ms of that leadership from
    the quiet tail on."""
    revote = {"n2": (("n3", 7), ("n0", 30))}
    w = _astray_world(revote, {"n2": 20}, now=69_229)
    assert "n2 followed n0, which also led term 3 at 61594 ms" in espec.astray(w, "n2")
    assert espec.astray(w.evolve(now=61_594 + espec.astray_bound_ms(w) + 1), "n2") is None  # past its bound
    assert espec.astray(_astray_world(revote, {"n2": 35}, now=69_229), "n2") is None  # file lost after both votes
    other = {"n4": (("n3", 7), ("n0", 30)), "n2": (("n3", 8),)}  # n4 has the evidence, n2 never accepted n0
    assert espec.astray(_astray_world(other, {"n4": 20}, now=69_229), "n2") is None
    other["n2"] = (("n0", 31),)
    assert "n2 followed n0" in espec.astray(_astray_world(other, {"n4": 20}, now=69_229), "n2")


def test_log1_looks_for_the_term_made_twice_below_the_agreeing_entry():
    """Two leaders of term 2 each append their no-op at index 1, equal values, over logs that differ
    at index 0 (terms 1 and 0); the logs then agree up to an entry of term 3 at index 2. LOG-1's
    cause is term 2's two leaders (their voter n1 lost its term file between its ACCEPTs), found
    among the terms from the difference up: the agreeing entry's term 3 has no cause of its own."""
    cfg = core.world_config("dledger_log", 3, "standard", {"clients": 0})
    w = runner.simulate(cfg, 1, 50).world
    body = st.Body(key="c0-1", length=16)
    common = (st.Entry(index=1, term=2, pos=64, size=48, body=st.NOOP), st.Entry(index=2, term=3, pos=112, size=48,
                                                                                 body=st.NOOP))
    a = (st.Entry(index=0, term=1, pos=0, size=64, body=body),) + common
    b = (st.Entry(index=0, term=0, pos=0, size=64, body=body),) + common
    nodes = tuple(n.evolve(store=n.store.evolve(entries=e, begin_index=0, end_term=3))
                  for n, e in zip(w.nodes, (a, b, a)))
    terms = w.ghost.terms.evolve(led=FrozenMap({2: (("n0", 100, 3), ("n2", 200, 7)), 3: (("n0", 300, 9),)}),
                                 votes=FrozenMap({("n1", 2): (("n0", 90, 2), ("n2", 190, 6))}),
                                 term_lost=FrozenMap({"n1": ((150, 2, 4),)}), seq=10)
    v = w.evolve(nodes=nodes, ghost=w.ghost.evolve(terms=terms))
    assert dspec.log_matching_violation(v)[2:4] == (0, 3)
    assert "n0, n2 both led term 2" in dspec.log1_expected(v)
    no_loss = v.evolve(ghost=v.ghost.evolve(terms=terms.evolve(term_lost=FrozenMap())))
    assert dspec.log1_expected(no_loss) is None


# --- election: term-file losses that no OS crash explains ---


@pytest.mark.parametrize("profile", _profiles("election", crashes=True))
def test_a_term_file_lost_in_a_process_crash_is_unexpected(monkeypatch, profile):
    """A follower that loses its currterm file on a process crash: its term drops (ELE-3) at a
    crash that is no OS crash, even under `hostile`, where OS crashes happen too."""
    monkeypatch.setattr(em.srv, "crash", em.crash_losing_term_file)
    assert _unexpected("election", profile, range(10), 4000, want={"ELE-2", "ELE-3"}) is not None


@pytest.mark.parametrize("profile", _profiles("election"))
def test_a_double_vote_is_unexpected_under_every_profile(monkeypatch, profile):
    """A voter that accepts a second candidate in its term: under `hostile` an OS crash of the same
    voter anywhere in the history used to explain ELE-2; the evidence now needs the lost term file
    between the two grants (and RPL-2 sees the reply the guards forbid)."""
    monkeypatch.setattr(em.HOME["handle_vote"], "handle_vote", em.vote_ignoring_curr_vote_for)
    assert _unexpected("election", profile, range(12), 4000, want={"ELE-2"}) is not None


# --- ha: a lost acknowledged message blamed on an OS crash only for what the page cache held ---


def _os_crash_losing_the_disk_too(s):
    """An OS crash that loses bytes already on disk (as if flushedWhere were never honoured)."""
    return ha_st.EMPTY_STORE.evolve(base=s.base, data=b"") if s.base >= 0 else s


@pytest.mark.parametrize("profile", ["os-crash", "hostile"])
def test_an_os_crash_losing_flushed_bytes_is_unexpected(monkeypatch, profile):
    """ASYNC_MASTER loses acknowledged messages in an OS crash by design (HA-4, expected), but only
    what was not on disk yet; an OS crash that loses the flushed bytes too is no known cause."""
    monkeypatch.setattr(ha_st, "lose_page_cache", _os_crash_losing_the_disk_too)
    cfg = core.protocol("ha").make_config(2, {"broker_role": "ASYNC_MASTER", "flush_disk_type": "SYNC_FLUSH"})
    cfg = cfg.evolve(profile=faults.profile(profile, "ha"))
    for seed in range(12):
        r = runner.simulate(cfg, seed, 20000)
        if any(v.property == "HA-4" and v.expected is None for v in r.violations):
            return
    raise AssertionError("no seed exposed the mutant as an unexpected HA-4")


# --- nameserver: a stale master entry is explained only until the broker registers again ---


def test_a_stale_master_entry_after_re_registration_is_unexpected(monkeypatch):
    """ns6_role_change_oneway.json under a registerBroker that keeps the address's old id: NS-6 is
    expected until b0-m's registration with its new id reaches ns0, unexpected after it."""
    import json
    from pathlib import Path

    from histories import scenario_file
    from reference_impl.core.state import FrozenMap

    def keep_old(rim, cluster_name, broker_addr, broker_name, broker_id, *args, **kw):
        before = rim.broker_addr_table.get(broker_name)
        rim2, *rest = ORIG_REGISTER(rim, cluster_name, broker_addr, broker_name, broker_id, *args, **kw)
        if before is not None:
            bd = rim2.broker_addr_table[broker_name]
            addrs = dict(bd.broker_addrs)
            for bid, a in before.broker_addrs.items():
                addrs.setdefault(bid, a)
            rim2 = rim2.evolve(broker_addr_table=rim2.broker_addr_table.set(
                broker_name, bd.evolve(broker_addrs=FrozenMap(addrs))))
        return (rim2, *rest)

    path = Path(__file__).parent / "scenarios" / "nameserver" / "ns6_role_change_oneway.json"
    sc = scenario_file.parse(json.loads(path.read_text(encoding="utf-8")), path.name)
    clean = runner.simulate(sc.cfg, 1, 1_000_000, sc.until_ms)
    assert [v.expected is not None for v in clean.violations if v.property == "NS-6"] == [True]
    monkeypatch.setattr(ri, "register_broker", keep_old)
    r = runner.simulate(sc.cfg, 1, 1_000_000, sc.until_ms)
    (ns6,) = [v for v in r.violations if v.property == "NS-6"]
    assert ns6.expected is None, ns6


# --- NS-11: a starved client's failed route calls, each explained by a fault ---


def _starved_world(failed: tuple) -> core.World:
    """p1 (index 7 of the default NameServer world) last answered at 0 and has reached ns0 ever
    since; 91 s later its route calls since then are `failed` (the ghost's record)."""
    w = core.init(core.protocol("nameserver").make_config(2, {}))
    last = FrozenMap((c, 90_000) for c in w.ghost.last_answer).set("p1", 0)  # the others answered lately
    g = w.ghost.evolve(last_answer=last, failed_calls=w.ghost.failed_calls.set("p1", failed),
                       reach_since=w.ghost.reach_since.set(("p1", "ns0"), 0))
    return w.evolve(now=91_000, ghost=g)


def test_ns11_lost_polls_each_explained_by_a_fault_are_expected():
    w = _starved_world(((30_010, "ns1", "RemotingSendRequestException", "ns1 was down"),
                        (60_016, "ns0", "RemotingTimeoutException", "a fault at 60016 ms while the call was open")))
    assert not nspec.ns11(w)
    assert nspec.ns11_expected(w).startswith("transport-faults")


@pytest.mark.parametrize("failed", [
    (),  # the client made no call at all (a client that stopped polling)
    ((30_010, "ns0", "RemotingTimeoutException", None),),  # a timeout at a reachable NameServer, no fault in it
    ((30_010, "ns1", "RemotingSendRequestException", "ns1 was down"), (60_016, "ns0", "RemotingTimeoutException", None)),
])
def test_ns11_a_lost_poll_no_fault_explains_is_unexpected(failed):
    w = _starved_world(failed)
    assert not nspec.ns11(w) and nspec.ns11_expected(w) is None
