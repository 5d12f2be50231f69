"""The blocking half of an upload: a partial file beside the target, renamed into place.

An upload to ``dir/name`` is written to ``dir/.name.partial`` (hidden on POSIX
desktops; a name too long for that suffix becomes ``.<hash>.partial``), and
only once its length and SHA-256 are what the viewer declared is it synced and
renamed onto ``dir/name`` (``os.replace``, atomic on one file system): a file
under the final name is always whole. A checksum mismatch, a size other than
declared and a full disk remove the partial file; a viewer that leaves mid-way
leaves it for a resume (``FileRequest.resume``). Called in worker threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import threading
from dataclasses import dataclass

from remote_core.protocol.files import MAX_NAME_BYTES, FileError, join_path, split_path

from .file_ops import os_error, refuse_names
from .file_roots import PARTIAL_SUFFIX, Resolved, Roots, inside

__all__ = ["PARTIAL_SUFFIX", "Claims", "Upload", "partial_name", "start_upload"]

def partial_name(name: str) -> str:
    """The hidden name an upload to ``name`` is written under until it is whole."""
    hidden = f".{name}{PARTIAL_SUFFIX}"
    if len(hidden.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES:
        return hidden
    return f".{hashlib.sha256(name.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}" \
           f"{PARTIAL_SUFFIX}"


class Claims:
    """The partial files being written now (one writer each: a second upload to the same
    place, by any viewer, is "busy" rather than truncating the first's)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[str] = set()

    def claim(self, partial: str) -> None:
        """:raises FileError: ``busy``."""
        with self._lock:
            if partial in self._held:
                raise FileError("busy", "that file is being uploaded already")
            self._held.add(partial)

    def release(self, partial: str) -> None:
        with self._lock:
            self._held.discard(partial)


@dataclass
class Upload:
    """One upload's partial file, open for writing at :attr:`length`."""

    target: Resolved
    partial: str
    size: int
    fd: int
    length: int
    digest: hashlib._Hash

    @property
    def prefix_sha256(self) -> str:
        return self.digest.copy().hexdigest()

    def write(self, offset: int, data: bytes) -> None:
        """Append ``data``, which the viewer sent for ``offset``.

        :raises FileError: ``io`` (a gap or an overlap: the partial file stays as it
            was), ``changed`` (more bytes than declared), ``no-space`` (the partial
            file is removed), ``io`` (another write error).
        """
        if offset != self.length:
            raise FileError("io", f"data for byte {offset} where byte {self.length} was due")
        if self.length + len(data) > self.size:
            self.discard()
            raise FileError("changed", f"more than the {self.size} bytes declared: the file "
                                       "changed while it was sent")
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(self.fd, view, self.length)
                view = view[written:]
                self.length += written
        except OSError as exc:
            error = os_error(exc, self.target.virtual)
            if error.code == "no-space":
                self.discard()
            raise error from exc
        self.digest.update(data)

    def commit(self, sha256: str) -> str:
        """The viewer's last chunk is written: check, sync and rename into place.

        :returns: the SHA-256 of the file now in place.
        :raises FileError: ``changed`` (fewer bytes than declared), ``checksum``, both
            removing the partial file; ``is-a-directory``, ``io``.
        """
        digest = self.digest.hexdigest()
        if self.length != self.size:
            self.discard()
            raise FileError("changed", f"{self.length} of the {self.size} bytes declared "
                                       "came: the file changed while it was sent")
        if digest != sha256.lower():
            self.discard()
            raise FileError("checksum", f"SHA-256 {digest} of what arrived is not the "
                                        f"viewer's {sha256}")
        try:
            os.fsync(self.fd)
            os.close(self.fd)
            self.fd = -1
            os.replace(self.partial, self.target.local)
        except OSError as exc:
            self.discard()
            raise os_error(exc, self.target.virtual) from exc
        with contextlib.suppress(OSError):  # the rename itself, durable (POSIX)
            folder = os.open(os.path.dirname(self.partial), os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        return digest

    def leave(self) -> None:
        """Stop writing; the partial file stays for a resume."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def discard(self) -> None:
        """Stop writing and remove the partial file."""
        self.leave()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.partial)


def start_upload(roots: Roots, path: str, size: int, *, resume: bool, overwrite: bool,
                 windows: bool, claim: Claims) -> Upload:
    """Check an upload to ``path`` and open its partial file (its missing parent folders
    created); with ``resume`` the partial file there is kept and hashed.

    :raises FileError: ``invalid-name``, ``outside-root``, ``not-a-directory``,
        ``is-a-directory``, ``exists``, ``no-space`` (``size`` above the free space), ``io``.
    """
    parts = split_path(path)
    if len(parts) == 1:
        raise FileError("is-a-directory", f"{path} is a root folder")
    refuse_names(path, windows=windows)
    target = roots.resolve(path)  # a symlink in the last place must stay inside too
    parent = roots.resolve(join_path(*parts[:-1]))
    try:
        os.makedirs(parent.real, exist_ok=True)
    except FileExistsError as exc:
        raise FileError("not-a-directory", f"{parent.virtual}: a file is in the way") from exc
    except OSError as exc:
        raise os_error(exc, parent.virtual) from exc
    folder = os.path.realpath(parent.local)
    if not inside(folder, parent.root):  # raced by a new symlink
        raise FileError("outside-root", f"{parent.virtual} leads out of its root")
    if not os.path.isdir(folder):
        raise FileError("not-a-directory", f"{parent.virtual} is a file, not a folder")
    local = os.path.join(folder, parts[-1])
    target = Resolved(target.virtual, target.root, local, target.real)
    if os.path.isdir(target.real):
        raise FileError("is-a-directory", f"{path} is a folder")
    if os.path.lexists(local) and not overwrite:
        raise FileError("exists", f"{path} exists already")
    partial = os.path.join(folder, partial_name(parts[-1]))
    claim.claim(partial)
    try:
        return _open_partial(target, partial, size, resume=resume)
    except BaseException:
        claim.release(partial)
        raise


def _open_partial(target: Resolved, partial: str, size: int, *, resume: bool) -> Upload:
    path = target.virtual
    folder = os.path.dirname(partial)
    try:
        kept = os.lstat(partial).st_size if resume else 0
    except FileNotFoundError:
        kept = 0
    except OSError as exc:
        raise os_error(exc, path) from exc
    if kept > size:
        kept = 0
    free = shutil.disk_usage(folder).free
    if size - kept > free:
        raise FileError("no-space", f"{size - kept} bytes to write, {free} free on the disk")
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(partial, flags, 0o666)
    except OSError as exc:
        raise os_error(exc, path) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileError("io", f"{os.path.basename(partial)} beside {path} is no file")
        os.ftruncate(fd, kept)
        digest = hashlib.sha256()
        offset = 0
        while offset < kept:
            block = os.pread(fd, min(1 << 20, kept - offset), offset)
            if not block:
                break
            digest.update(block)
            offset += len(block)
        return Upload(target, partial, size, fd, offset, digest)
    except OSError as exc:
        os.close(fd)
        raise os_error(exc, path) from exc
    except BaseException:
        os.close(fd)
        raise
