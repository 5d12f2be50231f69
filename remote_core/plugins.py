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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

import pluggy

from . import ENTRY_POINT_GROUP, PROJECT_NAME, hookspecs
from .codecs import check_codecs
from .compat import incompatibility
from .errors import PluginError
from .records import AuditEvent, SessionRecord
from .types import (
    AuthMethod,
    CaptureSpec,
    CodecSpec,
    ConsentDecision,
    ConsentPromptSpec,
    InputSpec,
    Registration,
    SessionContext,
    StoreSpec,
    WebAppSpec,
)

__all__ = [
    "BUILTIN_PLUGINS",
    "PluginInfo",
    "Plugins",
    "discover",
    "get_plugin_manager",
]

log = logging.getLogger(__name__)

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


def _requested(settings: Any, available: dict[str, EntryPoint]) -> list[str]:
    blocked = set(getattr(settings, "block_plugins", ()) or ())
    if getattr(settings, "autoload_plugins", False):
        names = sorted(available)
    elif getattr(settings, "plugins", None) is not None:
        names = list(settings.plugins)
        missing = [n for n in names if n not in available]
        if missing:
            raise PluginError(
                f"plugin(s) {missing} requested in REMOTE_SUPPORT_PLUGINS are not installed; "
                f"available: {sorted(available) or 'none'}"
            )
    else:
        names = [n for n in BUILTIN_PLUGINS if n in available]
    return [n for n in names if n not in blocked]


def get_plugin_manager(settings: Any, extra: Iterable[tuple[str, object]] = ()) -> Plugins:
    """Build a fresh plugin manager for ``settings`` and wrap it in the typed facade.

    :param extra: ``(name, plugin)`` pairs registered after the entry points
        (tests and embedding); they go through the same checks.
    """
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    available = discover()
    names = _requested(settings, available)
    # Named plugins are required; the default set tolerates a broken one (it is logged).
    required = getattr(settings, "plugins", None) is not None
    failures: list[str] = []
    infos: dict[str, tuple[str, str]] = {}
    loaded: list[tuple[str, object]] = []
    not_loaded = {name: "not requested (REMOTE_SUPPORT_PLUGINS)" for name in available
                  if name not in names}
    not_loaded |= {name: "blocked (REMOTE_SUPPORT_BLOCK_PLUGINS)"
                   for name in getattr(settings, "block_plugins", ()) or () if name in available}
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
            if required:
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
    return Plugins(pm, infos, not_loaded)


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
                 not_loaded: dict[str, str] | None = None) -> None:
        self._pm = pm
        self._infos = infos
        self._cache: dict[str, list[Any]] = {}
        self.not_loaded: dict[str, str] = dict(sorted((not_loaded or {}).items()))
        """Installed plugins that are not loaded, each with the reason."""

    def names(self) -> list[str]:
        return [name for name, _ in self._pm.list_name_plugin()]

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

    def stores(self) -> list[StoreSpec]:
        return self._collect("register_stores", StoreSpec)

    def consent_prompts(self) -> list[ConsentPromptSpec]:
        return self._collect("register_consent_prompts", ConsentPromptSpec)

    def web_apps(self) -> list[WebAppSpec]:
        return self._collect("register_web_apps", WebAppSpec)

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
        for spec in self.stores():
            if scheme in spec.schemes:
                return spec
        known = sorted({s for spec in self.stores() for s in spec.schemes})
        raise PluginError(
            f"no storage plugin handles database URLs of scheme {scheme!r}; "
            f"handled: {known or 'none (is store_sql loaded?)'}"
        )

    # -- policy and notifications ----------------------------------------------
    def consent_policy(self, session: SessionContext) -> ConsentDecision | None:
        decision: ConsentDecision | None = self._pm.hook.consent_policy(session=session)
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
