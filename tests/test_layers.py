"""What may import what: the layers of docs/architecture.md, checked over the source.

An AST walk of every module (imports inside functions included, relative
imports resolved), so a lazy import cannot slip a dependency past the rule.
The rules, each the reason a distribution stays small or a layer replaceable:

- the protocol imports nothing of the project but the generated wire code;
- the core (``remote_core``) imports no plugin, agent, viewer or server;
- the relay imports nothing of the web edge (``remote_server.web``);
- the REST API reaches live sessions only through the ``SessionDirectory``
  protocol, never the registry class;
- a plugin imports no server and no other plugin (a shared library under
  ``plugins/``, a distribution with no entry point, it may);
- the agent and the Python viewer import no server and no store.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Import:
    where: str  # path:line
    importer: str  # dotted module
    imported: str  # dotted module (or module.name for ``from m import name``)


def module_name(path: Path, source_root: Path) -> str:
    parts = list(path.relative_to(source_root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, source_root: Path) -> Iterator[Import]:
    importer = module_name(path, source_root)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(where, importer, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                yield Import(where, importer, f"{base}.{alias.name}")


def source_roots() -> dict[str, Path]:
    """Every first-party top-level package and the directory it is imported from."""
    roots = {"remote_core": ROOT, "remote_server": ROOT / "server",
             "remote_agent": ROOT / "agent", "remote_viewer": ROOT / "viewer"}
    roots.update({pkg: plugin for pkg, plugin in plugin_packages().items()})
    return roots


def plugin_packages() -> dict[str, Path]:
    """Package name -> distribution directory, for every distribution under plugins/."""
    found = {}
    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        wheel = tomllib.loads(pyproject.read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
        for package in wheel["packages"]:
            found[package] = pyproject.parent
    return found


def shared_libraries() -> set[str]:
    """The packages under plugins/ whose distribution declares no plugin: libraries that
    plugins share (the PyAV machinery of the video codecs)."""
    return {package for package, root in plugin_packages().items()
            if "entry-points" not in tomllib.loads((root / "pyproject.toml").read_text())[
                "project"]}


def all_imports() -> list[Import]:
    out = []
    for package, root in source_roots().items():
        for path in sorted((root / package).rglob("*.py")):
            if "_proto" in path.parts:
                continue
            out.extend(imports_of(path, root))
    return out


def within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def violations(imports: list[Import], plugins: set[str],
               libraries: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Each import that breaks a layer rule, as ``path:line importer -> imported (rule)``;
    ``libraries`` are the packages of ``plugins`` that other plugins may import."""
    bad = []
    apps = ("remote_server", "remote_agent", "remote_viewer")
    for i in imports:
        top = i.imported.split(".")[0]
        rule = None
        if within(i.importer, "remote_core.protocol"):
            first_party = within(i.imported, "remote_core", *apps) or top in plugins
            if first_party and not within(i.imported, "remote_core.protocol",
                                          "remote_core._proto"):
                rule = "the protocol imports only itself and the generated wire code"
        if rule is None and within(i.importer, "remote_core"):
            if top in plugins or within(i.imported, *apps):
                rule = "the core imports no plugin, server, agent or viewer"
        if rule is None and within(i.importer, "remote_server.relay"):
            if within(i.imported, "remote_server.web", "remote_server.cli"):
                rule = "the relay does not import the web edge"
        if rule is None and within(i.importer, "remote_server.web.api"):
            if within(i.imported, "remote_server.relay.registry"):
                rule = "the REST API reaches sessions through the SessionDirectory protocol"
        if rule is None and i.importer.split(".")[0] in plugins:
            own = i.importer.split(".")[0]
            if within(i.imported, *apps) or (top in plugins and top not in (own, *libraries)):
                rule = "a plugin imports no server, agent, viewer or other plugin"
        if rule is None and within(i.importer, "remote_agent", "remote_viewer"):
            if within(i.imported, "remote_server", "remote_store_sql", "sqlalchemy"):
                rule = "the agent and the viewer import no server and no store"
        if rule:
            bad.append(f"{i.where.removeprefix(str(ROOT) + '/')} {i.importer} -> "
                       f"{i.imported} ({rule})")
    return bad


def test_every_import_keeps_to_the_layers() -> None:
    imports = all_imports()
    assert len(imports) > 500, "the walk found the source"
    assert violations(imports, set(plugin_packages()), shared_libraries()) == []


@pytest.mark.parametrize(("importer", "imported", "rule"), [
    ("remote_core.protocol.connection", "remote_server.relay.session", "the protocol"),
    ("remote_core.protocol.frames", "remote_core.settings.Settings", "the protocol"),
    ("remote_core.plugins", "remote_auth_agentkey.generate_agent_key", "the core"),
    ("remote_core.codecs", "remote_server.web.app", "the core"),
    ("remote_server.relay.registry", "remote_server.web.audit.Audit", "the relay"),
    ("remote_server.web.api.views", "remote_server.relay.registry.Registry", "the REST API"),
    ("remote_auth_supportcode", "remote_server.web.supportcode", "a plugin"),
    ("remote_codec_vp9", "remote_codec_h264.pyav", "a plugin"),
    ("remote_agent.session", "remote_server.relay", "the agent"),
    ("remote_agent.cli", "remote_store_sql.store", "the agent"),
    ("remote_viewer.client", "sqlalchemy", "the viewer"),
])
def test_each_rule_catches_its_breach(importer: str, imported: str, rule: str) -> None:
    plugins = {"remote_auth_agentkey", "remote_auth_supportcode", "remote_codec_vp9",
               "remote_codec_h264"}
    found = violations([Import("x.py:1", importer, imported)], plugins)
    assert len(found) == 1 and rule in found[0], found


@pytest.mark.parametrize(("importer", "imported"), [
    ("remote_core.protocol.connection", "remote_core.protocol.events"),
    ("remote_core.protocol._wire", "remote_core._proto.remote_support_pb2"),
    ("remote_server.relay.registry", "remote_core.records.Event"),
    ("remote_server.web.app", "remote_server.relay.registry.Registry"),
    ("remote_codec_h264.codec", "remote_codec_pyav.base.vbv_cap"),
    ("remote_agent.session", "remote_core.wsclient.WebSocketClient"),
])
def test_what_the_layers_allow_passes(importer: str, imported: str) -> None:
    plugins = {"remote_codec_pyav", "remote_codec_h264"}
    assert violations([Import("x.py:1", importer, imported)], plugins, {"remote_codec_pyav"}) == []


def test_the_video_codecs_share_a_library_and_import_no_other_codec() -> None:
    assert shared_libraries() == {"remote_codec_pyav"}
    found = violations([Import("x.py:1", "remote_codec_vp9.codec", "remote_codec_h264.codec")],
                       {"remote_codec_vp9", "remote_codec_h264", "remote_codec_pyav"},
                       {"remote_codec_pyav"})
    assert len(found) == 1 and "a plugin imports" in found[0], found


def test_relative_imports_are_resolved(tmp_path: Path) -> None:
    package = tmp_path / "remote_server" / "relay"
    package.mkdir(parents=True)
    (package / "registry.py").write_text("def f():\n    from ..web.audit import Audit\n")
    [found] = list(imports_of(package / "registry.py", tmp_path))
    assert (found.importer, found.imported) == ("remote_server.relay.registry",
                                                "remote_server.web.audit.Audit")
