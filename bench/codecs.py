"""Codec benchmark: encode and decode time, bytes per frame and quality on desktop scenes.

Every usable codec plugin, at each size, on four scenes drawn by the codec
contract's ``Desktop`` (static screen, typing in a 200x40 region, scrolling a
text page, full-screen video-like motion), beside two references measured in
the same run: a plain memory copy of the frame and Zstandard level 1 of the
whole frame. Lossy codecs run at the balanced preset; encode time includes the
BGRA to YUV conversion, decode time the conversion back.

    uv run python -m bench.codecs                          # 1920x1080 and 1280x720, 30 frames
    uv run python -m bench.codecs --sizes 640x360 --frames 10 --codecs raw_zstd,h264
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import zstandard
from av.video.frame import VideoFrame
from av.video.reformatter import VideoReformatter

from bench.report import report
from remote_core.codecs import encoder_config, usable_codecs
from remote_core.plugins import get_plugin_manager
from remote_core.settings import PluginSettings
from remote_core.testing.codec_contract import LINE_H, Desktop, psnr, video_like
from remote_core.types import CodecSpec

SCENES = ("static", "typing", "scrolling", "video")
TARGETS = (
    # (codec, size, scene, what, frames per second or None, milliseconds or None)
    ("raw_zstd", "1920x1080", "typing", "typing frame encoded incl. dirty detection", None, 3.0),
    ("raw_zstd", "1920x1080", "static", "unchanged screen detected", None, 1.0),
    ("h264", "1920x1080", "video", "H.264 incl. colour conversion", 55, None),
    ("h264", "1280x720", "video", "H.264 incl. colour conversion", 80, None),
    ("vp9", "1920x1080", "video", "VP9 real-time", 45, None),
)


def scene(name: str, width: int, height: int, frames: int) -> Iterator[Any]:
    """The first frame (sent as a keyframe, not measured), then ``frames`` frames."""
    if name == "video":
        for t in range(frames + 1):
            yield video_like(width, height, t)
        return
    desktop = Desktop(width, height, seed=1)
    yield desktop.image.copy()
    for _ in range(frames):
        if name == "typing":
            desktop.type(1, region=(200, 40))
        elif name == "scrolling":
            desktop.scroll(LINE_H // 2)
        yield desktop.image.copy()


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = call()
    return result, (time.perf_counter() - start) * 1000


def row(size: str, scene_name: str, codec: str, enc: list[float], dec: list[float],
        sizes: list[int] | None, frame_bytes: int, quality: list[float],
        keyframe: int | str = "-") -> dict[str, Any]:
    """One table row; "-" where a figure does not apply, "none sent" for a still screen."""
    enc_ms = statistics.median(enc)
    finite = [q for q in quality if q != float("inf")]
    mean_bytes = statistics.fmean(sizes) if sizes else 0.0
    return {
        "size": size, "scene": scene_name, "codec": codec,
        "enc ms": enc_ms, "dec ms": statistics.median(dec) if dec else "-",
        "enc fps": 1000 / enc_ms,
        "bytes/frame": "-" if sizes is None else round(mean_bytes),
        "ratio": "-" if sizes is None else
                 frame_bytes / mean_bytes if mean_bytes else "none sent",
        "PSNR dB": "exact" if quality and not finite else
                   (statistics.fmean(finite) if finite else "-"),
        "keyframe bytes": keyframe,
    }


def bench_codec(spec: CodecSpec, size: str, scene_name: str, frames: int) -> dict[str, Any]:
    width, height = (int(v) for v in size.split("x"))
    assert spec.encoder_factory is not None and spec.decoder_factory is not None
    encoder = spec.encoder_factory(encoder_config(width, height))
    decoder = spec.decoder_factory()
    enc, dec, sizes, quality = [], [], [], []
    keyframe: int | str = "-"
    for i, image in enumerate(scene(scene_name, width, height, frames)):
        frame, ms = timed(lambda image=image, i=i: encoder.encode(image, keyframe=i == 0))
        size_bytes = len(frame.data) if frame is not None else 0
        if i == 0:
            keyframe = size_bytes
            decoder.decode(frame)
            continue
        enc.append(ms)
        sizes.append(size_bytes)
        if frame is not None:
            shown, ms = timed(lambda frame=frame: decoder.decode(frame))
            dec.append(ms)
            quality.append(psnr(shown, image))
    encoder.close()
    decoder.close()
    return row(size, scene_name, spec.name, enc, dec, sizes, width * height * 4, quality, keyframe)


def bench_references(size: str, scene_name: str, frames: int) -> list[dict[str, Any]]:
    """A memory copy, Zstandard level 1 of the whole frame, and the BGRA-to-I420 conversion."""
    width, height = (int(v) for v in size.split("x"))
    target = np.empty((height, width, 4), np.uint8)
    compressor, decompressor = zstandard.ZstdCompressor(level=1), zstandard.ZstdDecompressor()
    reformatter = VideoReformatter()
    copy, zenc, zdec, zsizes, convert = [], [], [], [], []
    for i, image in enumerate(scene(scene_name, width, height, frames)):
        if i == 0:
            continue
        copy.append(timed(lambda image=image: np.copyto(target, image))[1])
        data, ms = timed(lambda image=image: compressor.compress(image))
        zenc.append(ms)
        zsizes.append(len(data))
        zdec.append(timed(lambda data=data: decompressor.decompress(data))[1])
        convert.append(timed(lambda image=image: reformatter.reformat(
            VideoFrame.from_numpy_buffer(image, format="bgra"), format="yuv420p"))[1])
    full = width * height * 4
    return [
        row(size, scene_name, "memcpy (ref)", copy, [], [full] * len(copy), full, []),
        row(size, scene_name, "zstd-1 full (ref)", zenc, zdec, zsizes, full, []),
        row(size, scene_name, "BGRA->I420 (ref)", convert, [], None, full, []),
    ]


def check_targets(rows: list[dict[str, Any]]) -> list[str]:
    notes = []
    for codec, size, scene_name, what, fps, ms in TARGETS:
        key = (codec, size, scene_name)
        found = [r for r in rows if (r["codec"], r["size"], r["scene"]) == key]
        if not found:
            continue
        r = found[0]
        if fps is not None:
            met = r["enc fps"] >= fps
            notes.append(f"target {what} at {size} ({scene_name}): >= {fps} fps; "
                         f"measured {r['enc fps']:.0f} fps: {'met' if met else 'MISSED'}")
        else:
            met = r["enc ms"] < ms
            notes.append(f"target {what} at {size}: < {ms} ms; "
                         f"measured {r['enc ms']:.3f} ms: {'met' if met else 'MISSED'}")
    return notes


def main(sizes: list[str], frames: int, names: list[str] | None) -> None:
    # Every installed codec plugin, built-in or not (codec_av1 is not a default).
    plugins = get_plugin_manager(PluginSettings(autoload_plugins=True))
    specs = usable_codecs(plugins.codecs(), encode=True, decode=True)
    if names:
        specs = [s for s in specs if s.name in names]
    rows: list[dict[str, Any]] = []
    for size in sizes:
        for scene_name in SCENES:
            rows.extend(bench_references(size, scene_name, frames))
            for spec in specs:
                rows.append(bench_codec(spec, size, scene_name, frames))
                print(f"  {size} {scene_name} {spec.name}: {rows[-1]['enc ms']:.2f} ms", flush=True)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    notes = [f"{frames} frames per scene after a first keyframe; medians of per-frame times; "
             "ratio = BGRA frame bytes / mean bytes per frame; PSNR over frames sent; "
             "lossy codecs at QUALITY_BALANCED (encoder_config defaults); "
             f"{os.cpu_count()} CPUs, load average at the end {load}."]
    report("codecs", rows, title="Codecs: encode/decode per frame on desktop scenes",
           notes=notes + check_targets(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1920x1080,1280x720",
                        help="comma-separated WIDTHxHEIGHT (default: %(default)s)")
    parser.add_argument("--frames", type=int, default=30, help="frames per scene")
    parser.add_argument("--codecs", default="", help="comma-separated codec names (default: all)")
    args = parser.parse_args()
    main(args.sizes.split(","), args.frames, [c for c in args.codecs.split(",") if c] or None)
