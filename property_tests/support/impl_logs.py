"""Implementation logs mutated into protocol violations, for the tolerant checker's tests: each
mutation makes one line of a log (histories.reference_logs) say something the protocol never
does, and returns that line's number, where the checker must reject the log.
"""

from __future__ import annotations

import copy
from collections.abc import Callable


def _find(lines: list[dict], pred: Callable[[dict], bool], start: int = 1) -> int:
    for k in range(start, len(lines)):
        if pred(lines[k]):
            return k
    raise LookupError("no line to mutate")


# --- mutations: each returns (the mutated lines, the 1-based number of the line that must be rejected) ---


def second_vote(lines: list[dict]) -> tuple[list[dict], int]:
    """A voter that refused a candidate because it had voted in this term votes for it too."""
    out = copy.deepcopy(lines)
    k = _find(out, lambda d: d["at"] == "DLedgerLeaderElector#handleVote"
              and d["response"]["vote_result"] == "REJECT_ALREADY_VOTED")
    d = out[k]
    d["response"]["vote_result"] = "ACCEPT"
    vote = {"node": d["node"], "at": "MemberState#setCurrVoteFor", "term": d["request"]["term"],
            "voted_for": d["request"]["leader_id"]}
    if "t_ms" in d:
        vote = {"t_ms": d["t_ms"], **vote}
    out.insert(k, vote)
    return out, k + 1


def term_goes_down(lines: list[dict]) -> tuple[list[dict], int]:
    """A node moves to a term below the one it is in."""
    out = copy.deepcopy(lines)
    k = _find(out, lambda d: d["at"] == "MemberState#nextTerm" and d["term"] >= 1)
    out[k]["term"] -= 1
    return out, k + 1


def wrong_code(lines: list[dict]) -> tuple[list[dict], int]:
    """A follower answers a heartbeat of its leader with EXPIRED_TERM."""
    out = copy.deepcopy(lines)
    k = _find(out, lambda d: d["at"] == "DLedgerLeaderElector#handleHeartBeat" and d["response"]["code"] == 200)
    out[k]["response"]["code"] = 403
    return out, k + 1


def field_off_by_one(lines: list[dict]) -> tuple[list[dict], int]:
    """A MemberState snapshot shows a term one higher than the node's."""
    out = copy.deepcopy(lines)
    k = _find(out, lambda d: d["at"] == "MemberState" and d["state"]["role"] == "FOLLOWER")
    out[k]["state"]["term"] += 1
    return out, k + 1


def leader_without_quorum(lines: list[dict]) -> tuple[list[dict], int]:
    """A candidate whose round a majority refused becomes leader: after its last response of a
    round that drew a next vote time (a lost round), it logs changeToLeader."""
    out = copy.deepcopy(lines)
    k = _find(out, lambda d: d["at"] == "java.util.Random#nextInt" and d["bound"] == 700 and any(
        e["node"] == d["node"] and e["at"] == "DLedgerRpcService#vote" and "response" in e
        for e in out[max(1, out.index(d) - 6):out.index(d)]))
    d = out[k]
    term = next(e["request"]["term"] for e in reversed(out[1:k])
                if e["node"] == d["node"] and e["at"] == "DLedgerRpcService#vote" and "request" in e)
    lead = {"node": d["node"], "at": "MemberState#changeToLeader", "term": term}
    if "t_ms" in d:
        lead = {"t_ms": d["t_ms"], **lead}
    out.insert(k + 1, lead)
    return out, k + 2


def entry_off_by_one(lines: list[dict]) -> tuple[list[dict], int]:
    """A follower writes an entry at an index one past where the leader put it (dledger_log)."""
    out = copy.deepcopy(lines)
    k = _find(out, lambda d: d["at"] == "DLedgerStore#appendAsFollower" and d["index"] >= 1)
    out[k]["index"] += 1
    return out, k + 1
