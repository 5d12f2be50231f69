"""TLS terminated by ``remote-support serve`` itself, with the certificate reloaded on SIGHUP.

One :class:`ssl.SSLContext` serves every connection. A reload loads the files
into that same context: OpenSSL copies the certificate into each connection
when its handshake starts, so connections already open (live WebSocket
sessions) keep theirs and the next handshake presents the new one. Nothing is
closed or restarted.

Files are first tried on a scratch context, so a reload with a missing file,
a bad PEM or a key that does not match leaves the live context untouched: the
old certificate keeps serving and one error line says why.
"""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

from remote_core.errors import ConfigError

__all__ = ["CertificateReloader", "server_context"]

log = logging.getLogger(__name__)


def server_context() -> ssl.SSLContext:
    """A server context of today's defaults: TLS 1.2 at least, no client certificates."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class CertificateReloader:
    """The live server context and the files it is loaded from.

    :param cert: PEM certificate chain (the server's certificate first).
    :param key: PEM private key; ``None`` when ``cert`` holds the key as well.
    :raises ConfigError: the files cannot be loaded at start-up.
    """

    def __init__(self, cert: str, key: str | None = None) -> None:
        self.cert = cert
        self.key = key
        self.context = server_context()
        problem = self._check()
        if problem is not None:
            raise ConfigError(problem)
        self.context.load_cert_chain(self.cert, self.key)

    def _check(self) -> str | None:
        """Why the files cannot be loaded, or ``None`` when a scratch context takes them."""
        for setting, path in (("tls_cert", self.cert), ("tls_key", self.key)):
            if path is not None and not Path(path).is_file():
                return f"setting {setting!r}: no file at {path}"
        try:
            server_context().load_cert_chain(self.cert, self.key)
        except ssl.SSLError as exc:
            files = f"{self.cert} and {self.key}" if self.key else self.cert
            return (f"settings 'tls_cert'/'tls_key' ({files}): not a PEM certificate chain "
                    f"and its matching private key ({exc.reason or exc})")
        except OSError as exc:
            return f"settings 'tls_cert'/'tls_key': cannot read {exc.filename}: {exc.strerror}"
        return None

    def reload(self) -> bool:
        """Load the files again into the live context (SIGHUP); on failure keep the old
        certificate, log one error and return False."""
        problem = self._check()
        if problem is None:
            try:
                self.context.load_cert_chain(self.cert, self.key)
            except (ssl.SSLError, OSError) as exc:  # replaced between the check and the load
                problem = f"settings 'tls_cert'/'tls_key': {exc}"
        if problem is not None:
            log.error("TLS certificate not reloaded, the previous one stays in use: %s", problem)
            return False
        log.info("TLS certificate reloaded from %s; new connections get it, open ones keep "
                 "theirs", self.cert)
        return True
