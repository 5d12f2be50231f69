"""The self-contained agent release: one zip application with the agent, its plugin set and
every library they import, compiled ones included.

A managed machine needs only its own ``python3`` (the minor version the build
was made with, since compiled libraries are built for it). The build is made
from wheels (``uv build --all-packages`` makes the project's): pip installs the
agent, the core and the chosen plugins' distributions, with their third-party
dependencies, into a staging directory, from which every file but bytecode,
tests and the contract suites goes under ``site/`` in the archive.

At start-up the archive's ``__main__`` unpacks ``site/`` once per build, next
to the archive (``.<name>.d/<build id>/``, else the user's cache), puts it
first on ``sys.path`` in place of the machine's site-packages, and runs the
agent. It is still one file with a ``__main__.py``, so self-update (download,
checksum, signature, a ``--version`` start, one rename, rollback) replaces all
of it: agent, core, plugins and libraries. Measured against the code-only
build and a PyInstaller one-file binary, see the README's release section.
"""

from __future__ import annotations

import email.parser
import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from remote_core.errors import RemoteSupportError

from .release import Artifact, add_member, sha256_file, write_atomically
from .settings import ServerSettings

__all__ = ["AGENT_PLUGINS", "build_bundle"]

AGENT_PLUGINS = ("codec_raw_zstd", "capture_mss", "input_pynput", "consent_dialog")
"""The plugin set of a release when none is named: what the agent depends on."""

_SERVER_SIDE = ("remote_server/", "starlette/", "uvicorn/", "sqlalchemy/")
_LEFT_OUT = re.compile(r"(^|/)(__pycache__|tests)/|\.pyc$|^remote_core/testing/|^bin/"
                       r"|\.dist-info/(direct_url\.json|RECORD)$")
"""Not shipped: bytecode, tests, the contract suites, scripts (their ``#!`` names the
build's venv) and what records the build's own paths (so equal wheels make equal builds)."""

_MAIN = '''"""Start the self-contained agent: unpack its libraries once, then run it."""

import json
import os
import shutil
import signal
import sys
import tempfile
import zipfile
from pathlib import Path

BUILD = {build!r}
PYTHON = {python!r}
EXTRA_PLUGINS = {extra!r}


def fail(message):
    print("remote-agent: " + message, file=sys.stderr)
    raise SystemExit(2)


def build_of(archive):
    try:
        with zipfile.ZipFile(archive) as zf:
            return zf.read("BUILD").decode("ascii").strip()
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None


def unpack(archive, base):
    target = base / BUILD
    if (target / ".complete").is_file():
        return target
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="." + BUILD[:12] + ".", dir=base))
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(work, [n for n in zf.namelist() if n.startswith("site/")])
        (work / "site" / ".complete").touch()
        try:
            os.rename(work / "site", target)
        except OSError:  # another start unpacked it first
            if not (target / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def tidy(base, archive):
    """Drop what older builds unpacked; keep this one and the rollback build's."""
    keep = {{BUILD, build_of(archive.with_name(archive.name + ".previous"))}}
    for entry in base.iterdir():
        if entry.name not in keep and not entry.name.startswith("."):
            shutil.rmtree(entry, ignore_errors=True)


def joining(archive):
    """The server and code a join-page download carries inside (``attended.json``)."""
    try:
        with zipfile.ZipFile(archive) as zf:
            join = json.loads(zf.read("attended.json").decode("utf-8"))
    except KeyError:
        return None
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError, ValueError):
        fail("this download is damaged; download the agent again from the join page")
    if not (isinstance(join, dict) and isinstance(join.get("server"), str)
            and isinstance(join.get("code"), str)):
        fail("this download is damaged; download the agent again from the join page")
    return join


def _leave(signum, frame):
    raise SystemExit(128 + signum)


def attended(archive, join):
    """Run one attended session from a temporary directory, then remove all of it.

    Nothing is written beside the file or in the user's home: libraries, the
    configuration (server, CA bundle, the agent's id) and every cache go under one
    private temporary directory, removed when the agent stops (session ended,
    refused, Ctrl-C or SIGTERM). Nothing is registered for start-up.
    """
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _leave)
    work = Path(tempfile.mkdtemp(prefix="remote-agent-"))
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(work, [n for n in zf.namelist() if n.startswith("site/")])
        lines = ["server = " + json.dumps(join["server"])]
        if join.get("ca_pem"):
            (work / "ca.pem").write_text(join["ca_pem"])
            lines.append("ca_bundle = " + json.dumps(str(work / "ca.pem")))
        config = work / "agent.toml"
        config.write_text("\\n".join(lines) + "\\n")
        for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
            os.environ[name] = str(work / name.lower())
        sys.path[:] = [str(work / "site")] + [p for p in sys.path if not p.endswith(
            ("site-packages", "dist-packages")) and not p.startswith(str(archive))]
        if EXTRA_PLUGINS:
            os.environ.setdefault("REMOTE_AGENT_EXTRA_PLUGINS", ",".join(EXTRA_PLUGINS))
        from remote_agent.cli import main as agent

        print("remote-agent: joining " + join["server"] + " with the support code; close "
              "this window or press Ctrl-C to leave", file=sys.stderr)
        return agent(["--config", str(config), "--code", join["code"], *sys.argv[1:]])
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if tuple(sys.version_info[:2]) != tuple(PYTHON):
        fail("this release needs Python %d.%d (its compiled libraries are built for it); "
             "%s is %d.%d" % (*PYTHON, sys.executable, *sys.version_info[:2]))
    archive = Path(__file__).resolve().parent
    join = joining(archive) if "--version" not in sys.argv[1:] else None
    if join is not None:
        sys.exit(attended(archive, join))
    # An update's start-up check runs the staging copy (.NAME.staging): it unpacks where
    # the installed NAME will look, so the restart after the swap finds it ready.
    name = archive.name
    if name.startswith(".") and name.endswith(".staging"):
        name = name[1:-len(".staging")]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "remote-agent"
    errors = []
    for base in (archive.parent / ("." + name + ".d"), cache):
        try:
            site = unpack(archive, base)
            break
        except OSError as exc:
            errors.append("%s: %s" % (base, exc))
    else:
        fail("cannot unpack the agent's libraries (" + "; ".join(errors) + ")")
    if "--version" not in sys.argv[1:]:
        tidy(site.parent, archive.with_name(name))
    sys.path[:] = [str(site)] + [p for p in sys.path if not p.endswith(
        ("site-packages", "dist-packages")) and not p.startswith(str(archive))]
    if EXTRA_PLUGINS:
        os.environ.setdefault("REMOTE_AGENT_EXTRA_PLUGINS", ",".join(EXTRA_PLUGINS))
    from remote_agent.cli import main as agent

    sys.exit(agent())


main()
'''


def _metadata(wheel: Path) -> tuple[str, str, list[str], set[str]]:
    """(name, version, requirements, plugin names) of one wheel."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        meta = email.parser.Parser().parsestr(archive.read(info).decode("utf-8"))
        points = info.replace("METADATA", "entry_points.txt")
        plugins: set[str] = set()
        if points in names:
            section = ""
            for line in archive.read(points).decode("utf-8").splitlines():
                line = line.strip()
                if line.startswith("["):
                    section = line.strip("[]")
                elif "=" in line and section == "remote_core.plugins":
                    plugins.add(line.split("=", 1)[0].strip())
    return (str(meta["Name"]).lower().replace("_", "-"), str(meta["Version"]),
            list(meta.get_all("Requires-Dist") or []), plugins)


def _choose(wheels: Path, plugins: Sequence[str]) -> tuple[Path, str, list[str], list[Path]]:
    """The agent's wheel, its version, its own third-party requirements, and the wheels of
    the core and the chosen plugins (the agent's sibling requirements are replaced by these)."""
    found = {path: _metadata(path) for path in sorted(wheels.glob("*.whl"))}
    by_name = {meta[0]: path for path, meta in found.items()}
    if "remote-agent" not in by_name or "remote-core" not in by_name:
        raise RemoteSupportError(f"{wheels} holds no remote-agent or remote-core wheel; "
                                 "build them with `uv build --all-packages`")
    providers = {plugin: path for path, meta in found.items() for plugin in meta[3]}
    unknown = [p for p in plugins if p not in providers]
    if unknown:
        raise RemoteSupportError(f"no wheel in {wheels} provides plugin(s) {unknown}; "
                                 f"available: {sorted(providers)}")
    agent = by_name["remote-agent"]
    _, version, requires, _ = found[agent]
    own = [r for r in requires if "extra ==" not in r and not r.startswith("remote-")]
    chosen = sorted({by_name["remote-core"], *(providers[p] for p in plugins)})
    return agent, version, own, chosen


def _pip(env: Path, target: Path, args: Iterable[str]) -> None:
    run = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet",
                          "--disable-pip-version-check", "--no-compile", "--target",
                          str(target), *args], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RemoteSupportError("pip could not install the release's libraries: "
                                 + (run.stderr.strip() or run.stdout.strip())[-1500:])


def _stage(python: str, wheels: Path, plugins: Sequence[str],
           work: Path) -> tuple[Path, str, tuple[int, int]]:
    """Install the release's files into ``work/site``: (site, agent version, Python)."""
    agent, version, own, chosen = _choose(wheels, plugins)
    env = work / "env"
    made = subprocess.run([python, "-m", "venv", str(env)], capture_output=True, text=True,
                          check=False)
    if made.returncode != 0:
        raise RemoteSupportError(f"{python} -m venv failed (on Debian: apt install "
                                 f"python3-venv): {made.stderr.strip()[-500:]}")
    site = work / "site"
    _pip(env, site, ["--no-deps", str(agent)])
    _pip(env, site, ["--find-links", str(wheels), *map(str, chosen), *own])
    probe = subprocess.run([str(env / "bin" / "python"), "-c",
                            "import sys; print(*sys.version_info[:2])"],
                           capture_output=True, text=True, check=True).stdout.split()
    return site, version, (int(probe[0]), int(probe[1]))


def _members(site: Path) -> list[tuple[str, Path]]:
    found = []
    for path in site.rglob("*"):
        name = path.relative_to(site).as_posix()
        if path.is_file() and not _LEFT_OUT.search(name):
            found.append((name, path))
    server = [n for n, _ in found if n.startswith(_SERVER_SIDE)]
    if server:
        raise RemoteSupportError(f"the plugin set pulls server code into the agent release "
                                 f"({server[0].split('/')[0]}); leave server plugins out")
    return sorted(found)


def _stamp(name: str, data: bytes, wheel_version: str, version: str) -> tuple[str, bytes]:
    """The agent's metadata carries the release's version (what ``--version`` reports)."""
    dist_info = f"remote_agent-{wheel_version}.dist-info/"
    if not name.startswith(dist_info):
        return name, data
    name = f"remote_agent-{version}.dist-info/" + name[len(dist_info):]
    if name.endswith("/METADATA"):
        data = re.sub(rb"(?m)^Version: .*$", f"Version: {version}".encode(), data, count=1)
    return name, data


def build_bundle(wheels: Path, plugins: Sequence[str] = AGENT_PLUGINS,
                 output: Path | None = None, version: str | None = None,
                 python: str = sys.executable,
                 interpreter: str = "/usr/bin/env python3") -> Artifact:
    """Write the self-contained release of the agent with ``plugins`` from ``wheels``.

    ``python`` is the interpreter whose minor version the machines run (it
    resolves the compiled libraries); ``version`` defaults to the agent wheel's.
    """
    from remote_core.semver import is_semver

    server_side = [p for p in plugins if p in (ServerSettings.DEFAULT_PLUGINS or ())]
    if server_side:
        raise RemoteSupportError(f"{server_side} are server plugins; an agent release "
                                 "holds agent plugins only")
    if version is not None and not is_semver(version):
        raise RemoteSupportError(f"{version!r} is not a semantic version such as 1.4.2")
    with tempfile.TemporaryDirectory(prefix="remote-agent-release-") as tmp:
        site, wheel_version, py = _stage(python, wheels, plugins, Path(tmp))
        version = version or wheel_version
        if not is_semver(version):
            raise RemoteSupportError(f"the agent wheel's version {version!r} is not a "
                                     "semantic version; give --version")
        members = [_stamp(name, path.read_bytes(), wheel_version, version)
                   for name, path in _members(site)]
        digest = hashlib.sha256(version.encode())
        for name, data in members:
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        build = digest.hexdigest()[:32]
        extra = sorted(set(plugins) - set(_builtins()))
        main = _MAIN.format(build=build, python=py, extra=tuple(extra)).encode()
        output = output or Path("dist") / f"remote-agent-{version}.pyz"

        def write(archive: zipfile.ZipFile) -> None:
            add_member(archive, "__main__.py", main)
            add_member(archive, "BUILD", build.encode() + b"\n")
            for name, data in members:
                add_member(archive, f"site/{name}", data)

        write_atomically(output, interpreter, write)
    return Artifact(path=output, version=version, sha256=sha256_file(output))


def _builtins() -> tuple[str, ...]:
    from remote_core.plugins import BUILTIN_PLUGINS

    return tuple(p for p in BUILTIN_PLUGINS if p not in (ServerSettings.DEFAULT_PLUGINS or ()))
