"""The rules of FILE_TRANSFER sessions that every end applies, with no I/O.

A file viewer browses the agent's roots and moves files both ways in chunks
under a window per transfer (:class:`~.window.Window`), like a terminal's
output, so a transfer never fills a socket the screen's picture shares.
Paths on the wire are virtual (``/<root>/a/b``), so no end ever sees or sends
an absolute path of the agent's file system; :func:`split_path` is the one
parser of them, :func:`name_refusal` the one judge of a name a file may have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "CHUNK",
    "ERRORS",
    "MAX_NAME_BYTES",
    "MAX_PATH_CHARS",
    "WINDOW",
    "FileError",
    "join_path",
    "name_refusal",
    "split_path",
]

CHUNK = 256 * 1024
"""Most bytes of file data in one ``FileData``."""
WINDOW = 8 * 1024 * 1024
"""Bytes of one transfer that may be sent and not yet acknowledged."""
MAX_NAME_BYTES = 255
"""Longest name (UTF-8 bytes) of one path component: the limit of every common file system."""
MAX_PATH_CHARS = 4096
"""Longest virtual path a request may carry."""

ERRORS = frozenset({
    "not-found", "outside-root", "invalid-name", "exists", "not-a-directory",
    "is-a-directory", "no-space", "changed", "too-large", "checksum", "cancelled", "busy",
    "io",
})
"""Every ``FileReply.error`` code (the proto's comment says what each means)."""

_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", re.IGNORECASE)
_WINDOWS_FORBIDDEN = frozenset('<>:"|?*')


@dataclass(frozen=True)
class FileError(Exception):
    """A request that cannot be served: ``code`` is one of :data:`ERRORS`."""

    code: str
    message: str

    def __post_init__(self) -> None:
        assert self.code in ERRORS, self.code

    def __str__(self) -> str:
        return self.message


def split_path(path: str) -> tuple[str, ...]:
    """The components of a virtual path: ``()`` for ``/``, else the root's name first.

    :raises FileError: ``invalid-name`` for anything but an absolute path of plain
        names (no empty, ``.`` or ``..`` component, no backslash or NUL).
    """
    if len(path) > MAX_PATH_CHARS:
        raise FileError("invalid-name", f"a path of {len(path)} characters; at most "
                                        f"{MAX_PATH_CHARS}")
    if not path.startswith("/"):
        raise FileError("invalid-name", f"{path!r} is not a path from '/' (the roots)")
    parts = tuple(path[1:].split("/")) if path != "/" else ()
    for part in parts:
        if part in ("", ".", "..") or "\\" in part or "\0" in part:
            raise FileError("invalid-name", f"{path!r} has a component {part!r}: paths name "
                                            "plain names from the roots down")
    return parts


def join_path(*parts: str) -> str:
    """The virtual path of ``parts`` (the inverse of :func:`split_path`)."""
    return "/" + "/".join(parts)


def name_refusal(name: str, *, windows: bool = False) -> str | None:
    """Why ``name`` cannot be a file's name on the target (``windows``: a Windows file
    system, stricter), or None when it can."""
    if name in ("", ".", ".."):
        return f"{name!r} is no file name"
    if "/" in name or "\0" in name or "\\" in name:
        return f"{name!r} holds a path separator or NUL"
    if any(ord(c) < 32 for c in name):
        return f"{name!r} holds a control character"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"a name of more than {MAX_NAME_BYTES} bytes"
    if windows:
        if _WINDOWS_FORBIDDEN & set(name):
            return f"{name!r} holds a character Windows forbids in names (<>:\"|?*)"
        if name[-1] in ". ":
            return f"{name!r} ends in a dot or a space, which Windows drops"
        if _WINDOWS_RESERVED.match(name):
            return f"{name!r} is a device name on Windows"
    return None
