"""Liveness as bounded properties (LIVE-1/2/3) and reply properties (RPL-1/2/3/4) can fail.

Each mutant breaks one rule the property states; the seeded fuzzer must report that property
as an unexpected violation, and the same seed must be clean on the real reference (so the
mutant is the cause). The bounds are DLedger's defaults (docs/properties.md, "Bounds").
"""

from __future__ import annotations

import pytest

from histories import runner
from histories.mutants.election import candidate_never_increments_term
from reference_impl import core
from reference_impl.core import faults
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import entry_pusher as ep
from reference_impl.election import leader_elector as elector
from reference_impl.election import records as el

ORIG_HB = elector.handle_heart_beat
ORIG_VOTE = elector.handle_vote
ORIG_TRANSFER_DONE = elector.on_leadership_transfer_response
ORIG_SEND_HB = elector.send_heartbeats


def _cfg(protocol: str, profile: str, overrides: dict | None = None, nodes: int = 3, calm_at_ms: int | None = None):
    prof = faults.profile(profile, protocol)
    if calm_at_ms is not None:
        prof = prof.evolve(calm_at_ms=calm_at_ms)
    return core.protocol(protocol).make_config(nodes, overrides or {}).evolve(profile=prof)


def _caught(monkeypatch, module, name, mutant, cfg, prop: str, seeds: range, steps: int) -> int:
    """The first seed whose history reports `prop` unexpected under the mutant; that seed is clean
    on the real reference."""
    monkeypatch.setattr(module, name, mutant)
    for seed in seeds:
        r = runner.simulate(cfg, seed, steps)
        if any(v.property == prop and v.expected is None for v in r.violations):
            monkeypatch.undo()
            clean = runner.simulate(cfg, seed, r.steps)
            assert clean.unexpected == [], (seed, clean.unexpected)
            return seed
    raise AssertionError(f"no seed in {seeds} exposed {mutant.__name__} as {prop}")


# --- RPL ---


def heartbeat_success_on_lower_term(cfg, m, req, now):
    """The follower of the issue: SUCCESS to a heartbeat of a lower term, and its timer refreshed."""
    if (req.term < m.curr_term and cfg.is_peer_member(req.leader_id) and req.leader_id != m.self_id
            and req.remote_id == m.self_id):
        return m.evolve(last_leader_heart_beat_time=now), el.HeartBeatResponse(), ()
    return ORIG_HB(cfg, m, req, now)


def vote_ignoring_the_ledger(cfg, m, req, self_vote):
    """handleVote without the log comparison: a candidate with a shorter log gets the vote."""
    return ORIG_VOTE(cfg, m.evolve(ledger_end_index=-1, ledger_end_term=-1), req, self_vote)


def compare_always_matching(s, req):
    """handleDoCompare that answers SUCCESS whatever its log holds at the index: the leader then
    appends after an entry the follower does not have."""
    return el.Code.SUCCESS


def test_rpl1_a_follower_answering_success_to_a_lower_term_heartbeat(monkeypatch):
    """Before RPL-1 this mutant changed 29 of 2,000 histories and broke no property."""
    _caught(monkeypatch, elector, "handle_heart_beat", heartbeat_success_on_lower_term,
            _cfg("election", "standard"), "RPL-1", range(40), 4000)


def test_rpl2_the_same_mutant_breaks_the_guard_relation(monkeypatch):
    _caught(monkeypatch, elector, "handle_heart_beat", heartbeat_success_on_lower_term,
            _cfg("election", "standard"), "RPL-2", range(40), 4000)


def test_rpl2_a_vote_ignoring_the_ledger(monkeypatch):
    _caught(monkeypatch, elector, "handle_vote", vote_ignoring_the_ledger, _cfg("dledger_log", "crash"),
            "RPL-2", range(20), 4000)


def response_with_the_servers_term(r):
    """The model's answer before issue 22: every append answer carries the server's term and no leader
    (a NOT_LEADER answer should carry the request's term, -1; a SUCCESS answer the leader's id)."""
    return ep.AppendEntryResponse(code=r.code, index=r.index, pos=r.pos, term=r.term if r.term >= 0 else 0)


def test_rpl4_an_append_answered_with_the_servers_term_and_no_leader(monkeypatch):
    _caught(monkeypatch, ep, "response_of", response_with_the_servers_term, _cfg("dledger_log", "standard"),
            "RPL-4", range(20), 3000)


def test_rpl3_a_compare_answered_success_for_an_entry_not_held(monkeypatch):
    _caught(monkeypatch, eh, "handle_do_compare", compare_always_matching, _cfg("dledger_log", "standard"),
            "RPL-3", range(20), 5000)


# --- LIVE ---


def heartbeats_only_to_live_peers(cfg, m, now, **also):
    """sendHeartbeats that skips the peers its last rounds found unreachable (peersLiveTable false): a
    node back from a partition never hears the leader again, answers nothing wrong, and never follows."""
    m2, sends = ORIG_SEND_HB(cfg, m, now, **also)
    return m2, tuple(x for x in sends if m.peers_live_table.get(x.dst) is not False)


def transferee_never_cleared(cfg, m, term, transferee_id, admin_rpc, resp):
    """The transfer's thenApply without setTransferee(null): the leader stays mid-transfer, refusing appends."""
    m2, outs = ORIG_TRANSFER_DONE(cfg, m, term, transferee_id, admin_rpc, resp)
    if m2.role is el.Role.LEADER and m.transferee is not None:
        m2 = m2.evolve(transferee=m.transferee)
    return m2, outs


def test_live1_split_votes_forever(monkeypatch):
    _caught(monkeypatch, elector, "maintain_as_candidate", candidate_never_increments_term,
            _cfg("election", "crash", calm_at_ms=20_000), "LIVE-1", range(40), 6000)


def test_live3_a_node_back_from_a_partition_that_the_leader_no_longer_heartbeats(monkeypatch):
    _caught(monkeypatch, elector, "send_heartbeats", heartbeats_only_to_live_peers,
            _cfg("election", "partition", calm_at_ms=20_000), "LIVE-3", range(40), 6000)


def test_live2_a_transfer_that_never_ends(monkeypatch):
    _caught(monkeypatch, elector, "on_leadership_transfer_response", transferee_never_cleared,
            _cfg("election", "lossy", {"preferred_leader_ids": "n1"}), "LIVE-2", range(30), 6000)


@pytest.mark.parametrize("profile", ["standard", "hostile"])
def test_the_real_reference_keeps_the_liveness_properties(profile):
    """Preferred-leader transfers and isolated nodes coming back, under faults: every LIVE and RPL
    property holds on DLedger 0.2.6 as modelled (a few seeds; the fuzzer runs many)."""
    for overrides in ({}, {"preferred_leader_ids": "n1"}):
        cfg = _cfg("election", profile, overrides, nodes=5)
        for seed in range(3):
            r = runner.simulate(cfg, seed, 100_000, cfg.profile.calm_at_ms + 60_000)
            bad = [v for v in r.violations if v.property.startswith(("LIVE", "RPL"))]
            assert bad == [], (overrides, seed, bad)
