"""The shared video stream's state, with no I/O: who watches, which display, how fast.

One stream per session, fanned out by the server: ``StartStream`` adds a
viewer and asks for a keyframe, ``StopStream`` removes one, and with nobody
left the agent stops capturing. ``SwitchDisplay`` and ``QualitySettings``
change the stream for everyone and each forces a keyframe (CONTRACT 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from remote_core.codecs import encoder_config, profile_for
from remote_core.protocol import pb

__all__ = ["StreamState"]


@dataclass
class StreamState:
    """What to stream; the streamer reads it, the message handlers change it."""

    viewers: set[str] = field(default_factory=set)
    display_id: int = 0
    quality: pb.QualitySettings = field(default_factory=pb.QualitySettings)
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

    def start(self, viewer_id: str, display_id: int) -> None:
        """``StartStream``: the first viewer picks the display; every one gets a keyframe."""
        if not self.viewers and display_id != self.display_id:
            self.display_id = display_id
            self.generation += 1
        self.viewers.add(viewer_id)
        self.keyframe_wanted = True

    def stop(self, viewer_id: str) -> None:
        self.viewers.discard(viewer_id)

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

    def take_keyframe(self) -> bool:
        """Whether the next frame must be a keyframe (and clear the request)."""
        wanted, self.keyframe_wanted = self.keyframe_wanted, False
        return wanted
