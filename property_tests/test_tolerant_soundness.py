"""The tolerant checker cannot be talked into a log DLedger never writes (issue 22, item 3): a
line the reference needs before another in cause is never assumed to be logged late, and the
log's end excuses no line the logged suffix depends on.

The corpus is made from logs the reference writes (histories/reference_logs: a seeded history,
given an implementation's clock, late threads and lines out of the reference's order), each
tampered once (support/log_tampers.py). Every tampered copy must be rejected at the tampered
line or within its step, at the default slack and at a large one; the log as it was must be
accepted at both, so that a rejection is the tamper's doing.
"""

from __future__ import annotations

import functools

import pytest

from histories import reference_logs as il
from histories import tolerant
from property_tests.support import impl_logs as mutate
from property_tests.support import log_tampers as lt

LARGE_SLACK_MS = 200  # what the harness tried on real logs


@functools.lru_cache(maxsize=None)
def base() -> tuple:
    """A 3-server, 2-client log-replication log: an election, then appends acknowledged."""
    return tuple(il.realistic(il.reference_log("dledger_log", "lockstep", 1, 300, late_ms=5), 1))


def check(lines: list[dict], slack: int) -> tolerant.Result:
    return tolerant.check(il.parse(lines), tolerant.Options(slack_ms=slack))


def within_step(r: tolerant.Result, lines: list[dict], line: int) -> bool:
    """Rejected at `line`, or at a line of the same node's same step near it (a step's lines
    are taken together, and a log may write them in any order)."""
    if r.accepted or r.failing is None:
        return False
    if r.failing.line == line:
        return True
    bad = lines[line - 1] if line - 1 < len(lines) else lines[-1]
    return (abs(r.failing.line - line) <= 8 and r.failing.raw.get("node") == bad.get("node")
            and abs(r.failing.raw.get("t_ms", 0) - bad.get("t_ms", 0)) <= 5)


@pytest.mark.parametrize("slack", [50, LARGE_SLACK_MS])
def test_the_untampered_log_is_accepted(slack):
    r = check(list(base()), slack)
    assert r.accepted, r.reason


@pytest.mark.parametrize("slack", [50, LARGE_SLACK_MS])
@pytest.mark.parametrize("tamper", lt.TAMPERS, ids=lambda t: t.__name__)
def test_a_tampered_log_is_rejected_at_the_tampered_line(tamper, slack):
    bad, line = tamper(list(base()))
    r = check(bad, slack)
    assert within_step(r, bad, line), (r.accepted, r.failing and r.failing.line, line, r.reason)


def test_an_early_ack_is_rejected_for_what_it_comes_before():
    """The rejection names the acknowledgements the answer needs and where the log has them."""
    bad, line = lt.early_ack(list(base()))
    r = check(bad, 50)
    assert r.failing.line == line
    assert "only after" in r.reason and "DLedgerRpcService#push" in r.reason and "response" in r.reason
    assert "larger" not in r.reason  # no bound could explain it


def test_a_leader_that_acks_before_its_quorum_is_rejected_whatever_the_slack():
    bad, line = lt.early_ack(list(base()))
    r = check(bad, 1000)
    assert not r.accepted and r.failing.line == line, (r.failing and r.failing.line, r.reason)


def test_an_early_ack_to_a_client_outside_the_world_is_rejected():
    """With the clients outside the world their requests are facts, and the answers are still
    the reference's: one before its quorum is rejected at its line."""
    lines = [d for d in base() if d.get("at") != "DLedgerClient#append"]
    lines[0] = dict(lines[0], clients="outside")
    assert check(lines, 50).accepted
    bad, line = lt.early_ack(lines)
    r = check(bad, 50)
    assert not r.accepted and r.failing.line == line, (r.failing and r.failing.line, line, r.reason)


def test_a_differing_line_of_a_step_is_named_with_its_field():
    """A tampered commit index is reported at its own line and field, not at the first line of
    the step that writes it."""
    bad, line = lt.commit_goes_back(list(base()))
    r = check(bad, 50)
    assert r.failing.line == line and "index: log" in r.reason, r.reason


@pytest.mark.parametrize("mutate", [mutate.second_vote, mutate.leader_without_quorum], ids=lambda m: m.__name__)
def test_an_election_log_tampered_the_same_way_is_rejected(mutate):
    """The same rules on the election (a changeToLeader moved before its votes is an early ack)."""
    lines = il.realistic(il.reference_log("election", "crash", 2, 400), 2)
    bad, line = mutate(lines)
    r = check(bad, LARGE_SLACK_MS)
    assert not r.accepted and abs(r.failing.line - line) <= 8, (r.failing and r.failing.line, line, r.reason)
