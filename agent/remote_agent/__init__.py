"""The remote-support agent: capture, encode, inject input, consent, self-update."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("remote-agent")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"
