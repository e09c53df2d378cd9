"""RocketMQ 4.9.4's DLedger commitlog tests (store/src/test/.../dledger: DLedgerCommitlogTest,
MixCommitlogTest; test/.../DLedgerProduceAndConsumeIT) with the Java numbers. The tests'
store (`MessageStoreTestBase`): 100 KiB commitlog files, 1 KiB bodies, a UUID topic (36
characters) and no properties string, so a message is 91 + 1024 + 36 = 1151 bytes and a DLedger
entry 1199; `leaderId` set means the elector is off and the role forced at term 0."""

from __future__ import annotations

from typing import Any

from reference_impl import core, rocketmq
from reference_impl.core import chooser
from reference_impl.dledger_commitlog import broker as bk
from reference_impl.dledger_commitlog import commitlog as cl
from reference_impl.dledger_commitlog import world as cw
from reference_impl.election.records import Role

TOPIC = "3f0a8f4e-4c7b-4bd6-9d0e-2a1f5b9c7e61"  # a UUID, as the tests' topics
FILE = 100 * 1024
TEST_STORE = {"producers": 0, "consumers": 0, "queues": 1, "topic": TOPIC, "body_size": 1024,
              "properties_length": 0, "mapped_file_size_commit_log": FILE}


class Run:
    """A world driven by the seeded chooser, with the tests' direct calls in between."""

    def __init__(self, nodes: int = 1, seed: int = 1, down: tuple = (), **config: Any) -> None:
        cfg = cw.make_config(nodes, {**TEST_STORE, **config})
        self.w = core.init(cfg.evolve(down=tuple(cfg.ids.index(d) for d in down)))
        self.chooser = chooser.SeededChooser(seed)
        self.obs: list = []

    def sleep(self, ms: int) -> None:
        until = self.w.now + ms
        while 0 <= core.horizon(self.w) <= until:
            self.w, obs = core.step(self.w, self.chooser.choose(self.w))
            self.obs.extend(o for _, o in obs)
        self.w = self.w.evolve(now=max(self.w.now, until))

    def broker(self, i: int = 0) -> bk.Broker:
        return self.w.nodes[i]

    def put(self, n: int, i: int = 0, queue: int = 0) -> list[bk.PutResult]:
        """doPutMessages: DefaultMessageStore#putMessage n times."""
        first = len(self.obs)
        length = cl.message_length(1024, TOPIC, 0)
        b = self.broker(i)
        for k in range(n):
            req = bk.SendMessageRequest(key=f"m{len(self.obs)}-{k}", topic=TOPIC, queue_id=queue, length=length)
            b, _, outs = bk.handle_send(self.w.cfg.proto.node, b, req, 0, self.w.now)
            self.w, obs = core.apply_outs(core.set_node(self.w, i, b), i, outs)
            b = self.broker(i)
            self.obs.extend(o for _, o in obs)
        return [o for o in self.obs[first:] if isinstance(o, bk.PutResult)]

    def restart(self, i: int = 0, drop_files: int = 0) -> None:
        """Shut the store down, delete its last DLedger data files, start it again (abnormally)."""
        w = self.w
        if w.alive[i]:  # messageStore.shutdown(): DLedger flushes and writes its checkpoint
            b = w.nodes[i]
            w = core.set_node(w, i, b.evolve(node=b.node.evolve(store=cl.st.shutdown(b.node.store, w.now))))
            w, _ = core.apply_fault(w, core.Crash(node=i))
        b = w.nodes[i]
        if drop_files:
            s = b.node.store
            files = (cl.st.max_wrote_pos(s) - 1) // FILE + 1
            cut = (files - drop_files) * FILE
            keep = tuple(e for e in s.entries if e.pos < cut)
            s = s.evolve(entries=keep, begin_index=s.begin_index if keep else -1, end_term=keep[-1].term if keep else -1,
                         flushed_index=keep[-1].index if keep else -1)
            b = b.evolve(node=b.node.evolve(store=s))
        self.w, _ = core.apply_fault(core.set_node(w, i, b), core.Restart(node=i))

    def queue_max(self, i: int = 0, queue: int = 0) -> int:
        return len(self.broker(i).store.consume_queues.get(queue, ()))

    def get_messages(self, i: int = 0, queue: int = 0, offset: int = 0, n: int = 32) -> list[cl.Message]:
        resp = bk.handle_pull(self.w.cfg.proto.broker, self.broker(i), bk.PullMessageRequest(
            queue_id=queue, offset=offset, max_msg_nums=n))
        return list(resp.messages)

    def files(self, i: int = 0) -> int:
        s = self.broker(i).node.store
        return 0 if not s.entries else (cl.st.max_wrote_pos(s) - 1) // FILE - s.min_pos // FILE + 1

    def behind(self, i: int = 0) -> int:
        return cl.dispatch_behind_bytes(self.broker(i).node.store, self.broker(i).store)


def readable(r: Run, first: int, n: int, i: int = 0) -> bool:
    """doGetMessages: each queue offset reads a message with that queue offset."""
    units = r.broker(i).store.consume_queues.get(0, ())
    return all(cl.get_message(r.broker(i).store, r.broker(i).node.store, units[k][0]).queue_offset == k
               for k in range(first, first + n))


def test_dledger_commitlog_truncate_cq() -> None:
    """DLedgerCommitlogTest#testTruncateCQ: 2000 messages fill 24 DLedger files (85 entries of 1199 B
    per 100 KiB file), queue 0..2000, nothing behind; after an abnormal restart without the last 4
    files: 20 files, queue max 1700 (dirty units truncated), readable; without 20 more: none, 0."""
    r = Run()
    r.sleep(2000)
    assert [p.status for p in r.put(2000)] == [rocketmq.PutMessageStatus.PUT_OK] * 2000
    r.sleep(100)
    assert (r.files(), r.queue_max(), r.behind()) == (24, 2000, 0) and readable(r, 0, 2000)
    r.restart(drop_files=4)
    r.sleep(1000)
    assert (r.files(), r.queue_max(), r.behind()) == (20, 1700, 0) and readable(r, 0, 1700)
    r.restart(drop_files=20)
    r.sleep(1000)
    assert (r.files(), r.queue_max(), r.behind()) == (0, 0, 0)


def test_dledger_commitlog_recover() -> None:
    """DLedgerCommitlogTest#testRecover: 1000 messages; after a normal and an abnormal restart the
    queue is 0..1000, nothing behind, every message readable."""
    r = Run()
    r.sleep(1000)
    r.put(1000)
    r.sleep(100)
    assert (r.queue_max(), r.behind()) == (1000, 0)
    for _ in range(2):
        r.restart()
        r.sleep(100)
        assert (r.queue_max(), r.behind()) == (1000, 0) and readable(r, 0, 1000)


def test_dledger_commitlog_put_and_get_message() -> None:
    """DLedgerCommitlogTest#testPutAndGetMessage: 10 puts are PUT_OK with queue offset i; the queue
    is 0..10; a 32-message get returns 10, each with queue offset i, the put's msgId and
    commitLogOffset == wroteOffset (entry pos + 48)."""
    r = Run(forced_leader="n0")
    puts = r.put(10)
    assert [(p.status, p.queue_offset) for p in puts] == [(rocketmq.PutMessageStatus.PUT_OK, i) for i in range(10)]
    r.sleep(500)
    assert (r.queue_max(), r.behind()) == (10, 0)
    got = r.get_messages(n=32)
    assert [m.queue_offset for m in got] == list(range(10))
    assert [m.phys_offset for m in got] == [p.offset for p in puts]
    assert [bk.msg_id("n0", m.phys_offset) for m in got] == [p.msg_id for p in puts]
    assert [p.offset for p in puts] == [i * (1151 + 48) + 48 for i in range(10)]


def test_dledger_commitlog_committed_pos() -> None:
    """DLedgerCommitlogTest#testCommittedPos: n0 leads, n1 is not started; a put is OS_PAGECACHE_BUSY
    (the quorum ack times out); a second later the max offset and the queue are 0. Once n1 runs as
    follower, within 2 s both queues hold 1 and the leader's max offset is past 0: the "failed"
    write became visible."""
    r = Run(nodes=2, forced_leader="n0", down=("n1",))
    r.put(1)
    r.sleep(2600)
    assert [o.status for o in r.obs if isinstance(o, bk.PutResult)] == [rocketmq.PutMessageStatus.OS_PAGECACHE_BUSY]
    r.sleep(1000)
    assert (cl.get_max_offset(r.broker(0).node.store), r.queue_max(0)) == (0, 0)
    r.w, _ = core.apply_fault(r.w, core.Restart(node=1))
    r.sleep(2000)
    assert (r.queue_max(0), r.queue_max(1)) == (1, 1) and cl.get_max_offset(r.broker(0).node.store) > 0


def upgraded(**config: Any) -> Run:
    """MixCommitlogTest's first store: 1000 messages on a plain commitlog (12 files), reopened as DLedger."""
    return Run(old_messages=1000, **config)


DIVIDED = 12 * FILE  # maxOffset - maxOffset % fileSize + fileSize: 88 messages per 100 KiB file


def test_mix_commitlog_put_and_get() -> None:
    """MixCommitlogTest#testPutAndGet: reopened as DLedger, deletion is off, dividedCommitlogOffset and
    the max offset are the next file boundary, nothing behind; 1000 puts make the queue 0..2000; reopened
    again, the divided offset is unchanged and 1000 more make it 0..3000, all readable."""
    r = upgraded()
    b = r.broker()
    assert b.store.delete_dledger_disabled and b.store.divided_offset == DIVIDED
    assert cl.get_max_offset(b.node.store) == DIVIDED and r.behind() == 0
    r.sleep(2000)
    r.put(1000)
    r.sleep(500)
    assert (r.queue_max(), r.behind()) == (2000, 0) and readable(r, 0, 2000)
    r.restart()
    assert r.broker().store.divided_offset == DIVIDED and r.broker().store.delete_dledger_disabled
    r.sleep(2000)
    r.put(1000)
    r.sleep(500)
    assert (r.queue_max(), r.behind()) == (3000, 0) and readable(r, 0, 3000)


def test_mix_commitlog_fall_behind_cq() -> None:
    """MixCommitlogTest#testFallBehindCQ: the plain store's max phy offset is in file 11; with its
    consume queue deleted, the DLedger store rebuilds it from the old commitlog (0..1000), then 1000
    puts make it 0..2000, all readable."""
    r = Run(old_messages=1000)
    old = r.broker().store.old
    assert (old.messages[-1].phys_offset + old.messages[-1].length) // FILE == 11
    b = r.broker()
    r.w = core.set_node(r.w, 0, b.evolve(store=b.store.evolve(consume_queues=cl.EMPTY, reput_from=0)))
    r.sleep(2000)
    assert (r.queue_max(), r.behind()) == (1000, 0) and readable(r, 0, 1000)
    r.put(1000)
    r.sleep(500)
    assert (r.queue_max(), r.behind()) == (2000, 0) and readable(r, 0, 2000)


def test_mix_commitlog_delete_expired_files() -> None:
    """MixCommitlogTest#testDeleteExpiredFiles: after the upgrade and 1000 puts the min phy offset is
    0; deleting expired files (repeatedly) takes it to dividedCommitlogOffset, the max unchanged; then
    each call answers Integer.MAX_VALUE and turns DLedger's deletion back on; DLedger's messages
    1000..1999 are still readable."""
    r = upgraded()
    r.sleep(2000)
    r.put(1000)
    r.sleep(500)
    b = r.broker()
    assert cl.get_min_offset(b.store, b.node.store) == 0
    top = cl.get_max_offset(b.node.store)
    ms = b.store
    for _ in range(100):
        ms, _ = cl.delete_expired_file(ms)
    b = b.evolve(store=ms)
    assert (cl.get_min_offset(ms, b.node.store), cl.get_max_offset(b.node.store)) == (DIVIDED, top)
    answers = set()
    for _ in range(100):
        ms, got = cl.delete_expired_file(ms)
        answers.add(got)
    assert answers == {2 ** 31 - 1} and not ms.delete_dledger_disabled
    units = ms.consume_queues[0]
    assert all(cl.get_message(ms, b.node.store, units[k][0]).queue_offset == k for k in range(1000, 2000))


def test_dledger_produce_and_consume_it() -> None:
    """DLedgerProduceAndConsumeIT#testProduceAndConsume: a single-node DLedger broker is SYNC_MASTER
    after 3 s; 10 sends are SEND_OK on queue 0 with queue offsets 0..9; pulling 32 from offset 0
    gets the 10 in order."""
    cfg = cw.make_config(1, {"producers": 1, "consumers": 1, "queues": 1, "send_interval_ms": 100})
    w = core.init(cfg)
    ch = chooser.SeededChooser(3)
    done: list = []
    consumed: list = []
    while len(done) < 10 or len(consumed) < 10:
        w, obs = core.step(w, ch.choose(w))
        done += [o for _, o in obs if isinstance(o, bk.PutResult) and o.status is rocketmq.PutMessageStatus.PUT_OK]
        consumed += [o for _, o in obs if o.__class__.__name__ == "Consumed"]
        if w.now > 3000:
            assert w.nodes[0].broker_role is rocketmq.BrokerRole.SYNC_MASTER
        assert w.now < 120_000
    assert [(p.queue_id, p.queue_offset) for p in done[:10]] == [(0, i) for i in range(10)]
    assert [c.key for c in consumed[:10]] == [p.key for p in done[:10]]
    assert w.nodes[0].node.member.role is Role.LEADER
