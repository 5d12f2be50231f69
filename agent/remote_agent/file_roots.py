"""Where a FILE_TRANSFER viewer's virtual paths lead on this machine, and where not.

The agent serves files only below its roots (the ``file_roots`` setting; by
default the home directory of the account the agent runs as, which on an
attended session is the end user's). ``/`` lists the roots, each named by its
directory's basename (``home``, ``data``; a second ``data`` is ``data-2``), and
``/<root>/a/b`` is ``a/b`` below that root. Every path is parsed by
:func:`~remote_core.protocol.files.split_path` and its real location (every
symlink resolved) must stay inside its root's real location: a symlink that
leads out of a root is refused wherever it is met, for listing, download and
upload alike. (What a local process changes between this check and the use
of the path is not guarded against: the agent acts with the rights of its own
account, which that process has already.)
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from remote_core.protocol.files import FileError, join_path, split_path

__all__ = ["PARTIAL_SUFFIX", "Resolved", "Roots", "default_roots", "inside", "shown",
           "wire_name"]


def default_roots() -> tuple[str, ...]:
    """The home directory of the account the agent runs as."""
    try:
        return (pwd.getpwuid(os.getuid()).pw_dir,)
    except KeyError:  # an account with no passwd entry (a container's random uid)
        return (str(Path.home()),)


PARTIAL_SUFFIX = ".partial"
"""An upload is written to ``.<name>.partial`` beside its target until it is whole."""


def shown(name: str) -> bool:
    """Whether a name on disk appears in listings and archives: one the wire can say
    (:func:`wire_name`) that is not an upload's hidden partial file (``.<name>.partial``,
    a file that is not whole yet; a user's own file so named is hidden the same way)."""
    return wire_name(name) and not (name.startswith(".") and name.endswith(PARTIAL_SUFFIX))


def wire_name(name: str) -> bool:
    """Whether a name on disk can be said on the wire (UTF-8): a file name that is not
    (bytes of another encoding) is left out of listings and archives, as no path names it."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def inside(real: str, root: str) -> bool:
    """Whether the real path ``real`` is ``root`` or below it (both already real)."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class Resolved:
    """A virtual path mapped onto this machine.

    ``local`` is the root's real path joined with the components as given (a
    symlink in the last place stays a symlink: renaming onto it replaces the
    link); ``real`` is where it leads, every symlink resolved.
    """

    virtual: str
    root: str
    local: str
    real: str

    @property
    def name(self) -> str:
        return os.path.basename(self.local)


class Roots:
    """The agent's roots by name.

    :param directories: the directories served; ones that do not exist are left out
        (said in :attr:`missing`), so a mistyped setting shows as an empty root list.
    """

    def __init__(self, directories: Iterable[str]) -> None:
        self.by_name: dict[str, str] = {}
        self.missing: list[str] = []
        for directory in directories:
            real = os.path.realpath(os.path.expanduser(directory))
            if not os.path.isdir(real):
                self.missing.append(directory)
                continue
            if real in self.by_name.values():
                continue
            base = os.path.basename(real.rstrip(os.sep)) or "filesystem"
            name, number = base, 2
            while name in self.by_name:
                name, number = f"{base}-{number}", number + 1
            self.by_name[name] = real

    @property
    def names(self) -> Sequence[str]:
        return sorted(self.by_name)

    def resolve(self, path: str) -> Resolved:
        """Map ``path`` (a virtual path below a root, not ``/`` itself).

        A path whose first component names no root is ``outside-root``, not
        ``not-found``: ``/etc/passwd`` is most likely someone trying an absolute
        path of this machine, and the answer should say that paths live under the
        roots rather than suggest the file is merely missing.

        :raises FileError: ``invalid-name`` (not a virtual path, or ``/``),
            ``outside-root`` (no such root, or its real location leaves the root).
        """
        parts = split_path(path)
        if not parts:
            raise FileError("invalid-name", "'/' is the list of roots, not a place of files")
        root = self.by_name.get(parts[0])
        if root is None:
            raise FileError("outside-root", f"{parts[0]!r} is none of this agent's roots "
                                            f"({', '.join(self.names) or 'none'})")
        local = os.path.join(root, *parts[1:])
        real = os.path.realpath(local)
        if not inside(real, root):
            raise FileError("outside-root", f"{join_path(*parts)} leads out of its root")
        return Resolved(join_path(*parts), root, local, real)
