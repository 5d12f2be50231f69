"""Fetching a release over verified HTTPS into the agent's staging file (blocking; run in a thread).

Only ``https`` is accepted, also after a redirect; certificates are verified
against the system store plus the agent's ``ca_bundle``, never skipped. The
SHA-256 is computed while the bytes arrive, and a body shorter than its
``Content-Length`` is an error, not a file.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from remote_core.errors import ConfigError
from remote_core.tlsclient import client_context

__all__ = ["DownloadError", "Transient", "download", "fetch_small", "require_https", "tls_context"]

_CHUNK = 64 * 1024
_TIMEOUT = 30.0


class DownloadError(Exception):
    """The download cannot succeed; the message is for ``UpdateStatus.error_message``.

    ``status`` is the HTTP status when the host answered with an error, so the
    version poll can tell "no release published" (404) from a failure.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Transient(DownloadError):
    """A failure worth another attempt (network trouble, a cut-off body, a 5xx)."""


def tls_context(ca_bundle: str = "") -> ssl.SSLContext:
    """Verifying TLS against the system's roots plus, when configured, ``ca_bundle``'s.

    The bundle adds to the system's roots rather than replacing them: the poll
    goes to the server and the download to a release host, which often carry
    certificates from different authorities (a public one and a private one),
    and a bundle that replaced the roots made one of the two fail. What a build
    must be is decided by the server's checksum and the pinned signature, not
    by which authority certified the host.
    """
    try:
        return client_context(ca_bundle)
    except ConfigError as exc:
        raise DownloadError(str(exc)) from None


def require_https(url: str) -> None:
    if urlsplit(url).scheme.lower() != "https":
        shown = url.split("?", 1)[0][:200]
        raise DownloadError(f"refused {shown}: updates are downloaded over HTTPS only")


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> Any:
        require_https(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _request(url: str, bearer: str = "") -> urllib.request.Request:
    request = urllib.request.Request(  # noqa: S310 - callers check the scheme
        url, headers={"User-Agent": "remote-agent"})
    if bearer:  # to this URL only: a redirect never carries it on
        request.add_unredirected_header("Authorization", f"Bearer {bearer}")
    return request


def _open(url: str, context: ssl.SSLContext, bearer: str = "") -> Any:
    require_https(url)
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.HTTPSHandler(context=context), _HttpsOnlyRedirects(),
                    urllib.request.HTTPErrorProcessor(), urllib.request.HTTPDefaultErrorHandler()):
        opener.add_handler(handler)
    try:
        return opener.open(_request(url, bearer), timeout=_TIMEOUT)
    except urllib.error.HTTPError as exc:
        error = Transient if exc.code >= 500 else DownloadError
        raise error(f"download failed: HTTP {exc.code} {exc.reason}", exc.code) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise DownloadError(f"TLS certificate not trusted: {reason.verify_message}") from None
        if isinstance(reason, ssl.SSLError):
            raise DownloadError(f"TLS failed: {reason}") from None
        raise Transient(f"download failed: {reason}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise Transient(f"download failed: {exc}") from None


def _copy(response: Any, out: IO[bytes], progress: Callable[[int], None]) -> str:
    """Stream the body into ``out``; the SHA-256 hex of what arrived."""
    if "text/html" in (response.headers.get("Content-Type") or "").lower():
        raise DownloadError("the server answered with an HTML page, not the release")
    length_header = response.headers.get("Content-Length")
    expected = int(length_header) if length_header and length_header.isdigit() else None
    digest = hashlib.sha256()
    received = 0
    progress(0)
    try:
        while chunk := response.read(_CHUNK):
            out.write(chunk)
            digest.update(chunk)
            received += len(chunk)
            if expected:
                progress(min(100, received * 100 // expected))
    except http.client.IncompleteRead as exc:
        received += len(exc.partial)
        raise Transient(_incomplete(received, expected)) from None
    except (OSError, http.client.HTTPException) as exc:
        raise Transient(f"download interrupted after {received} bytes: {exc}") from None
    if expected is not None and received != expected:
        raise Transient(_incomplete(received, expected))
    progress(100)
    return digest.hexdigest()


def _incomplete(received: int, expected: int | None) -> str:
    return f"download incomplete: {received} of {expected} bytes arrived"


def download(url: str, target: Path, context: ssl.SSLContext,
             progress: Callable[[int], None]) -> str:
    """Write ``url``'s body to ``target`` (owner-only); return its SHA-256 hex."""
    with _open(url, context) as response:
        fd = _create(target)
        with open(fd, "wb") as out:
            return _copy(response, out, progress)


def fetch_small(url: str, context: ssl.SSLContext, limit: int = 64 * 1024,
                allow_http: bool = False, bearer: str = "") -> bytes:
    """A small document (a signature, the version poll); larger than ``limit`` is an error.

    ``allow_http`` admits the server's own plain-http base URL, for the poll only;
    ``bearer`` is sent as ``Authorization`` to that URL alone, never after a redirect.
    """
    if allow_http and urlsplit(url).scheme.lower() == "http":
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
        try:
            response = opener.open(_request(url, bearer), timeout=_TIMEOUT)
        except urllib.error.HTTPError as exc:
            raise DownloadError(f"HTTP {exc.code} {exc.reason}", exc.code) from None
        except (OSError, http.client.HTTPException) as exc:
            raise Transient(str(exc)) from None
    else:
        response = _open(url, context, bearer)
    try:
        with response:
            data: bytes = response.read(limit + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise Transient(f"{urlsplit(url).path}: {exc}") from None
    if len(data) > limit:
        raise DownloadError(f"{urlsplit(url).path} is larger than {limit} bytes")
    return data


def _create(target: Path) -> int:
    target.unlink(missing_ok=True)
    return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
