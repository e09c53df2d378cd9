"""RocketMQ's CommitLog on DLedger (DLedgerCommitLog and the DefaultMessageStore parts it drives, 4.9.4).

Theory of operation
-------------------
A broker's messages live in its DLedger log: each message is the body of one entry,
and its physical offset is the entry's position plus `BODY_OFFSET` (48), written into
the message by an append hook once the position is known. A broker upgraded from a
plain commitlog keeps its old files below `dividedCommitlogOffset` (the end of the old
last file, sealed with a blank record at the upgrade) and DLedger's data starts there;
reads below it go to the old files, reads above it to DLedger, and nothing is written
to the old files again. DLedger's file deletion stays off while old files remain.

Only committed data is visible: `getMaxOffset()` is DLedger's `committedPos` (or the
data list's start, or 0). The reput service dispatches messages from `reputFromOffset`
up to that into the consume queues; a put reserves its queue offset in
`topicQueueTable` at once, before the quorum, and a new master rebuilds that table
from its consume queues (`recoverTopicQueueTable`). On restart the consume queues lose
units past DLedger's max wrote position (`truncateDirtyLogicFiles`).

`asyncPutMessage` hands the message to `DLedgerServer#handleAppend`: a rejection before
the append (pos -1: NOT_LEADER, LEADER_PENDING_FULL, LEADER_TRANSFERRING, ...) is
OS_PAGECACHE_BUSY at once; otherwise the future's code maps to the put status when it
completes (WAIT_QUORUM_ACK_TIMEOUT is OS_PAGECACHE_BUSY too, though the message stays
in the log and may commit later).

Simplifications (docs/dledger-commitlog.md): one topic; a message is a record with the
fields that matter (key, queue, queue offset, physical offset, length); consume
queues and `topicQueueTable` are kept with the store and survive every crash except a
disk loss (their 1 s flush is not modelled); only the batch-less put path.
"""

from __future__ import annotations

from reference_impl.core.state import EMPTY, FrozenMap, record
from reference_impl.dledger_log import store as st
from reference_impl.election.records import Code
from reference_impl.rocketmq import PutMessageStatus

MESSAGE_FIXED_LENGTH = 91  # CommitLog#calMsgLength without body, topic and properties (IPv4 hosts)
IPV6_EXTRA = 24  # born and store host: 20 bytes each instead of 8
END_FILE_MIN_BLANK_LENGTH = 8  # CommitLog: a blank record is [size:int][BLANK_MAGIC_CODE:int]


# DLedgerCommitLog#asyncPutMessage: the future's code -> PutMessageStatus (anything else: UNKNOWN_ERROR)
PUT_STATUS = {
    Code.SUCCESS: PutMessageStatus.PUT_OK,
    Code.INCONSISTENT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.NOT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.LEADER_NOT_READY: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.DISK_FULL: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.WAIT_QUORUM_ACK_TIMEOUT: PutMessageStatus.OS_PAGECACHE_BUSY,  # "the ons client will ignore" FLUSH_SLAVE_TIMEOUT
    Code.LEADER_PENDING_FULL: PutMessageStatus.OS_PAGECACHE_BUSY,
}


@record
class Message:
    """A stored message (MessageExtBrokerInner as encoded): `length` is msgLen, the entry's body size."""

    key: str  # the producer's UNIQ_KEY (a retry sends the same key)
    topic: str
    queue_id: int
    queue_offset: int = -1  # written under the put lock
    phys_offset: int = -1  # PHYSICALOFFSET, written by the append hook: entry pos + 48
    length: int = 0


def message_length(body_size: int, topic: str, properties_length: int, ipv6: bool = False) -> int:
    """CommitLog#calMsgLength: 4+4+4+4+4+8+8+4+8+host+8+host+4+8 + 4+body + 1+topic + 2+properties."""
    return MESSAGE_FIXED_LENGTH + body_size + len(topic) + properties_length + (IPV6_EXTRA if ipv6 else 0)


@record
class OldCommitLog:
    """The plain commitlog's files a broker had before its upgrade to DLedger."""

    file_size: int  # MessageStoreConfig.mappedFileSizeCommitLog
    messages: tuple[Message, ...] = ()  # by physical offset
    wrote_pos: int = 0  # the last file's wrote position (its end once sealed)
    min_offset: int = 0
    sealed: bool = False


def build_old_commitlog(messages: tuple[Message, ...], file_size: int) -> OldCommitLog:
    """What CommitLog#asyncPutMessage wrote before the upgrade: messages back to back, a
    file that cannot hold the next message (plus a blank record) closed with a blank."""
    out, pos = [], 0
    for m in messages:
        if m.length + END_FILE_MIN_BLANK_LENGTH > file_size - pos % file_size:
            pos += file_size - pos % file_size
        out.append(m.evolve(phys_offset=pos))
        pos += m.length
    return OldCommitLog(file_size=file_size, messages=tuple(out), wrote_pos=pos)


@record
class MessageStore:
    """DLedgerCommitLog + DefaultMessageStore state other than DLedger's own."""

    divided_offset: int = -1  # dividedCommitlogOffset
    old: OldCommitLog | None = None
    delete_dledger_disabled: bool = False  # disableDeleteDledger: enableDiskForceClean off, reserve 10 years
    topic_queue_table: FrozenMap = EMPTY  # queue id -> next queue offset (reserved before the quorum)
    consume_queues: FrozenMap = EMPTY  # queue id -> tuple of (phys offset, size) units
    reput_from: int = 0  # ReputMessageService.reputFromOffset


# --- offsets and reads ---


def get_max_offset(s: st.Store) -> int:
    """DLedgerCommitLog#getMaxOffset: committedPos, else the data list's start, else 0."""
    if s.committed_pos > 0:
        return s.committed_pos
    return s.min_pos if s.min_pos > 0 else 0


def get_min_offset(ms: MessageStore, s: st.Store) -> int:
    """DLedgerCommitLog#getMinOffset: the old commitlog's while it has files, else DLedger's."""
    if ms.old is not None and ms.old.messages:
        return ms.old.min_offset
    return s.min_pos


def get_message(ms: MessageStore, s: st.Store, offset: int) -> Message | None:
    """DLedgerCommitLog#getMessage(offset): below dividedCommitlogOffset the old commitlog, above it the
    DLedger entry whose body starts there (no committed check). None: nothing readable is there."""
    if offset < ms.divided_offset:
        for m in ms.old.messages if ms.old is not None else ():
            if m.phys_offset == offset:
                return m
        return None
    e = _entry_at_pos(s, offset - st.BODY_OFFSET)
    return e.body if e is not None and isinstance(e.body, Message) else None


def _entry_at_pos(s: st.Store, pos: int) -> st.Entry | None:
    entries = s.entries
    lo, hi = 0, len(entries) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        p = entries[mid].pos
        if p == pos:
            return entries[mid]
        if p < pos:
            lo = mid + 1
        else:
            hi = mid - 1
    return None


def dispatch_behind_bytes(s: st.Store, ms: MessageStore) -> int:
    """DefaultMessageStore#dispatchBehindBytes: getMaxOffset() - reputFromOffset."""
    return get_max_offset(s) - ms.reput_from


# --- the put path ---


def append_hook(entry: st.Entry) -> st.Entry:
    """DLedgerCommitLog's AppendHook: PHYSICALOFFSET = entry pos + BODY_OFFSET."""
    return entry.evolve(body=entry.body.evolve(phys_offset=entry.pos + st.BODY_OFFSET))


def reserve_queue_offset(ms: MessageStore, msg: Message) -> tuple[MessageStore, Message]:
    """asyncPutMessage under putMessageLock: take the queue offset from topicQueueTable."""
    return ms, msg.evolve(queue_offset=ms.topic_queue_table.get(msg.queue_id, 0))


def after_append(ms: MessageStore, msg: Message) -> MessageStore:
    """asyncPutMessage once handleAppend took it (pos != -1): topicQueueTable.put(key, offset + 1), before the quorum."""
    return ms.evolve(topic_queue_table=ms.topic_queue_table.set(msg.queue_id, msg.queue_offset + 1))


def put_status(code: Code) -> PutMessageStatus:
    return PUT_STATUS.get(code, PutMessageStatus.UNKNOWN_ERROR)


# --- dispatch (ReputMessageService) and the consume queues ---


def put_unit(ms: MessageStore, msg: Message) -> MessageStore:
    """ConsumeQueue#putMessagePositionInfo: skip what is already built; append otherwise (a queue
    offset past the end is only logged as "[BUG]logic queue order maybe wrong")."""
    units = ms.consume_queues.get(msg.queue_id, ())
    if units and msg.phys_offset + msg.length <= units[-1][0] + units[-1][1]:
        return ms
    if msg.queue_offset != 0 and msg.queue_offset < len(units):
        return ms  # "Build consume queue repeatedly"
    units += ((msg.phys_offset, msg.length),)
    return ms.evolve(consume_queues=ms.consume_queues.set(msg.queue_id, units))


def reput_wake_at(s: st.Store, ms: MessageStore) -> int:
    """ReputMessageService runs while reputFromOffset < getMaxOffset(); it has work when it can move."""
    if ms.reput_from >= get_max_offset(s):
        return -1
    return 0 if do_reput(s, ms) != ms else -1


def do_reput(s: st.Store, ms: MessageStore) -> MessageStore:
    """ReputMessageService#doReput: dispatch every readable message below getMaxOffset(), old-format
    records below dividedCommitlogOffset (past the last one the old file's blank record rolls to
    dividedCommitlogOffset) and DLedger entries above it (a blank record rolls to the next file).
    Past the log's end (a committed position past a truncated log) nothing is readable here: dispatch
    waits there."""
    top = get_max_offset(s)
    if ms.reput_from < get_min_offset(ms, s):
        ms = ms.evolve(reput_from=get_min_offset(ms, s))
    while ms.reput_from < top:
        at = ms.reput_from
        if at < ms.divided_offset:
            m = next((m for m in ms.old.messages if m.phys_offset >= at), None) if ms.old is not None else None
            if m is None:
                ms = ms.evolve(reput_from=ms.divided_offset)
                continue
            msg, end = m, m.phys_offset + m.length
        else:
            e = _entry_from(s, at)
            if e is None:
                break
            msg, end = e.body, e.pos + e.size
        if end > top:
            break
        if isinstance(msg, Message):
            ms = put_unit(ms, msg)
        ms = ms.evolve(reput_from=end)  # a no-op entry (enable_fast_advance_commit_index) dispatches nothing
    return ms


def _entry_from(s: st.Store, at: int) -> st.Entry | None:
    """The first entry at or after position `at`."""
    entries = s.entries
    if not entries or entries[-1].pos < at:
        return None
    lo, hi = 0, len(entries) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid].pos < at:
            lo = mid + 1
        else:
            hi = mid
    return entries[lo]


def recover_topic_queue_table(ms: MessageStore) -> MessageStore:
    """DefaultMessageStore#recoverTopicQueueTable: each queue's next offset is its consume queue's max offset."""
    return ms.evolve(topic_queue_table=FrozenMap((q, len(u)) for q, u in ms.consume_queues.items()))


def truncate_dirty_logic_files(ms: MessageStore, phy_offset: int) -> MessageStore:
    """DefaultMessageStore#truncateDirtyLogicFiles: consume queue units at or past phy_offset go."""
    return ms.evolve(consume_queues=FrozenMap((q, tuple(u for u in units if u[0] < phy_offset))
                                              for q, units in ms.consume_queues.items()))


def max_phy_offset_in_queues(ms: MessageStore) -> int:
    return max((u[-1][0] + u[-1][1] for u in ms.consume_queues.values() if u), default=-1)


# --- recovery and the upgrade ---


def recover(s: st.Store, ms: MessageStore, file_size: int) -> tuple[st.Store, MessageStore]:
    """DLedgerCommitLog#recover (normal and abnormal alike; DLedger's store has recovered), then
    DefaultMessageStore#start: the reput offset, dispatch until caught up, recoverTopicQueueTable.

    With DLedger data: dividedCommitlogOffset is its first file's start, deletion stays off
    while old files remain, and consume queue units past DLedger's max wrote position go.
    Without: the old commitlog is recovered (no files: the consume queues are destroyed);
    its last file is sealed with a blank record, and DLedger starts at the next file."""
    if s.entries or s.min_pos > 0:
        divided = s.min_pos - s.min_pos % file_size
        ms = ms.evolve(divided_offset=divided, delete_dledger_disabled=bool(ms.old and ms.old.messages)
                       or ms.delete_dledger_disabled)
        if max_phy_offset_in_queues(ms) >= st.max_wrote_pos(s):
            ms = truncate_dirty_logic_files(ms, st.max_wrote_pos(s))
    elif ms.old is None or not ms.old.messages:
        ms = ms.evolve(consume_queues=EMPTY)  # CommitLog#recoverNormally: no files, destroyLogics
    else:
        old = ms.old
        divided = (old.wrote_pos - 1) // old.file_size * old.file_size + old.file_size
        ms = ms.evolve(old=old.evolve(wrote_pos=divided, sealed=True), divided_offset=divided,
                       delete_dledger_disabled=True)
        s = s.evolve(min_pos=divided)
    start = max(max_phy_offset_in_queues(ms), get_min_offset(ms, s), 0)
    ms = do_reput(s, ms.evolve(reput_from=start))  # start(): wait until dispatchBehindBytes() <= 0
    return s, recover_topic_queue_table(ms)


def delete_expired_file(ms: MessageStore) -> tuple[MessageStore, int]:
    """DLedgerCommitLog#deleteExpiredFile with every old file expired: the normal path deletes all
    but the last old file; when it deleted nothing and one is left, that goes too. With no old
    files, refreshConfig turns DLedger's deletion back on and the answer is Integer.MAX_VALUE."""
    old = ms.old
    if old is None or not old.messages:
        return ms.evolve(delete_dledger_disabled=False), 2 ** 31 - 1
    size = old.file_size
    files = sorted({m.phys_offset // size for m in old.messages})
    if len(files) > 1:
        kept = tuple(m for m in old.messages if m.phys_offset // size == files[-1])
        return ms.evolve(old=old.evolve(messages=kept, min_offset=files[-1] * size),
                         delete_dledger_disabled=True), len(files) - 1
    return ms.evolve(old=old.evolve(messages=(), min_offset=old.wrote_pos), delete_dledger_disabled=True), 1
