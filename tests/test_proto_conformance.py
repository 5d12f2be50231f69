"""The generated descriptors against SPEC section 2, transcribed here as data.

Any change of a field number, type, label or enum value in proto/ fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf.descriptor import FieldDescriptor as FD

from remote_core.protocol import pb

S, B, BY = "string", "bool", "bytes"
I32, I64, U32, U64 = "int32", "int64", "uint32", "uint64"
REP = "repeated"

# message -> [(field, number, type, label)]; type is a scalar name, a message or an enum name.
SPEC_MESSAGES: dict[str, list[tuple[str, int, str, str]]] = {
    "SessionRequest": [("agent_id", 1, S, ""), ("session_token", 2, S, ""),
                       ("session_type", 3, "SessionType", ""), ("client_version", 4, S, "")],
    "SessionResponse": [("success", 1, B, ""), ("session_id", 2, S, ""), ("error", 3, S, ""),
                        ("display_info", 4, "DisplayInfo", "")],
    "DisplayInfo": [("displays", 1, "Display", REP), ("primary_display", 2, I32, "")],
    "Display": [("id", 1, I32, ""), ("name", 2, S, ""), ("x", 3, I32, ""), ("y", 4, I32, ""),
                ("width", 5, I32, ""), ("height", 6, I32, ""), ("is_primary", 7, B, "")],
    "SwitchDisplay": [("display_id", 1, I32, "")],
    "VideoFrame": [("timestamp", 1, I64, ""), ("display_id", 2, I32, ""), ("sequence", 3, I32, ""),
                   ("raw", 10, "RawFrame", ""), ("vp9", 11, "EncodedFrame", ""),
                   ("h264", 12, "EncodedFrame", ""), ("h265", 13, "EncodedFrame", "")],
    "RawFrame": [("width", 1, I32, ""), ("height", 2, I32, ""), ("data", 3, BY, ""),
                 ("compressed", 4, B, ""), ("dirty_rects", 5, "DirtyRect", REP),
                 ("is_keyframe", 6, B, "")],
    "DirtyRect": [("x", 1, I32, ""), ("y", 2, I32, ""), ("width", 3, I32, ""),
                  ("height", 4, I32, "")],
    "EncodedFrame": [("data", 1, BY, ""), ("keyframe", 2, B, ""), ("pts", 3, I64, ""),
                     ("dts", 4, I64, "")],
    "VideoAck": [("sequence", 1, I32, ""), ("timestamp", 2, I64, "")],
    "CursorShape": [("id", 1, U64, ""), ("hotspot_x", 2, I32, ""), ("hotspot_y", 3, I32, ""),
                    ("width", 4, I32, ""), ("height", 5, I32, ""), ("data", 6, BY, "")],
    "CursorPosition": [("x", 1, I32, ""), ("y", 2, I32, ""), ("visible", 3, B, "")],
    "MouseEvent": [("x", 1, I32, ""), ("y", 2, I32, ""), ("buttons", 3, "MouseButtons", ""),
                   ("wheel_delta_x", 4, I32, ""), ("wheel_delta_y", 5, I32, ""),
                   ("event_type", 6, "MouseEventType", "")],
    "MouseButtons": [("left", 1, B, ""), ("right", 2, B, ""), ("middle", 3, B, ""),
                     ("x1", 4, B, ""), ("x2", 5, B, "")],
    "KeyEvent": [("down", 1, B, ""), ("key_type", 2, "KeyEventType", ""), ("vk_code", 3, U32, ""),
                 ("scan_code", 4, U32, ""), ("unicode", 5, S, ""),
                 ("modifiers", 6, "Modifiers", "")],
    "Modifiers": [("ctrl", 1, B, ""), ("alt", 2, B, ""), ("shift", 3, B, ""), ("meta", 4, B, ""),
                  ("caps_lock", 5, B, ""), ("num_lock", 6, B, "")],
    "SpecialKeyEvent": [("key", 1, "SpecialKey", "")],
    "ClipboardData": [("format", 1, "ClipboardFormat", ""), ("data", 2, BY, ""),
                      ("mime_type", 3, S, "")],
    "ClipboardRequest": [],
    "QualitySettings": [("preset", 1, "QualityPreset", ""), ("custom_fps", 2, I32, ""),
                        ("custom_bitrate", 3, I32, ""), ("codec", 4, "CodecPreference", "")],
    "LatencyReport": [("rtt_ms", 1, I64, ""), ("fps", 2, I32, ""), ("bitrate_kbps", 3, I32, "")],
    "ChatMessage": [("id", 1, S, ""), ("sender", 2, S, ""), ("content", 3, S, ""),
                    ("timestamp", 4, I64, "")],
    "Heartbeat": [("timestamp", 1, I64, "")],
    "HeartbeatAck": [("client_timestamp", 1, I64, ""), ("server_timestamp", 2, I64, "")],
    "Disconnect": [("reason", 1, S, "")],
    "StartStream": [("viewer_id", 1, S, ""), ("display_id", 2, I32, "")],
    "StopStream": [("viewer_id", 1, S, "")],
    "AgentStatus": [("hostname", 1, S, ""), ("os_version", 2, S, ""), ("is_elevated", 3, B, ""),
                    ("uptime_secs", 4, I64, ""), ("display_count", 5, I32, ""),
                    ("is_streaming", 6, B, ""), ("agent_version", 7, S, ""),
                    ("organization", 8, S, ""), ("site", 9, S, ""), ("tags", 10, S, REP)],
    "AdminCommand": [("command", 1, "AdminCommandType", ""), ("reason", 2, S, "")],
    "ConsentRequest": [("session_id", 1, S, ""), ("technician_name", 2, S, ""),
                       ("access_mode", 3, "ConsentAccessMode", ""), ("timeout_secs", 4, I32, "")],
    "ConsentResponse": [("session_id", 1, S, ""), ("granted", 2, B, ""), ("reason", 3, S, "")],
    "UpdateInfo": [("version", 1, S, ""), ("download_url", 2, S, ""),
                   ("checksum_sha256", 3, S, ""), ("mandatory", 4, B, "")],
    "UpdateStatus": [("current_version", 1, S, ""), ("state", 2, "UpdateState", ""),
                     ("error_message", 3, S, ""), ("progress_percent", 4, I32, "")],
}

# Messages beyond SPEC (CONTRACT 1), carried by fields of 100 and up.
CONTRACT_MESSAGES: dict[str, list[tuple[str, int, str, str]]] = {
    "Participants": [("participants", 1, "Participant", REP)],
    "Participant": [("name", 1, S, ""), ("access_mode", 2, "ConsentAccessMode", "")],
    "PluginFrame": [("codec", 1, S, ""), ("data", 2, BY, ""), ("keyframe", 3, B, ""),
                    ("width", 4, I32, ""), ("height", 5, I32, ""),
                    ("dirty_rects", 6, "DirtyRect", REP), ("pts", 7, I64, "")],
    "BackstageOpen": [("viewer_id", 1, S, ""), ("rows", 2, U32, ""), ("cols", 3, U32, ""),
                      ("technician_name", 4, S, "")],
    "BackstageData": [("viewer_id", 1, S, ""), ("data", 2, BY, "")],
    "BackstageResize": [("viewer_id", 1, S, ""), ("rows", 2, U32, ""), ("cols", 3, U32, "")],
    "BackstageAck": [("viewer_id", 1, S, ""), ("bytes", 2, U64, "")],
    "BackstageClose": [("viewer_id", 1, S, ""), ("reason", 2, S, ""),
                       ("exit_code", 3, I32, "")],
    "FileOpen": [("viewer_id", 1, S, ""), ("technician_name", 2, S, "")],
    "FileRequest": [("viewer_id", 1, S, ""), ("request_id", 2, U32, ""),
                    ("op", 3, "FileOp", ""), ("path", 4, S, ""), ("offset", 5, U64, ""),
                    ("size", 6, U64, ""), ("version", 7, S, ""), ("resume", 8, B, ""),
                    ("overwrite", 9, B, "")],
    "FileEntry": [("name", 1, S, ""), ("is_dir", 2, B, ""), ("size", 3, U64, ""),
                  ("mtime", 4, I64, ""), ("mode", 5, U32, ""), ("is_link", 6, B, "")],
    "FileReply": [("viewer_id", 1, S, ""), ("request_id", 2, U32, ""), ("error", 3, S, ""),
                  ("message", 4, S, ""), ("entries", 5, "FileEntry", REP), ("size", 6, U64, ""),
                  ("offset", 7, U64, ""), ("archive", 8, B, ""), ("version", 9, S, ""),
                  ("sha256", 10, S, ""), ("done", 11, B, ""), ("path", 12, S, "")],
    "FileData": [("viewer_id", 1, S, ""), ("request_id", 2, U32, ""), ("offset", 3, U64, ""),
                 ("data", 4, BY, ""), ("last", 5, B, ""), ("sha256", 6, S, "")],
    "FileAck": [("viewer_id", 1, S, ""), ("request_id", 2, U32, ""), ("bytes", 3, U64, "")],
    "FileClose": [("viewer_id", 1, S, ""), ("reason", 2, S, "")],
    "RecordingNote": [("kind", 1, S, ""), ("technician", 2, S, ""), ("viewer_id", 3, S, ""),
                      ("data", 4, BY, ""), ("text", 5, S, "")],
    "CopyRect": [("x", 1, I32, ""), ("y", 2, I32, ""), ("width", 3, I32, ""),
                 ("height", 4, I32, ""), ("src_x", 5, I32, ""), ("src_y", 6, I32, "")],
}

# Fields beyond SPEC in SPEC's messages (CONTRACT 1: numbers 100 and up).
CONTRACT_FIELDS: dict[str, list[tuple[str, int, str, str]]] = {
    "SessionRequest": [("codecs", 100, S, REP)],
    "VideoFrame": [("plugin", 100, "PluginFrame", "")],
    "RawFrame": [("copies", 100, "CopyRect", REP), ("rows", 101, I32, ""),
                 ("repeat", 102, B, "")],
    "EncodedFrame": [("width", 100, I32, ""), ("height", 101, I32, "")],
    "QualitySettings": [("codec_name", 100, S, "")],
    "StartStream": [("codecs", 100, S, REP), ("session_panel", 101, B, "")],
    "AgentStatus": [("plugins", 100, S, REP)],
    "ConsentRequest": [("organization", 100, S, ""), ("recorded", 101, B, ""),
                       ("backstage", 102, B, ""), ("file_transfer", 103, B, "")],
    "Participant": [("backstage", 100, B, ""), ("file_transfer", 101, B, "")],
    "Participants": [("recording", 100, B, "")],
}

SPEC_ENUMS: dict[str, list[tuple[str, int]]] = {
    "SessionType": [("SCREEN_CONTROL", 0), ("VIEW_ONLY", 1), ("BACKSTAGE", 2),
                    ("FILE_TRANSFER", 3)],
    "MouseEventType": [("MOUSE_MOVE", 0), ("MOUSE_DOWN", 1), ("MOUSE_UP", 2), ("MOUSE_WHEEL", 3)],
    "KeyEventType": [("KEY_VK", 0), ("KEY_SCAN", 1), ("KEY_UNICODE", 2)],
    "SpecialKey": [("CTRL_ALT_DEL", 0), ("LOCK_SCREEN", 1), ("PRINT_SCREEN", 2)],
    "ClipboardFormat": [("CLIPBOARD_TEXT", 0), ("CLIPBOARD_HTML", 1), ("CLIPBOARD_RTF", 2),
                        ("CLIPBOARD_IMAGE", 3), ("CLIPBOARD_FILES", 4)],
    "QualityPreset": [("QUALITY_AUTO", 0), ("QUALITY_LOW", 1), ("QUALITY_BALANCED", 2),
                      ("QUALITY_HIGH", 3)],
    "CodecPreference": [("CODEC_AUTO", 0), ("CODEC_RAW", 1), ("CODEC_VP9", 2), ("CODEC_H264", 3),
                        ("CODEC_H265", 4)],
    "AdminCommandType": [("ADMIN_UNINSTALL", 0), ("ADMIN_RESTART", 1), ("ADMIN_UPDATE", 2)],
    "ConsentAccessMode": [("CONSENT_VIEW", 0), ("CONSENT_CONTROL", 1)],
    "FileOp": [("FILE_OP_LIST", 0), ("FILE_OP_DOWNLOAD", 1), ("FILE_OP_UPLOAD", 2),
               ("FILE_OP_MKDIR", 3), ("FILE_OP_CANCEL", 4)],  # beyond SPEC (FILE_TRANSFER)
    "UpdateState": [("UPDATE_IDLE", 0), ("UPDATE_CHECKING", 1), ("UPDATE_DOWNLOADING", 2),
                    ("UPDATE_VERIFYING", 3), ("UPDATE_INSTALLING", 4), ("UPDATE_RESTARTING", 5),
                    ("UPDATE_COMPLETE", 6), ("UPDATE_FAILED", 7)],
}

# SPEC 2.3 plus the CONTRACT's additions (100 and up).
SPEC_WRAPPER: list[tuple[str, int, str]] = [
    ("session_request", 1, "SessionRequest"), ("session_response", 2, "SessionResponse"),
    ("video_frame", 10, "VideoFrame"), ("video_ack", 11, "VideoAck"),
    ("switch_display", 12, "SwitchDisplay"), ("cursor_shape", 15, "CursorShape"),
    ("cursor_position", 16, "CursorPosition"), ("mouse_event", 20, "MouseEvent"),
    ("key_event", 21, "KeyEvent"), ("special_key", 22, "SpecialKeyEvent"),
    ("clipboard_data", 30, "ClipboardData"), ("clipboard_request", 31, "ClipboardRequest"),
    ("quality_settings", 40, "QualitySettings"), ("latency_report", 41, "LatencyReport"),
    ("heartbeat", 50, "Heartbeat"), ("heartbeat_ack", 51, "HeartbeatAck"),
    ("disconnect", 52, "Disconnect"), ("start_stream", 53, "StartStream"),
    ("stop_stream", 54, "StopStream"), ("agent_status", 55, "AgentStatus"),
    ("chat_message", 60, "ChatMessage"), ("admin_command", 70, "AdminCommand"),
    ("update_info", 75, "UpdateInfo"), ("update_status", 76, "UpdateStatus"),
    ("consent_request", 80, "ConsentRequest"), ("consent_response", 81, "ConsentResponse"),
]
CONTRACT_EXTENSIONS = [("display_info", 100, "DisplayInfo"),
                       ("participants", 101, "Participants"),
                       ("backstage_open", 102, "BackstageOpen"),
                       ("backstage_data", 103, "BackstageData"),
                       ("backstage_resize", 104, "BackstageResize"),
                       ("backstage_ack", 105, "BackstageAck"),
                       ("backstage_close", 106, "BackstageClose"),
                       ("file_open", 107, "FileOpen"),
                       ("file_request", 108, "FileRequest"),
                       ("file_reply", 109, "FileReply"),
                       ("file_data", 110, "FileData"),
                       ("file_ack", 111, "FileAck"),
                       ("file_close", 112, "FileClose"),
                       ("recording_note", 113, "RecordingNote")]

_SCALARS = {
    FD.TYPE_STRING: S, FD.TYPE_BOOL: B, FD.TYPE_BYTES: BY, FD.TYPE_INT32: I32,
    FD.TYPE_INT64: I64, FD.TYPE_UINT32: U32, FD.TYPE_UINT64: U64,
}


def _type_of(field: FD) -> str:
    if field.type == FD.TYPE_MESSAGE:
        return field.message_type.name
    if field.type == FD.TYPE_ENUM:
        return field.enum_type.name
    return _SCALARS.get(field.type, f"unexpected type {field.type}")


def _label_of(field: FD) -> str:
    return REP if field.is_repeated else ""


def test_package_is_versioned() -> None:
    assert pb.DESCRIPTOR.package == "remote_support.v1"
    proto = Path(__file__).parent.parent / "proto" / "remote_support.proto"
    assert 'syntax = "proto3";' in proto.read_text()


@pytest.mark.parametrize("name", sorted(SPEC_MESSAGES | CONTRACT_MESSAGES))
def test_message_fields_match_spec(name: str) -> None:
    descriptor = pb.DESCRIPTOR.message_types_by_name[name]
    actual = [(f.name, f.number, _type_of(f), _label_of(f)) for f in descriptor.fields]
    expected = (SPEC_MESSAGES | CONTRACT_MESSAGES)[name] + CONTRACT_FIELDS.get(name, [])
    assert sorted(actual, key=lambda t: t[1]) == sorted(expected, key=lambda t: t[1])


def test_fields_beyond_spec_are_numbered_from_100() -> None:
    assert all(number >= 100 for fields in CONTRACT_FIELDS.values() for _, number, _, _ in fields)


def test_no_messages_beyond_spec_and_contract() -> None:
    assert set(pb.DESCRIPTOR.message_types_by_name) == (
        set(SPEC_MESSAGES) | set(CONTRACT_MESSAGES) | {"Message"})


@pytest.mark.parametrize("name", sorted(SPEC_ENUMS))
def test_enum_values_match_spec(name: str) -> None:
    descriptor = pb.DESCRIPTOR.enum_types_by_name[name]
    assert [(v.name, v.number) for v in descriptor.values] == SPEC_ENUMS[name]


def test_no_enums_beyond_spec() -> None:
    assert set(pb.DESCRIPTOR.enum_types_by_name) == set(SPEC_ENUMS)


def test_video_frame_encoding_is_a_oneof() -> None:
    oneof = pb.VideoFrame.DESCRIPTOR.oneofs_by_name["encoding"]
    assert sorted(f.name for f in oneof.fields) == ["h264", "h265", "plugin", "raw", "vp9"]


def test_message_wrapper_is_one_oneof_matching_spec() -> None:
    descriptor = pb.Message.DESCRIPTOR
    oneof = descriptor.oneofs_by_name["payload"]
    assert [o.name for o in descriptor.oneofs] == ["payload"]
    assert len(descriptor.fields) == len(oneof.fields)
    actual = [(f.name, f.number, f.message_type.name) for f in oneof.fields]
    assert actual == SPEC_WRAPPER + CONTRACT_EXTENSIONS
    assert all(number >= 100 for _, number, _ in CONTRACT_EXTENSIONS)


# Golden bytes, worked out by hand from the protobuf encoding rules.
GOLDEN = [
    (pb.Message(heartbeat=pb.Heartbeat(timestamp=1)), bytes.fromhex("92030208 01")),
    (pb.Message(session_request=pb.SessionRequest(agent_id="a", session_type=pb.VIEW_ONLY)),
     bytes.fromhex("0a05 0a0161 1801")),
    (pb.Message(video_frame=pb.VideoFrame(sequence=7, raw=pb.RawFrame(width=2, is_keyframe=True))),
     bytes.fromhex("5208 1807 5204 0802 3001")),
    (pb.Message(consent_response=pb.ConsentResponse(granted=True)),
     bytes.fromhex("8a050210 01")),
    (pb.Message(mouse_event=pb.MouseEvent(x=3, buttons=pb.MouseButtons(right=True),
                                          event_type=pb.MOUSE_DOWN)),
     bytes.fromhex("a201 08 0803 1a021001 3001")),
    (pb.Message(display_info=pb.DisplayInfo(primary_display=1)), bytes.fromhex("a2060210 01")),
    (pb.Message(participants=pb.Participants(participants=[pb.Participant(
        name="a", access_mode=pb.CONSENT_CONTROL)])), bytes.fromhex("aa06 07 0a05 0a0161 1001")),
    (pb.Message(backstage_data=pb.BackstageData(viewer_id="v", data=b"\x01")),
     bytes.fromhex("ba06 06 0a0176 120101")),
]


@pytest.mark.parametrize(("message", "expected"), GOLDEN, ids=lambda v: str(v)[:24])
def test_golden_bytes(message: pb.Message, expected: bytes) -> None:
    assert message.SerializeToString() == expected
    parsed = pb.Message()
    parsed.ParseFromString(expected)
    assert parsed == message
