"""The DLedger store: DLedgerMappedFileStoreTest's index, position, commit and truncation checks
with the Java numbers, then one test per branch of the store functions."""

from __future__ import annotations

import pytest

from property_tests.support.dledger import body, leader_store, member
from reference_impl.dledger_log import store as st
from reference_impl.election.records import Code, Role

KIB = 1024
CFG = st.LogConfig(mapped_file_size_for_entry_data=10 * KIB * KIB)  # the tests' createFileStore default


def files(cfg: st.LogConfig, s: st.Store) -> int:
    """How many data files the log spans (MmapFileList#getMappedFiles().size())."""
    size = cfg.mapped_file_size_for_entry_data
    return (st.max_wrote_pos(s) - 1) // size - s.min_pos // size + 1 if s.entries else 0


def drop_last_files(cfg: st.LogConfig, s: st.Store, n: int) -> st.Store:
    """The test deletes the last n data files before reopening the store."""
    size = cfg.mapped_file_size_for_entry_data
    cut = (files(cfg, s) - n) * size + s.min_pos - s.min_pos % size
    keep = tuple(e for e in s.entries if e.pos < cut)
    return s.evolve(entries=keep, begin_index=s.begin_index if keep else -1, end_term=keep[-1].term if keep else -1,
                    flushed_index=keep[-1].index if keep else -1)


def test_committed_index() -> None:
    """DLedgerMappedFileStoreTest#testCommittedIndex: 100 appends, commit 90; after flush, shutdown and
    reopen: begin 0, end 99, committed 90 (the checkpoint)."""
    s = leader_store(CFG, 100, 128)
    s = st.update_committed_index(CFG, s, 0, 0, 90, 0)
    assert (s.end_index, s.committed_index) == (99, 90)
    s = st.recover(CFG, st.crash(st.shutdown(s, 5), "process"), 0, 10)
    assert (s.begin_index, s.end_index, s.committed_index) == (0, 99, 90)


def test_append_as_leader() -> None:
    """DLedgerMappedFileStoreTest#testAppendAsLeader: committing i gives committedPos = pos + size; the
    last equals maxWrotePosition; commits of -1, of a smaller index and of an older term change nothing."""
    s = leader_store(CFG, 10, 12)
    for i in range(10):
        s = st.update_committed_index(CFG, s, 0, 0, i, 0)
        e = st.get(s, i)
        assert (s.committed_index, s.committed_pos) == (i, e.pos + e.size)
    assert s.committed_pos == st.max_wrote_pos(s)
    for term, index in ((0, -1), (0, 0), (-1, 10)):
        assert st.update_committed_index(CFG, s, term, 0, index, 0) == s


def test_normal_recovery() -> None:
    """DLedgerMappedFileStoreTest#testNormalRecovery: flush, shutdown, reopen: begin 0, end 9, bodies intact."""
    s = leader_store(CFG, 10)
    r = st.recover(CFG, st.crash(st.shutdown(s, 0), "os"), 0, 1)
    assert (r.begin_index, r.end_index) == (0, 9) and r.entries == s.entries


def test_abnormal_recovery() -> None:
    """DLedgerMappedFileStoreTest#testAbnormalRecovery: files of 10 KiB + 8, 100 x 1 KiB: 12 files, end 99;
    without the last 2 files: 10 files, begin 0, end 89; without 10 more: no file, begin -1, end -1."""
    cfg = st.LogConfig(mapped_file_size_for_entry_data=10 * KIB + st.MIN_BLANK_LEN)
    s = leader_store(cfg, 100, KIB)
    assert (files(cfg, s), s.end_index, s.begin_index) == (12, 99, 0)
    s = st.recover(cfg, drop_last_files(cfg, st.shutdown(s, 0), 2), 0, 0)
    assert (files(cfg, s), s.begin_index, s.end_index) == (10, 0, 89)
    s = st.recover(cfg, drop_last_files(cfg, s, 10), 0, 0)
    assert (files(cfg, s), s.begin_index, s.end_index) == (0, -1, -1)


def test_truncate() -> None:
    """DLedgerMappedFileStoreTest#testTruncate: files of 8 KiB + 8, 10 x 1 KiB: 2 files. As follower,
    truncating to the other store's entry 5 ends at 5 (data at e5.pos + e5.size, index at 6 x 32); to
    entry 6 (absent: appended) at 6; to entry 9 (past the end: files rebuilt from its position) at 9,
    and the log then begins at 9."""
    cfg = st.LogConfig(mapped_file_size_for_entry_data=8 * KIB + st.MIN_BLANK_LEN)
    other = leader_store(cfg, 10, KIB)
    assert files(cfg, other) == 2
    f = member("n0", Role.FOLLOWER, 0, leader="n0")
    s = st.truncate(cfg, other, f, st.get(other, 5), 0, "n0", 0)
    e5 = st.get(other, 5)
    assert (s.begin_index, s.end_index, st.max_wrote_pos(s)) == (0, 5, e5.pos + e5.size)
    assert (s.end_index + 1) * st.INDEX_UNIT_SIZE == 6 * 32
    s = st.truncate(cfg, s, f, st.get(other, 6), 0, "n0", 0)
    e6 = st.get(other, 6)
    assert (s.begin_index, s.end_index, st.max_wrote_pos(s)) == (0, 6, e6.pos + e6.size)
    s = st.truncate(cfg, s, f, st.get(other, 9), 0, "n0", 0)
    e9 = st.get(other, 9)
    assert (s.begin_index, s.end_index, st.max_wrote_pos(s)) == (9, 9, e9.pos + e9.size)


def test_append_as_follower() -> None:
    """DLedgerMappedFileStoreTest#testAppendAsFollower: entries with explicit index, term 0 and pos
    (advancing by computeSizeInBytes) are stored and read back."""
    f = member("n0", Role.FOLLOWER, 0, leader="n1")
    s, pos = st.empty(), 0
    for i in range(10):
        b = body(f"Hello Follower{i}", len(f"Hello Follower{i}"))
        s = st.append_as_follower(CFG, s, f, st.Entry(index=i, term=0, pos=pos, size=48 + b.length, body=b), 0,
                                  "n1", 0)
        pos += 48 + b.length
    assert [st.get(s, i).body.key for i in range(10)] == [f"Hello Follower{i}" for i in range(10)]


def test_revise_where_position() -> None:
    """DLedgerMappedFileStoreTest#testReviseWherePosition: 20 x 1 KiB in files of 8 KiB + 8 (3 files); with
    the first two files gone, truncating to entry 15 leaves begin 14 (the third file's first entry), end 15."""
    cfg = st.LogConfig(mapped_file_size_for_entry_data=8 * KIB + st.MIN_BLANK_LEN)
    s = leader_store(cfg, 20, KIB)
    assert (files(cfg, s), s.end_index) == (3, 19)
    third = 2 * cfg.mapped_file_size_for_entry_data
    kept = tuple(e for e in s.entries if e.pos >= third)
    s2 = s.evolve(entries=kept, begin_index=kept[0].index, min_pos=third)
    f = member("n0", Role.FOLLOWER, 0, leader="n0")
    s2 = st.truncate(cfg, s2, f, st.get(s, 15), 0, "n0", 0)
    assert (s2.begin_index, s2.end_index) == (14, 15)


def test_flushed_pos_right_after_truncate() -> None:
    """DLedgerManagedFileStoreTruncateTest#testDataFileListFlushedPosRightAfterTruncate: 7 x 1 KiB flushed;
    truncating to its own entry 5 leaves everything kept flushed."""
    s = st.on_flush_tick(leader_store(CFG, 7, KIB), 100)
    f = member("n0", Role.FOLLOWER, 0, leader="n0")
    s = st.truncate(CFG, s, f, st.get(s, 5), 0, "n0", 200)
    assert s.flushed_index == s.end_index == 5


# --- branches ---


def test_pre_append_rolls_to_the_next_file_only_when_a_blank_record_would_not_fit() -> None:
    cfg = st.LogConfig(mapped_file_size_for_entry_data=1000)
    assert st.pre_append(cfg, 900, 92) == 900  # 92 + 8 == 100 bytes left: fits
    assert st.pre_append(cfg, 900, 93) == 1000  # one more: blank record, next file
    assert st.pre_append(cfg, 1000, 500) == 1000


def test_positions_are_i_times_header_plus_body() -> None:
    s = leader_store(CFG, 5, 100)
    assert [e.pos for e in s.entries] == [i * 148 for i in range(5)] and st.check_positions(CFG, s) is None


@pytest.mark.parametrize(("role", "transferee", "code"), [(Role.FOLLOWER, None, Code.NOT_LEADER),
                                                          (Role.LEADER, "n1", Code.LEADER_TRANSFERRING)])
def test_append_as_leader_guards(role: Role, transferee: str | None, code: Code) -> None:
    m = member("n0", role, 0, leader="n1", transferee=transferee)
    with pytest.raises(st.DLedgerError) as e:
        st.append_as_leader(CFG, st.empty(), m, body(), 0)
    assert e.value.code is code


def test_append_as_follower_guards() -> None:
    leader = leader_store(CFG, 2)
    f = member("n0", Role.FOLLOWER, 3, leader="n1")
    e1 = st.get(leader, 1)
    cases = [(st.empty(), e1, 3, "n1", Code.INCONSISTENT_INDEX), (st.empty(), st.get(leader, 0), 2, "n1",
                                                                    Code.INCONSISTENT_TERM),
             (st.empty(), st.get(leader, 0), 3, "n2", Code.INCONSISTENT_LEADER),
             (st.empty(), st.get(leader, 0).evolve(pos=5), 3, "n1", Code.DISK_ERROR)]
    for s, e, term, lid, code in cases:
        with pytest.raises(st.DLedgerError) as err:
            st.append_as_follower(CFG, s, f, e, term, lid, 0)
        assert err.value.code is code
    with pytest.raises(st.DLedgerError) as err:
        st.append_as_follower(CFG, st.empty(), member("n0", Role.CANDIDATE), st.get(leader, 0), 0, "n1", 0)
    assert err.value.code is Code.NOT_FOLLOWER


def test_truncate_replaces_a_different_entry_at_its_position() -> None:
    leader = leader_store(CFG, 3, term=2)
    mine = leader_store(CFG, 3, term=1)
    f = member("n0", Role.FOLLOWER, 2, leader="n1")
    s = st.truncate(CFG, mine, f, st.get(leader, 1), 2, "n1", 0)
    assert s.entries == (mine.entries[0], leader.entries[1]) and s.end_term == 2


def test_truncate_keeps_the_committed_index_above_the_new_end() -> None:
    s = st.update_committed_index(CFG, leader_store(CFG, 5), 0, 0, 4, 0)
    f = member("n0", Role.FOLLOWER, 0, leader="n1")
    s = st.truncate(CFG, s, f, st.get(s, 1), 0, "n1", 0)
    assert (s.end_index, s.committed_index) == (1, 4)


def test_update_committed_index_clamps_to_the_end_even_below_the_old_commit() -> None:
    """Java's order: the monotonic check compares the unclamped value, so a log truncated below its
    committed index takes the leader's larger index clamped down (LOG-4's expected violation)."""
    s = st.update_committed_index(CFG, leader_store(CFG, 5), 0, 0, 4, 0)
    f = member("n0", Role.FOLLOWER, 0, leader="n1")
    s = st.truncate(CFG, s, f, st.get(s, 1), 0, "n1", 0)
    assert st.update_committed_index(CFG, s, 0, 0, 9, 0).committed_index == 1
    assert st.update_committed_index(CFG, s, 0, 0, 3, 0).committed_index == 4


def test_get_index_checks() -> None:
    s = leader_store(CFG, 3)
    for index, code in ((-1, Code.INDEX_OUT_OF_RANGE), (3, Code.INDEX_OUT_OF_RANGE)):
        with pytest.raises(st.DLedgerError) as e:
            st.get(s, index)
        assert e.value.code is code
    with pytest.raises(st.DLedgerError) as e:
        st.get(s.evolve(entries=s.entries[1:], begin_index=1), 0)
    assert e.value.code is Code.INDEX_LESS_THAN_LOCAL_BEGIN


def test_os_crash_keeps_the_flushed_prefix_and_loses_the_checkpoint() -> None:
    s = st.update_committed_index(CFG, leader_store(CFG, 3), 0, 0, 2, 0)
    s = st.persist_check_point(st.on_flush_tick(s, 50), 60)
    s = st.update_committed_index(CFG, leader_store(CFG, 2, s=s), 0, 0, 4, 70)
    assert s.flushed_index == 2 and s.flush_due_ms == 0 + CFG.flush_file_interval
    after = st.recover(CFG, st.crash(s, "os"), 0, 100)
    assert (after.end_index, after.committed_index) == (2, -1)
    after = st.recover(CFG, st.crash(s, "process"), 0, 100)
    assert (after.end_index, after.committed_index) == (4, 2)  # the checkpoint still says 2
    assert st.crash(s, "disk") == st.Store()


def test_flush_and_checkpoint_schedule() -> None:
    s = leader_store(CFG, 1)
    assert st.flush_wake_at(s) == CFG.flush_file_interval
    s = st.on_flush_tick(s, 10)
    assert st.flush_wake_at(s) == -1
    s = st.update_committed_index(CFG, s, 0, 0, 0, 20)
    assert st.flush_wake_at(s) == 3001  # the flush thread's first checkpoint point after 3000 ms
    assert st.on_flush_tick(s, 3001).check_point == 0
