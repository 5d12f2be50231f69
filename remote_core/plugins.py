"""Plugin loading and the typed facade the application uses instead of ``pm.hook``.

Discovery and hooks are two jobs: :func:`discover` reads the entry-point group
``remote_core.plugins`` once per manager and only the entry points named in
settings are imported; pluggy owns the hooks. Built-ins load through exactly
the same path as third-party plugins.

Discovery uses ``importlib.metadata`` directly rather than stevedore: stevedore
caches the group per process and on disk, so a plugin installed (or a path
added) after the first scan stayed invisible, and its missing-name handling is
a callback we would have to turn back into an error anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

import pluggy

from . import ENTRY_POINT_GROUP, PROJECT_NAME, hookspecs
from .codecs import check_codecs
from .compat import incompatibility
from .errors import PluginError
from .records import AuditEvent, SessionRecord
from .settings import PluginSettings
from .types import (
    AuthMethod,
    CaptureSpec,
    CodecSpec,
    ConsentAsk,
    ConsentDecision,
    ConsentPromptSpec,
    InputSpec,
    RecordingStoreSpec,
    Registration,
    ServiceSpec,
    StoreSpec,
    WebAppSpec,
)

__all__ = [
    "BUILTIN_PLUGINS",
    "CODEC_PLUGINS",
    "PluginInfo",
    "Plugins",
    "discover",
    "get_plugin_manager",
]

log = logging.getLogger(__name__)

CODEC_PLUGINS = ("codec_raw_zstd", "codec_vp9", "codec_h264", "codec_h265")
"""The built-in codecs, which every program of the project loads by default."""

BUILTIN_PLUGINS = (
    "store_sql",
    "auth_agentkey",
    "auth_supportcode",
    "auth_sharedkey",
    "codec_raw_zstd",
    "codec_vp9",
    "codec_h264",
    "codec_h265",
    "capture_mss",
    "input_pynput",
    "consent_dialog",
    "web_console",
    "webhooks",
    "recording_files",
    "recording_s3",
)
"""Every plugin this project ships, by entry-point name."""

R = TypeVar("R", bound=Registration)


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """One loaded plugin, for ``remote-support plugins``."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]


def discover() -> dict[str, EntryPoint]:
    """Every installed entry point of the group, by name; two with one name is an error."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        other = found.get(ep.name)
        if other is not None and other.value != ep.value:
            raise PluginError(
                f"plugin name {ep.name!r} is provided twice: by {_dist_name(other)} "
                f"({other.value}) and by {_dist_name(ep)} ({ep.value}); uninstall one"
            )
        found[ep.name] = ep
    return found


def _dist_name(ep: EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else "an unknown distribution"


def _requested(settings: PluginSettings, available: dict[str, EntryPoint]) -> list[str]:
    """The names to load: the list (else the built-ins, else everything installed when
    autoloading), plus the extras, minus the blocked; a name that is not installed is an
    error wherever it was given, so a typo never passes silently."""
    env = settings.ENV_PREFIX
    for given, setting in ((settings.plugins or (), "PLUGINS"),
                           (settings.extra_plugins, "EXTRA_PLUGINS"),
                           (settings.block_plugins, "BLOCK_PLUGINS")):
        missing = [n for n in given if n not in available]
        if missing:
            raise PluginError(
                f"plugin(s) {missing} named in {env}{setting} are not installed; "
                f"available: {sorted(available) or 'none'}")
    if settings.autoload_plugins:
        names = sorted(available)
    elif settings.plugins is not None:
        names = list(settings.plugins)
    else:
        defaults = settings.DEFAULT_PLUGINS or BUILTIN_PLUGINS
        names = [n for n in defaults if n in available]
    names += [n for n in settings.extra_plugins if n not in names]
    blocked = set(settings.block_plugins)
    return [n for n in names if n not in blocked]


def get_plugin_manager(settings: PluginSettings,
                       extra: Iterable[tuple[str, object]] = ()) -> Plugins:
    """Build a fresh plugin manager for ``settings`` and wrap it in the typed facade.

    :param extra: ``(name, plugin)`` pairs registered after the entry points
        (tests and embedding); they go through the same checks.
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    available = discover()
    extra = list(extra)
    names = _requested(settings, available)
    options = settings.plugin_options({*available, *(name for name, _ in extra)})
    # Named plugins are required; the default set tolerates a broken one (it is logged).
    required = {*(settings.plugins or ()), *settings.extra_plugins}
    env = settings.ENV_PREFIX
    failures: list[str] = []
    infos: dict[str, tuple[str, str]] = {}
    loaded: list[tuple[str, object]] = []
    not_loaded = {name: f"not requested ({env}PLUGINS)" for name in available
                  if name not in names and name not in settings.block_plugins}
    not_loaded |= {name: f"blocked ({env}BLOCK_PLUGINS)" for name in settings.block_plugins}
    for name in names:
        ep = available[name]
        why = incompatibility(ep.dist)
        if why is None:
            try:
                loaded.append((name, ep.load()))
            except Exception as exc:  # any import failure is reported, never a traceback
                why = f"failed to load ({ep.value}): {type(exc).__name__}: {exc}"
        if why is not None:
            not_loaded[name] = why
            if name in required:
                failures.append(f"{name}: {why}")
            else:
                log.warning("plugin %s skipped: %s", name, why)
            continue
        dist = ep.dist
        infos[name] = (dist.name, dist.version) if dist else ("?", "?")
    if failures:
        raise PluginError(
            "plugin(s) cannot be loaded: " + "; ".join(failures)
            + f". Available: {sorted(available)}"
        )
    for name, plugin in loaded:
        _register(pm, name, plugin)
    for name, plugin in extra:
        _register(pm, name, plugin)
        infos[name] = ("(registered in process)", "")
    pm.check_pending()
    unused = sorted(set(options) - set(_loaded_names(pm)))
    if unused:
        log.warning("options given for plugin(s) %s, which are installed but not loaded", unused)
    return Plugins(pm, infos, not_loaded, options)


def _loaded_names(pm: pluggy.PluginManager) -> list[str]:
    return [name for name, _ in pm.list_name_plugin()]


def _register(pm: pluggy.PluginManager, name: str, plugin: object) -> None:
    if pm.get_plugin(name) is not None or pm.is_registered(plugin):
        raise PluginError(f"plugin {name!r} is registered twice")
    try:
        pm.register(plugin, name=name)
    except ValueError as exc:
        raise PluginError(f"plugin {name!r} could not be registered: {exc}") from exc


class Plugins:
    """Typed facade over the pluggy manager: the only way app code reaches hooks."""

    def __init__(self, pm: pluggy.PluginManager, infos: dict[str, tuple[str, str]],
                 not_loaded: dict[str, str] | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._pm = pm
        self._infos = infos
        self._cache: dict[str, list[Any]] = {}
        self._providers: dict[tuple[str, str], str] = {}
        self._options = {name: dict(values) for name, values in (options or {}).items()}
        self.not_loaded: dict[str, str] = dict(sorted((not_loaded or {}).items()))
        """Installed plugins that are not loaded, each with the reason."""

    def names(self) -> list[str]:
        return _loaded_names(self._pm)

    def options(self, registration: Registration) -> dict[str, Any]:
        """The options of the plugin that made ``registration`` (its ``[plugins.NAME]``
        table and ``..._PLUGIN_<NAME>_<KEY>`` variables): all its factory may see."""
        provider = self._providers.get((type(registration).__name__, registration.name), "")
        return dict(self._options.get(provider, {}))

    def describe(self) -> list[PluginInfo]:
        """Each loaded plugin with its distribution, version and implemented hooks."""
        out = []
        for name, plugin in self._pm.list_name_plugin():
            callers = self._pm.get_hookcallers(plugin) or []
            dist, version = self._infos.get(name, ("?", "?"))
            out.append(PluginInfo(name, dist, version, tuple(sorted(c.name for c in callers))))
        return sorted(out, key=lambda p: p.name)

    # -- registrations -----------------------------------------------------
    def _collect(self, hook: str, kind: type[R]) -> list[R]:
        if hook in self._cache:
            return self._cache[hook]
        seen: dict[str, str] = {}
        results: list[R] = []
        caller = getattr(self._pm.hook, hook)
        for impl in caller.get_hookimpls():  # registration order
            for item in impl.function() or []:
                if not isinstance(item, kind):
                    raise PluginError(
                        f"plugin {impl.plugin_name!r} returned {type(item).__name__} from "
                        f"{hook}; expected {kind.__name__}"
                    )
                if item.name in seen:
                    raise PluginError(
                        f"{kind.__name__} name {item.name!r} is provided by both "
                        f"{seen[item.name]!r} and {impl.plugin_name!r}"
                    )
                seen[item.name] = impl.plugin_name
                self._providers[(kind.__name__, item.name)] = impl.plugin_name
                results.append(item)
        self._cache[hook] = results
        return results

    def codecs(self) -> list[CodecSpec]:
        """Every codec; two on one slot, name or ``CodecPreference`` value stop start-up."""
        return check_codecs(self._collect("register_codecs", CodecSpec))

    def capture_sources(self) -> list[CaptureSpec]:
        return self._collect("register_capture_sources", CaptureSpec)

    def input_sinks(self) -> list[InputSpec]:
        return self._collect("register_input_sinks", InputSpec)

    def auth_methods(self) -> list[AuthMethod]:
        """Authentication methods in the order they are tried."""
        return sorted(self._collect("register_auth_methods", AuthMethod),
                      key=lambda m: (m.order, m.name))

    def key_issuer(self) -> Callable[[], tuple[str, str]] | None:
        """``issue_key`` of the first authentication method (by order) that has one."""
        return next((m.issue_key for m in self.auth_methods() if m.issue_key is not None), None)

    def accepts_support_codes(self) -> bool:
        """Whether a loaded authentication method admits agents by support code."""
        return any(m.accepts_support_codes for m in self.auth_methods())

    def stores(self) -> list[StoreSpec]:
        return self._collect("register_stores", StoreSpec)

    def recording_stores(self) -> list[RecordingStoreSpec]:
        return self._collect("register_recording_stores", RecordingStoreSpec)

    def consent_prompts(self) -> list[ConsentPromptSpec]:
        return self._collect("register_consent_prompts", ConsentPromptSpec)

    def web_apps(self) -> list[WebAppSpec]:
        return self._collect("register_web_apps", WebAppSpec)

    def services(self) -> list[ServiceSpec]:
        return self._collect("register_services", ServiceSpec)

    def select(self, items: Sequence[R], name: str, what: str) -> R:
        """The registration called ``name``; a miss lists the choices."""
        for item in items:
            if item.name == name:
                return item
        choices = ", ".join(sorted(i.name for i in items)) or "none installed"
        raise PluginError(f"no {what} named {name!r}; available: {choices}")

    def store_for_url(self, url: str) -> StoreSpec:
        """The store handling the URL's scheme (``postgresql+asyncpg`` counts as ``postgresql``)."""
        scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
        return _by_scheme(self.stores(), scheme,
                          f"no storage plugin handles database URLs of scheme {scheme!r}",
                          "is store_sql loaded?")

    def recording_store_for_url(self, url: str) -> RecordingStoreSpec:
        """The recording store handling the URL's scheme."""
        scheme = url.split(":", 1)[0].lower()
        return _by_scheme(self.recording_stores(), scheme,
                          f"no plugin keeps recordings at URLs of scheme {scheme!r}",
                          "is recording_files loaded?")

    # -- policy and notifications ----------------------------------------------
    def consent_policy(self, ask: ConsentAsk) -> ConsentDecision | None:
        decision: ConsentDecision | None = self._pm.hook.consent_policy(ask=ask)
        return decision

    def session_opened(self, session: SessionRecord) -> None:
        self._notify(lambda: self._pm.hook.session_opened(session=session))

    def session_closed(self, session: SessionRecord, reason: str) -> None:
        self._notify(lambda: self._pm.hook.session_closed(session=session, reason=reason))

    def audit_event(self, event: AuditEvent) -> None:
        self._notify(lambda: self._pm.hook.audit_event(event=event))

    @staticmethod
    def _notify(call: Callable[[], object]) -> None:
        """A failing listener is logged, never allowed to break the session."""
        try:
            call()
        except Exception:
            log.exception("a plugin's notification hook failed")


_S = TypeVar("_S", StoreSpec, RecordingStoreSpec)


def _by_scheme(specs: Sequence[_S], scheme: str, missing: str, hint: str) -> _S:
    """The registration whose ``schemes`` hold ``scheme``; a miss says which are handled."""
    for spec in specs:
        if scheme in spec.schemes:
            return spec
    known = sorted({s for spec in specs for s in spec.schemes})
    raise PluginError(f"{missing}; handled: {known or f'none ({hint})'}")
