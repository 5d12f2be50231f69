"""Plugin loading by name, failure modes, and an outside plugin used like a third-party one."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest
from remote_server.settings import ServerSettings

from remote_core import hookimpl, hookspecs
from remote_core.errors import PluginError
from remote_core.plugins import BUILTIN_PLUGINS, discover, get_plugin_manager
from remote_core.settings import PluginSettings
from remote_core.types import (
    AuthMethod,
    CaptureSpec,
    CodecSpec,
    ConsentAsk,
    ConsentDecision,
    StoreSpec,
)


def install_fake_distribution(root: Path, dist: str, module: str, source: str,
                              entry_name: str, requires: tuple[str, ...] = ()) -> None:
    """Lay out an installed distribution (module + dist-info) the way pip would."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "entry_points.txt").write_text(f"[remote_core.plugins]\n{entry_name} = {module}\n")


OUTSIDE = """
from remote_core import hookimpl
from remote_core.types import CodecSpec, ConsentDecision

@hookimpl
def register_codecs():
    return [CodecSpec(name="outside_codec", preference=1, frame_field="raw")]

@hookimpl
def consent_policy(ask):
    return ConsentDecision.DENY if ask.technician_name == "mallory" else None
"""


@pytest.fixture
def outside_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    install_fake_distribution(tmp_path, "acme-remote-codec", "acme_remote_codec", OUTSIDE,
                              "acme_codec")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "acme_codec"


def test_default_loads_every_installed_builtin() -> None:
    plugins = get_plugin_manager(PluginSettings())
    assert set(plugins.names()) == set(BUILTIN_PLUGINS)


def test_outside_plugin_is_discovered_loaded_and_used(outside_plugin: str) -> None:
    assert outside_plugin in discover()
    plugins = get_plugin_manager(PluginSettings(plugins=(outside_plugin,)))
    assert [c.name for c in plugins.codecs()] == ["outside_codec"]
    info = {i.name: i for i in plugins.describe()}[outside_plugin]
    assert info.distribution == "acme-remote-codec" and info.version == "1.2.3"
    assert info.hooks == ("consent_policy", "register_codecs")
    assert plugins.consent_policy(ConsentAsk("s", "mallory", control=True)) is ConsentDecision.DENY
    assert plugins.consent_policy(ConsentAsk("s", "dana", control=True)) is None


def test_outside_plugin_is_not_loaded_unless_named(outside_plugin: str) -> None:
    assert outside_plugin not in get_plugin_manager(PluginSettings()).names()
    assert outside_plugin in get_plugin_manager(PluginSettings(autoload_plugins=True)).names()


def test_missing_plugin_lists_what_is_available() -> None:
    with pytest.raises(PluginError, match=r"\['nope'\].*available: .*store_sql"):
        get_plugin_manager(PluginSettings(plugins=("nope",)))


def test_broken_plugin_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_distribution(tmp_path, "broken-plugin", "broken_plugin",
                              "raise ImportError('libfoo.so not found')", "broken")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match=r"broken: failed to load .*libfoo\.so not found"):
        get_plugin_manager(PluginSettings(plugins=("broken",)))


def test_blocked_plugin_is_not_loaded() -> None:
    plugins = get_plugin_manager(PluginSettings(block_plugins=("codec_vp9",)))
    assert "codec_vp9" not in plugins.names()


def test_misspelt_hook_fails_at_start() -> None:
    class Typo:
        @hookimpl
        def register_codec(self) -> list[CodecSpec]:  # missing "s"
            return []

    with pytest.raises(Exception, match="register_codec"):
        get_plugin_manager(PluginSettings(plugins=()), extra=[("typo", Typo())])


def test_duplicate_registration_names_both_providers() -> None:
    class One:
        @hookimpl
        def register_stores(self) -> list[StoreSpec]:
            return [StoreSpec(name="dup", schemes=("x",))]

    class Two(One):
        pass

    plugins = get_plugin_manager(PluginSettings(plugins=()), extra=[("one", One()), ("two", Two())])
    with pytest.raises(PluginError, match="'dup' is provided by both 'one' and 'two'"):
        plugins.stores()


def test_selection_by_name_lists_choices() -> None:
    class Codecs:
        @hookimpl
        def register_codecs(self) -> list[CodecSpec]:
            return [CodecSpec(name="a_codec"), CodecSpec(name="b_codec")]

    plugins = get_plugin_manager(PluginSettings(plugins=()), extra=[("c", Codecs())])
    assert plugins.select(plugins.codecs(), "b_codec", "codec").name == "b_codec"
    with pytest.raises(PluginError, match="no codec named 'zzz'; available: a_codec, b_codec"):
        plugins.select(plugins.codecs(), "zzz", "codec")


def test_store_selection_by_url_scheme() -> None:
    class Stores:
        @hookimpl
        def register_stores(self) -> list[StoreSpec]:
            return [StoreSpec(name="sqlish", schemes=("sqlite", "postgresql"))]

    plugins = get_plugin_manager(PluginSettings(plugins=()), extra=[("s", Stores())])
    assert plugins.store_for_url("postgresql+asyncpg://h/db").name == "sqlish"
    with pytest.raises(PluginError, match="scheme 'mysql'"):
        plugins.store_for_url("mysql://h/db")


def test_wrong_registration_type_is_rejected() -> None:
    class Wrong:
        @hookimpl
        def register_codecs(self) -> list[object]:
            return [StoreSpec(name="x")]

    plugins = get_plugin_manager(PluginSettings(plugins=()), extra=[("w", Wrong())])
    with pytest.raises(PluginError, match="expected CodecSpec"):
        plugins.codecs()


def test_registration_names_are_lower_case() -> None:
    with pytest.raises(ValueError, match="lower-case"):
        CodecSpec(name="Bad Name")


def test_every_hookspec_is_documented_with_an_example_or_notification() -> None:
    specs = [f for name, f in inspect.getmembers(hookspecs, inspect.isfunction)
             if hasattr(f, "remote_core_spec")]
    assert {f.__name__ for f in specs} == set(hookspecs.__all__)
    for spec in specs:
        doc = inspect.getdoc(spec) or ""
        assert "Example" in doc or "Notification" in doc, spec.__name__


def test_every_hookspec_is_named_in_the_readme() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    missing = [name for name in hookspecs.__all__ if name not in readme]
    assert not missing, f"README.md does not document hooks {missing}"


FUTURE = """
from remote_core import hookimpl
from remote_core.types import CodecSpec

@hookimpl
def register_codecs():
    return [CodecSpec(name="future_codec", preference=1, frame_field="raw")]
"""


@pytest.fixture
def plugin_for_another_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    install_fake_distribution(tmp_path, "remote-codec-future", "remote_codec_future", FUTURE,
                              "codec_future", requires=("remote-core>=1,<2", "numpy"))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_plugin_for_another_core_is_never_loaded(plugin_for_another_core: Path) -> None:
    assert "codec_future" in discover()
    # Named: start-up stops, saying which core it wants and which this is.
    with pytest.raises(PluginError, match=r"remote-codec-future 1\.2\.3 is built for "
                                          r"remote-core<2,>=1; this is remote-core 0\.1\.0"):
        get_plugin_manager(PluginSettings(plugins=("store_sql", "codec_future")))
    # Autoloaded: skipped, and said why, while the rest loads.
    plugins = get_plugin_manager(PluginSettings(autoload_plugins=True))
    assert "codec_future" not in plugins.names() and "store_sql" in plugins.names()
    assert "built for remote-core<2,>=1" in plugins.not_loaded["codec_future"]
    assert "future_codec" not in [c.name for c in plugins.codecs()]


def test_installed_plugins_that_are_not_loaded_are_listed_with_why(outside_plugin: str) -> None:
    plugins = get_plugin_manager(PluginSettings(block_plugins=("codec_vp9",)))
    assert plugins.not_loaded == {outside_plugin: "not requested (REMOTE_SUPPORT_PLUGINS)",
                                  # the workspace's opt-in codec, not a default
                                  "codec_av1": "not requested (REMOTE_SUPPORT_PLUGINS)",
                                  "codec_vp9": "blocked (REMOTE_SUPPORT_BLOCK_PLUGINS)"}


# -- additive loading, a strict block list, and options that reach only their plugin ------

def test_extra_plugins_add_to_the_default_set(outside_plugin: str) -> None:
    plugins = get_plugin_manager(PluginSettings(extra_plugins=(outside_plugin,)))
    assert set(plugins.names()) == {*BUILTIN_PLUGINS, outside_plugin}
    listed = get_plugin_manager(PluginSettings(plugins=("store_sql",),
                                               extra_plugins=(outside_plugin,)))
    assert listed.names() == ["store_sql", outside_plugin]


@pytest.mark.parametrize("setting", ["block_plugins", "extra_plugins"])
def test_a_name_that_is_not_installed_is_an_error_in_every_list(setting: str) -> None:
    with pytest.raises(PluginError, match=rf"\['codec_vp8'\] named in "
                                          rf"REMOTE_SUPPORT_{setting.upper()} are not installed"):
        get_plugin_manager(PluginSettings(**{setting: ("codec_vp8",)}))


class Probe:
    """Registers a capture backend and an auth method whose factories record what they get."""

    @hookimpl
    def register_capture_sources(self) -> list[CaptureSpec]:
        return [CaptureSpec(name="probe_capture", factory=dict)]

    @hookimpl
    def register_auth_methods(self) -> list[AuthMethod]:
        return [AuthMethod(name="probe_auth", factory=lambda context: context.options)]


def test_a_plugins_options_reach_its_registrations_and_nothing_else() -> None:
    settings = ServerSettings.load(environ={
        "REMOTE_SUPPORT_PLUGIN_PROBE_COLOUR": "blue", "REMOTE_SUPPORT_JWT_SECRET": "never-seen",
        "REMOTE_SUPPORT_SHARED_AGENT_KEY": "not-the-probes"})
    plugins = get_plugin_manager(settings.replace(plugins=("auth_sharedkey",)),
                                 extra=[("probe", Probe())])
    capture = plugins.capture_sources()[0]
    assert plugins.options(capture) == {"colour": "blue"}
    method = plugins.select(plugins.auth_methods(), "probe_auth", "auth method")
    assert plugins.options(method) == {"colour": "blue"}
    shared = plugins.select(plugins.auth_methods(), "sharedkey", "auth method")
    assert plugins.options(shared) == {"key": "not-the-probes"}
