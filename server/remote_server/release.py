"""Agent releases: the single-file build, its SHA-256, and the publisher's Ed25519 signature.

Two builds share the format (one zip application with a ``__main__.py``, so the
agent's self-update handles both alike): the self-contained release with its
plugin set and libraries (:mod:`remote_server.release_bundle`, what managed
machines run), and the code-only build made here.

The code-only build is a Python zip application (``remote-agent-<version>.pyz``) holding
the agent's and the core's own Python code plus the ``remote-agent`` metadata
that carries its version; it runs with ``python remote-agent.pyz ...`` on an
interpreter where the agent's dependencies are installed. Compiled
dependencies (protobuf, zstandard, PyAV, NumPy) stay in that environment
because ``zipimport`` cannot load extension modules. One file is one update.

Builds are reproducible (sorted members, fixed timestamps), so a signature
made by one publisher can be checked against a rebuild.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from remote_core.errors import RemoteSupportError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["Artifact", "add_member", "build_agent", "generate_keypair", "public_key_of",
           "sha256_file", "sign_file", "write_atomically"]

_PACKAGES = ("remote_agent", "remote_core")
_EPOCH = (1980, 1, 1, 0, 0, 0)
_MAIN = b"""import sys

from remote_agent.cli import main

sys.exit(main())
"""


@dataclass(frozen=True)
class Artifact:
    path: Path
    version: str
    sha256: str


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RemoteSupportError(f"{name} is not installed here; build releases from an "
                                 "environment with the agent installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _installed_agent_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("remote-agent")
    except PackageNotFoundError:
        raise RemoteSupportError("remote-agent is not installed; give --version") from None


def _members() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for package in _PACKAGES:
        root = _package_dir(package)
        for path in root.rglob("*"):
            name = f"{package}/{path.relative_to(root).as_posix()}"
            if (path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
                    and not name.startswith("remote_core/testing/")):  # no test code
                found.append((name, path))
    return sorted(found)


def add_member(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    """One member with a fixed timestamp and mode, so equal inputs make equal builds."""
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    archive.writestr(info, data)


def write_atomically(output: Path, interpreter: str,
                     write: Callable[[zipfile.ZipFile], None]) -> None:
    """Write an executable zip application to ``output`` through ``.<name>.building``.

    The final name appears only complete; a build that fails leaves no partial file.
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    temp = output.with_name(f".{output.name}.building")
    try:
        with temp.open("wb") as handle:
            handle.write(f"#!{interpreter}\n".encode())
            with zipfile.ZipFile(handle, "w") as archive:
                write(archive)
        os.chmod(temp, 0o755)  # noqa: S103 - an executable, world-readable like any program
        os.replace(temp, output)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def build_agent(output: Path | None = None, version: str | None = None,
                interpreter: str = "/usr/bin/env python3") -> Artifact:
    """Write the agent's single-file build; ``version`` defaults to the installed agent's."""
    from remote_core.semver import is_semver

    version = version or _installed_agent_version()
    if not is_semver(version):
        raise RemoteSupportError(f"{version!r} is not a semantic version such as 1.4.2")
    output = output or Path("dist") / f"remote-agent-{version}.pyz"
    dist_info = f"remote_agent-{version}.dist-info"

    def write(archive: zipfile.ZipFile) -> None:
        add_member(archive, "__main__.py", _MAIN)
        add_member(archive, f"{dist_info}/METADATA",
                   f"Metadata-Version: 2.1\nName: remote-agent\nVersion: {version}\n".encode())
        for name, path in _members():
            add_member(archive, name, path.read_bytes())

    write_atomically(output, interpreter, write)
    return Artifact(path=output, version=version, sha256=sha256_file(output))


# -- the publisher's signature ------------------------------------------------------------
def generate_keypair(private_key: Path) -> str:
    """Write a new Ed25519 private key (PEM, owner-only); return the public key to pin."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if private_key.exists():
        raise RemoteSupportError(f"{private_key} exists; refusing to overwrite a signing key")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    private_key.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    return public_key_of(private_key)


def _private_key(path: Path) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise RemoteSupportError(f"cannot read the signing key {path}: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise RemoteSupportError(f"{path} is not an Ed25519 private key")
    return key


def public_key_of(private_key: Path) -> str:
    """The base64 public key for the agents' ``update_public_key`` setting."""
    from cryptography.hazmat.primitives import serialization

    public = _private_key(private_key).public_key()
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def sign_file(artifact: Path, private_key: Path) -> Path:
    """Write ``<artifact>.sig``: base64 of the Ed25519 signature over the whole file."""
    signature = _private_key(private_key).sign(artifact.read_bytes())
    target = artifact.with_name(artifact.name + ".sig")
    target.write_bytes(base64.b64encode(signature) + b"\n")
    return target
