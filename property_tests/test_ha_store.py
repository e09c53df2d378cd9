"""The byte-level CommitLog (reference_impl.ha.commit_log): appends, blanks, reads, flush, crashes, recovery."""

from hypothesis import given
from hypothesis import strategies as hs

from reference_impl.ha import commit_log as st

SIZE = 256  # a small mapped file, so that files roll


def put_all(bodies, size=SIZE, s=st.EMPTY_STORE):
    out = []
    for body in bodies:
        s, at, n = st.put_message(s, size, body)
        out.append((at, n))
    return s, out


bodies = hs.lists(hs.binary(min_size=1, max_size=120), max_size=30)


@given(bodies)
def test_messages_never_cross_a_file_and_read_back(bs):
    s, placed = put_all(bs)
    for (at, n), body in zip(placed, bs):
        assert at // SIZE == (at + n - 1) // SIZE  # one file
        assert st.holds(s, at, st.encode_message(body, at))
    assert st.decode_messages(s, SIZE) == [(at, body) for (at, _), body in zip(placed, bs)]


@given(bodies)
def test_recovery_keeps_whole_messages(bs):
    """A master's CommitLog only holds whole messages: recovery (process crash) truncates nothing."""
    s, _ = put_all(bs)
    r = st.recover(s, SIZE)
    assert r.data == s.data and r.flushed == st.max_offset(s)


def test_a_message_that_does_not_fit_leaves_a_blank_to_the_file_end():
    """doAppend: msgLen + END_FILE_MIN_BLANK_LENGTH > maxBlank -> blank record, END_OF_FILE, next file."""
    s, placed = put_all([b"x" * 110, b"y" * 110])  # 134 + 8 > 256 - 134
    assert placed == [(0, 134), (256, 134)]
    blank = s.data[134:142]
    assert int.from_bytes(blank[:4], "big") == 122 and int.from_bytes(blank[4:], "big", signed=True) == \
        st.BLANK_MAGIC_CODE
    assert s.data[142:256] == bytes(114)


def test_message_fits_with_exactly_eight_bytes_to_spare():
    s, placed = put_all([b"a" * 100, b"b" * 100])  # 124 + 8 == 256 - 124
    assert placed == [(0, 124), (124, 124)]


def test_get_data_is_bounded_by_one_file():
    s, placed = put_all([b"x" * 110, b"y" * 110, b"z" * 10])
    assert st.get_data(s, SIZE, 0) == s.data[:SIZE]
    assert st.get_data(s, SIZE, 134) == s.data[134:SIZE]
    assert st.get_data(s, SIZE, 256) == s.data[256:]
    assert st.get_data(s, SIZE, st.max_offset(s)) is None
    assert st.get_data(s, SIZE, 10_000) is None


def test_get_data_at_zero_reads_the_first_file_wherever_it_starts():
    """getData(offset, offset == 0): findMappedFileByOffset(0, returnFirstOnNotFound = true)."""
    s, ok = st.append_data(st.EMPTY_STORE, SIZE, 512, b"abc")
    assert ok and st.get_data(s, SIZE, 0) == b"abc"
    assert st.get_data(s, SIZE, 100) is None


def test_slave_append_creates_the_file_at_the_aligned_offset():
    """CommitLog#appendData on an empty store: getLastMappedFile(startOffset) creates the file at
    startOffset - startOffset % size."""
    s, ok = st.append_data(st.EMPTY_STORE, SIZE, 600, b"")
    assert ok and s.base == 512 and st.max_offset(s) == 512  # a heartbeat alone creates the file
    s, ok = st.append_data(st.EMPTY_STORE, SIZE, 600, b"abc")
    assert st.max_offset(s) == 515  # written at the file's wrote position, not at 600: only HAClient's check guards


def test_slave_append_refuses_bytes_past_the_file_end():
    s, _ = st.append_data(st.EMPTY_STORE, SIZE, 0, b"a" * 250)
    s2, ok = st.append_data(s, SIZE, 250, b"b" * 7)
    assert not ok and s2 == s
    s3, ok = st.append_data(s, SIZE, 250, b"b" * 6)
    assert ok and st.max_offset(s3) == 256
    s4, ok = st.append_data(s3, SIZE, 256, b"c")  # the last file is full: a new one
    assert ok and st.max_offset(s4) == 257


def test_slave_append_refuses_more_than_a_file_into_a_new_file():
    """MappedFile#appendMessage(byte[], int, int) checks `currentPos + length <= fileSize` for a new
    file too (currentPos 0): bytes longer than a whole mapped file are refused, though the file was
    created (getLastMappedFile). Found by `rmqspec conform --protocol ha` against RocketMQ 4.9.4: the
    model appended them whenever the file was new. A master never sends such a frame (getData stops
    at its file's end)."""
    s, ok = st.append_data(st.EMPTY_STORE, SIZE, 0, b"a" * (SIZE + 1))
    assert not ok and s.base == 0 and st.max_offset(s) == 0
    full, _ = st.append_data(st.EMPTY_STORE, SIZE, 0, b"a" * SIZE)
    s, ok = st.append_data(full, SIZE, SIZE, b"b" * (SIZE + 1))  # the last file is full: the new one refuses
    assert not ok and s == full
    s, ok = st.append_data(full, SIZE, SIZE, b"b" * SIZE)
    assert ok and st.max_offset(s) == 2 * SIZE


def test_recovery_truncates_a_partial_message():
    s, placed = put_all([b"a" * 40, b"b" * 40])
    partial = s.evolve(data=s.data[:placed[1][0] + 30])
    assert st.max_offset(st.recover(partial, SIZE)) == placed[1][0]


def test_recovery_truncates_at_a_bad_crc():
    s, placed = put_all([b"a" * 40, b"b" * 40, b"c" * 40])
    at = placed[1][0] + st.MESSAGE_HEADER
    bad = s.evolve(data=s.data[:at] + b"X" + s.data[at + 1:])
    assert st.max_offset(st.recover(bad, SIZE)) == placed[1][0]


def test_recovery_walks_past_blanks_and_drops_a_trailing_one():
    s, placed = put_all([b"x" * 110, b"y" * 110])
    assert st.recover(s, SIZE).data == s.data
    only_first = s.evolve(data=s.data[:SIZE])  # the blank filled file 0, file 1 never written
    assert st.max_offset(st.recover(only_first, SIZE)) == 134


def test_flush_needs_four_dirty_pages_unless_thorough_or_full():
    """MappedFile#isAbleToFlush: full file, or (write/page - flush/page) >= leastPages, or any dirt with 0."""
    size = 1 << 20
    s, _ = put_all([b"x" * 4000] * 3, size=size)  # 12072 bytes: page 2 < 4 pages
    assert st.flush(s, size, 4).flushed == 0
    assert st.flush(s, size, 0).flushed == st.max_offset(s)
    s, _ = put_all([b"x" * 4000] * 4, size=size, s=s)  # 24144 bytes: pages 0..5
    assert st.flush(s, size, 4).flushed == st.max_offset(s)


def test_flush_moves_one_file_at_a_time():
    s, _ = put_all([b"x" * 110, b"y" * 110])
    s1 = st.flush(s, SIZE, 0)
    assert s1.flushed == SIZE  # the full first file
    assert st.flush(s1, SIZE, 0).flushed == st.max_offset(s)


def test_os_crash_keeps_only_what_was_flushed_and_process_crash_keeps_all():
    s, placed = put_all([b"a" * 40, b"b" * 40])
    s = st.flush(s, SIZE, 0)
    s, more = put_all([b"c" * 40], s=s)
    lost = st.lose_page_cache(s)
    assert st.max_offset(lost) == more[0][0]
    assert st.recover(s, SIZE).data == s.data


def test_restart_after_process_crash_believes_it_flushed_but_the_disk_has_less():
    """recover sets flushedWhere to the recovered end; the old process's dirty pages are still not on disk."""
    s, _ = put_all([b"a" * 40, b"b" * 40])
    r = st.recover(s, SIZE)
    assert r.flushed == st.max_offset(s) and r.durable == 0
    assert st.max_offset(st.lose_page_cache(r)) == 0
