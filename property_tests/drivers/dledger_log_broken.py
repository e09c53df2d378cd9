"""The reference's log-replication handlers with one deliberate bug behind rmqspec.conform/1, for
the tests that conform must catch it: `python -m property_tests.drivers.dledger_log_broken --bug NAME`.

The bug replaces one function of reference_impl.dledger_log in this process only:

- `compare-ignores-body`: EntryHandler#handleDoCompare finds the entries equal when their index
  and term are (DLedgerEntry#equals also compares the body);
- `commit-past-end`: DLedgerMmapFileStore#updateCommittedIndex does not clamp to the log's end;
- `append-ignores-leader`: appendAsFollower takes an entry from any leader of the right term.
"""

from __future__ import annotations

import sys

from conform.dledger_log import WireError, answer
from property_tests.drivers.election_reference import serve
from reference_impl.dledger_log import entry_handler as eh
from reference_impl.dledger_log import store as st
from reference_impl.election.records import Code

UPDATE_COMMITTED_INDEX = st.update_committed_index
APPEND_AS_FOLLOWER = st.append_as_follower


def compare_ignoring_body(s, req):
    local = st.entry_at(s, req.entry.index)
    return Code.SUCCESS if local is not None and local.term == req.entry.term else Code.INCONSISTENT_STATE


def commit_past_end(cfg, s, term, curr_term, new, now):
    after = UPDATE_COMMITTED_INDEX(cfg, s, term, curr_term, new, now)
    if after.committed_index == s.end_index and new > s.end_index >= 0:
        after = after.evolve(committed_index=new)
    return after


def append_from_any_leader(cfg, s, m, entry, leader_term, leader_id, now):
    return APPEND_AS_FOLLOWER(cfg, s, m, entry, leader_term, m.leader_id, now)


BUGS = {"compare-ignores-body": (eh, "handle_do_compare", compare_ignoring_body),
        "commit-past-end": (st, "update_committed_index", commit_past_end),
        "append-ignores-leader": (st, "append_as_follower", append_from_any_leader)}

if __name__ == "__main__":
    bug = sys.argv[sys.argv.index("--bug") + 1]
    module, name, replacement = BUGS[bug]
    setattr(module, name, replacement)
    serve(answer, f"rmqspec reference with bug {bug}", protocol="dledger_log", error=WireError)
