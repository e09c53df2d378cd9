"""The DLedger log store (DLedgerMmapFileStore of DLedger 0.2.6) as a pure value.

Theory of operation
-------------------
A store is the entries of one node's log plus the few numbers the Java store keeps
beside them: `ledgerBeginIndex`, `ledgerEndIndex/Term`, `committedIndex/Pos`, the
flushed prefix and the checkpoint file. Entries are contiguous by index from
`begin_index` to `end_index`; each knows its absolute position in the data file list.

Positions follow the Java arithmetic exactly: an entry is `BODY_OFFSET (48) + body`
bytes; it is written at the data file list's max wrote position unless that leaves
fewer than `size + MIN_BLANK_LEN (8)` bytes in the current file, in which case the
file is closed with a blank record and the entry starts the next file
(`MmapFileList#preAppend`). So entry i of a log of equal bodies starts at i * (48 + body)
while the files do not roll.

Writes go to the page cache at once and reach the disk when the `FlushDataService`
runs (every `flushFileInterval`, 10 ms); it also rewrites the checkpoint file
(committed index) every `checkPointInterval` (3000 ms). A process crash loses
nothing written (the page cache survives the JVM); an OS crash loses the unflushed
tail and the checkpoint file (written without fsync, as the currterm file). Recovery
rebuilds begin/end from what survived and restores the committed index from the
checkpoint, clamped to the end (`DLedgerMmapFileStore#recover`).

Simplifications (docs/dledger.md): no file expiry or disk-full (`CleanSpaceService`
is not modelled: begin index moves only through truncation); an OS crash keeps
exactly the flushed prefix (the Java recovery scan could also stop earlier, on a torn
entry, or find stale bytes past a truncation point); `DLedgerMemoryStore` is not modelled.
"""

from __future__ import annotations

from typing import Any, ClassVar

from reference_impl.core.inputs import check_fields, positive
from reference_impl.core.state import record
from reference_impl.election.member_state import Member
from reference_impl.election.records import Code, DLedgerConfig, Role

HEADER_SIZE = 44  # DLedgerEntry.HEADER_SIZE: magic, size, index, term, pos, channel, chainCrc, bodyCrc
BODY_OFFSET = 48  # DLedgerEntry.BODY_OFFSET = HEADER_SIZE + 4 (the body length)
POS_OFFSET = 24  # DLedgerEntry.POS_OFFSET
MIN_BLANK_LEN = 8  # MmapFileList.MIN_BLANK_LEN
INDEX_UNIT_SIZE = 32  # DLedgerMmapFileStore.INDEX_UNIT_SIZE
VERSIONS = ("0.2.6", "0.3.1.2", "fixed")


class DLedgerError(Exception):
    """DLedgerException: a PreConditions.check failed with this response code."""

    def __init__(self, code: Code, detail: str = "") -> None:
        super().__init__(f"{code.name}{': ' + detail if detail else ''}")
        self.code = code


def check(cond: bool, code: Code, detail: str = "") -> None:
    """PreConditions#check"""
    if not cond:
        raise DLedgerError(code, detail)


@record
class LogConfig:
    """DLedgerConfig's log fields (0.2.6 defaults) and the constants the Java classes hard-code.

    `dledger_version`: "0.2.6" (RocketMQ 4.9.4), "0.3.1.2" (RocketMQ 4.9.5+ and 5.x), or
    "fixed": 0.2.6 with the two repairs DLedger 0.4.0 brings for what the checkers find here
    (docs/dledger.md): a leader commits only an index whose entry is of its current term
    (Raft section 5.4.2), and a new leadership compares from its own end instead of from a
    compareIndex left over from an earlier one; it also implies `push_processor` "single_thread",
    and (world config, DLedgerConfig.step_down_on_higher_term) 0.4.0's heartbeat parse, in which a
    leader steps down for a higher term in an answer even while a quorum follows it.

    `push_processor`: "pool" is DLedger's registration of PUSH with a null executor, i.e. the
    remoting server's 4-thread public pool, so pushes from one leader may be handled out of
    the order they were sent (the world reorders them freely); "single_thread" handles them
    in send order, as one thread behind the one Netty channel DLedger keeps per peer would:
    the world delivers a leader's pushes to a follower in the order sent (world.fifo,
    `Protocol.fifo`), and the entry handler drops a push older than one it has handled (a
    duplicate's copy arriving after later pushes).

    `enable_fast_advance_commit_index` (DLedger 0.4.0's FastAdvanceCommitIndexService, off
    by default there): a new leader whose log is not all committed appends a no-op entry,
    so that the current-term rule can commit its older entries."""

    dledger_version: str = "0.2.6"
    push_processor: str = "pool"
    enable_fast_advance_commit_index: bool = False  # DLedger 0.4.0 only: a new leader appends a no-op
    max_pending_requests_num: int = 10000
    max_wait_ack_time_ms: int = 2500
    max_push_time_out_ms: int = 1000
    mapped_file_size_for_entry_data: int = 1 << 30  # RocketMQ: mappedFileSizeCommitLog, 1 GiB too
    flush_file_interval: int = 10
    check_point_interval: int = 3000
    dispatcher_max_pending_size: int = 1000  # EntryDispatcher.maxPendingSize
    push_wait_ms: int = 3000  # doCompare / doTruncate: responseFuture.get(3, SECONDS)
    dispatcher_error_sleep_ms: int = 500  # EntryDispatcher#doWork catch: sleep(500)
    thread_wait_ms: int = 1  # waitForRunning(1): how long an idle EntryPusher thread waits before it looks again
    commit_push_interval_ms: int = 1000  # doCommit: elapsed(lastPushCommitTimeMs) > 1000
    leak_check_interval_ms: int = 1000  # QuorumAckChecker / EntryDispatcher: elapsed(lastCheckLeakTimeMs) > 1000
    check_fast_forward_interval_ms: int = 1000  # EntryHandler#checkAbnormalFuture
    push_future_timeout_ms: int = 1000  # EntryHandler#handlePush: new TimeoutFuture<>(1000)

    # Every count, size, period and timeout here must be at least 1 (a timer or sleep of 0 would spin).
    LIMITS: ClassVar[dict] = positive(
        "max_pending_requests_num", "max_wait_ack_time_ms", "max_push_time_out_ms", "mapped_file_size_for_entry_data",
        "flush_file_interval", "check_point_interval", "dispatcher_max_pending_size", "push_wait_ms", "thread_wait_ms",
        "dispatcher_error_sleep_ms", "commit_push_interval_ms", "leak_check_interval_ms",
        "check_fast_forward_interval_ms", "push_future_timeout_ms")

    def __attrs_post_init__(self) -> None:
        check_fields(self)
        if self.dledger_version not in VERSIONS:
            raise ValueError(f"dledger_version must be one of {', '.join(VERSIONS)}")
        if self.push_processor not in ("pool", "single_thread"):
            raise ValueError("push_processor must be 'pool' or 'single_thread'")

    @property
    def v026(self) -> bool:
        return self.dledger_version != "0.3.1.2"

    @property
    def current_term_commit(self) -> bool:
        return self.dledger_version == "fixed"

    @property
    def fresh_compare(self) -> bool:
        return self.dledger_version == "fixed"

    @property
    def ordered_pushes(self) -> bool:
        return self.push_processor == "single_thread" or self.dledger_version == "fixed"

    @property
    def compare_queue_capacity(self) -> int:
        """EntryHandler.compareOrTruncateRequests: ArrayBlockingQueue(100) in 0.2.6, (1024) in 0.3.x."""
        return 100 if self.v026 else 1024


@record
class NodeConfig:
    """What a DLedger node is configured with: the election's DLedgerConfig and the log's fields."""

    dledger: DLedgerConfig
    log: LogConfig = LogConfig()

    def __attrs_post_init__(self) -> None:
        check_fields(self)


@record
class Entry:
    """DLedgerEntry. `body` is any record with a `length` in bytes (a `Body` here, a
    RocketMQ message in dledger_commitlog); magic is always CURRENT_MAGIC (1) and channel 0,
    so they are left out. Equality is DLedgerEntry#equals (the CRCs are not compared)."""

    index: int
    term: int
    pos: int
    size: int
    body: Any


@record
class Body:
    """An entry body: `length` bytes, named by `key` (the client's request) so that
    properties can tell entries apart without carrying the bytes."""

    key: str
    length: int


NOOP = Body(key="noop", length=0)  # FastAdvanceCommitIndexService's entry (a raft-log read)


def body_length(body: Any) -> int:
    return body.length


@record
class Store:
    entries: tuple[Entry, ...] = ()  # indexes begin_index .. end_index
    begin_index: int = -1
    end_term: int = -1
    committed_index: int = -1
    committed_pos: int = -1
    min_pos: int = 0  # the data file list's min offset (where it starts; RocketMQ's dividedCommitlogOffset)
    flushed_index: int = -1  # entries up to here are on disk (FlushDataService)
    flush_due_ms: int = -1  # when the flush thread next writes dirty pages (-1: nothing dirty)
    check_point: int = -1  # committedIndex in the checkpoint file (-1: no file)
    last_check_point_ms: int = 0
    check_point_due_ms: int = -1  # when a changed committedIndex reaches the checkpoint file

    @property
    def end_index(self) -> int:
        return self.begin_index + len(self.entries) - 1 if self.entries else -1


def empty(min_pos: int = 0, now: int = 0) -> Store:
    return Store(min_pos=min_pos, last_check_point_ms=now)


def max_wrote_pos(s: Store) -> int:
    """MmapFileList#getMaxWrotePosition"""
    if not s.entries:
        return s.min_pos
    last = s.entries[-1]
    return last.pos + last.size


def pre_append(cfg: LogConfig, wrote_pos: int, size: int) -> int:
    """MmapFileList#preAppend(len, useBlank=true): the entry's position; a file that
    cannot hold it plus a blank record is closed and the entry starts the next one."""
    file_size = cfg.mapped_file_size_for_entry_data
    within = wrote_pos % file_size
    if size + MIN_BLANK_LEN > file_size - within:
        return wrote_pos - within + file_size
    return wrote_pos


def get(s: Store, index: int) -> Entry:
    """DLedgerMmapFileStore#get, with indexCheck's codes."""
    check(index >= 0, Code.INDEX_OUT_OF_RANGE)
    check(index >= s.begin_index, Code.INDEX_LESS_THAN_LOCAL_BEGIN)
    check(index <= s.end_index, Code.INDEX_OUT_OF_RANGE)
    return s.entries[index - s.begin_index]


def entry_at(s: Store, index: int) -> Entry | None:
    """The entry at `index`, None when the log does not hold it (no exception)."""
    if s.entries and s.begin_index <= index <= s.begin_index + len(s.entries) - 1:
        return s.entries[index - s.begin_index]
    return None


def lost_entries(old: Store, new: Store) -> tuple[Entry, ...]:
    """Entries `old` held that `new` no longer holds at their index, walking down from the old
    end (a log is rebuilt as a prefix of the old one plus new entries, so the first entry still
    held ends the walk). Ascending by index; () when `new` only appended."""
    if old.entries is new.entries or not old.entries:
        return ()
    out = []
    for e in reversed(old.entries):
        now = entry_at(new, e.index)
        if now is e or now == e:
            break
        out.append(e)
    return tuple(reversed(out))


def _dirty(s: Store, due: int) -> Store:
    """A write reached the page cache; the flush thread writes it by `due` (within flushFileInterval)."""
    return s if s.flush_due_ms >= 0 else s.evolve(flush_due_ms=due)


def append_as_leader(cfg: LogConfig, s: Store, m: Member, body: Any, now: int, hook: Any = None
                     ) -> tuple[Store, Entry]:
    """DLedgerMmapFileStore#appendAsLeader: next index, current term, position by preAppend.
    `hook` is an AppendHook: it sees the entry once its position is known (RocketMQ writes
    the message's physical offset into the body there)."""
    check(m.role is Role.LEADER, Code.NOT_LEADER)
    check(m.transferee is None, Code.LEADER_TRANSFERRING)
    size = BODY_OFFSET + body_length(body)
    index = s.end_index + 1
    pos = pre_append(cfg, max_wrote_pos(s), size)
    entry = Entry(index=index, term=m.curr_term, pos=pos, size=size, body=body)
    if hook is not None:
        entry = hook(entry)
    s = s.evolve(entries=s.entries + (entry,), end_term=m.curr_term,
                 begin_index=index if s.begin_index == -1 else s.begin_index)
    return _dirty(s, now + cfg.flush_file_interval), entry


def append_as_follower(cfg: LogConfig, s: Store, m: Member, entry: Entry, leader_term: int, leader_id: str,
                       now: int) -> Store:
    """DLedgerMmapFileStore#appendAsFollower: the leader's entry must land at the position it has there."""
    check(m.role is Role.FOLLOWER, Code.NOT_FOLLOWER)
    check(entry.index == s.end_index + 1, Code.INCONSISTENT_INDEX)
    check(leader_term == m.curr_term, Code.INCONSISTENT_TERM)
    check(leader_id == m.leader_id, Code.INCONSISTENT_LEADER)
    check(pre_append(cfg, max_wrote_pos(s), entry.size) == entry.pos, Code.DISK_ERROR, "position mismatch")
    s = s.evolve(entries=s.entries + (entry,), end_term=entry.term,
                 begin_index=entry.index if s.begin_index == -1 else s.begin_index)
    return _dirty(s, now + cfg.flush_file_interval)


def truncate(cfg: LogConfig, s: Store, m: Member, entry: Entry, leader_term: int, leader_id: str, now: int
             ) -> Store:
    """DLedgerMmapFileStore#truncate: make the log end exactly at the leader's `entry`.

    Kept up to the entry if this log holds an equal one, else cut at its position and
    append it. A position past the local end (the follower lost its tail after the
    leader compared) rebuilds the data files from that position, so the log then
    begins at `entry` (reviseLedgerBeginIndex), as in DLedgerMappedFileStoreTest#testTruncate.
    committedIndex is left as it is, even above the new end."""
    check(m.role is Role.FOLLOWER, Code.NOT_FOLLOWER)
    check(leader_term == m.curr_term, Code.INCONSISTENT_TERM)
    check(leader_id == m.leader_id, Code.INCONSISTENT_LEADER)
    existed = entry_at(s, entry.index) == entry
    keep = [e for e in s.entries if e.pos + e.size <= entry.pos] if not existed else [
        e for e in s.entries if e.index <= entry.index]
    if existed:
        entries, begin = tuple(keep), s.begin_index
        flushed = min(s.flushed_index, entry.index)
    else:
        kept = tuple(keep)
        wrote = kept[-1].pos + kept[-1].size if kept else s.min_pos
        if pre_append(cfg, wrote, entry.size) == entry.pos and (not kept or kept[-1].index == entry.index - 1):
            entries, begin = kept + (entry,), (kept[0].index if kept else entry.index)
        else:  # rebuildWithPos: every data file goes; the list restarts at the entry's position
            # Not reached by the dledger_log world (docs/fuzzing.md, "Branch coverage of the
            # reference"): a leader truncates at the entry a follower's COMPARE reply said it holds,
            # or at the leader's begin index, and every log there begins at index 0, position 0 until
            # a rebuild moves it. So only a follower whose log shrank after its reply could get here.
            # The same leader's dispatcher waits for the TRUNCATE's reply, a newer leader's push makes
            # this TRUNCATE fail its term check, and a crash drops every message to and from the
            # process (core.network.node_down), that reply included. test_dledger_store.py::
            # test_truncate (DLedger's testTruncate) takes the branch.
            entries, begin = (entry,), entry.index
            s = s.evolve(min_pos=entry.pos)
        flushed = min(s.flushed_index, entry.index - 1)
    s = s.evolve(entries=entries, begin_index=begin, end_term=entry.term, flushed_index=flushed)
    return _dirty(s, now + cfg.flush_file_interval)


def update_committed_index(cfg: LogConfig, s: Store, term: int, curr_term: int, new: int, now: int) -> Store:
    """DLedgerMmapFileStore#updateCommittedIndex: monotonic, ignores older terms, clamped to the end.
    There is no check that the entry at the new index is of the current term (section 2.8)."""
    if new == -1 or s.end_index == -1 or term < curr_term or new == s.committed_index:
        return s
    if new < s.committed_index or new < s.begin_index:
        return s
    new = min(new, s.end_index)
    e = s.entries[new - s.begin_index]
    s = s.evolve(committed_index=new, committed_pos=e.pos + e.size)
    if s.check_point_due_ms < 0:
        # The flush thread rewrites the checkpoint when more than checkPointInterval has
        # passed since it last did: at the first such point of its schedule after now.
        period = cfg.check_point_interval + 1
        due = s.last_check_point_ms + period
        if due <= now:
            due += ((now - due) // period + 1) * period
        s = s.evolve(check_point_due_ms=due)
    return s


# --- the flush thread, crash and recovery ---


def flush_wake_at(s: Store) -> int:
    """When FlushDataService next changes what is on disk (-1: nothing to do)."""
    a, b = s.flush_due_ms, s.check_point_due_ms
    if a < 0:
        return b
    return a if b < 0 else min(a, b)


def on_flush_tick(s: Store, now: int) -> Store:
    """FlushDataService#doWork: flush data and index; persist the checkpoint when its time has come."""
    if 0 <= s.flush_due_ms <= now:
        s = s.evolve(flushed_index=s.end_index, flush_due_ms=-1)
    if 0 <= s.check_point_due_ms <= now:
        s = persist_check_point(s, now)
    return s


def persist_check_point(s: Store, now: int) -> Store:
    """DLedgerMmapFileStore#persistCheckPoint (endIndex, committedIndex)."""
    return s.evolve(check_point=s.committed_index, last_check_point_ms=now, check_point_due_ms=-1)


def shutdown(s: Store, now: int) -> Store:
    """DLedgerMmapFileStore#shutdown: flush everything and write the checkpoint."""
    return persist_check_point(s.evolve(flushed_index=s.end_index, flush_due_ms=-1), now)


def crash(s: Store, kind: str) -> Store:
    """What survives: everything after a process crash (the page cache lives on); the
    flushed prefix and no checkpoint after an OS crash; nothing after a disk loss."""
    if kind == "process":
        return s
    if kind == "disk":
        return Store()
    keep = s.entries[:max(0, s.flushed_index - s.begin_index + 1)] if s.entries else ()
    return s.evolve(entries=keep, begin_index=s.begin_index if keep else -1,
                    end_term=keep[-1].term if keep else -1, check_point=-1)


def recover(cfg: LogConfig, s: Store, curr_term: int, now: int) -> Store:
    """DLedgerMmapFileStore#recover after a restart: volatile positions reset, the log
    is what survived, committedIndex comes back from the checkpoint (clamped)."""
    s = Store(entries=s.entries, begin_index=s.begin_index, end_term=s.end_term if s.entries else -1,
              min_pos=s.min_pos, flushed_index=s.end_index, check_point=s.check_point,
              last_check_point_ms=now)
    if s.check_point >= 0:
        s = update_committed_index(cfg, s, curr_term, curr_term, s.check_point, now).evolve(check_point_due_ms=-1)
    return s


def check_positions(cfg: LogConfig, s: Store) -> str | None:
    """Structural check: contiguous indexes, terms never decrease, sizes 48 + body,
    positions by preAppend from the first. None if all hold, else what is wrong."""
    prev = None
    for e in s.entries:
        if e.size != BODY_OFFSET + body_length(e.body):
            return f"entry {e.index}: size {e.size} != {BODY_OFFSET} + body"
        if prev is not None:
            if e.index != prev.index + 1:
                return f"index {e.index} follows {prev.index}"
            if e.term < prev.term:
                return f"entry {e.index}: term {e.term} after term {prev.term}"
            if e.pos != pre_append(cfg, prev.pos + prev.size, e.size):
                return f"entry {e.index}: pos {e.pos}, expected {pre_append(cfg, prev.pos + prev.size, e.size)}"
        prev = e
    return None
