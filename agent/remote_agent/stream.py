"""The shared video stream's state, with no I/O: who watches, which display and codec, how fast.

One stream per session, fanned out by the server: ``StartStream`` adds a
viewer (with the codecs it decodes) and asks for a keyframe, ``StopStream``
removes one, and with nobody left the agent stops capturing. The codec is
chosen for the viewers there are (:func:`remote_core.codecs.choose_codec`) and
chosen again whenever one joins or leaves or a control viewer asks for
another; left to the agent, it is a lossless codec with a lossy one for motion.
``SwitchDisplay``, ``QualitySettings`` and a codec change each force a keyframe
(CONTRACT 1).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from remote_core.codecs import (
    choose_codec,
    decoded_by,
    encoder_config,
    motion_codec,
    profile_for,
    shared_extensions,
)
from remote_core.protocol import pb
from remote_core.types import CodecSpec

__all__ = ["StreamState"]

log = logging.getLogger(__name__)


@dataclass
class StreamState:
    """What to stream; the streamer reads it, the message handlers change it.

    :param codecs: the codecs this agent has.
    """

    codecs: Sequence[CodecSpec] = ()
    viewers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each viewer's codec list (``StartStream.codecs``; empty: the codec slots)."""
    display_id: int = 0
    quality: pb.QualitySettings = field(default_factory=pb.QualitySettings)
    codec: CodecSpec | None = None
    """The codec streamed in, chosen for the viewers there are; ``None`` before any."""
    motion: CodecSpec | None = None
    """Left to the agent (``CODEC_AUTO``) with a lossless :attr:`codec`: the lossy codec
    the stream moves to while the screen moves (:mod:`remote_agent.adaptive`)."""
    extensions: frozenset[str] = frozenset()
    """The :attr:`codec`'s extensions every viewer decodes (``raw_copy``): the encoder is
    built again when they change, so a viewer never gets a frame it cannot draw."""
    keyframe_wanted: bool = False
    generation: int = 0
    """Bumped whenever the encoder must be rebuilt (display, codec or quality changed)."""

    @property
    def active(self) -> bool:
        return bool(self.viewers)

    @property
    def codec_preference(self) -> int:
        return int(self.quality.codec)

    def fps(self) -> int:
        custom = int(self.quality.custom_fps)
        return custom if 1 <= custom <= 60 else profile_for(int(self.quality.preset)).fps

    def start(self, viewer_id: str, display_id: int, codecs: Sequence[str] = ()) -> None:
        """``StartStream``: the first viewer picks the display; every one gets a keyframe
        in a codec it decodes (a lagging viewer's repeat changes nothing else)."""
        if not self.viewers and display_id != self.display_id:
            self.display_id = display_id
            self.generation += 1
        self.viewers[viewer_id] = tuple(codecs)
        self.keyframe_wanted = True
        self.choose()

    def stop(self, viewer_id: str) -> None:
        if self.viewers.pop(viewer_id, None) is not None:
            self.choose()

    def switch(self, display_id: int) -> None:
        if display_id != self.display_id:
            self.display_id = display_id
            self.generation += 1
        self.keyframe_wanted = True

    def set_quality(self, quality: pb.QualitySettings) -> None:
        """Apply ``QualitySettings``; out-of-range values raise ``ValueError`` (nothing changes)."""
        encoder_config(16, 16, quality)  # validates custom_fps and custom_bitrate
        profile_for(int(quality.preset))
        self.quality = quality
        self.generation += 1
        self.keyframe_wanted = True
        self.choose()

    def choose(self) -> None:
        """Choose the codec again for the viewers there are now; a change rebuilds the
        encoder and starts with a keyframe. Nothing changes while nobody watches."""
        if not self.viewers:
            return
        try:
            codec = choose_codec(self.codecs, self.codec_preference,
                                 name=self.quality.codec_name, viewers=self.viewers.values())
        except ValueError as exc:
            log.warning("no codec to stream in: %s", exc)
            codec = None
        if codec is not None:
            left_out = sum(not decoded_by(codec, c) for c in self.viewers.values())
            if left_out:
                log.warning("no codec decodes for every viewer: %s chosen, %d of %d viewers "
                            "get no picture", codec.name, left_out, len(self.viewers))
        motion = None
        if (codec is not None and codec.lossless and not self.quality.codec_name
                and self.codec_preference == pb.CODEC_AUTO):
            motion = motion_codec(self.codecs, self.viewers.values())
        extensions = (frozenset() if codec is None
                      else shared_extensions(codec, self.viewers.values()))
        if codec != self.codec or motion != self.motion or extensions != self.extensions:
            self.codec, self.motion, self.extensions = codec, motion, extensions
            self.generation += 1
            self.keyframe_wanted = True

    def take_keyframe(self) -> bool:
        """Whether the next frame must be a keyframe (and clear the request)."""
        wanted, self.keyframe_wanted = self.keyframe_wanted, False
        return wanted
