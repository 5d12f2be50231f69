"""The server's settings: ``REMOTE_SUPPORT_*`` variables and ``remote-support`` flags.

The TOML file (``--config``) holds them flat or under ``[remote_support]``, and
each plugin's options under ``[plugins.NAME]``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from remote_core.errors import ConfigError
from remote_core.settings import PluginSettings, option, positive

from .recording_policy import RecordingPolicy, Retention

__all__ = ["ServerSettings"]


@dataclass(frozen=True, repr=False)
class ServerSettings(PluginSettings):
    """Every setting of ``remote-support serve``. Secrets are never shown by ``repr``."""

    ENV_ALIASES: ClassVar[Mapping[str, tuple[str, str]]] = {
        "SHARED_AGENT_KEY": ("auth_sharedkey", "key"),  # CONTRACT 4
    }
    DEFAULT_PLUGINS: ClassVar[tuple[str, ...] | None] = (
        "store_sql", "auth_agentkey", "auth_supportcode", "auth_sharedkey", "web_console",
        "webhooks", "recording_files", "recording_s3")
    """Codecs run on agents and viewers: a server loads one only to serve its browser
    decoder, added with ``EXTRA_PLUGINS``."""

    host: str = option("127.0.0.1", "listen address")
    port: int = option(8080, "listen port (0 picks a free one)")
    database_url: str = option("sqlite:///remote-support.db", "SQLAlchemy URL of the database")
    admin_password: str | None = option(
        None, "first admin's password, used only when no user exists", secret=True, cli=False)
    public_origins: tuple[str, ...] = option((), "origins allowed on /ws/viewer (default: own)")
    trusted_proxies: tuple[str, ...] = option(
        (), "addresses/networks whose X-Forwarded-For counts")
    jwt_secret: str | None = option(
        None, "token signing secret (default: generated and stored)", secret=True, cli=False)
    login_token_ttl: int = option(8 * 3600, "login token lifetime, seconds")
    signing_key_refresh: float = option(
        30.0, "seconds between rereads of the token-signing keys (a rotation reaches a "
              "running server within this)")
    max_message_bytes: int = option(16 * 1024 * 1024, "largest WebSocket message accepted")
    max_transfer_bytes: int = option(
        16 * 1024 ** 3, "most bytes one file transfer may move, either way (FILE_TRANSFER)")
    # -- session recording ----------------------------------------------------------------
    recordings: str = option(
        "off", "record sessions: off; on (every session from the first technician who "
               "watches to the last; attended end users told before consenting and while "
               "it runs); or notice (on, and managed machines show their end user the "
               "session panel, which says so)")
    recording_policy: tuple[str, ...] = option(
        (), "recording modes other than RECORDINGS' for some machines: "
            "organization:NAME=MODE, tag:NAME=MODE, machine:AGENT_ID=MODE or "
            "tenant:TENANT_ID=MODE entries (MODE off, on or notice); a machine's own entry "
            "wins, then its tags' (the strongest), then its organization's, then its "
            "tenant's")
    recording_keystrokes: str = option(
        "content", "what recordings keep of typing: content (every key event as relayed) "
                   "or timing (when keys went down and up, never which)")
    recordings_url: str = option(
        "file:recordings", "where recordings go: file:FOLDER (relative to the working "
                           "directory) or file:///absolute/folder, or another recording "
                           "store plugin's URL")
    recording_buffer_bytes: int = option(
        64 * 1024 * 1024, "recorded bytes held for a slow recording store before the "
                          "recording is cut short (marked incomplete); never slows viewers")
    recordings_keep_days: int = option(
        0, "days a recording is kept; older ones are purged (audited). 0 keeps them")
    recording_retention: tuple[str, ...] = option(
        (), "retentions other than RECORDINGS_KEEP_DAYS' for some machines: "
            "organization:NAME=DAYS, tag:NAME=DAYS, machine:AGENT_ID=DAYS or "
            "tenant:TENANT_ID=DAYS entries (0 keeps them); a machine's own entry wins, then "
            "its tags' (the longest), then its organization's, then its tenant's")
    heartbeat_interval: float = option(15.0, "seconds between heartbeats")
    heartbeat_timeout: float = option(45.0, "seconds of silence before a peer is dropped")
    first_message_timeout: float = option(10.0, "seconds to wait for session_request")
    max_pending_sockets_per_ip: int = option(
        32, "WebSockets one client address may hold open before their session_request")
    max_pending_sockets: int = option(
        1024, "WebSockets all addresses together may hold open before their session_request")
    max_agents_waiting: int = option(
        2048, "agents whose session_request is in and who wait their turn to be admitted; "
              "past it the next is told to retry later")
    request_body_timeout: float = option(30.0, "seconds a client has to send a request body")
    consent_timeout: int = option(60, "seconds an attended agent has to answer consent")
    session_panel_managed: bool = option(
        False, "managed agents show their end user the session panel (who is connected, "
               "chat, End session) while a technician is connected, as attended ones always "
               "do; sent to the agent in StartStream.session_panel")
    session_panel_organizations: tuple[str, ...] = option(
        (), "the organizations whose managed machines show the session panel (as "
            "SESSION_PANEL_MANAGED does for every organization)")
    viewer_buffer_bytes: int = option(8 * 1024 * 1024, "video bytes queued per viewer at most")
    ws_impl: str = option("websockets-sansio",
                          "uvicorn WebSocket implementation (fastest measured: bench/relay.py)")
    loop: str = option("auto", "uvicorn event loop (auto, asyncio, uvloop); auto picks uvloop, "
                               "the fastest measured, where it is installed")
    bus_url: str | None = option(
        None, "cluster mode: the NATS bus joining the nodes (nats://host:4222); unset, this "
              "process is the only server")
    cluster_name: str = option(
        "remote-support", "the cluster's name: its subjects on the bus and its keys in "
                          "Redis start with it, so several clusters may share both")
    node_id: str | None = option(
        None, "this node's id in a cluster (default: host name and a random suffix)")
    node_url: str | None = option(
        None, "the address the other nodes reach this node at (default: http://, or "
              "https:// with tls_cert, with the listen address and port, the host name when "
              "listening on every interface)")
    node_lease: float = option(
        10.0, "seconds a cluster node counts as alive after its last announcement (it "
              "announces every third of this)")
    limits_url: str | None = option(
        None, "shared rate limits and lockouts (redis://host:6379/0); required in cluster "
              "mode, so every node counts the same attempts")
    # -- the join page (/join): what end users are shown and given --------------------
    join_agent_file: str | None = option(
        None, "the self-contained agent release (remote-support release build) the join "
              "page hands out, with the server URL and the code inside; unset, the page "
              "says no agent is available")
    join_server_url: str | None = option(
        None, "the base URL a joining agent connects to (default: the URL the end user's "
              "browser reached the join page at)")
    join_ca_bundle: str | None = option(
        None, "PEM file of the private CA behind the server's certificate, put inside the "
              "joining agent's download (the system's authorities always count too)")
    join_organization: str = option(
        "", "the organization named to end users beside the technician on the join page")
    # -- watching it run: GET /metrics and the log format ------------------------------
    metrics: bool = option(
        False, "serve Prometheus metrics at /metrics, to holders of metrics_token and/or "
               "clients in metrics_networks (at least one is required)")
    metrics_token: str | None = option(
        None, "bearer token /metrics requires (Prometheus: authorization credentials)",
        secret=True, cli=False)
    metrics_networks: tuple[str, ...] = option(
        (), "client addresses/networks allowed to read /metrics")
    log_format: str = option("text", "log line format: text, or json (one object a line)")
    # -- serving TLS itself (reloaded on SIGHUP) ----------------------------------------
    tls_cert: str | None = option(
        None, "PEM certificate chain: serve https:// and wss:// directly (reloaded on SIGHUP)")
    tls_key: str | None = option(
        None, "PEM private key of tls_cert (unset: the key is in the tls_cert file)")
    # -- single sign-on with OpenID Connect (off while oidc_issuer is unset) ---------------
    oidc_issuer: str | None = option(
        None, "single sign-on: the OpenID provider's issuer URL (https://; its "
              "/.well-known/openid-configuration is read)")
    oidc_client_id: str | None = option(None, "single sign-on: this server's client id")
    oidc_client_secret: str | None = option(
        None, "single sign-on: this server's client secret", secret=True, cli=False)
    oidc_redirect_url: str | None = option(
        None, "single sign-on: https://<this server>/auth/oidc/callback, exactly as "
              "registered at the provider")
    oidc_provider_name: str = option(
        "single sign-on", "single sign-on: the name on the console's button")
    oidc_scopes: tuple[str, ...] = option(
        ("openid", "profile", "email", "groups"), "single sign-on: scopes asked for")
    oidc_username_claim: str = option(
        "preferred_username", "single sign-on: the ID token claim naming the account")
    oidc_groups_claim: str = option("groups", "single sign-on: the ID token claim of groups")
    oidc_group_roles: tuple[str, ...] = option(
        (), "single sign-on: group=role entries (admin, technician); users in none of these "
            "groups are refused")
    oidc_group_permissions: tuple[str, ...] = option(
        (), "single sign-on: group=permission entries for technicians")
    oidc_group_client_access: tuple[str, ...] = option(
        (), "single sign-on: group=organization entries for technicians")
    oidc_group_tenants: tuple[str, ...] = option(
        (), "single sign-on: group=TENANT_NAME entries: the tenant a sign-in belongs to "
            "(groups naming none: the default tenant; two different ones: refused)")
    oidc_create_users: bool = option(
        False, "single sign-on: create unknown users on first sign-in (else refused)")
    oidc_allow_http_loopback: bool = option(
        False, "single sign-on: accept http:// issuer and redirect URLs on a loopback "
               "address (a provider on the same host; never anything else)")
    oidc_ca_file: str | None = option(
        None, "single sign-on: CA bundle trusted for the provider (default: the system's)")
    # -- second factor -----------------------------------------------------------------
    require_second_factor: str = option(
        "none", "who must log in with a second factor (TOTP): none, admin (every "
                "administrator) or all (every user); until then their tokens only reach "
                "the account's own endpoints, to enrol")
    config: str | None = option(None, "TOML settings file")

    def recording_rules(self) -> RecordingPolicy:
        """``recordings`` and ``recording_policy``, read (valid: validate() checked them)."""
        return RecordingPolicy.parse(self.recordings, self.recording_policy)

    def retention_rules(self) -> Retention:
        """``recordings_keep_days`` and ``recording_retention``, read (valid)."""
        return Retention.parse(self.recordings_keep_days, self.recording_retention)

    def validate(self) -> None:
        super().validate()
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"setting 'port' must be 0-65535, got {self.port}")
        positive(self, "max_message_bytes", "max_transfer_bytes", "viewer_buffer_bytes",
                 "login_token_ttl", "consent_timeout", "max_pending_sockets_per_ip",
                 "max_pending_sockets", "max_agents_waiting",
                 "heartbeat_interval", "heartbeat_timeout", "first_message_timeout",
                 "signing_key_refresh", "request_body_timeout", "recording_buffer_bytes")
        Retention.parse(self.recordings_keep_days, self.recording_retention)
        RecordingPolicy.parse(self.recordings, self.recording_policy)
        if self.recording_keystrokes not in {"content", "timing"}:
            raise ConfigError("setting 'recording_keystrokes' must be content or timing, got "
                              f"{self.recording_keystrokes!r}")
        if self.heartbeat_timeout <= self.heartbeat_interval:
            raise ConfigError("setting 'heartbeat_timeout' must exceed 'heartbeat_interval'")
        if "://" not in self.database_url:
            raise ConfigError(
                f"setting 'database_url' must be a URL such as sqlite:///remote-support.db, "
                f"got {self.database_url!r}")
        if self.loop not in {"auto", "asyncio", "uvloop"}:
            raise ConfigError(
                f"setting 'loop' must be auto, asyncio or uvloop, got {self.loop!r}")
        positive(self, "node_lease")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.cluster_name):
            raise ConfigError("setting 'cluster_name' must be 1-64 letters, digits, '-' or "
                              f"'_', got {self.cluster_name!r}")
        if self.bus_url is not None:
            if not self.bus_url.startswith(("nats://", "tls://")):
                raise ConfigError(f"setting 'bus_url' must be a nats:// URL, got "
                                  f"{self.bus_url!r}")
            if not self.limits_url:
                raise ConfigError("cluster mode (bus_url) needs 'limits_url' (redis://...): "
                                  "each node counting attempts alone would multiply every "
                                  "rate limit by the number of nodes")
            if self.ws_impl != "websockets-sansio":
                raise ConfigError("cluster mode (bus_url) needs 'ws_impl' websockets-sansio "
                                  "(the default): a node forwards viewers' sockets through it")
        if self.limits_url is not None and not self.limits_url.startswith(
                ("redis://", "rediss://", "unix://")):
            raise ConfigError(f"setting 'limits_url' must be a redis:// URL, got "
                              f"{self.limits_url!r}")
        self._validate_observing()
        if self.tls_key and not self.tls_cert:
            raise ConfigError("setting 'tls_key' needs 'tls_cert' (the certificate chain)")
        if self.require_second_factor not in {"none", "admin", "all"}:
            raise ConfigError("setting 'require_second_factor' must be none, admin or all, "
                              f"got {self.require_second_factor!r}")
        if self.ws_impl not in {"auto", "websockets", "websockets-sansio", "wsproto"}:
            raise ConfigError(
                "setting 'ws_impl' must be auto, websockets, websockets-sansio or wsproto, "
                f"got {self.ws_impl!r}")

    def _validate_observing(self) -> None:
        if self.log_format not in {"text", "json"}:
            raise ConfigError(f"setting 'log_format' must be text or json, got "
                              f"{self.log_format!r}")
        for entry in self.metrics_networks:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ConfigError(f"setting 'metrics_networks': {entry!r} is not an address "
                                  "or network") from None
        if self.metrics_token is not None and len(self.metrics_token) < 16:
            raise ConfigError("setting 'metrics_token' must be at least 16 characters")
        if self.metrics and not (self.metrics_token or self.metrics_networks):
            raise ConfigError("setting 'metrics' needs 'metrics_token' or 'metrics_networks' "
                              "(or both): metrics are not for everyone who can reach the "
                              "server")
