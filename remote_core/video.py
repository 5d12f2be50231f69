"""The one mapping between a codec's :class:`EncodedFrame` and the wire's ``VideoFrame``.

Codecs make and take :class:`~remote_core.types.EncodedFrame`; the agent wraps
each into a ``VideoFrame`` with :func:`to_wire` and a viewer unwraps it with
:func:`from_wire`, each in one place. The slots are read from the generated
descriptor (the ``encoding`` oneof), and a slot's message is filled by field
name, so a slot added to ``proto/remote_support.proto`` needs no change here.
"""

from __future__ import annotations

from google.protobuf.message import Message

from .protocol import pb
from .types import EncodedFrame, Rect

__all__ = ["SLOTS", "from_wire", "slot_of", "to_wire"]

_ENCODING = pb.VideoFrame.DESCRIPTOR.oneofs_by_name["encoding"]
SLOTS: tuple[str, ...] = tuple(field.name for field in _ENCODING.fields)
"""Every ``VideoFrame.encoding`` field, in the proto's order."""

_KEYFRAME_FIELDS = ("keyframe", "is_keyframe")
_RECTS = "dirty_rects"
_DATA = "data"


def _keyframe_field(message: Message) -> str:
    names = message.DESCRIPTOR.fields_by_name
    return next(name for name in _KEYFRAME_FIELDS if name in names)


def to_wire(frame: EncodedFrame, slot: str) -> pb.VideoFrame:
    """``frame`` in the ``slot`` field of a new ``VideoFrame`` (timestamp, display and
    sequence are the caller's to set).

    :raises ValueError: ``slot`` is no ``VideoFrame.encoding`` field, or ``frame`` carries
        something that slot cannot (dirty rectangles in a VP9 slot ...).
    """
    if slot not in SLOTS:
        raise ValueError(f"{slot!r} is no VideoFrame slot; slots are {list(SLOTS)}")
    video = pb.VideoFrame()
    payload: Message = getattr(video, slot)
    payload.SetInParent()
    names = payload.DESCRIPTOR.fields_by_name
    values: dict[str, object] = {
        _DATA: frame.data, _keyframe_field(payload): frame.keyframe, "width": frame.width,
        "height": frame.height, "compressed": frame.compressed, "pts": frame.pts,
        "dts": frame.dts}
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
    return video


def slot_of(video: pb.VideoFrame) -> str:
    """The ``VideoFrame.encoding`` field that is set; ``ValueError`` when none is."""
    slot: str | None = video.WhichOneof("encoding")
    if slot is None:
        raise ValueError(f"VideoFrame carries no encoding ({', '.join(SLOTS)})")
    return slot


def from_wire(video: pb.VideoFrame) -> tuple[str, EncodedFrame]:
    """The slot a ``VideoFrame`` fills and the codec's frame inside it.

    :raises ValueError: the frame fills no slot.
    """
    slot = slot_of(video)
    payload: Message = getattr(video, slot)
    names = payload.DESCRIPTOR.fields_by_name

    def value(name: str) -> int:
        return int(getattr(payload, name)) if name in names else 0

    rects: tuple[Rect, ...] = ()
    if _RECTS in names:
        rects = tuple(Rect(r.x, r.y, r.width, r.height) for r in getattr(payload, _RECTS))
    data: bytes = getattr(payload, _DATA)
    return slot, EncodedFrame(
        data=data, keyframe=bool(value(_keyframe_field(payload))),
        width=value("width"), height=value("height"), rects=rects,
        compressed=bool(value("compressed")), pts=value("pts"), dts=value("dts"))
