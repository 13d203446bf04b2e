"""Durable and conditional object writes on a local store, as the TypeScript FsStore makes them
(packages/store/src/fs-store.ts), so writers in either language can share a store.

Every object is staged beside its key under the reserved prefix ``.zs-tmp-`` (which no key can have and no
listing shows), fsynced, then renamed or hard-linked into place, and its directory fsynced: a crash leaves
the object old or new, never a part, and an acknowledged write survives a power loss. The conditional
forms decide under the same lock file as FsStore's ``putIfVersion`` (``.zs-tmp-lock-<name>`` beside the
object, created O_EXCL, broken once older than 10 s) and compare the same stamp (inode, size, modification
time in ns), so a Python owner and a TypeScript one never both replace the manifest from one version.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from .errors import StoreError

TEMP_PREFIX = ".zs-tmp-"
LOCK_STALE_S = 10.0
LOCK_TIMEOUT_S = 30.0

Stamp = tuple[int, int, int]
"""(inode, size, mtime_ns) of a regular file: FsStore's version of an object."""


def stamp_of(path: Path) -> Stamp | None:
    """The file's stamp; None when absent or not a regular file (a link there is not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _sync_dir(directory: Path) -> None:
    """fsyncs a directory whose entries changed; best effort: some filesystems refuse it."""
    try:
        # O_DIRECTORY is POSIX; where it is missing (Windows) a directory cannot be opened to sync it.
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _stage(path: Path, data: bytes) -> Path:
    """Writes and fsyncs `data` into a fresh reserved-name file beside `path`; returns its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp


def put(root: Path, key: str, data: bytes) -> None:
    """Replaces (or creates) the object at `key`: staged, fsynced, renamed, its directory fsynced."""
    path = root / key
    tmp = _stage(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def put_if_absent(root: Path, key: str, data: bytes) -> Stamp | None:
    """Creates the object at `key` unless one is there (a hard link decides, atomically); its stamp, or
    None when another was there first."""
    path = root / key
    tmp = _stage(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return None
    finally:
        tmp.unlink(missing_ok=True)
    _sync_dir(path.parent)
    return stamp_of(path)


def put_if_stamp(root: Path, key: str, data: bytes, expected: Stamp | None) -> Stamp | None:
    """Replaces the object at `key` only while its stamp is `expected` (None: absent), deciding under
    FsStore's lock file for the key; the new stamp, or None when the object is another version."""
    path = root / key
    tmp = _stage(path, data)
    swapped = False
    try:
        with _key_lock(path.parent, path.name):
            current = stamp_of(path)
            if current != expected:
                return None
            staged = os.stat(tmp)
            if current is not None and staged.st_mtime_ns <= current[2]:
                # A new version must never carry an old stamp: a freed inode can come back with the same
                # size within one timestamp tick.
                os.utime(tmp, ns=(current[2] + 1, current[2] + 1))
                staged = os.stat(tmp)
            os.replace(tmp, path)
            swapped = True
    finally:
        if not swapped:
            tmp.unlink(missing_ok=True)
    _sync_dir(path.parent)
    return (staged.st_ino, staged.st_size, staged.st_mtime_ns)


def get_versioned(root: Path, key: str) -> tuple[bytes, Stamp] | None:
    """The object at `key` and the stamp of exactly those bytes (one open file: a rename-replace after the
    open does not affect it), as FsStore's getVersioned; None when absent."""
    path = root / key
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):  # ELOOP: a link, which stamp_of skips too
            return None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks), (st.st_ino, st.st_size, st.st_mtime_ns)


def delete_if_stamp(root: Path, key: str, expected: Stamp | None) -> bool:
    """Removes the object at `key` only while its stamp is `expected` (None: absent, which succeeds with
    nothing to remove), deciding under FsStore's lock file for the key; False when it is another version."""
    path = root / key
    if not path.parent.is_dir():
        return expected is None
    with _key_lock(path.parent, path.name):
        current = stamp_of(path)
        if current != expected:
            return False
        if current is not None:
            path.unlink()
    _sync_dir(path.parent)
    return True


@contextmanager
def _key_lock(directory: Path, name: str) -> Iterator[None]:
    """FsStore's withKeyLock: an O_EXCL lock file beside the object, held for a stat and a rename."""
    lock = directory / f"{TEMP_PREFIX}lock-{name}"
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    attempt = 0
    while True:
        ino = _try_lock(lock)
        if ino is not None:
            break
        _break_if_stale(lock)
        if time.monotonic() > deadline:
            raise StoreError(f"{lock} stayed locked for {LOCK_TIMEOUT_S:.0f} s")
        time.sleep(min(50, 1 + attempt) * (0.5 + secrets.randbelow(1000) / 1000) / 1000)
        attempt += 1
    try:
        yield
    finally:
        # Only our own lock: if it was broken as stale, the file there now is someone else's.
        try:
            if os.stat(lock).st_ino == ino:
                os.unlink(lock)
        except OSError:
            pass


def _try_lock(lock: Path) -> int | None:
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return None
    try:
        os.write(fd, f"{os.getpid()} {datetime.now(timezone.utc).isoformat()}\n".encode())
        return os.fstat(fd).st_ino
    except BaseException:
        # A full disk fails the write after the file exists: a lock left behind would hold up the key.
        lock.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def _break_if_stale(lock: Path) -> None:
    """Moves a lock older than LOCK_STALE_S aside (a rename, so two breakers cannot both remove a fresh
    one), and puts back a fresh lock that another took meanwhile, as FsStore does."""
    try:
        info = os.stat(lock)
    except OSError:
        return
    if time.time() - info.st_mtime <= LOCK_STALE_S:
        return
    aside = lock.with_name(f"{lock.name}-stale-{secrets.token_hex(6)}")
    try:
        os.rename(lock, aside)
    except OSError:
        return
    try:
        if os.stat(aside).st_ino != info.st_ino:
            os.link(aside, lock)
    except OSError:
        pass
    aside.unlink(missing_ok=True)
