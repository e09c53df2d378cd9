"""Tampered DLedger log-replication logs: each takes a log the reference wrote (made realistic,
histories/reference_logs) and makes one thing in it happen as DLedger never does, the way a buggy
implementation's log would show it (docs/conformance.md, "What the checker cannot be talked
into"). Each returns the tampered lines and the 1-based number of the line at which the checker
must reject them (the tampered line, or the line after a deleted one).

- `early_ack`: the leader answers an append SUCCESS right after taking it, before any follower
  acknowledged it;
- `ack_cut_at_end`: the same, and the log ends there (the acknowledgements never come);
- `commit_goes_back`: a follower's committed index moves below where it was;
- `other_term_at_committed_index`: a follower writes an entry of another term at an index the
  leader had already committed;
- `gap`: the leader writes an entry one index past its end;
- `deleted_line`: a follower's append is missing while its answer is there;
- `changed_body`: the leader pushes an entry with another body than the client's;
- `delivered_before_sent`: a follower takes a push before the leader logged sending it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

APPEND = "DLedgerServer#handleAppend"
PUSH = "DLedgerRpcService#push"
HANDLE_PUSH = "DLedgerEntryPusher.EntryHandler#handlePush"
AS_LEADER = "DLedgerStore#appendAsLeader"
AS_FOLLOWER = "DLedgerStore#appendAsFollower"
COMMIT = "DLedgerStore#updateCommittedIndex"


def _find(lines: list[dict], pred: Callable[[int, dict], bool], start: int = 1) -> int:
    for k in range(start, len(lines)):
        if pred(k, lines[k]):
            return k
    raise LookupError("no line to tamper with")


def _acked(lines: list[dict]) -> tuple[int, int, int]:
    """(the leader's appendAsLeader line, its SUCCESS answer line, the entry's index) of the
    first append the followers acknowledged between the two."""
    for k, d in enumerate(lines):
        if d.get("at") == APPEND and "response" in d and d["response"]["code"] == 200:
            index = d["response"]["index"]
            wrote = next(j for j in range(k - 1, 0, -1) if lines[j]["at"] == AS_LEADER and lines[j]["node"] == d[
                "node"] and lines[j]["index"] == index)
            if any(e["at"] == PUSH and "response" in e and e["response"].get("index") == index
                   for e in lines[wrote:k]):
                return wrote, k, index
    raise LookupError("no acknowledged append")


def early_ack(lines: list[dict]) -> tuple[list[dict], int]:
    out = copy.deepcopy(lines)
    wrote, answer, _ = _acked(out)
    ack = out.pop(answer)
    ack["t_ms"] = out[wrote]["t_ms"]
    out.insert(wrote + 1, ack)
    return out, wrote + 2


def ack_cut_at_end(lines: list[dict]) -> tuple[list[dict], int]:
    out = copy.deepcopy(lines)
    wrote, answer, _ = _acked(out)
    ack = dict(out[answer], t_ms=out[wrote]["t_ms"] + 1)
    return out[:wrote + 1] + [ack], wrote + 2


def commit_goes_back(lines: list[dict]) -> tuple[list[dict], int]:
    out = copy.deepcopy(lines)
    last: dict[str, int] = {}
    for k, d in enumerate(out):
        if d.get("at") == COMMIT:
            before = last.get(d["node"], -1)
            if before >= 1 and d["node"] != "n0" and d["index"] > before:
                d["index"] = before - 1
                return out, k + 1
            last[d["node"]] = d["index"]
    raise LookupError("no follower commit to move back")


def other_term_at_committed_index(lines: list[dict]) -> tuple[list[dict], int]:
    """A follower's next append after the leader committed index c (c >= 1) writes index c
    again, in the next term."""
    out = copy.deepcopy(lines)
    committed = -1
    for k, d in enumerate(out):
        if d.get("at") == COMMIT and d["node"] == "n0":
            committed = max(committed, d["index"])
        elif d.get("at") == AS_FOLLOWER and committed >= 1 and d["index"] > committed:
            d["index"], d["term"] = committed, d["term"] + 1
            return out, k + 1
    raise LookupError("no append after a commit")


def gap(lines: list[dict]) -> tuple[list[dict], int]:
    out = copy.deepcopy(lines)
    k = _find(out, lambda k, d: d.get("at") == AS_LEADER and d["index"] >= 2)
    out[k]["index"] += 1
    return out, k + 1


def deleted_line(lines: list[dict]) -> tuple[list[dict], int]:
    out = copy.deepcopy(lines)
    k = _find(out, lambda k, d: d.get("at") == AS_FOLLOWER and d["index"] >= 2)
    del out[k]
    return out, k + 1


def changed_body(lines: list[dict]) -> tuple[list[dict], int]:
    out = copy.deepcopy(lines)
    k = _find(out, lambda k, d: d.get("at") == PUSH and d.get("request", {}).get("type") == "APPEND")
    out[k]["request"]["entry"]["body"]["key"] += "-tampered"
    return out, k + 1


def delivered_before_sent(lines: list[dict]) -> tuple[list[dict], int]:
    out = copy.deepcopy(lines)
    k = _find(out, lambda k, d: d.get("at") == PUSH and d.get("request", {}).get("type") == "APPEND")
    send = out[k]
    j = _find(out, lambda j, d: d.get("at") == HANDLE_PUSH and d.get("request") == send["request"], k + 1)
    handled = out.pop(j)
    handled["t_ms"] = send["t_ms"]
    out.insert(k, handled)
    return out, k + 1


TAMPERS = (early_ack, ack_cut_at_end, commit_goes_back, other_term_at_committed_index, gap, deleted_line,
           changed_body, delivered_before_sent)
