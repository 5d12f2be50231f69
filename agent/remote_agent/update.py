"""Self-update: from an offer (pushed ``UpdateInfo`` or the hourly poll) to a restart.

Steps, each reported as ``UpdateStatus`` (SPEC 2.2): CHECKING the offer (newer,
HTTPS, an artifact to replace), DOWNLOADING into the agent's own staging file
with ``progress_percent``, VERIFYING the SHA-256 and, when a publisher key is
pinned, the Ed25519 signature, INSTALLING by one atomic rename that keeps the
previous build, RESTARTING. The new process, started with ``--post-update``,
cleans up and reports COMPLETE. Any failure reports FAILED with the reason and
leaves the running agent as it was. Transient download failures are retried a
bounded number of times; an offer that failed is not taken again by the poll,
so nothing loops.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import zipfile
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import anyio
import anyio.from_thread
import anyio.to_thread

from remote_core.protocol import pb

from . import __version__
from .config import AgentConfig
from .update_download import (
    DownloadError,
    Transient,
    download,
    fetch_small,
    require_https,
    tls_context,
)
from .update_files import UpdateFiles, running_artifact
from .update_signature import SignatureError, load_public_key, verify_file
from .update_version import is_newer

__all__ = ["Offer", "Report", "UpdateFailed", "Updater"]

log = logging.getLogger(__name__)

Report = Callable[[Any], Coroutine[Any, Any, None]]
"""Sends one ``UpdateStatus`` to the server."""


@dataclass(frozen=True)
class Offer:
    """A release the agent may install (``UpdateInfo`` or the ``/api/version`` answer)."""

    version: str
    download_url: str
    checksum_sha256: str
    mandatory: bool = False

    @classmethod
    def from_info(cls, info: Any) -> Offer:
        return cls(version=info.version, download_url=info.download_url,
                   checksum_sha256=info.checksum_sha256.strip().lower(),
                   mandatory=info.mandatory)


class UpdateFailed(Exception):
    """An update step failed; the message is the ``error_message`` reported."""


class Updater:
    """One per agent process: runs at most one update at a time and remembers failures.

    :param artifact: the file to replace; ``None`` when the agent does not run from
        a release build (it then reports every update as failed).
    """

    def __init__(self, config: AgentConfig, artifact: Path | None = None, *,
                 current: str = __version__, attended: bool = False, attempts: int = 3,
                 retry_delay: float = 2.0) -> None:
        self.config = config
        self.files = UpdateFiles(artifact) if artifact is not None else None
        self.current = current
        self.attended = attended
        self.attempts = attempts
        self.retry_delay = retry_delay
        self.offer: Offer | None = None
        self.installed: str | None = None
        self.failed: set[str] = set()
        self._busy = False
        self._after_restart: Any | None = None

    @classmethod
    def for_this_process(cls, config: AgentConfig, *, attended: bool,
                         post_update: bool) -> Updater:
        """The updater of the running agent; after a restart it prepares the COMPLETE report."""
        updater = cls(config, running_artifact(), attended=attended)
        updater.finish_restart(post_update)
        return updater

    @property
    def busy(self) -> bool:
        return self._busy

    # -- after the restart -------------------------------------------------------------------
    def finish_restart(self, post_update: bool) -> None:
        """Clean what an earlier update left and queue its outcome for the server.

        The outcome is known from the marker even when the process was killed
        after the swap and started again without ``--post-update``.
        """
        pending = self.files.pending() if self.files is not None else None
        if self.files is not None:
            self.files.clean()
        if pending is None:
            if post_update:
                self._after_restart = self._status(
                    pb.UPDATE_FAILED, "restarted for an update, but none was installed")
        elif pending["to"] == self.current:
            log.info("updated from %s to %s", pending["from"], self.current)
            self._after_restart = self._status(pb.UPDATE_COMPLETE, progress=100)
        else:
            self._after_restart = self._status(
                pb.UPDATE_FAILED, f"the update to {pending['to']} did not take effect; "
                                  f"running {self.current}")

    async def connected(self, report: Report) -> None:
        """Once connected after a restart, tell the server how the update ended."""
        status = self._after_restart
        if status is not None:
            await report(status)
            self._after_restart = None  # kept for the next connection if this one broke

    # -- the poll ------------------------------------------------------------------------------
    async def check(self) -> Offer | None:
        """Ask the server's ``GET /api/version`` (with the agent's key, which names its
        tenant's release channel); a release newer than ours, not failed before."""
        url = urljoin(self.config.server.rstrip("/") + "/", "api/version")
        try:
            context = tls_context(self.config.ca_bundle)
            body = await anyio.to_thread.run_sync(
                lambda: fetch_small(url, context, allow_http=True, bearer=self.config.key))
            data = json.loads(body)
            offer = Offer(version=str(data["version"]), download_url=str(data["download_url"]),
                          checksum_sha256=str(data["checksum_sha256"]).lower(),
                          mandatory=bool(data.get("mandatory", False)))
        except DownloadError as exc:
            if exc.status == 404:  # the server has no release: nothing is wrong
                log.debug("update check: no release published")
            else:  # an agent that cannot poll never updates: say so where it is seen
                log.warning("update check failed: %s", exc)
            return None
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("update check: the server's answer is not a release: %s", exc)
            return None
        try:
            newer = is_newer(offer.version, self.current)
        except ValueError:
            return None
        if not newer or offer.version in self.failed:
            return None
        return offer

    # -- the update ----------------------------------------------------------------------------
    async def run(self, offer: Offer, report: Report) -> bool:
        """Update to ``offer``; ``True`` when installed and the process must restart."""
        if self._busy or self.installed:
            log.info("update to %s ignored: an update is already under way", offer.version)
            return False
        self._busy = True
        try:
            await self._update(offer, report)
        except UpdateFailed as exc:
            self.failed.add(offer.version)
            log.warning("update to %s failed: %s", offer.version, exc)
            if self.files is not None:
                self.files.staging.unlink(missing_ok=True)
            await report(self._status(pb.UPDATE_FAILED, str(exc)))
            return False
        finally:
            self._busy = False
        self.installed = offer.version
        await self.restarting(report)
        return True

    async def restarting(self, report: Report) -> None:
        """Say the agent restarts into the installed build; the restart must happen even
        when the server cannot hear of it (a lost connection would otherwise leave the old
        process running with the new build on disk, refusing every later update)."""
        try:
            await report(self._status(pb.UPDATE_RESTARTING, progress=100))
        except Exception as exc:  # a courtesy, like progress reports
            log.warning("could not report the restart into %s: %s", self.installed, exc)

    async def _update(self, offer: Offer, report: Report) -> None:
        await report(self._status(pb.UPDATE_CHECKING))
        files = self._accept(offer)
        signature = await self._signature(offer)
        await self._download(offer, files, report)
        await report(self._status(pb.UPDATE_VERIFYING, progress=100))
        await anyio.to_thread.run_sync(self._verify, files.staging, signature)
        await anyio.to_thread.run_sync(self._smoke_test, files.staging, offer.version)
        await report(self._status(pb.UPDATE_INSTALLING, progress=100))
        try:
            await anyio.to_thread.run_sync(files.install, self.current, offer.version)
        except OSError as exc:
            files.marker.unlink(missing_ok=True)
            raise UpdateFailed(f"install failed: {exc}") from None
        log.info("installed %s over %s (previous kept as %s)", offer.version, self.current,
                 files.previous.name)

    def _accept(self, offer: Offer) -> UpdateFiles:
        if self.attended:
            raise UpdateFailed("an attended agent serves one session and does not update")
        if self.files is None:
            raise UpdateFailed("this agent does not run from a release build; "
                               "reinstall it from one to enable updates")
        try:
            newer = is_newer(offer.version, self.current)
        except ValueError as exc:
            raise UpdateFailed(str(exc)) from None
        if not newer:
            raise UpdateFailed(f"{offer.version} is not newer than the running "
                               f"{self.current}; agents never downgrade")
        if len(offer.checksum_sha256) != 64 or any(c not in "0123456789abcdef"
                                                   for c in offer.checksum_sha256):
            raise UpdateFailed("the release has no valid SHA-256 checksum")
        try:
            require_https(offer.download_url)
        except DownloadError as exc:
            raise UpdateFailed(str(exc)) from None
        return self.files

    async def _signature(self, offer: Offer) -> bytes | None:
        """The publisher's signature, fetched first when a key is pinned (else ``None``)."""
        if not self.config.update_public_key:
            return None
        try:
            context = tls_context(self.config.ca_bundle)
            return await anyio.to_thread.run_sync(
                lambda: fetch_small(offer.download_url + ".sig", context, limit=1024))
        except DownloadError as exc:
            raise UpdateFailed(f"the release signature could not be fetched: {exc}") from None

    async def _download(self, offer: Offer, files: UpdateFiles, report: Report) -> None:
        try:
            context = tls_context(self.config.ca_bundle)
        except DownloadError as exc:
            raise UpdateFailed(str(exc)) from None
        shown = -1

        def progress(percent: int) -> None:
            nonlocal shown
            if shown < 0 or percent >= shown + 10 or (percent == 100 and shown != 100):
                shown = percent
                try:  # progress is a courtesy: a lost report never stops the download
                    anyio.from_thread.run(report, self._status(pb.UPDATE_DOWNLOADING,
                                                               progress=percent))
                except Exception as exc:
                    log.debug("download progress not reported: %s", exc)

        for attempt in range(1, self.attempts + 1):
            shown = -1
            try:
                digest = await anyio.to_thread.run_sync(
                    download, offer.download_url, files.staging, context, progress)
            except Transient as exc:
                if attempt == self.attempts:
                    raise UpdateFailed(f"{exc} (gave up after {attempt} attempts)") from None
                log.warning("update download attempt %d failed: %s", attempt, exc)
                await anyio.sleep(self.retry_delay * attempt)
                continue
            except DownloadError as exc:
                raise UpdateFailed(str(exc)) from None
            except OSError as exc:
                raise UpdateFailed(f"cannot write {files.staging.name}: {exc}") from None
            if digest != offer.checksum_sha256:
                raise UpdateFailed(f"checksum mismatch: the download has SHA-256 {digest}, "
                                   f"the release says {offer.checksum_sha256}")
            return

    def _verify(self, staging: Path, signature: bytes | None) -> None:
        if signature is not None:
            try:
                verify_file(load_public_key(self.config.update_public_key), staging, signature)
            except (SignatureError, ValueError) as exc:
                raise UpdateFailed(str(exc)) from None
        try:
            with zipfile.ZipFile(staging) as archive:
                names = set(archive.namelist())
                broken = archive.testzip()
        except (OSError, zipfile.BadZipFile) as exc:
            raise UpdateFailed(f"the download is not an agent build: {exc}") from None
        if "__main__.py" not in names or broken is not None:
            raise UpdateFailed("the download is not an agent build (no __main__.py, or "
                               "a damaged member)")

    def _smoke_test(self, staging: Path, version: str) -> None:
        """Start the new build once (``--version``): it must run and be the promised release.

        A build labelled with the wrong version would otherwise be installed,
        restart as the old version, and be offered again at every poll.
        """
        try:
            run = subprocess.run([sys.executable, str(staging), "--version"],
                                 capture_output=True, text=True, timeout=60, check=False,
                                 stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UpdateFailed(f"the new build does not start: {exc}") from None
        reported = run.stdout.strip()
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["no output"])[-1]
            raise UpdateFailed(f"the new build does not start: {last[:200]}")
        if reported != version:
            raise UpdateFailed(f"the download is version {reported[:64]!r}, not {version}")

    def _status(self, state: pb.UpdateState, error: str = "",
                progress: int = 0) -> Any:
        return pb.UpdateStatus(current_version=self.current, state=state,
                               error_message=error[:500], progress_percent=progress)
