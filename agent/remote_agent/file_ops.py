"""The blocking half of FILE_TRANSFER: listing, folders, and reading what is downloaded.

Everything here touches the disk and is called in a worker thread
(``anyio.to_thread``), never on the event loop that also streams the screen.
Each function takes resolved paths (:mod:`.file_roots`) and raises
:class:`~remote_core.protocol.files.FileError` with the code the viewer gets.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from typing import Any

from remote_core.protocol import pb
from remote_core.protocol.files import CHUNK, FileError, name_refusal, split_path

from .file_archive import ZipStream, version, walk
from .file_roots import Resolved, Roots, inside, shown

__all__ = ["ArchiveSource", "FileSource", "list_dir", "list_roots", "make_dir", "open_source",
           "os_error", "refuse_names"]

_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def os_error(exc: OSError, what: str) -> FileError:
    """The viewer's error code for an operating system's error about ``what``."""
    reason = exc.strerror or str(exc)
    if exc.errno in _NO_SPACE:
        return FileError("no-space", f"{what}: {reason}")
    if isinstance(exc, FileNotFoundError):
        return FileError("not-found", f"{what}: no such file or folder")
    if isinstance(exc, NotADirectoryError):
        return FileError("not-a-directory", f"{what}: a file is in the way of a folder")
    if isinstance(exc, IsADirectoryError):
        return FileError("is-a-directory", f"{what} is a folder")
    return FileError("io", f"{what}: {reason}")


def refuse_names(path: str, *, windows: bool) -> None:
    """Every component below the root must be a name a file may have here.

    :raises FileError: ``invalid-name``.
    """
    for name in split_path(path)[1:]:
        refusal = name_refusal(name, windows=windows)
        if refusal is not None:
            raise FileError("invalid-name", refusal)


# -- listing ---------------------------------------------------------------------------------
def list_roots(roots: Roots) -> list[Any]:
    """``/``: the roots, as folders."""
    entries = []
    for name in roots.names:
        try:
            info = os.stat(roots.by_name[name])
        except OSError:
            continue
        entries.append(pb.FileEntry(name=name, is_dir=True, mtime=int(info.st_mtime),
                                    mode=stat.S_IMODE(info.st_mode)))
    return entries


def list_dir(target: Resolved) -> list[Any]:
    """The entries of a folder, folders first, then by name. A symlink shows its target's
    kind and size when it stays inside the root, else (broken, or leading out) its own."""
    try:
        if not stat.S_ISDIR(os.stat(target.real).st_mode):
            raise FileError("not-a-directory", f"{target.virtual} is a file, not a folder")
        with os.scandir(target.real) as listing:
            found = list(listing)
    except OSError as exc:
        raise os_error(exc, target.virtual) from exc
    entries = []
    for entry in found:
        if not shown(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # gone since the listing
        link = stat.S_ISLNK(info.st_mode)
        if link and inside(os.path.realpath(entry.path), target.root):
            try:
                info = os.stat(entry.path)
            except OSError:
                pass  # a broken link: listed as itself
        is_dir = stat.S_ISDIR(info.st_mode)
        entries.append(pb.FileEntry(
            name=entry.name, is_dir=is_dir, size=0 if is_dir else info.st_size,
            mtime=int(info.st_mtime), mode=stat.S_IMODE(info.st_mode), is_link=link))
    entries.sort(key=lambda e: (not e.is_dir, e.name))
    return entries


# -- folders ---------------------------------------------------------------------------------
def make_dir(target: Resolved) -> None:
    """Create the folder and its missing parents; one that exists already is fine.

    :raises FileError: ``exists`` (a file has that name), ``not-a-directory`` (a file is
        in the way of a parent), ``outside-root``, ``no-space``, ``io``.
    """
    if os.path.isdir(target.real):
        return
    if os.path.lexists(target.local):
        raise FileError("exists", f"{target.virtual} is a file")
    try:
        os.makedirs(target.real, exist_ok=True)
    except FileExistsError as exc:  # a file in the way of a parent
        raise FileError("not-a-directory", f"{target.virtual}: a file is in the way") from exc
    except OSError as exc:
        raise os_error(exc, target.virtual) from exc
    if not inside(os.path.realpath(target.local), target.root):  # raced by a new symlink
        raise FileError("outside-root", f"{target.virtual} leads out of its root")


# -- reading ---------------------------------------------------------------------------------
class FileSource:
    """A file being downloaded: read from its start (the prefix of a resumed download is
    read too, for the SHA-256 of the whole), checked at its end against what it was when
    opened (size, time, and not one byte more or less)."""

    archive = False

    def __init__(self, target: Resolved) -> None:
        self.virtual = target.virtual
        try:
            self._file = open(target.real, "rb", buffering=0)
        except OSError as exc:
            raise os_error(exc, target.virtual) from exc
        self._stat = os.fstat(self._file.fileno())
        if not stat.S_ISREG(self._stat.st_mode):  # a FIFO or device would block or not end
            self._file.close()
            raise FileError("io", f"{target.virtual} is not a regular file")
        self.size = self._stat.st_size
        self.version = f"{self._stat.st_size}-{self._stat.st_mtime_ns}"
        self.digest = hashlib.sha256()
        self.position = 0

    @property
    def ended(self) -> bool:
        """Every byte has been read."""
        return self.position >= self.size

    def read(self, count: int) -> bytes:
        """The next ``count`` bytes (fewer at the end), hashed.

        :raises FileError: ``changed`` when the file ends early, ``io``.
        """
        count = min(count, self.size - self.position)
        data = bytearray()
        try:
            while len(data) < count:
                block = self._file.read(count - len(data))
                if not block:
                    raise FileError("changed", f"{self.virtual} got shorter while it was sent")
                data += block
        except OSError as exc:
            raise os_error(exc, self.virtual) from exc
        self.position += len(data)
        self.digest.update(data)
        return bytes(data)

    def finish(self) -> None:
        """After the last byte: the file must be as it was when opened.

        :raises FileError: ``changed``.
        """
        after = os.fstat(self._file.fileno())
        if self._file.read(1) or after.st_size != self.size \
                or after.st_mtime_ns != self._stat.st_mtime_ns:
            raise FileError("changed", f"{self.virtual} changed while it was sent")

    def close(self) -> None:
        self._file.close()


class ArchiveSource:
    """A folder being downloaded as a zip stream (:mod:`.file_archive`); its size is
    unknown (0) until the end."""

    archive = True
    size = 0

    def __init__(self, target: Resolved) -> None:
        self.virtual = target.virtual
        self._members = walk(target.real, target.root)
        self.version = version(self._members)
        self._stream = ZipStream(self._members)
        self.digest = hashlib.sha256()
        self.position = 0
        self.ended = False

    @property
    def files(self) -> int:
        return sum(not m.is_dir for m in self._members)

    def read(self, count: int) -> bytes:
        data = self._stream.read(count)
        self.ended = len(data) < count
        self.position += len(data)
        self.digest.update(data)
        return data

    def finish(self) -> None:
        """Each file was checked as it was archived."""

    def close(self) -> None:
        """Nothing held open between reads."""


Source = FileSource | ArchiveSource


def open_source(target: Resolved, *, offset: int, version: str) -> Source:
    """What a download reads, positioned at ``offset`` (the bytes before it read and hashed).

    :param version: a resumed download's version of its first try ("" to take any).
    :raises FileError: ``not-found``, ``changed`` (another version, or ``offset`` past the
        end), ``io``.
    """
    try:
        folder = stat.S_ISDIR(os.stat(target.real).st_mode)
    except OSError as exc:
        raise os_error(exc, target.virtual) from exc
    source: Source = ArchiveSource(target) if folder else FileSource(target)
    try:
        if offset and version and version != source.version:
            raise FileError("changed", f"{target.virtual} changed since the download began")
        if not source.archive and offset > source.size:
            raise FileError("changed", f"{target.virtual} is shorter than where the download "
                                       "left off")
        left = offset
        while left:
            skipped = source.read(min(CHUNK, left))
            if not skipped:
                raise FileError("changed", f"{target.virtual} is shorter than where the "
                                           "download left off")
            left -= len(skipped)
    except BaseException:
        source.close()
        raise
    return source
