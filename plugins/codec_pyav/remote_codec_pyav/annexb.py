"""The true frame size, carried in an Annex B SEI message on every keyframe.

4:2:0 H.264 and H.265 can only code even sizes (their cropping works in
two-pixel units), so an odd-sized display is padded before encoding. The real
size travels in-band as a standard ``user_data_unregistered`` SEI message,
which decoders that do not know it skip, so the viewer can crop the padding
off again. The text payload ("size=1365x767") never contains two zero bytes,
so no emulation-prevention bytes are needed.
"""

from __future__ import annotations

import re

__all__ = ["H264_SEI_HEADER", "H265_SEI_HEADER", "find_size", "size_sei"]

SIZE_UUID = bytes.fromhex("7b6a3f1e9d2c4b8aa5e6f1d2c3b4a596")
"""Identifies our SEI payload (ISO/IEC 11578 UUID, chosen without zero bytes)."""

H264_SEI_HEADER = b"\x06"  # nal_unit_type 6 (SEI), nal_ref_idc 0
H265_SEI_HEADER = b"\x4e\x01"  # nal_unit_type 39 (prefix SEI), layer 0, temporal id 0

_START_CODE = b"\x00\x00\x00\x01"
_USER_DATA_UNREGISTERED = 5
_SIZE = re.compile(rb"size=(\d{1,5})x(\d{1,5})\x80")


def size_sei(nal_header: bytes, width: int, height: int) -> bytes:
    """One SEI NAL unit (with its start code) stating the frame size."""
    body = SIZE_UUID + f"size={width}x{height}".encode()
    return _START_CODE + nal_header + bytes([_USER_DATA_UNREGISTERED, len(body)]) + body + b"\x80"


def find_size(access_unit: bytes) -> tuple[int, int] | None:
    """The size stated by our SEI in ``access_unit``, or ``None`` when there is none."""
    at = access_unit.find(SIZE_UUID)
    if at < 0:
        return None
    match = _SIZE.match(access_unit, at + len(SIZE_UUID))
    if match is None:
        return None
    return int(match[1]), int(match[2])
