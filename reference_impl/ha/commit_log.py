"""A broker's CommitLog as real bytes: mapped files, page cache, flush, recovery.

Theory of operation
-------------------
Models the parts of `CommitLog`, `MappedFileQueue` and `MappedFile` (RocketMQ 4.9.4)
that replication depends on. A `Store` is the concatenation of the broker's mapped
files: `data` holds the bytes from `base` (the first file's `fileFromOffset`) up to
the last file's wrote position, so an offset is a byte offset and `max_offset` is
`getMaxOffset()` (`fileFromOffset + readPosition` of the last file, 0 with no file).
Files are `mapped_file_size` bytes and start at multiples of it; a message never
crosses a file: when it does not fit, a blank record fills the file's end
(`DefaultAppendMessageCallback#doAppend`, END_OF_FILE).

Messages use a small fixed layout so that offsets mean what they mean in RocketMQ
(`MESSAGE_LAYOUT`): the fields replication and recovery read (total size, magic code,
body CRC, physical offset) in CommitLog's order, then the body. The full RocketMQ
record carries more fields (queue id, timestamps, hosts, topic, properties); they
change sizes, not behaviour, and are left out.

Durability has three levels. Bytes in `data` are in the page cache: a process crash
keeps them (the mapping is the OS's). `flushed` is `MappedFileQueue.flushedWhere`,
how far the broker believes it has flushed. `durable` is how far the bytes really are
on disk: an OS crash keeps only those. The two differ after a restart: recovery sets
`flushedWhere` to the recovered end although the previous process's unflushed pages
may not be on disk yet (the kernel's own write-back is not modelled, so such pages
stay volatile until the next msync of their file).

Recovery (`recover`) is `CommitLog#recoverNormally/recoverAbnormally`: walk messages
from the first file, checking magic code, size and body CRC (`checkCRCOnRecover`,
default true), step over blank records to the next file, and truncate at the first
message that does not check. Java starts the walk at one of the last three files
(normal) or at the last file older than the checkpoint (abnormal); the model always
starts at the first file, which differs only when an earlier file is corrupt.
"""

from __future__ import annotations

import zlib

from reference_impl.core.state import record

MESSAGE_MAGIC_CODE = -626843481  # CommitLog.MESSAGE_MAGIC_CODE, 0xDAA320A7
BLANK_MAGIC_CODE = -875286124  # CommitLog.BLANK_MAGIC_CODE, 0xCBD43194
END_FILE_MIN_BLANK_LENGTH = 8  # DefaultAppendMessageCallback: 4 + 4
OS_PAGE_SIZE = 4096  # MappedFile.OS_PAGE_SIZE
MAPPED_FILE_SIZE_COMMIT_LOG = 1 << 30  # MessageStoreConfig.mappedFileSizeCommitLog, 1 GiB

# The model's message record: (name, offset, size); the body follows the header.
MESSAGE_LAYOUT = (("TOTALSIZE", 0, 4), ("MAGICCODE", 4, 4), ("BODYCRC", 8, 4), ("PHYSICALOFFSET", 12, 8),
                  ("BODYLENGTH", 20, 4))
MESSAGE_HEADER = 24


@record
class Store:
    base: int = -1  # fileFromOffset of the first mapped file; -1 while there is none
    data: bytes = b""  # the bytes from `base` up to the last file's wrote position
    flushed: int = 0  # MappedFileQueue.flushedWhere
    durable: int = 0  # bytes below this offset are on disk


EMPTY_STORE = Store()


def crc32(body: bytes) -> int:
    """UtilAll#crc32: java.util.zip.CRC32 masked to a non-negative int."""
    return zlib.crc32(body) & 0x7FFFFFFF


def _int(v: int, n: int) -> bytes:
    return v.to_bytes(n, "big", signed=True)


def encode_message(body: bytes, phy_offset: int) -> bytes:
    """MessageExtEncoder#encode + doAppend's PHYSICALOFFSET, in the model's layout."""
    return (_int(MESSAGE_HEADER + len(body), 4) + _int(MESSAGE_MAGIC_CODE, 4) + _int(crc32(body), 4)
            + _int(phy_offset, 8) + _int(len(body), 4) + body)


def message_size(body_len: int) -> int:
    return MESSAGE_HEADER + body_len


def max_offset(s: Store) -> int:
    """MappedFileQueue#getMaxOffset: the last file's fileFromOffset + readPosition, 0 with no file."""
    return s.base + len(s.data) if s.base >= 0 else 0


def min_offset(s: Store) -> int:
    """MappedFileQueue#getMinOffset: the first file's fileFromOffset, -1 with no file."""
    return s.base


def _last_file_from(s: Store, size: int) -> int:
    return s.base + (len(s.data) - 1) // size * size if s.data else s.base


def holds(s: Store, offset: int, blob: bytes) -> bool:
    """The store has exactly `blob` at `offset` (the ghost's "the message is there")."""
    start = offset - s.base
    return s.base >= 0 and start >= 0 and start + len(blob) <= len(s.data) and s.data[start:start + len(blob)] == blob


# --- writing ---


def put_message(s: Store, size: int, body: bytes) -> tuple[Store, int, int]:
    """CommitLog#asyncPutMessage (the append under putMessageLock): the message at the
    end of the last file, or, when it does not fit with END_FILE_MIN_BLANK_LENGTH to
    spare, a blank record to the file's end and the message at the start of a new file.
    Returns the store, the wrote offset and the wrote bytes (AppendMessageResult)."""
    msg_len = message_size(len(body))
    if msg_len + END_FILE_MIN_BLANK_LENGTH > size:
        raise ValueError(f"a {msg_len}-byte message cannot fit a {size}-byte mapped file")
    data = s.data
    base = s.base if s.base >= 0 else 0  # getLastMappedFile(0) creates the first file at 0
    at = base + len(data)
    pos = at % size
    if pos:
        max_blank = size - pos
        if msg_len + END_FILE_MIN_BLANK_LENGTH > max_blank:
            # doAppend writes 8 bytes and declares maxBlank written: the rest of the file stays zero
            data += _int(max_blank, 4) + _int(BLANK_MAGIC_CODE, 4) + bytes(max_blank - 8)
            at += max_blank
    data += encode_message(body, at)
    return s.evolve(base=base, data=data), at, msg_len


def append_data(s: Store, size: int, start_offset: int, blob: bytes) -> tuple[Store, bool]:
    """CommitLog#appendData (the slave's HA append): `getLastMappedFile(startOffset)`
    creates the first file at `startOffset - startOffset % size`, or a next file when the
    last is full; `MappedFile#appendMessage(byte[])` then writes at the file's wrote
    position if the bytes fit. Nothing checks that this position is `start_offset`:
    HAClient's header check is the only guard."""
    if s.base < 0:
        s = s.evolve(base=start_offset - start_offset % size)
    pos = len(s.data) % size  # 0: a new file (none yet, or the last one is full)
    if pos + len(blob) > size:  # MappedFile#appendMessage(byte[], int, int): currentPos + length <= fileSize
        return s, False
    if not blob:
        return s, True
    return s.evolve(data=s.data + blob), True


def get_data(s: Store, size: int, offset: int) -> bytes | None:
    """CommitLog#getData(offset, offset == 0): from `offset` to the read position of the
    one file that holds it (never across files); with offset 0 and no such file, from
    the start of the first file. None when there is nothing there yet."""
    if s.base < 0:
        return None
    last_from = _last_file_from(s, size)
    if s.base <= offset < last_from + size:
        file_from = offset - offset % size
    elif offset == 0:
        file_from = s.base  # findMappedFileByOffset(..., returnFirstOnNotFound = true)
    else:
        return None
    pos = offset % size
    read_pos = min(size, max_offset(s) - file_from)
    if not 0 <= pos < read_pos:
        return None
    return s.data[file_from + pos - s.base:file_from + read_pos - s.base]


# --- flush and crashes ---


def flush(s: Store, size: int, least_pages: int) -> Store:
    """MappedFileQueue#flush(flushLeastPages): flush the one file holding flushedWhere
    (the first file when flushedWhere is 0), if MappedFile#isAbleToFlush allows: the
    file is full, or `least_pages` pages are dirty, or (0) anything is."""
    if s.base < 0:
        return s
    fw = s.flushed
    last_from = _last_file_from(s, size)
    if s.base <= fw < last_from + size:
        file_from = fw - fw % size
    elif fw == 0:
        file_from = s.base
    else:
        return s
    read_pos = min(size, max_offset(s) - file_from)
    flushed_pos = max(0, fw - file_from)
    if read_pos == size:
        able = True
    elif least_pages > 0:
        able = read_pos // OS_PAGE_SIZE - flushed_pos // OS_PAGE_SIZE >= least_pages
    else:
        able = read_pos > flushed_pos
    if not able:
        return s if fw == file_from + flushed_pos else s.evolve(flushed=file_from + flushed_pos)
    where = file_from + read_pos
    # force() writes the whole file's dirty pages; the prefix below is on disk only if it was already.
    durable = where if s.durable >= file_from else s.durable
    return s.evolve(flushed=where, durable=max(s.durable, durable))


def needs_flush(s: Store, size: int, least_pages: int) -> bool:
    """Whether `flush(s, size, least_pages)` would write anything."""
    return flush(s, size, least_pages).flushed != s.flushed


def lose_page_cache(s: Store) -> Store:
    """An OS crash: only the bytes on disk survive (the mapped files themselves remain)."""
    if s.base < 0 or s.durable >= max_offset(s):
        return s
    keep = max(0, s.durable - s.base)
    return s.evolve(data=s.data[:keep])


def check_message(data: bytes, at: int, file_end: int) -> int:
    """CommitLog#checkMessageAndReturnSize with checkCRC: the message size (> 0), 0 for a
    blank record, -1 for anything else. Bytes past the written end read as zeros."""
    if at + 8 > len(data):
        return -1
    total = int.from_bytes(data[at:at + 4], "big", signed=True)
    magic = int.from_bytes(data[at + 4:at + 8], "big", signed=True)
    if magic == BLANK_MAGIC_CODE:
        return 0
    if magic != MESSAGE_MAGIC_CODE or total < MESSAGE_HEADER or at + total > min(len(data), file_end):
        return -1
    body_len = int.from_bytes(data[at + 20:at + 24], "big", signed=True)
    if body_len != total - MESSAGE_HEADER:
        return -1
    body_crc = int.from_bytes(data[at + 8:at + 12], "big", signed=True)
    if crc32(data[at + MESSAGE_HEADER:at + total]) != body_crc:
        return -1
    return total


def recover(s: Store, size: int) -> Store:
    """CommitLog#recoverNormally/recoverAbnormally + MappedFileQueue#truncateDirtyFiles:
    keep the longest prefix of whole, valid messages (blank records move to the next
    file), and set flushedWhere to its end."""
    if s.base < 0:
        return s.evolve(flushed=0, durable=0)
    data = s.data
    file_from = 0  # relative to base
    at = 0
    while True:
        n = check_message(data, at, file_from + size)
        if n > 0:
            at += n
        elif n == 0:
            if file_from + size >= len(data):
                break  # the last file: the blank itself is dirty and is truncated
            file_from += size
            at = file_from
        else:
            break
    end = s.base + at
    return s.evolve(data=data[:at], flushed=end, durable=min(s.durable, end))


def decode_messages(s: Store, size: int) -> list[tuple[int, bytes]]:
    """(offset, body) of every valid message from the first file on, as recovery walks them."""
    out = []
    data = s.data
    file_from = at = 0
    while True:
        n = check_message(data, at, file_from + size)
        if n > 0:
            out.append((s.base + at, data[at + MESSAGE_HEADER:at + n]))
            at += n
        elif n == 0 and file_from + size < len(data):
            file_from += size
            at = file_from
        else:
            return out
