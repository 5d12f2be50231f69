"""``remote-viewer``: connect to a session from a script, save a screenshot, record frames,
and list, download and upload the machine's files (a token minted with file_transfer=true)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from remote_core.errors import RemoteSupportError, SessionRefused
from remote_core.protocol import ProtocolError
from remote_core.wsclient import ConnectionClosed, HandshakeError

from .client import open_viewer
from .files import Download, FileClient, FileTransferError, open_files
from .png import write_png

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="remote-viewer", description=__doc__)
    parser.add_argument("--server", required=True, help="server base URL, http(s)://host:port")
    parser.add_argument("--token", required=True,
                        help="viewer token from POST /api/sessions/:id/viewer-token")
    parser.add_argument("--ca-bundle", default=None, metavar="PEM",
                        help="authorities trusted for the server's certificate besides the "
                             "system's (default: REMOTE_VIEWER_CA_BUNDLE); certificates are "
                             "always verified")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for video")
    parser.add_argument("--codec", default="auto", metavar="NAME",
                        help="codec wanted, by name (raw_zstd or raw, h264, vp9, h265, or a "
                             "plugin codec's name); the agent uses it while every viewer of "
                             "the session decodes it (default: the agent's choice)")
    sub = parser.add_subparsers(dest="command", required=True)
    shot = sub.add_parser("screenshot", help="save the first full frame as PNG")
    shot.add_argument("output", type=Path)
    record = sub.add_parser("record", help="record frames to a directory as PNG files")
    record.add_argument("directory", type=Path)
    record.add_argument("--frames", type=int, default=30)
    listing = sub.add_parser("ls", help="list a folder of the machine ('/': its shared roots)")
    listing.add_argument("path", nargs="?", default="/")
    get = sub.add_parser("get", help="download a file (a folder arrives as a zip), SHA-256 "
                                     "checked, resumed if the connection drops")
    get.add_argument("path")
    get.add_argument("output", type=Path)
    put = sub.add_parser("put", help="upload a file, SHA-256 checked, resumed if the "
                                     "connection drops")
    put.add_argument("source", type=Path)
    put.add_argument("path")
    put.add_argument("--overwrite", action="store_true", help="replace an existing file")
    return parser


RECONNECTS = 5
"""Times a transfer reconnects and resumes after its connection drops, before giving up."""


async def _ls(server: str, token: str, path: str, ca_bundle: str | None) -> None:
    async with open_files(server, token, ca_bundle=ca_bundle) as files:
        for entry in await files.list(path):
            kind = "d" if entry.is_dir else "l" if entry.is_link else "-"
            print(f"{kind}{entry.mode:04o} {entry.size:>14} {entry.name}"
                  + ("/" if entry.is_dir else ""))


Move = Callable[[FileClient, int], Awaitable[str]]


async def _moving(server: str, token: str, ca_bundle: str | None, move: Move) -> str:
    """Run ``move(files)`` on a connection, and again on a new one after a drop (the
    transfer resumes where it stopped), at most ``RECONNECTS`` times."""
    for attempt in range(RECONNECTS + 1):
        try:
            async with open_files(server, token, ca_bundle=ca_bundle) as files:
                return await move(files, attempt)
        except ConnectionClosed:
            if attempt == RECONNECTS:
                raise
            print(f"remote-viewer: the connection dropped; resuming ({attempt + 1})",
                  file=sys.stderr)
            await anyio.sleep(min(8.0, 0.5 * 2 ** attempt))
    raise AssertionError("unreachable")


async def _get(server: str, token: str, path: str, output: Path,
               ca_bundle: str | None) -> None:
    download = Download(path, output)

    async def move(files: FileClient, _: int) -> str:
        return await files.download(download)

    digest = await _moving(server, token, ca_bundle, move)
    print(f"{output}: {download.received} bytes, sha256 {digest}")


async def _put(server: str, token: str, source: Path, path: str, overwrite: bool,
               ca_bundle: str | None) -> None:
    async def move(files: FileClient, attempt: int) -> str:
        return await files.upload(source, path, overwrite=overwrite, resume=attempt > 0)

    size = (await anyio.Path(source).stat()).st_size
    digest = await _moving(server, token, ca_bundle, move)
    print(f"{path}: {size} bytes, sha256 {digest}")


async def _screenshot(server: str, token: str, output: Path, within: float,
                      codec: str, ca_bundle: str | None) -> None:
    async with open_viewer(server, token, view_only=codec == "auto", codec=codec,
                           ca_bundle=ca_bundle) as viewer:
        frame = await viewer.next_frame(within)
        write_png(output, frame.image)
        print(f"{output}: {frame.image.shape[1]}x{frame.image.shape[0]}")


async def _record(server: str, token: str, directory: Path, count: int, within: float,
                  codec: str, ca_bundle: str | None) -> None:
    async with open_viewer(server, token, view_only=codec == "auto", codec=codec,
                           ca_bundle=ca_bundle) as viewer:
        after = 0
        for index in range(1, count + 1):
            frame = await viewer.next_frame(within, after=after)
            after = frame.sequence
            write_png(directory / f"frame_{index:05d}.png", frame.image)
    print(f"{count} frames in {directory}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; every failure ends in one line on stderr and exit status 1."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "screenshot":
            anyio.run(_screenshot, args.server, args.token, args.output, args.timeout,
                      args.codec, args.ca_bundle)
        elif args.command == "ls":
            anyio.run(_ls, args.server, args.token, args.path, args.ca_bundle)
        elif args.command == "get":
            anyio.run(_get, args.server, args.token, args.path, args.output, args.ca_bundle)
        elif args.command == "put":
            if not args.source.is_file():
                print(f"remote-viewer: {args.source} is not a file", file=sys.stderr)
                return 1
            anyio.run(_put, args.server, args.token, args.source, args.path, args.overwrite,
                      args.ca_bundle)
        else:
            if args.frames < 1:
                print("remote-viewer: --frames must be at least 1", file=sys.stderr)
                return 2
            args.directory.mkdir(parents=True, exist_ok=True)
            anyio.run(_record, args.server, args.token, args.directory, args.frames,
                      args.timeout, args.codec, args.ca_bundle)
    except SessionRefused as exc:
        print(f"remote-viewer: the server refused the viewer: {exc}", file=sys.stderr)
        return 1
    except FileTransferError as exc:
        print(f"remote-viewer: {exc.code}: {exc.message or 'refused'}", file=sys.stderr)
        return 1
    except TimeoutError:
        print(f"remote-viewer: no picture within {args.timeout:g} s", file=sys.stderr)
        return 1
    except ConnectionClosed as exc:
        print(f"remote-viewer: the connection closed ({exc})", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"remote-viewer: cannot reach {args.server}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    except (HandshakeError, ProtocolError, RemoteSupportError, ValueError) as exc:
        print(f"remote-viewer: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    except Exception as exc:  # one clear line whatever went wrong, never a traceback
        print(f"remote-viewer: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
