"""Test-only mutants of every protocol: each breaks one rule RocketMQ (or DLedger) relies on.

A mutant replaces one function of the reference on the module that defines it (module
globals are looked up at call time, and the other modules call it through that module,
as histories/mutants/election.py does), for as long as `installed(m)` is
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

from histories.mutants import election as em
from reference_impl.core import schedule
from reference_impl.dledger_commitlog import broker as dcl_broker
from reference_impl.dledger_commitlog import commitlog as dcl_commitlog
from reference_impl.dledger_log import entry_handler, entry_pusher
from reference_impl.dledger_log import store as dl_store
from reference_impl.election import leader_elector
from reference_impl.election import records as el
from reference_impl.ha import broker as ha_broker
from reference_impl.ha import commit_log as ha_store
from reference_impl.ha import records as ha_records
from reference_impl.ha import service as ha_service
from reference_impl.ha import wire as ha_wire
from reference_impl.nameserver import client_routes, queue_selection, route_info
from reference_impl.offsets import broker as off_broker
from reference_impl.offsets import client as off_client
from reference_impl.rocketmq import BrokerRole, ResponseCode


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
    return em.vote_ignoring_curr_vote_for  # built on the election module's captured original


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


def _candidate_keeps_role(orig: Callable) -> Callable:
    def run_role_handler(bc, b, now):
        tasks = b.role_tasks
        while tasks and tasks[0][1] is el.Role.CANDIDATE:
            tasks = tasks[1:]
        return orig(bc, b.evolve(role_tasks=tasks) if tasks is not b.role_tasks else b, now)
    return run_role_handler


def _leader_task_never_gives_up(orig: Callable) -> Callable:
    def run_role_handler(bc, b, now):
        task = b.role_tasks[0] if b.role_tasks else None
        if task is not None and task[1] is el.Role.LEADER and b.node.member.role is not el.Role.LEADER \
                and now >= b.role_wait_until:
            return b.evolve(role_wait_until=now + bc.role_poll_ms), ()
        return orig(bc, b, now)
    return run_role_handler


def _quorum_timeout_is_put_ok(orig: Callable) -> Callable:
    def put_status(code):
        return orig(el.Code.SUCCESS if code is el.Code.WAIT_QUORUM_ACK_TIMEOUT else code)
    return put_status


def _queue_offset_not_raised(orig: Callable) -> Callable:
    def after_append(ms, msg):
        return ms
    return after_append


def _slave_takes_puts(orig: Callable) -> Callable:
    def handle_send(cfg, b, req, rpc, now):
        if b.broker_role is not BrokerRole.SLAVE:
            return orig(cfg, b, req, rpc, now)
        out, resp, outs = orig(cfg, b.evolve(broker_role=BrokerRole.SYNC_MASTER), req, rpc, now)
        return out.evolve(broker_role=b.broker_role), resp, outs
    return handle_send


def _dispatch_one_behind(orig: Callable) -> Callable:
    def do_reput(s, ms):
        done = [e for e in s.entries if e.pos + e.size <= s.committed_pos]
        if len(done) >= 2:
            s = s.evolve(committed_pos=done[-2].pos + done[-2].size)
        return orig(s, ms)
    return do_reput


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


def _late_report_taken(orig: Callable) -> Callable:
    def read_event(c, b, conn_id, chunk, now):
        return orig(c.evolve(version="4.9.2") if c.version == "4.9.4" else c, b, conn_id, chunk, now)
    return read_event


def _housekeeping_too_eager(orig: Callable) -> Callable:
    def read_housekeeping(c, b, now):
        return orig(c.evolve(store=c.store.evolve(ha_housekeeping_interval=4000)), b, now)
    return read_housekeeping


def _slave_ok_without_connection(orig: Callable) -> Callable:
    def is_slave_ok(c, b, master_put_where):
        return True
    return is_slave_ok


def _sync_flush_answers_at_once(orig: Callable) -> Callable:
    def handle_put(c, b, msg, rpc, now):
        return orig(c.evolve(store=c.store.evolve(flush_disk_type=ha_records.FlushDiskType.ASYNC_FLUSH)), b, msg,
                    rpc, now)
    return handle_put


def _slave_drops_idle_connection(orig: Callable) -> Callable:
    def client_tick(c, b, now):
        return orig(c.evolve(store=c.store.evolve(ha_housekeeping_interval=3000)), b, now)
    return client_tick


# --- nameserver ---


def _expiry_ten_times_longer(orig: Callable) -> Callable:
    def scan_not_active_broker(rim, now, expired_ms=route_info.BROKER_CHANNEL_EXPIRED_TIME):
        return orig(rim, now, 10 * expired_ms)
    return scan_not_active_broker


def _retry_ignores_last_broker(orig: Callable) -> Callable:
    def select_avoiding(tpi, last_broker_name, seed):
        return orig(tpi, None, seed)
    return select_avoiding


def _retry_index_not_kept(orig: Callable) -> Callable:
    def select_avoiding(tpi, last_broker_name, seed):
        out, selection = orig(tpi, last_broker_name, seed)
        return (tpi if last_broker_name is not None else out), selection
    return select_avoiding


def _topic_config_never_changes(orig: Callable) -> Callable:
    def is_broker_topic_config_changed(rim, broker_addr, data_version):
        return route_info.query_broker_topic_config(rim, broker_addr) is None
    return is_broker_topic_config_changed


def _register_keeps_other_id(orig: Callable) -> Callable:
    def register_broker(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, topic_config_wrapper,
                        filter_server_list, channel, now):
        out, result, first = orig(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr,
                                  topic_config_wrapper, filter_server_list, channel, now)
        before = rim.broker_addr_table.get(broker_name)
        if before is None:
            return out, result, first
        stale = {k: v for k, v in before.broker_addrs.items() if v == broker_addr and k != broker_id}
        if not stale:
            return out, result, first
        bd = out.broker_addr_table[broker_name]
        bd = bd.evolve(broker_addrs=type(bd.broker_addrs)({**dict(bd.broker_addrs.items()), **stale}))
        return out.evolve(broker_addr_table=out.broker_addr_table.set(broker_name, bd)), result, first
    return register_broker


def _slave_registration_takes_topics(orig: Callable) -> Callable:
    def register_broker(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, topic_config_wrapper,
                        filter_server_list, channel, now):
        out, result, first = orig(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr,
                                  topic_config_wrapper, filter_server_list, channel, now)
        if broker_id != route_info.MASTER_ID and topic_config_wrapper is not None and first:
            for tc in topic_config_wrapper.topic_config_table.values():
                out = route_info.create_and_update_queue_data(out, broker_name, tc)
        return out, result, first
    return register_broker


def _registration_keeps_timestamp(orig: Callable) -> Callable:
    def register_broker(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr, topic_config_wrapper,
                        filter_server_list, channel, now):
        held = rim.broker_live_table.get(broker_addr)
        out, result, first = orig(rim, cluster_name, broker_addr, broker_name, broker_id, ha_server_addr,
                                  topic_config_wrapper, filter_server_list, channel, now)
        if held is not None and held.channel == channel:
            live = out.broker_live_table[broker_addr].evolve(last_update_timestamp=held.last_update_timestamp)
            out = out.evolve(broker_live_table=out.broker_live_table.set(broker_addr, live))
        return out, result, first
    return register_broker


def _channel_destroy_by_address_only(orig: Callable) -> Callable:
    def on_channel_destroy(rim, remote_addr, channel):
        return orig(rim, remote_addr, None)
    return on_channel_destroy


def _unregister_by_address(orig: Callable) -> Callable:
    def unregister_broker(rim, cluster_name, broker_addr, broker_name, broker_id):
        bd = rim.broker_addr_table.get(broker_name)
        if bd is not None:
            for bid, addr in bd.broker_addrs.items():
                if addr == broker_addr:
                    return orig(rim, cluster_name, broker_addr, broker_name, bid)
        return orig(rim, cluster_name, broker_addr, broker_name, broker_id)
    return unregister_broker


def _route_drops_last_broker(orig: Callable) -> Callable:
    def pickup_topic_route_data(rim, topic):
        route = orig(rim, topic)
        if route is None or len(route.broker_datas) < 2:
            return route
        return route.evolve(broker_datas=route.broker_datas[:-1])
    return pickup_topic_route_data


def _round_robin_steps_twice(orig: Callable) -> Callable:
    def select_one(tpi, seed):
        tpi, _ = orig(tpi, seed)
        return orig(tpi, seed)
    return select_one


def _route_not_exist_drops_route(orig: Callable) -> Callable:
    def route_done(ci, topic, done, need_update):
        out, seen, route = orig(ci, topic, done, need_update)
        if seen.outcome == "TOPIC_NOT_EXIST" and topic in out.topic_route_table:
            out = out.evolve(topic_route_table=out.topic_route_table.without(topic))
        return out, seen, route
    return route_done


def _route_change_keeps_addresses(orig: Callable) -> Callable:
    def route_done(ci, topic, done, need_update):
        out, seen, route = orig(ci, topic, done, need_update)
        return out.evolve(broker_addr_table=ci.broker_addr_table), seen, route
    return route_done


def _clean_offline_keeps_addresses(orig: Callable) -> Callable:
    def clean_offline_broker(cc, ci):
        return ci.evolve(next_clean_ms=ci.next_clean_ms + cc.heartbeat_broker_interval)
    return clean_offline_broker


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


def _start_loads_nothing(orig: Callable) -> Callable:
    def start(c, b, now):
        return orig(c, b.evolve(persisted=type(b.persisted)()), now)
    return start


def _persist_never_writes(orig: Callable) -> Callable:
    def persist(b):
        return b
    return persist


def _drop_forgets_before_commit(orig: Callable) -> Callable:
    def do_rebalance(c, n, members, now):
        mine = set(off_client.allocate_averagely(c.queues, tuple(sorted(members)), n.id))
        kept = type(n.offset_table)((q, v) for q, v in n.offset_table.items() if q in mine or q not in n.assigned)
        return orig(c, n.evolve(offset_table=kept) if n.broker_addrs else n, members, now)
    return do_rebalance


def _commit_one_past(orig: Callable) -> Callable:
    def update_consumer_offset(b, req, client="", rpc=-1):
        return orig(b, req.evolve(commit_offset=req.commit_offset + 1), client, rpc)
    return update_consumer_offset


def _lower_commit_refused(orig: Callable) -> Callable:
    def commit_offset(table, key, queue_id, offset):
        inner = table.get(key)
        old = inner.get(queue_id, -1) if inner is not None else -1
        return orig(table, key, queue_id, max(old, offset))
    return commit_offset


def _query_answers_one_less(orig: Callable) -> Callable:
    def query_consumer_offset(c, b, req):
        resp = orig(c, b, req)
        return resp.evolve(offset=resp.offset - 1) if resp.offset > 0 else resp
    return query_consumer_offset


def _sync_takes_nothing(orig: Callable) -> Callable:
    def on_all_consumer_offset(b, master, resp):
        return orig(b, master, resp if resp is None else resp.evolve(offset_table=type(resp.offset_table)()))
    return on_all_consumer_offset


def _resume_one_past_answer(orig: Callable) -> Callable:
    def on_offset_answer(n, queue_id, addr, resp, now):
        if resp is not None and resp.code is ResponseCode.SUCCESS:
            resp = resp.evolve(offset=resp.offset + 1)
        return orig(n, queue_id, addr, resp, now)
    return on_offset_answer


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
           rule="PUT_OK returns the entry's pos instead of pos + BODY_OFFSET", catches=("DCL-8", "DCL-1")),
    Mutant(name="dledger_commitlog.dispatch_uncommitted", protocol="dledger_commitlog", module=dcl_commitlog,
           function="do_reput", make=_dispatch_uncommitted,
           rule="ReputMessageService dispatches past the committed position", catches=("DCL-9", "DCL-4")),
    Mutant(name="dledger_commitlog.master_before_caught_up", protocol="dledger_commitlog", module=dcl_broker,
           function="run_role_handler", make=_master_before_caught_up,
           rule="DLedgerRoleChangeHandler makes the broker master before ledgerEndIndex == committedIndex",
           catches=("DCL-7", "DCL-1", "DCL-4")),
    Mutant(name="dledger_commitlog.candidate_keeps_role", protocol="dledger_commitlog", module=dcl_broker,
           function="run_role_handler", make=_candidate_keeps_role,
           rule="DLedgerRoleChangeHandler ignores CANDIDATE: a master whose member becomes a candidate stays master",
           catches=("DCL-7",)),
    Mutant(name="dledger_commitlog.leader_task_never_gives_up", protocol="dledger_commitlog", module=dcl_broker,
           function="run_role_handler", make=_leader_task_never_gives_up,
           rule="the LEADER task keeps polling when its member no longer leads (succ = false never taken)",
           catches=("DCL-7",)),
    Mutant(name="dledger_commitlog.quorum_timeout_is_put_ok", protocol="dledger_commitlog", module=dcl_commitlog,
           function="put_status", make=_quorum_timeout_is_put_ok,
           rule="asyncPutMessage maps WAIT_QUORUM_ACK_TIMEOUT to PUT_OK", catches=("DCL-8", "DCL-1")),
    Mutant(name="dledger_commitlog.queue_offset_not_raised", protocol="dledger_commitlog", module=dcl_commitlog,
           function="after_append", make=_queue_offset_not_raised,
           rule="asyncPutMessage does not raise topicQueueTable after an append (queue offsets reused)",
           catches=("DCL-8", "DCL-4")),
    Mutant(name="dledger_commitlog.slave_takes_puts", protocol="dledger_commitlog", module=dcl_broker,
           function="handle_send", make=_slave_takes_puts,
           rule="a SLAVE runs asyncPutMessage instead of answering SERVICE_NOT_AVAILABLE", catches=("DCL-8",)),
    Mutant(name="dledger_commitlog.dispatch_one_behind", protocol="dledger_commitlog", module=dcl_commitlog,
           function="do_reput", make=_dispatch_one_behind,
           rule="ReputMessageService stops one committed message short of getMaxOffset", catches=("DCL-9",)),
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
    Mutant(name="ha.late_report_above_max_taken", protocol="ha", module=ha_service, function="read_event",
           make=_late_report_taken,
           rule="4.9.4's ReadSocketService takes a later report above the master's max offset (no #3015 check)",
           catches=("HA-9",)),
    Mutant(name="ha.housekeeping_after_4s", protocol="ha", module=ha_service, function="read_housekeeping",
           make=_housekeeping_too_eager,
           rule="ReadSocketService closes a connection after 4 s without a read (haHousekeepingInterval 20 s)",
           catches=("HA-10",)),
    Mutant(name="ha.slave_ok_without_connection", protocol="ha", module=ha_service, function="is_slave_ok",
           make=_slave_ok_without_connection,
           rule="isSlaveOK holds with no connection: SYNC_MASTER puts wait instead of SLAVE_NOT_AVAILABLE",
           catches=("HA-11",)),
    Mutant(name="ha.sync_flush_answers_at_once", protocol="ha", module=ha_broker, function="handle_put",
           make=_sync_flush_answers_at_once,
           rule="a SYNC_FLUSH put's flush status is PUT_OK at once, before GroupCommitService flushes it",
           catches=("HA-12",)),
    Mutant(name="ha.slave_drops_idle_connection", protocol="ha", module=ha_service, function="client_tick",
           make=_slave_drops_idle_connection,
           rule="HAClient closes its connection after 3 s without a write (haHousekeepingInterval 20 s)",
           catches=("HA-13",)),
    Mutant(name="nameserver.expiry_1200s", protocol="nameserver", module=route_info,
           function="scan_not_active_broker", make=_expiry_ten_times_longer,
           rule="scanNotActiveBroker expires a broker after 1,200 s instead of 120 s", catches=("NS-13", "NS-1")),
    Mutant(name="nameserver.retry_ignores_last_broker", protocol="nameserver", module=queue_selection,
           function="select_avoiding", make=_retry_ignores_last_broker,
           rule="selectOneMessageQueue(lastBrokerName) does not avoid the broker that just failed",
           catches=("NS-15", "NS-4")),
    Mutant(name="nameserver.retry_index_not_kept", protocol="nameserver", module=queue_selection,
           function="select_avoiding", make=_retry_index_not_kept,
           rule="selectOneMessageQueue(lastBrokerName) does not keep the send index its probes advanced",
           catches=("NS-15",)),
    Mutant(name="nameserver.topic_config_never_changes", protocol="nameserver", module=route_info,
           function="is_broker_topic_config_changed", make=_topic_config_never_changes,
           rule="registerBroker takes a master's topics only at its first registration (DataVersion ignored)",
           catches=("NS-12", "NS-3")),
    Mutant(name="nameserver.register_keeps_other_id", protocol="nameserver", module=route_info,
           function="register_broker", make=_register_keeps_other_id,
           rule="registerBroker keeps the address under its old id (no \"switch slave to master\" removal)",
           catches=("NS-12", "NS-6")),
    Mutant(name="nameserver.slave_registration_takes_topics", protocol="nameserver", module=route_info,
           function="register_broker", make=_slave_registration_takes_topics,
           rule="a slave's first registration creates queue data for its topics", catches=("NS-12",)),
    Mutant(name="nameserver.registration_keeps_timestamp", protocol="nameserver", module=route_info,
           function="register_broker", make=_registration_keeps_timestamp,
           rule="a registration on the same channel does not refresh lastUpdateTimestamp", catches=("NS-12", "NS-1")),
    Mutant(name="nameserver.channel_destroy_by_address_only", protocol="nameserver", module=route_info,
           function="on_channel_destroy", make=_channel_destroy_by_address_only,
           rule="onChannelDestroy looks the broker up by the socket's remote address only, never by its channel",
           catches=("NS-13",)),
    Mutant(name="nameserver.unregister_by_address", protocol="nameserver", module=route_info,
           function="unregister_broker", make=_unregister_by_address,
           rule="unregisterBroker removes the request's address instead of whatever its id holds", catches=("NS-13",)),
    Mutant(name="nameserver.route_drops_last_broker", protocol="nameserver", module=route_info,
           function="pickup_topic_route_data", make=_route_drops_last_broker,
           rule="pickupTopicRouteData leaves the last broker's data out of a route", catches=("NS-14",)),
    Mutant(name="nameserver.round_robin_steps_twice", protocol="nameserver", module=queue_selection,
           function="select_one", make=_round_robin_steps_twice,
           rule="TopicPublishInfo#selectOneMessageQueue advances the send index twice per probe", catches=("NS-15",)),
    Mutant(name="nameserver.route_not_exist_drops_route", protocol="nameserver", module=client_routes,
           function="route_done", make=_route_not_exist_drops_route,
           rule="a TOPIC_NOT_EXIST answer drops the client's cached route (4.9.4 keeps it)", catches=("NS-16",)),
    Mutant(name="nameserver.route_change_keeps_addresses", protocol="nameserver", module=client_routes,
           function="route_done", make=_route_change_keeps_addresses,
           rule="a changed route is cached without its brokers' addresses", catches=("NS-16",)),
    Mutant(name="nameserver.clean_offline_keeps_addresses", protocol="nameserver", module=client_routes,
           function="clean_offline_broker", make=_clean_offline_keeps_addresses,
           rule="cleanOfflineBroker drops nothing", catches=("NS-16",)),
    Mutant(name="offsets.slave_sync_merges", protocol="offsets", module=off_broker, function="put_all",
           make=_slave_sync_merges, rule="syncConsumerOffset merges (max per queue) instead of putAll",
           catches=("OFF-3",)),
    Mutant(name="offsets.offset_past_the_consumed", protocol="offsets", module=off_client, function="update_offset",
           make=_offset_past_the_consumed, rule="the consumer's offset moves one past what it consumed",
           catches=("OFF-1",)),
    Mutant(name="offsets.slave_suggests_itself", protocol="offsets", module=off_broker,
           function="suggest_which_broker_id", make=_slave_suggests_itself,
           rule="a slave suggests pulling from itself whatever slaveReadEnable says", catches=("OFF-4",)),
    Mutant(name="offsets.start_loads_nothing", protocol="offsets", module=off_broker, function="start",
           make=_start_loads_nothing, rule="a restarted broker starts with an empty offset table, not its file",
           catches=("OFF-7",)),
    Mutant(name="offsets.persist_never_writes", protocol="offsets", module=off_broker, function="persist",
           make=_persist_never_writes, rule="ConsumerOffsetManager#persist writes nothing", catches=("OFF-8",)),
    Mutant(name="offsets.drop_forgets_before_commit", protocol="offsets", module=off_client, function="do_rebalance",
           make=_drop_forgets_before_commit,
           rule="removeUnnecessaryMessageQueue removes the offset before persisting it (no commit on a drop)",
           catches=("OFF-9",)),
    Mutant(name="offsets.commit_one_past", protocol="offsets", module=off_broker, function="update_consumer_offset",
           make=_commit_one_past, rule="updateConsumerOffset stores one more than the consumer sent",
           catches=("OFF-10", "OFF-1")),
    Mutant(name="offsets.lower_commit_refused", protocol="offsets", module=off_broker, function="commit_offset",
           make=_lower_commit_refused, rule="commitOffset keeps the higher of the old and the new offset",
           catches=("OFF-10",)),
    Mutant(name="offsets.query_answers_one_less", protocol="offsets", module=off_broker,
           function="query_consumer_offset", make=_query_answers_one_less,
           rule="queryConsumerOffset answers one less than the table holds", catches=("OFF-11", "OFF-2")),
    Mutant(name="offsets.sync_takes_nothing", protocol="offsets", module=off_broker,
           function="on_all_consumer_offset", make=_sync_takes_nothing,
           rule="syncConsumerOffset puts nothing of the master's answer into the slave's table", catches=("OFF-12",)),
    Mutant(name="offsets.resume_one_past_answer", protocol="offsets", module=off_client, function="on_offset_answer",
           make=_resume_one_past_answer, rule="computePullFromWhere resumes one past the broker's answer",
           catches=("OFF-13", "OFF-1")),
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
