"""A folder downloaded as a zip stream: made piece by piece, the same bytes every time.

The archive is never whole in memory: :class:`ZipStream` writes one block of
one file at a time into :mod:`zipfile` (to a sink that cannot seek, so every
entry carries a data descriptor and zip64 where its size needs it) and hands
out what came of it. Everything about it is deterministic, so that a download
resumed at byte N can make the archive again and skip N bytes: the walk is
sorted, entries are stored (not compressed: no dependency on the zlib build,
no CPU taken from the video encoder, and what people move is often compressed
already), and :func:`version` hashes what the bytes depend on (names, sizes,
times, modes) so that a folder that changed since is told apart.

Entries are named relative to the folder. Symlinks are followed to files that
stay inside the root; a symlink that leads out of the root, a symlinked folder
(which could loop) and anything but a regular file or folder (a FIFO would
block the reader forever) are left out, as are folders and files the agent's
account cannot read.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

from remote_core.protocol.files import CHUNK, FileError

from .file_roots import inside, shown

__all__ = ["Member", "ZipStream", "version", "walk"]

log = logging.getLogger(__name__)

_FORMAT = "zip-stored-1"
"""Part of every version: a change to how archives are made changes their versions too."""


@dataclass(frozen=True)
class Member:
    """One entry of the archive: ``name`` relative to the folder (``/``-separated,
    a folder's ending in ``/``), ``path`` where its bytes are read."""

    name: str
    path: str
    is_dir: bool
    size: int
    mtime_ns: int
    mode: int


def walk(directory: str, root: str) -> list[Member]:
    """Every entry below ``directory`` (a real path inside the real path ``root``), in
    archive order: sorted by name, a folder before what it holds."""
    members: list[Member] = []
    _walk(directory, "", root, members)
    return members


def _walk(directory: str, prefix: str, root: str, members: list[Member]) -> None:
    try:
        with os.scandir(directory) as entries:
            listed = sorted(entries, key=lambda e: e.name)
    except OSError as exc:
        log.info("zip of a folder: %s left out: %s", directory, exc.strerror)
        return
    for entry in listed:
        if not shown(entry.name):
            log.debug("zip of a folder: %r left out in %s (not UTF-8, or a partial upload)",
                      entry.name, directory)
            continue
        name = prefix + entry.name
        try:
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if not inside(real, root):
                    log.info("zip of a folder: %s left out: it leads out of its root", name)
                    continue
                info = os.stat(real)
                if not stat.S_ISREG(info.st_mode):  # a linked folder could loop
                    continue
                path = real
            else:
                info = entry.stat(follow_symlinks=False)
                path = entry.path
        except OSError:
            continue  # gone, or unreadable, since the listing
        if stat.S_ISDIR(info.st_mode):
            if not os.access(path, os.R_OK | os.X_OK):
                continue
            members.append(Member(name + "/", path, True, 0, info.st_mtime_ns,
                                  stat.S_IMODE(info.st_mode)))
            _walk(path, name + "/", root, members)
        elif stat.S_ISREG(info.st_mode) and os.access(path, os.R_OK):
            members.append(Member(name, path, False, info.st_size, info.st_mtime_ns,
                                  stat.S_IMODE(info.st_mode)))


def version(members: list[Member]) -> str:
    """What the archive's bytes depend on, hashed: equal versions, equal archives."""
    digest = hashlib.sha256(_FORMAT.encode())
    for member in members:
        digest.update(f"\0{member.name}\0{member.size}\0{member.mtime_ns}\0{member.mode}"
                      .encode("utf-8", "surrogateescape"))
    return "zip-" + digest.hexdigest()[:32]


class _Sink:
    """Where :mod:`zipfile` writes: a buffer that can tell its position but not seek."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.position = 0

    def write(self, data: bytes, /) -> int:
        self.buffer += data
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        """Nothing is held back."""

    def close(self) -> None:
        """What was written stays in :attr:`buffer` for the reader."""


def _zip_time(mtime_ns: int) -> tuple[int, int, int, int, int, int]:
    when = time.localtime(mtime_ns // 1_000_000_000)
    if when.tm_year < 1980:  # the earliest a zip can say
        return (1980, 1, 1, 0, 0, 0)
    return (min(when.tm_year, 2107), when.tm_mon, when.tm_mday, when.tm_hour, when.tm_min,
            when.tm_sec)


class ZipStream:
    """The zip of ``members``, read in pieces (call from one thread at a time).

    :raises FileError: from :meth:`read`: ``changed`` when a file's size or time is not
        what the walk saw (the version would lie), ``io`` when one cannot be read.
    """

    def __init__(self, members: list[Member]) -> None:
        self._members = members
        self._sink = _Sink()
        self._pieces = self._generate()
        self._ended = False

    def read(self, count: int) -> bytes:
        """Up to ``count`` bytes; fewer only at the end (``b""`` after it)."""
        while len(self._sink.buffer) < count and not self._ended:
            try:
                next(self._pieces)
            except StopIteration:
                self._ended = True
        data = bytes(self._sink.buffer[:count])
        del self._sink.buffer[:count]
        return data

    def _generate(self) -> Iterator[None]:
        with zipfile.ZipFile(self._sink, "w", compression=zipfile.ZIP_STORED,
                             allowZip64=True) as archive:
            for member in self._members:
                info = zipfile.ZipInfo(member.name, _zip_time(member.mtime_ns))
                info.external_attr = ((stat.S_IFDIR if member.is_dir else stat.S_IFREG)
                                      | member.mode) << 16
                if member.is_dir:
                    info.external_attr |= 0x10  # MS-DOS directory flag
                    archive.writestr(info, b"")
                    yield
                    continue
                info.file_size = member.size  # decides zip64 for this entry
                yield from self._copy(archive, info, member)

    @staticmethod
    def _copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo,
              member: Member) -> Iterator[None]:
        try:
            source = open(member.path, "rb")
        except OSError as exc:
            raise FileError("io", f"{member.name}: {exc.strerror}") from exc
        with source, archive.open(info, "w") as target:
            left = member.size
            while left > 0:
                try:
                    block = source.read(min(CHUNK, left))
                except OSError as exc:
                    raise FileError("io", f"{member.name}: {exc.strerror}") from exc
                if not block:
                    break
                target.write(block)
                left -= len(block)
                yield
            after = os.fstat(source.fileno())
            if left or source.read(1) or after.st_size != member.size \
                    or after.st_mtime_ns != member.mtime_ns:
                raise FileError("changed", f"{member.name} changed while it was archived")
