"""Codec policy shared by the agent and the viewers: quality presets, negotiation, keyframes.

The one place that says what a ``QualitySettings`` means (frame rate, bitrate,
Zstandard level), which codecs may be loaded together, which codec the agent
streams in for the viewers it has, when a keyframe is due (CONTRACT 1,
"Keyframes"), and how a viewer decodes a stream whose codec may change
mid-way. No codec library is imported here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import PluginError
from .interfaces import Decoder
from .protocol import pb
from .types import CodecSpec, EncodedFrame, EncoderConfig
from .video import CODEC_SLOTS, SLOTS, slot_for

__all__ = [
    "KEYFRAME_INTERVAL_S",
    "MAX_BITRATE_KBPS",
    "MAX_PIXELS",
    "MAX_SIDE",
    "MIN_BITRATE_KBPS",
    "PRESETS",
    "FrameDecoder",
    "KeyframeClock",
    "QualityProfile",
    "Viewers",
    "as_image",
    "check_codecs",
    "choose_codec",
    "decodable",
    "decoded_by",
    "encoder_config",
    "motion_codec",
    "profile_for",
    "shared_extensions",
    "usable_codecs",
    "zstd_level",
]

KEYFRAME_INTERVAL_S = 10.0
"""A keyframe at least this often while streaming (CONTRACT 1)."""

MAX_SIDE = 16_384
MAX_PIXELS = 8_192 * 4_608
"""Largest frame a decoder accepts (a little over 8K UHD), so a header from the
wire cannot make a viewer allocate gigabytes."""

MIN_BITRATE_KBPS = 100
MAX_BITRATE_KBPS = 100_000
"""Accepted ``QualitySettings.custom_bitrate`` range; 0 means "the preset's"."""

_REFERENCE_PIXELS = 1920 * 1080


@dataclass(frozen=True, slots=True)
class QualityProfile:
    """What a quality preset means.

    :param fps: frames per second the agent aims for.
    :param bitrate_kbps: lossy-codec bitrate cap at 1920x1080; other sizes scale by
        the pixel count to the power 0.75 (small pictures need more bits per pixel).
    :param crf: constant-quality target on the H.264/H.265 scale (0-51, lower is
        better). Lossy codecs aim for this quality and use the bitrate as a cap,
        so a still screen sharpens to readable text instead of staying as blurry
        as a bitrate-starved keyframe left it.
    :param zstd_level: Zstandard level of the raw codec (lossless at every preset,
        so the preset trades CPU for bandwidth: low bandwidth compresses harder).
    """

    fps: int
    bitrate_kbps: int
    crf: int
    zstd_level: int


PRESETS: dict[int, QualityProfile] = {
    pb.QUALITY_LOW: QualityProfile(fps=10, bitrate_kbps=1_000, crf=28, zstd_level=6),
    pb.QUALITY_BALANCED: QualityProfile(fps=30, bitrate_kbps=4_000, crf=23, zstd_level=3),
    pb.QUALITY_HIGH: QualityProfile(fps=30, bitrate_kbps=10_000, crf=20, zstd_level=1),
}
PRESETS[pb.QUALITY_AUTO] = PRESETS[pb.QUALITY_BALANCED]


def profile_for(preset: int) -> QualityProfile:
    """The profile of a ``QualityPreset`` value; an unknown value is a ``ValueError``."""
    try:
        return PRESETS[preset]
    except KeyError:
        raise ValueError(
            f"unknown quality preset {preset}; expected one of {sorted(PRESETS)} "
            "(QUALITY_AUTO, QUALITY_LOW, QUALITY_BALANCED, QUALITY_HIGH)"
        ) from None


def zstd_level(preset: int) -> int:
    """The raw codec's Zstandard level for a ``QualityPreset`` value."""
    return profile_for(preset).zstd_level


def encoder_config(width: int, height: int,
                   quality: pb.QualitySettings | None = None) -> EncoderConfig:
    """The encoder configuration for a display size and a ``QualitySettings`` (or ``None``).

    ``custom_fps`` (1-60) and ``custom_bitrate`` (kbps) override the preset when
    non-zero; out-of-range values raise ``ValueError`` naming the field.
    """
    preset = int(quality.preset) if quality is not None else pb.QUALITY_AUTO
    fps = int(quality.custom_fps) if quality is not None else 0
    kbps = int(quality.custom_bitrate) if quality is not None else 0
    profile = profile_for(preset)
    if fps and not 1 <= fps <= 60:
        raise ValueError(f"custom_fps must be 1-60 (SPEC 8), or 0 for the preset's; got {fps}")
    if kbps and not MIN_BITRATE_KBPS <= kbps <= MAX_BITRATE_KBPS:
        raise ValueError(
            f"custom_bitrate must be {MIN_BITRATE_KBPS}-{MAX_BITRATE_KBPS} kbps, "
            f"or 0 for the preset's; got {kbps}"
        )
    if not kbps:
        scale = ((width * height) / _REFERENCE_PIXELS) ** 0.75
        kbps = max(MIN_BITRATE_KBPS, round(profile.bitrate_kbps * scale))
    return EncoderConfig(width=width, height=height, fps=fps or profile.fps,
                         bitrate_kbps=kbps, preset=preset)


# -- negotiation -------------------------------------------------------------------


def usable_codecs(specs: Iterable[CodecSpec], *, encode: bool = False,
                  decode: bool = False) -> list[CodecSpec]:
    """The codecs whose library works here and that have the factories asked for."""
    out = []
    for spec in specs:
        if encode and spec.encoder_factory is None:
            continue
        if decode and spec.decoder_factory is None:
            continue
        if spec.available():
            out.append(spec)
    return out


def check_codecs(specs: Sequence[CodecSpec]) -> list[CodecSpec]:
    """``specs``, once they are known not to collide; called at start-up, so a clash stops
    the program instead of one decoder silently shadowing another by load order.

    :raises PluginError: a codec names a slot that is no codec slot, two codecs go on the
        wire under one name (one slot, or a plugin codec named like a slot), or two answer
        to one ``CodecPreference`` value.
    """
    by_wire: dict[str, CodecSpec] = {}
    by_preference: dict[int, CodecSpec] = {}
    for spec in specs:
        try:
            slot_for(spec)
        except ValueError as exc:
            raise PluginError(str(exc)) from None
        if not spec.frame_field and spec.name in SLOTS:
            raise PluginError(f"codec {spec.name!r} sends plugin frames under the name of the "
                              f"VideoFrame slot {spec.name!r}; choose another name")
        other = by_wire.get(spec.wire_name)
        if other is not None:
            what = (f"the {spec.wire_name!r} slot" if spec.wire_name in CODEC_SLOTS
                    else f"the name {spec.wire_name!r}")
            raise PluginError(f"codecs {other.name!r} and {spec.name!r} both claim {what}; "
                              "block one (REMOTE_SUPPORT_BLOCK_PLUGINS)")
        by_wire[spec.wire_name] = spec
        for extension in spec.extensions:
            if not extension.startswith(spec.wire_name + "_"):
                raise PluginError(f"codec {spec.name!r} names its extension {extension!r}; "
                                  f"an extension's name begins with {spec.wire_name + '_'!r}")
            if extension in by_wire:
                raise PluginError(f"codec {spec.name!r}'s extension {extension!r} is named "
                                  f"like codec {by_wire[extension].name!r} on the wire")
            by_wire[extension] = spec
        if spec.preference:
            other = by_preference.get(spec.preference)
            if other is not None:
                raise PluginError(
                    f"codecs {other.name!r} and {spec.name!r} both answer to CodecPreference "
                    f"value {spec.preference}; a plugin codec leaves preference at 0 and is "
                    "asked for by name")
            by_preference[spec.preference] = spec
    return list(specs)


def decodable(specs: Iterable[CodecSpec]) -> list[str]:
    """What a viewer with these codecs lists in ``SessionRequest.codecs``: the wire names
    of the codecs it can decode here, in registration order, each followed by the
    extensions its decoder understands (:attr:`CodecSpec.extensions`)."""
    return [name for spec in usable_codecs(specs, decode=True)
            for name in (spec.wire_name, *spec.extensions)]


Viewers = Iterable[Collection[str] | None]
"""The codec lists of the viewers of a stream (``StartStream.codecs``); ``None`` or empty
for a viewer that listed none, which decodes the codec slots (SPEC's viewers)."""


def decoded_by(spec: CodecSpec, codecs: Collection[str] | None) -> bool:
    """Whether a viewer that listed ``codecs`` decodes ``spec``'s frames."""
    if not codecs:
        return bool(spec.frame_field)
    return spec.wire_name in codecs


def shared_extensions(spec: CodecSpec, viewers: Viewers) -> frozenset[str]:
    """The extensions of ``spec`` that every viewer lists: what its encoder may use
    (:attr:`EncoderConfig.extensions`). A viewer that listed no codecs knows none."""
    lists = list(viewers)
    return frozenset(name for name in spec.extensions
                     if lists and all(codecs and name in codecs for codecs in lists))


def choose_codec(specs: Iterable[CodecSpec], preference: int = pb.CODEC_AUTO, *,
                 name: str = "", viewers: Viewers = ()) -> CodecSpec:
    """The codec the agent streams in, for its viewers and what a control viewer asked for.

    Only a codec every viewer decodes is a candidate (if none is, the codecs the most
    viewers decode, and the others get no picture until that changes). Among them: the
    codec asked for by wire or registered ``name`` (``QualitySettings.codec_name``), else
    by ``preference`` (``QualitySettings.codec``), else the candidate of highest
    ``auto_rank`` among the codecs with a slot of their own (a plugin codec only when no
    such candidate is left); left to the agent (``CODEC_AUTO``, no name), a lossless one
    first, and the stream moves to :func:`motion_codec` while the screen moves.
    ``ValueError`` when nothing can encode at all.
    """
    usable = usable_codecs(specs, encode=True)
    if not usable:
        raise ValueError("no usable video codec is installed (is codec_raw_zstd loaded?)")
    lists = list(viewers)
    reach = {spec.name: sum(decoded_by(spec, codecs) for codecs in lists) for spec in usable}
    most = max(reach.values())
    candidates = [spec for spec in usable if reach[spec.name] == most]
    for spec in candidates:
        if name and name in (spec.name, spec.wire_name):
            return spec
    for spec in candidates:
        if preference != pb.CODEC_AUTO and spec.preference == preference:
            return spec
    pool = [spec for spec in candidates if spec.frame_field] or candidates
    if preference == pb.CODEC_AUTO and not name:
        pool = [spec for spec in pool if spec.lossless] or pool
    return _best(pool)


def motion_codec(specs: Iterable[CodecSpec], viewers: Viewers = ()) -> CodecSpec | None:
    """The lossy codec with a slot of its own, of highest ``auto_rank``, that every viewer
    decodes: what an automatic stream switches to while the screen moves (``None``: none)."""
    lists = list(viewers)
    lossy = [spec for spec in usable_codecs(specs, encode=True)
             if spec.frame_field and not spec.lossless
             and all(decoded_by(spec, codecs) for codecs in lists)]
    return _best(lossy) if lossy else None


def _best(specs: list[CodecSpec]) -> CodecSpec:
    """Highest ``auto_rank``; on a tie the lower ``CodecPreference`` value."""
    return max(specs, key=lambda s: (s.auto_rank, -s.preference))


def as_image(image: Any) -> memoryview:
    """``image`` as a C-contiguous ``(height, width, 4)`` byte view (BGRA), without a copy
    when it already is one.

    An image is any buffer of that shape and format ``B``: a numpy uint8 array, or a
    ``memoryview`` cast to the shape (what a capture source needs no numpy to make).
    Every encoder checks its input with this, so a wrong shape or type is one clear
    ``ValueError`` whatever the codec; one that works on numpy takes
    ``numpy.asarray(as_image(image))``, which shares the memory.
    """
    try:
        view = memoryview(image)
    except TypeError:
        raise ValueError(f"expected a BGRA image buffer, got {type(image).__name__}") from None
    shape = view.shape or ()
    if view.format != "B" or len(shape) != 3 or shape[2] != 4 or 0 in shape:
        raise ValueError(
            "expected a BGRA image of shape (height, width, 4) and format 'B' (uint8), "
            f"got shape {shape} and format {view.format!r}"
        )
    if not view.c_contiguous:
        view = memoryview(view.tobytes()).cast("B", shape)
    return view


class FrameDecoder:
    """Decodes one display's stream whose codec may change (a quality change, the
    automatic codec).

    One decoder per codec, built on first use; a switch closes the previous one
    (its state is useless after the agent's keyframe on the new codec) and hands
    the new one the last picture (``Decoder.begin_from``), which a codec extension
    may draw over instead of waiting for a keyframe.
    """

    def __init__(self, specs: Iterable[CodecSpec]) -> None:
        self._specs = {s.wire_name: s for s in usable_codecs(specs, decode=True)}
        self._codec: str | None = None
        self._decoder: Decoder | None = None
        self._picture: Any = None  # the last image decoded, of whichever codec

    def decode(self, codec: str, frame: EncodedFrame) -> Any:
        """The full current image of a frame of ``codec`` (as :func:`remote_core.video.from_wire`
        names it), ``None`` while waiting for a keyframe; ``ValueError`` for garbage or a
        codec this viewer has no decoder for."""
        if codec != self._codec or self._decoder is None:
            spec = self._specs.get(codec)
            if spec is None or spec.decoder_factory is None:
                raise ValueError(
                    f"no decoder for {codec!r} frames; this viewer decodes {sorted(self._specs)}"
                )
            self._close_decoder()
            self._decoder = spec.decoder_factory()
            self._codec = codec
            if self._picture is not None:
                self._decoder.begin_from(self._picture)
        picture = self._decoder.decode(frame)
        if picture is not None:
            self._picture = picture
        return picture

    def close(self) -> None:
        self._close_decoder()
        self._picture = None

    def _close_decoder(self) -> None:
        if self._decoder is not None:
            self._decoder.close()
        self._decoder = None
        self._codec = None


# -- keyframes ---------------------------------------------------------------------


def _monotonic() -> float:
    return time.monotonic()  # looked up at each call, so a test can move the clock


class KeyframeClock:
    """Says when the periodic keyframe is due (CONTRACT 1: at least every 10 s).

    :param clock: seconds, ``time.monotonic`` by default (read at each call: the codec
        contract's keyframe-interval test moves it).
    """

    def __init__(self, interval: float = KEYFRAME_INTERVAL_S,
                 clock: Callable[[], float] = _monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._last: float | None = None

    def due(self) -> bool:
        """True before the first keyframe and once the interval has passed."""
        return self._last is None or self._clock() - self._last >= self._interval

    def sent(self) -> None:
        """Record that a keyframe went out now."""
        self._last = self._clock()
