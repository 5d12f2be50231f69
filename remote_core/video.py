"""The one mapping between a codec's :class:`EncodedFrame` and the wire's ``VideoFrame``.

Codecs make and take :class:`~remote_core.types.EncodedFrame`; the agent wraps
each into a ``VideoFrame`` with :func:`to_wire` and a viewer unwraps it with
:func:`from_wire`, each in one place. A codec with a slot of its own
(``CodecSpec.frame_field``) fills that slot; any other codec fills the slot
whose message names its codec (``PluginFrame``, :data:`NAMED_SLOT`). The
slots are read from the generated descriptor (the ``encoding`` oneof), and a
slot's message is filled by field name, so a slot added to
``proto/remote_support.proto`` needs no change here.
"""

from __future__ import annotations

from google.protobuf.message import Message

from .protocol import SLOT_NAMES, pb
from .types import CodecSpec, CopyRect, EncodedFrame, Rect

__all__ = ["CODEC_SLOTS", "NAMED_SLOT", "SLOTS", "from_wire", "slot_for", "to_wire"]

SLOTS: tuple[str, ...] = tuple(SLOT_NAMES.values())
"""Every ``VideoFrame.encoding`` field, in the proto's order."""

_KEYFRAME_FIELDS = ("keyframe", "is_keyframe")
_RECTS = "dirty_rects"
_COPIES = "copies"
_DATA = "data"
_CODEC = "codec"


def _fields(slot: str) -> set[str]:
    return set(pb.VideoFrame.DESCRIPTOR.fields_by_name[slot].message_type.fields_by_name)


NAMED_SLOT: str = next(slot for slot in SLOTS if _CODEC in _fields(slot))
"""The slot whose message names its codec: where a codec without a slot of its own goes."""

CODEC_SLOTS: frozenset[str] = frozenset(SLOTS) - {NAMED_SLOT}
"""The slots that are a codec of their own (the slot fixes the format); also what a viewer
that lists no codecs decodes."""


def slot_for(spec: CodecSpec) -> str:
    """The slot ``spec``'s frames go in.

    :raises ValueError: ``frame_field`` names no codec slot.
    """
    if not spec.frame_field:
        return NAMED_SLOT
    if spec.frame_field not in CODEC_SLOTS:
        raise ValueError(f"codec {spec.name!r} names VideoFrame slot {spec.frame_field!r}; "
                         f"the codec slots are {sorted(CODEC_SLOTS)}, or leave it empty "
                         "for a plugin frame named by the codec")
    return spec.frame_field


def _keyframe_field(message: Message) -> str:
    names = message.DESCRIPTOR.fields_by_name
    return next(name for name in _KEYFRAME_FIELDS if name in names)


def to_wire(frame: EncodedFrame, spec: CodecSpec) -> pb.VideoFrame:
    """``frame``, made by ``spec``'s encoder, in its slot of a new ``VideoFrame``
    (timestamp, display and sequence are the caller's to set).

    :raises ValueError: the spec names no codec slot, or ``frame`` carries something its
        slot cannot (dirty rectangles in a VP9 slot ...).
    """
    slot = slot_for(spec)
    video = pb.VideoFrame()
    payload: Message = getattr(video, slot)
    payload.SetInParent()
    names = payload.DESCRIPTOR.fields_by_name
    values: dict[str, object] = {
        _DATA: frame.data, _keyframe_field(payload): frame.keyframe, "width": frame.width,
        "height": frame.height, "compressed": frame.compressed, "pts": frame.pts,
        "dts": frame.dts, "rows": frame.rows, "repeat": frame.repeat}
    if _CODEC in names:
        values[_CODEC] = spec.name
    for name, value in values.items():
        if name in names:
            setattr(payload, name, value)
        elif value:
            raise ValueError(f"a {slot!r} frame carries no {name}")
    if _RECTS in names:
        rects = getattr(payload, _RECTS)
        for r in frame.rects:
            rects.add(x=r.x, y=r.y, width=r.width, height=r.height)
    elif frame.rects:
        raise ValueError(f"a {slot!r} frame carries no dirty rectangles")
    if _COPIES in names:
        copies = getattr(payload, _COPIES)
        for c in frame.copies:
            copies.add(x=c.x, y=c.y, width=c.width, height=c.height, src_x=c.src_x,
                       src_y=c.src_y)
    elif frame.copies:
        raise ValueError(f"a {slot!r} frame carries no copies")
    return video


def from_wire(video: pb.VideoFrame) -> tuple[str, EncodedFrame]:
    """The codec of a ``VideoFrame``, by wire name (:attr:`CodecSpec.wire_name`: its slot,
    or the name a plugin frame gives), and the codec's frame inside it.

    :raises ValueError: the frame fills no slot, or a plugin frame names no codec.
    """
    slot: str | None = video.WhichOneof("encoding")
    if slot is None:
        raise ValueError(f"VideoFrame carries no encoding ({', '.join(SLOTS)})")
    payload: Message = getattr(video, slot)
    names = payload.DESCRIPTOR.fields_by_name
    codec: str = getattr(payload, _CODEC) if _CODEC in names else slot
    if not codec:
        raise ValueError(f"a {slot!r} frame names no codec")

    def value(name: str) -> int:
        return int(getattr(payload, name)) if name in names else 0

    rects: tuple[Rect, ...] = ()
    if _RECTS in names:
        rects = tuple(Rect(r.x, r.y, r.width, r.height) for r in getattr(payload, _RECTS))
    copies: tuple[CopyRect, ...] = ()
    if _COPIES in names:
        copies = tuple(CopyRect(c.x, c.y, c.width, c.height, c.src_x, c.src_y)
                       for c in getattr(payload, _COPIES))
    data: bytes = getattr(payload, _DATA)
    return codec, EncodedFrame(
        data=data, keyframe=bool(value(_keyframe_field(payload))),
        width=value("width"), height=value("height"), rects=rects,
        compressed=bool(value("compressed")), pts=value("pts"), dts=value("dts"),
        copies=copies, rows=value("rows"), repeat=bool(value("repeat")))
