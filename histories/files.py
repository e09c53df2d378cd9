"""Where rmqspec writes, and how, on a machine that other users share (docs/security.md).

Theory of operation
-------------------
rmqspec reads files that other people wrote (traces, implementation logs, vectors, report
folders) and runs where other people run things (CI runners, Spark nodes, lab machines).
Three rules keep another user's files from becoming our user's code or our user's writes:

1. **A file is written whole, beside itself, then moved into place** (`atomic`,
   `write_text`, `write_bytes`): a fresh temporary file in the destination's own folder,
   created exclusively (`mkstemp`), then `os.replace`. A symlink at the destination is
   replaced, never written through, and a reader never sees half a file.
2. **A folder inside the one the user named is entered only if it is a real folder**
   (`subfolder`): a symlink planted at `counterexamples/` in a report folder received from
   someone else would carry our writes out of the folder. The folder the user named is
   theirs to choose (a symlink they typed is followed); what is found inside it is data.
3. **Under a shared temp folder, only a private folder of our own** (`private_folder`,
   `private_temp`): created with mode 0700, then checked (a real folder, owned by us,
   no access for group or others) before anything in it is read or written. A fixed name
   there (`rmqspec-<uid>`) is predictable, so another user may have made it first; then it
   is refused and a fresh `mkdtemp` folder serves this process only.

Nothing here decides *what* to write; a path read from a file is never a place to write.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


class UnsafeFolder(OSError):
    """A folder we will not use: a symlink, not ours, or open to other users."""


class FolderBusy(OSError):
    """An output folder that another run is writing (it holds the folder's lock)."""

    def __str__(self) -> str:
        return f"{self.filename} is in use by another run ({self.strerror}); wait for it or name another folder"


LOCK_NAME = ".rmqspec.lock"


def private_folder(path: str | os.PathLike) -> Path:
    """`path` as a private folder of ours: made with mode 0700 if missing (its parents as
    os.makedirs makes them), else checked. Raises UnsafeFolder if it is a symlink, not a
    folder, not owned by us, or readable, writable or searchable by group or others."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(p, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFolder(f"{p} is a symlink")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolder(f"{p} is not a folder")
    if st.st_uid != os.getuid():
        raise UnsafeFolder(f"{p} belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o077:
        raise UnsafeFolder(f"{p} is open to other users (mode {stat.S_IMODE(st.st_mode):o})")
    return p


def owned_folder(path: str | os.PathLike) -> Path:
    """`path` as a folder of ours that only we can write: made (mode 0700) if missing, else
    checked as private_folder checks, except that others may read and search it (a cache in
    the user's own ~/.cache, made 0755 by an earlier version, is fine)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(p, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolder(f"{p} is a symlink or not a folder")
    if st.st_uid != os.getuid():
        raise UnsafeFolder(f"{p} belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o022:
        raise UnsafeFolder(f"{p} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})")
    return p


def private_temp(name: str) -> tuple[Path, str | None]:
    """A private folder `name` for this user under the temp folder (`$TMPDIR/rmqspec-<uid>/name`),
    reused across runs; if that path is not safely ours, a fresh folder for this process only
    (removed at exit). Returns the folder and, in the second case, one line saying why."""
    base = Path(tempfile.gettempdir()) / f"rmqspec-{os.getuid()}"
    try:
        return private_folder(private_folder(base) / name), None
    except OSError as e:
        fresh = tempfile.mkdtemp(prefix=f"rmqspec-{name}-")
        atexit.register(shutil.rmtree, fresh, True)
        return Path(fresh), f"not using {base / name} ({e.strerror or e}); using {fresh} for this run only"


def subfolder(parent: str | os.PathLike, name: str) -> str:
    """`parent/name` as a real folder (made if missing), never a symlink planted there."""
    path = os.path.join(parent, name)
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolder(f"{path} is a symlink or not a folder: not writing into it")
    return path


def out_folder(path: str) -> str:
    """The folder a user named for our output, made if missing."""
    if os.path.exists(path) and not os.path.isdir(path):  # makedirs would say "File exists"
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", path)
    os.makedirs(path, exist_ok=True)
    return path


@contextlib.contextmanager
def folder_lock(folder: str, holder: str) -> Iterator[None]:
    """Hold `folder`'s lock for the block: a second run into the same folder (on this machine
    or another that shares the file system) raises FolderBusy at once instead of writing over
    this run's files. The lock is `folder/.rmqspec.lock` under flock, so it is released when
    the block ends or the process dies, however; the file (never followed if a symlink) says
    who holds it."""
    path = os.path.join(folder, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = os.read(fd, 200).decode("utf-8", "replace").strip() or "a process that has not said"
            raise FolderBusy(errno.EBUSY, who, folder) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{holder}, pid {os.getpid()}".encode())
        yield
    finally:
        os.close(fd)


def remove(path: str) -> None:
    """Remove a regular file or a real folder with its content at `path`, if there is one
    (shutil.rmtree does not follow symlinks inside it). A symlink is left alone: the writer
    that comes next replaces it (`atomic`) or refuses it (`subfolder`), as with any planted link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    elif stat.S_ISREG(st.st_mode):
        os.unlink(path)


def inside(folder: str, path: str) -> bool:
    """Whether `path`, with every symlink resolved, lies inside `folder` (resolved too)."""
    root = os.path.realpath(folder)
    return os.path.commonpath([root, os.path.realpath(path)]) == root


@contextlib.contextmanager
def atomic(path: str, mode: str = "w", keep_partial: bool = False) -> Iterator[IO]:
    """A file object whose content becomes `path` when the block ends: written to a temporary
    file in the same folder, then os.replace'd over `path` (a symlink there is replaced, not
    followed). If the block raises, the temporary file is removed, or with `keep_partial`
    moved into place as far as it got (a trace written as it is produced). A stream the
    user named (`/dev/stdout`, `/dev/null`, a pipe) is written to as it is: it holds no
    content to replace."""
    kwargs = {} if "b" in mode else {"encoding": "utf-8"}
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        with open(path, mode, **kwargs) as f:
            yield f
        return
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file, a character device or a pipe", path)
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        f = os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    try:
        with f:
            yield f
    except BaseException:
        if keep_partial:
            os.replace(tmp, path)
        else:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    os.replace(tmp, path)


def write_text(path: str, text: str) -> str:
    with atomic(path) as f:
        f.write(text)
    return path


def write_bytes(path: str, data: bytes) -> str:
    with atomic(path, "wb") as f:
        f.write(data)
    return path


def _read_umask() -> int:
    # os.umask can only be read by setting it (once, at import, before any thread of ours
    # creates files); mkstemp's 0600 would make outputs private where the umask says otherwise.
    old = os.umask(0o022)
    os.umask(old)
    return old


_UMASK = _read_umask()
