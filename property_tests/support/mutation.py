"""Test-only mutants of every protocol: each breaks one rule RocketMQ (or DLedger) relies on.

A mutant replaces one function of the reference on the module that defines it (module
globals are looked up at call time, and the other modules call it through that module,
as property_tests/support/election_mutants.py does), for as long as `installed(m)` is
open. The replacement is built from the original, so it changes one rule and nothing
else. They never ship as protocols: `rmqspec mutants` (rmqspec/mutation.py) measures
which property layers kill each one, and `RMQSPEC_MUTANT=<name>` makes pytest run a
test module against one (property_tests/conftest.py).

Each entry names the properties that should catch it (`catches`): when a layer does
not, that is what to strengthen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import attrs

from property_tests.support import election_mutants as em
from reference_impl.core import schedule
from reference_impl.dledger_commitlog import broker as dcl_broker
from reference_impl.dledger_commitlog import commitlog as dcl_commitlog
from reference_impl.dledger_log import entry_handler, entry_pusher
from reference_impl.dledger_log import store as dl_store
from reference_impl.election import leader_elector
from reference_impl.election import records as el
from reference_impl.ha import commit_log as ha_store
from reference_impl.ha import service as ha_service
from reference_impl.ha import wire as ha_wire
from reference_impl.nameserver import queue_selection, route_info
from reference_impl.offsets import broker as off_broker
from reference_impl.offsets import client as off_client


@attrs.frozen(kw_only=True)
class Mutant:
    name: str
    protocol: str
    module: ModuleType
    function: str
    make: Callable[[Callable], Callable]  # the original -> the replacement
    rule: str  # the rule it breaks, in one line
    catches: tuple[str, ...]  # the properties that should report it


# --- election ---


def _vote_ignoring_curr_vote_for(orig: Callable) -> Callable:
    return em.vote_ignoring_curr_vote_for  # built on election_mutants' captured original


def _own_vote_is_a_quorum(orig: Callable) -> Callable:
    return em.parse_own_vote_as_quorum


def _lower_term_heartbeat_accepted(orig: Callable) -> Callable:
    def handle_heart_beat(cfg, m, req, now):
        if (cfg.is_peer_member(req.leader_id) and req.leader_id != m.self_id and req.term < m.curr_term
                and m.role is el.Role.FOLLOWER):
            return m.evolve(last_leader_heart_beat_time=now), el.HeartBeatResponse(), ()
        return orig(cfg, m, req, now)
    return handle_heart_beat


# --- dledger_log ---


def _commit_without_quorum(orig: Callable) -> Callable:
    def quorum_index(p, term):
        marks = p.water_marks.get(term)
        return -1 if marks is None else max(marks)
    return quorum_index


def _compare_by_index_only(orig: Callable) -> Callable:
    def handle_do_compare(s, req):
        return el.Code.SUCCESS if dl_store.entry_at(s, req.entry.index) is not None else orig(s, req)
    return handle_do_compare


def _commit_index_goes_back(orig: Callable) -> Callable:
    def update_committed_index(cfg, s, term, curr_term, new, now):
        if 0 <= new < s.committed_index and term >= curr_term:
            e = s.entries[new - s.begin_index] if new >= s.begin_index else None
            if e is not None:
                return s.evolve(committed_index=new, committed_pos=e.pos + e.size)
        return orig(cfg, s, term, curr_term, new, now)
    return update_committed_index


# --- dledger_commitlog ---


def _offset_without_header(orig: Callable) -> Callable:
    def put_answer(self_id, r, pos):
        resp, put = orig(self_id, r, pos)
        return resp.evolve(offset=pos), put.evolve(offset=pos)
    return put_answer


def _dispatch_uncommitted(orig: Callable) -> Callable:
    def do_reput(s, ms):
        if s.entries:
            last = s.entries[-1]
            s = s.evolve(committed_pos=last.pos + last.size)
        return orig(s, ms)
    return do_reput


def _master_before_caught_up(orig: Callable) -> Callable:
    def run_role_handler(bc, b, now):
        task = b.role_tasks[0] if b.role_tasks else None
        if task is not None and task[1] is el.Role.LEADER and b.node.member.role is el.Role.LEADER:
            s = b.node.store
            caught_up = b.node.evolve(store=s.evolve(committed_index=s.end_index))  # what the wait waits for
            out, outs = orig(bc, b.evolve(node=caught_up), now)
            return out.evolve(node=b.node), outs
        return orig(bc, b, now)
    return run_role_handler


# --- ha ---


def _slave_appends_at_its_own_offset(orig: Callable) -> Callable:
    def client_read(c, b, chunk, now):
        buf = b.client.read_buf + chunk
        head = ha_wire.next_frame(buf)
        slave_max = ha_store.max_offset(b.store)
        if head is not None and slave_max != 0 and head[0] != slave_max:
            buf = ha_wire.encode_header(slave_max, head[1]) + buf[ha_wire.HEADER_SIZE:]
            return orig(c, b.evolve(client=b.client.evolve(read_buf=b"")), buf, now)
        return orig(c, b, chunk, now)
    return client_read


def _sync_put_without_slave_ack(orig: Callable) -> Callable:
    def transfer_ok(c, b, req):
        return True
    return transfer_ok


def _push2slave_follows_every_ack(orig: Callable) -> Callable:
    def notify_transfer_some(b, offset, now):
        if offset < b.push2slave_max:
            return b.evolve(push2slave_max=offset)
        return orig(b, offset, now)
    return notify_transfer_some


# --- nameserver ---


def _expiry_ten_times_longer(orig: Callable) -> Callable:
    def scan_not_active_broker(rim, now, expired_ms=route_info.BROKER_CHANNEL_EXPIRED_TIME):
        return orig(rim, now, 10 * expired_ms)
    return scan_not_active_broker


def _retry_ignores_last_broker(orig: Callable) -> Callable:
    def select_avoiding(tpi, last_broker_name, seed):
        return orig(tpi, None, seed)
    return select_avoiding


def _topic_config_never_changes(orig: Callable) -> Callable:
    def is_broker_topic_config_changed(rim, broker_addr, data_version):
        return route_info.query_broker_topic_config(rim, broker_addr) is None
    return is_broker_topic_config_changed


# --- offsets ---


def _slave_sync_merges(orig: Callable) -> Callable:
    def put_all(slave, master):
        out = orig(slave, master)
        for key, inner in slave.items():
            if key in master:
                merged = dict(inner.items())
                for q, v in master[key].items():
                    merged[q] = max(v, merged.get(q, -1))
                out = out.set(key, type(inner)(merged))
        return out
    return put_all


def _offset_past_the_consumed(orig: Callable) -> Callable:
    def update_offset(n, queue_id, offset, increase_only):
        return orig(n, queue_id, offset + 1 if increase_only else offset, increase_only)
    return update_offset


def _slave_suggests_itself(orig: Callable) -> Callable:
    def suggest_which_broker_id(c, b, from_slave):
        suggest, code = orig(c, b, from_slave)
        return (b.broker_id if off_broker.is_slave(b) else suggest), code
    return suggest_which_broker_id


MUTANTS: tuple[Mutant, ...] = (
    Mutant(name="election.vote_ignores_curr_vote_for", protocol="election", module=leader_elector,
           function="handle_vote", make=_vote_ignoring_curr_vote_for,
           rule="handleVote grants every candidate of its term (no REJECT_ALREADY_VOTED)", catches=("ELE-2", "ELE-1")),
    Mutant(name="election.own_vote_is_a_quorum", protocol="election", module=leader_elector,
           function="finish_vote_round", make=_own_vote_is_a_quorum,
           rule="a candidate turns leader on its own ACCEPT (no quorum of votes)", catches=("ELE-4", "ELE-1")),
    Mutant(name="election.lower_term_heartbeat_success", protocol="election", module=leader_elector,
           function="handle_heart_beat", make=_lower_term_heartbeat_accepted,
           rule="a follower answers SUCCESS to a heartbeat of a lower term and refreshes its timer",
           catches=("a reply/term property (issue 14.5)",)),
    Mutant(name="dledger_log.commit_without_quorum", protocol="dledger_log", module=entry_pusher,
           function="quorum_index", make=_commit_without_quorum,
           rule="QuorumAckChecker commits the highest water mark, not the quorum's", catches=("LOG-2", "LOG-3", "LOG-5")),
    Mutant(name="dledger_log.compare_by_index_only", protocol="dledger_log", module=entry_handler,
           function="handle_do_compare", make=_compare_by_index_only,
           rule="a follower answers COMPARE SUCCESS when it holds any entry at the index", catches=("LOG-1",)),
    Mutant(name="dledger_log.commit_index_goes_back", protocol="dledger_log", module=dl_store,
           function="update_committed_index", make=_commit_index_goes_back,
           rule="updateCommittedIndex takes a lower index of the current term", catches=("LOG-4",)),
    Mutant(name="dledger_commitlog.offset_without_header", protocol="dledger_commitlog", module=dcl_broker,
           function="put_answer", make=_offset_without_header,
           rule="PUT_OK returns the entry's pos instead of pos + BODY_OFFSET", catches=("DCL-1",)),
    Mutant(name="dledger_commitlog.dispatch_uncommitted", protocol="dledger_commitlog", module=dcl_commitlog,
           function="do_reput", make=_dispatch_uncommitted,
           rule="ReputMessageService dispatches past the committed position", catches=("DCL-4",)),
    Mutant(name="dledger_commitlog.master_before_caught_up", protocol="dledger_commitlog", module=dcl_broker,
           function="run_role_handler", make=_master_before_caught_up,
           rule="DLedgerRoleChangeHandler makes the broker master before ledgerEndIndex == committedIndex",
           catches=("DCL-1", "DCL-4")),
    Mutant(name="ha.slave_appends_at_its_own_offset", protocol="ha", module=ha_service,
           function="client_read", make=_slave_appends_at_its_own_offset,
           rule="HAClient appends a frame at its own max offset when the frame's offset differs",
           catches=("HA-1", "HA-6")),
    Mutant(name="ha.sync_put_without_slave_ack", protocol="ha", module=ha_service,
           function="transfer_ok", make=_sync_put_without_slave_ack,
           rule="GroupTransferService answers a SYNC_MASTER put PUT_OK before any slave acked it", catches=("HA-3",)),
    Mutant(name="ha.push2slave_follows_every_ack", protocol="ha", module=ha_service,
           function="notify_transfer_some", make=_push2slave_follows_every_ack,
           rule="push2SlaveMaxOffset takes every ack, also a lower one", catches=("HA-2",)),
    Mutant(name="nameserver.expiry_1200s", protocol="nameserver", module=route_info,
           function="scan_not_active_broker", make=_expiry_ten_times_longer,
           rule="scanNotActiveBroker expires a broker after 1,200 s instead of 120 s", catches=("NS-1",)),
    Mutant(name="nameserver.retry_ignores_last_broker", protocol="nameserver", module=queue_selection,
           function="select_avoiding", make=_retry_ignores_last_broker,
           rule="selectOneMessageQueue(lastBrokerName) does not avoid the broker that just failed", catches=("NS-4",)),
    Mutant(name="nameserver.topic_config_never_changes", protocol="nameserver", module=route_info,
           function="is_broker_topic_config_changed", make=_topic_config_never_changes,
           rule="registerBroker takes a master's topics only at its first registration (DataVersion ignored)",
           catches=("NS-3",)),
    Mutant(name="offsets.slave_sync_merges", protocol="offsets", module=off_broker, function="put_all",
           make=_slave_sync_merges, rule="syncConsumerOffset merges (max per queue) instead of putAll",
           catches=("OFF-3",)),
    Mutant(name="offsets.offset_past_the_consumed", protocol="offsets", module=off_client, function="update_offset",
           make=_offset_past_the_consumed, rule="the consumer's offset moves one past what it consumed",
           catches=("OFF-1",)),
    Mutant(name="offsets.slave_suggests_itself", protocol="offsets", module=off_broker,
           function="suggest_which_broker_id", make=_slave_suggests_itself,
           rule="a slave suggests pulling from itself whatever slaveReadEnable says", catches=("OFF-4",)),
)

BY_NAME = {m.name: m for m in MUTANTS}


def names() -> list[str]:
    return [m.name for m in MUTANTS]


def for_protocol(protocol: str) -> list[Mutant]:
    return [m for m in MUTANTS if m.protocol == protocol]


def _forget_memos() -> None:
    """The schedule's memos cache pure functions of node states; a mutant changes those functions."""
    schedule.forget()


@contextlib.contextmanager
def installed(m: Mutant) -> Iterator[Mutant]:
    """The reference with `m` in place of its function, until the block ends."""
    orig = getattr(m.module, m.function)
    setattr(m.module, m.function, m.make(orig))
    _forget_memos()
    try:
        yield m
    finally:
        setattr(m.module, m.function, orig)
        _forget_memos()


def install(name: str) -> Any:
    """Install mutant `name` for good (a pytest session's `RMQSPEC_MUTANT`); returns it."""
    m = BY_NAME[name]
    setattr(m.module, m.function, m.make(getattr(m.module, m.function)))
    _forget_memos()
    return m
