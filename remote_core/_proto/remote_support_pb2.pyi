from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCREEN_CONTROL: _ClassVar[SessionType]
    VIEW_ONLY: _ClassVar[SessionType]
    BACKSTAGE: _ClassVar[SessionType]
    FILE_TRANSFER: _ClassVar[SessionType]

class MouseEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MOUSE_MOVE: _ClassVar[MouseEventType]
    MOUSE_DOWN: _ClassVar[MouseEventType]
    MOUSE_UP: _ClassVar[MouseEventType]
    MOUSE_WHEEL: _ClassVar[MouseEventType]

class KeyEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    KEY_VK: _ClassVar[KeyEventType]
    KEY_SCAN: _ClassVar[KeyEventType]
    KEY_UNICODE: _ClassVar[KeyEventType]

class SpecialKey(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CTRL_ALT_DEL: _ClassVar[SpecialKey]
    LOCK_SCREEN: _ClassVar[SpecialKey]
    PRINT_SCREEN: _ClassVar[SpecialKey]

class ClipboardFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLIPBOARD_TEXT: _ClassVar[ClipboardFormat]
    CLIPBOARD_HTML: _ClassVar[ClipboardFormat]
    CLIPBOARD_RTF: _ClassVar[ClipboardFormat]
    CLIPBOARD_IMAGE: _ClassVar[ClipboardFormat]
    CLIPBOARD_FILES: _ClassVar[ClipboardFormat]

class QualityPreset(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    QUALITY_AUTO: _ClassVar[QualityPreset]
    QUALITY_LOW: _ClassVar[QualityPreset]
    QUALITY_BALANCED: _ClassVar[QualityPreset]
    QUALITY_HIGH: _ClassVar[QualityPreset]

class CodecPreference(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CODEC_AUTO: _ClassVar[CodecPreference]
    CODEC_RAW: _ClassVar[CodecPreference]
    CODEC_VP9: _ClassVar[CodecPreference]
    CODEC_H264: _ClassVar[CodecPreference]
    CODEC_H265: _ClassVar[CodecPreference]

class AdminCommandType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ADMIN_UNINSTALL: _ClassVar[AdminCommandType]
    ADMIN_RESTART: _ClassVar[AdminCommandType]
    ADMIN_UPDATE: _ClassVar[AdminCommandType]

class ConsentAccessMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONSENT_VIEW: _ClassVar[ConsentAccessMode]
    CONSENT_CONTROL: _ClassVar[ConsentAccessMode]

class UpdateState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UPDATE_IDLE: _ClassVar[UpdateState]
    UPDATE_CHECKING: _ClassVar[UpdateState]
    UPDATE_DOWNLOADING: _ClassVar[UpdateState]
    UPDATE_VERIFYING: _ClassVar[UpdateState]
    UPDATE_INSTALLING: _ClassVar[UpdateState]
    UPDATE_RESTARTING: _ClassVar[UpdateState]
    UPDATE_COMPLETE: _ClassVar[UpdateState]
    UPDATE_FAILED: _ClassVar[UpdateState]

class FileOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_OP_LIST: _ClassVar[FileOp]
    FILE_OP_DOWNLOAD: _ClassVar[FileOp]
    FILE_OP_UPLOAD: _ClassVar[FileOp]
    FILE_OP_MKDIR: _ClassVar[FileOp]
    FILE_OP_CANCEL: _ClassVar[FileOp]
SCREEN_CONTROL: SessionType
VIEW_ONLY: SessionType
BACKSTAGE: SessionType
FILE_TRANSFER: SessionType
MOUSE_MOVE: MouseEventType
MOUSE_DOWN: MouseEventType
MOUSE_UP: MouseEventType
MOUSE_WHEEL: MouseEventType
KEY_VK: KeyEventType
KEY_SCAN: KeyEventType
KEY_UNICODE: KeyEventType
CTRL_ALT_DEL: SpecialKey
LOCK_SCREEN: SpecialKey
PRINT_SCREEN: SpecialKey
CLIPBOARD_TEXT: ClipboardFormat
CLIPBOARD_HTML: ClipboardFormat
CLIPBOARD_RTF: ClipboardFormat
CLIPBOARD_IMAGE: ClipboardFormat
CLIPBOARD_FILES: ClipboardFormat
QUALITY_AUTO: QualityPreset
QUALITY_LOW: QualityPreset
QUALITY_BALANCED: QualityPreset
QUALITY_HIGH: QualityPreset
CODEC_AUTO: CodecPreference
CODEC_RAW: CodecPreference
CODEC_VP9: CodecPreference
CODEC_H264: CodecPreference
CODEC_H265: CodecPreference
ADMIN_UNINSTALL: AdminCommandType
ADMIN_RESTART: AdminCommandType
ADMIN_UPDATE: AdminCommandType
CONSENT_VIEW: ConsentAccessMode
CONSENT_CONTROL: ConsentAccessMode
UPDATE_IDLE: UpdateState
UPDATE_CHECKING: UpdateState
UPDATE_DOWNLOADING: UpdateState
UPDATE_VERIFYING: UpdateState
UPDATE_INSTALLING: UpdateState
UPDATE_RESTARTING: UpdateState
UPDATE_COMPLETE: UpdateState
UPDATE_FAILED: UpdateState
FILE_OP_LIST: FileOp
FILE_OP_DOWNLOAD: FileOp
FILE_OP_UPLOAD: FileOp
FILE_OP_MKDIR: FileOp
FILE_OP_CANCEL: FileOp

class SessionRequest(_message.Message):
    __slots__ = ("agent_id", "session_token", "session_type", "client_version", "codecs")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    CLIENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CODECS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    session_token: str
    session_type: SessionType
    client_version: str
    codecs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, agent_id: _Optional[str] = ..., session_token: _Optional[str] = ..., session_type: _Optional[_Union[SessionType, str]] = ..., client_version: _Optional[str] = ..., codecs: _Optional[_Iterable[str]] = ...) -> None: ...

class SessionResponse(_message.Message):
    __slots__ = ("success", "session_id", "error", "display_info")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_INFO_FIELD_NUMBER: _ClassVar[int]
    success: bool
    session_id: str
    error: str
    display_info: DisplayInfo
    def __init__(self, success: bool = ..., session_id: _Optional[str] = ..., error: _Optional[str] = ..., display_info: _Optional[_Union[DisplayInfo, _Mapping]] = ...) -> None: ...

class DisplayInfo(_message.Message):
    __slots__ = ("displays", "primary_display")
    DISPLAYS_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_DISPLAY_FIELD_NUMBER: _ClassVar[int]
    displays: _containers.RepeatedCompositeFieldContainer[Display]
    primary_display: int
    def __init__(self, displays: _Optional[_Iterable[_Union[Display, _Mapping]]] = ..., primary_display: _Optional[int] = ...) -> None: ...

class Display(_message.Message):
    __slots__ = ("id", "name", "x", "y", "width", "height", "is_primary")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    IS_PRIMARY_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    x: int
    y: int
    width: int
    height: int
    is_primary: bool
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., x: _Optional[int] = ..., y: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., is_primary: bool = ...) -> None: ...

class SwitchDisplay(_message.Message):
    __slots__ = ("display_id",)
    DISPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    display_id: int
    def __init__(self, display_id: _Optional[int] = ...) -> None: ...

class VideoFrame(_message.Message):
    __slots__ = ("timestamp", "display_id", "sequence", "raw", "vp9", "h264", "h265", "plugin")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    RAW_FIELD_NUMBER: _ClassVar[int]
    VP9_FIELD_NUMBER: _ClassVar[int]
    H264_FIELD_NUMBER: _ClassVar[int]
    H265_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    timestamp: int
    display_id: int
    sequence: int
    raw: RawFrame
    vp9: EncodedFrame
    h264: EncodedFrame
    h265: EncodedFrame
    plugin: PluginFrame
    def __init__(self, timestamp: _Optional[int] = ..., display_id: _Optional[int] = ..., sequence: _Optional[int] = ..., raw: _Optional[_Union[RawFrame, _Mapping]] = ..., vp9: _Optional[_Union[EncodedFrame, _Mapping]] = ..., h264: _Optional[_Union[EncodedFrame, _Mapping]] = ..., h265: _Optional[_Union[EncodedFrame, _Mapping]] = ..., plugin: _Optional[_Union[PluginFrame, _Mapping]] = ...) -> None: ...

class RawFrame(_message.Message):
    __slots__ = ("width", "height", "data", "compressed", "dirty_rects", "is_keyframe", "copies", "rows", "repeat")
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    COMPRESSED_FIELD_NUMBER: _ClassVar[int]
    DIRTY_RECTS_FIELD_NUMBER: _ClassVar[int]
    IS_KEYFRAME_FIELD_NUMBER: _ClassVar[int]
    COPIES_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    REPEAT_FIELD_NUMBER: _ClassVar[int]
    width: int
    height: int
    data: bytes
    compressed: bool
    dirty_rects: _containers.RepeatedCompositeFieldContainer[DirtyRect]
    is_keyframe: bool
    copies: _containers.RepeatedCompositeFieldContainer[CopyRect]
    rows: int
    repeat: bool
    def __init__(self, width: _Optional[int] = ..., height: _Optional[int] = ..., data: _Optional[bytes] = ..., compressed: bool = ..., dirty_rects: _Optional[_Iterable[_Union[DirtyRect, _Mapping]]] = ..., is_keyframe: bool = ..., copies: _Optional[_Iterable[_Union[CopyRect, _Mapping]]] = ..., rows: _Optional[int] = ..., repeat: bool = ...) -> None: ...

class CopyRect(_message.Message):
    __slots__ = ("x", "y", "width", "height", "src_x", "src_y")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    SRC_X_FIELD_NUMBER: _ClassVar[int]
    SRC_Y_FIELD_NUMBER: _ClassVar[int]
    x: int
    y: int
    width: int
    height: int
    src_x: int
    src_y: int
    def __init__(self, x: _Optional[int] = ..., y: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., src_x: _Optional[int] = ..., src_y: _Optional[int] = ...) -> None: ...

class DirtyRect(_message.Message):
    __slots__ = ("x", "y", "width", "height")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    x: int
    y: int
    width: int
    height: int
    def __init__(self, x: _Optional[int] = ..., y: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ...) -> None: ...

class EncodedFrame(_message.Message):
    __slots__ = ("data", "keyframe", "pts", "dts", "width", "height")
    DATA_FIELD_NUMBER: _ClassVar[int]
    KEYFRAME_FIELD_NUMBER: _ClassVar[int]
    PTS_FIELD_NUMBER: _ClassVar[int]
    DTS_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    keyframe: bool
    pts: int
    dts: int
    width: int
    height: int
    def __init__(self, data: _Optional[bytes] = ..., keyframe: bool = ..., pts: _Optional[int] = ..., dts: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ...) -> None: ...

class PluginFrame(_message.Message):
    __slots__ = ("codec", "data", "keyframe", "width", "height", "dirty_rects", "pts")
    CODEC_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    KEYFRAME_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    DIRTY_RECTS_FIELD_NUMBER: _ClassVar[int]
    PTS_FIELD_NUMBER: _ClassVar[int]
    codec: str
    data: bytes
    keyframe: bool
    width: int
    height: int
    dirty_rects: _containers.RepeatedCompositeFieldContainer[DirtyRect]
    pts: int
    def __init__(self, codec: _Optional[str] = ..., data: _Optional[bytes] = ..., keyframe: bool = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., dirty_rects: _Optional[_Iterable[_Union[DirtyRect, _Mapping]]] = ..., pts: _Optional[int] = ...) -> None: ...

class VideoAck(_message.Message):
    __slots__ = ("sequence", "timestamp")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    timestamp: int
    def __init__(self, sequence: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...

class CursorShape(_message.Message):
    __slots__ = ("id", "hotspot_x", "hotspot_y", "width", "height", "data")
    ID_FIELD_NUMBER: _ClassVar[int]
    HOTSPOT_X_FIELD_NUMBER: _ClassVar[int]
    HOTSPOT_Y_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    id: int
    hotspot_x: int
    hotspot_y: int
    width: int
    height: int
    data: bytes
    def __init__(self, id: _Optional[int] = ..., hotspot_x: _Optional[int] = ..., hotspot_y: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class CursorPosition(_message.Message):
    __slots__ = ("x", "y", "visible")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_FIELD_NUMBER: _ClassVar[int]
    x: int
    y: int
    visible: bool
    def __init__(self, x: _Optional[int] = ..., y: _Optional[int] = ..., visible: bool = ...) -> None: ...

class MouseEvent(_message.Message):
    __slots__ = ("x", "y", "buttons", "wheel_delta_x", "wheel_delta_y", "event_type")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    BUTTONS_FIELD_NUMBER: _ClassVar[int]
    WHEEL_DELTA_X_FIELD_NUMBER: _ClassVar[int]
    WHEEL_DELTA_Y_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    x: int
    y: int
    buttons: MouseButtons
    wheel_delta_x: int
    wheel_delta_y: int
    event_type: MouseEventType
    def __init__(self, x: _Optional[int] = ..., y: _Optional[int] = ..., buttons: _Optional[_Union[MouseButtons, _Mapping]] = ..., wheel_delta_x: _Optional[int] = ..., wheel_delta_y: _Optional[int] = ..., event_type: _Optional[_Union[MouseEventType, str]] = ...) -> None: ...

class MouseButtons(_message.Message):
    __slots__ = ("left", "right", "middle", "x1", "x2")
    LEFT_FIELD_NUMBER: _ClassVar[int]
    RIGHT_FIELD_NUMBER: _ClassVar[int]
    MIDDLE_FIELD_NUMBER: _ClassVar[int]
    X1_FIELD_NUMBER: _ClassVar[int]
    X2_FIELD_NUMBER: _ClassVar[int]
    left: bool
    right: bool
    middle: bool
    x1: bool
    x2: bool
    def __init__(self, left: bool = ..., right: bool = ..., middle: bool = ..., x1: bool = ..., x2: bool = ...) -> None: ...

class KeyEvent(_message.Message):
    __slots__ = ("down", "key_type", "vk_code", "scan_code", "unicode", "modifiers")
    DOWN_FIELD_NUMBER: _ClassVar[int]
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    VK_CODE_FIELD_NUMBER: _ClassVar[int]
    SCAN_CODE_FIELD_NUMBER: _ClassVar[int]
    UNICODE_FIELD_NUMBER: _ClassVar[int]
    MODIFIERS_FIELD_NUMBER: _ClassVar[int]
    down: bool
    key_type: KeyEventType
    vk_code: int
    scan_code: int
    unicode: str
    modifiers: Modifiers
    def __init__(self, down: bool = ..., key_type: _Optional[_Union[KeyEventType, str]] = ..., vk_code: _Optional[int] = ..., scan_code: _Optional[int] = ..., unicode: _Optional[str] = ..., modifiers: _Optional[_Union[Modifiers, _Mapping]] = ...) -> None: ...

class Modifiers(_message.Message):
    __slots__ = ("ctrl", "alt", "shift", "meta", "caps_lock", "num_lock")
    CTRL_FIELD_NUMBER: _ClassVar[int]
    ALT_FIELD_NUMBER: _ClassVar[int]
    SHIFT_FIELD_NUMBER: _ClassVar[int]
    META_FIELD_NUMBER: _ClassVar[int]
    CAPS_LOCK_FIELD_NUMBER: _ClassVar[int]
    NUM_LOCK_FIELD_NUMBER: _ClassVar[int]
    ctrl: bool
    alt: bool
    shift: bool
    meta: bool
    caps_lock: bool
    num_lock: bool
    def __init__(self, ctrl: bool = ..., alt: bool = ..., shift: bool = ..., meta: bool = ..., caps_lock: bool = ..., num_lock: bool = ...) -> None: ...

class SpecialKeyEvent(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: SpecialKey
    def __init__(self, key: _Optional[_Union[SpecialKey, str]] = ...) -> None: ...

class ClipboardData(_message.Message):
    __slots__ = ("format", "data", "mime_type")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    format: ClipboardFormat
    data: bytes
    mime_type: str
    def __init__(self, format: _Optional[_Union[ClipboardFormat, str]] = ..., data: _Optional[bytes] = ..., mime_type: _Optional[str] = ...) -> None: ...

class ClipboardRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class QualitySettings(_message.Message):
    __slots__ = ("preset", "custom_fps", "custom_bitrate", "codec", "codec_name")
    PRESET_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FPS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_BITRATE_FIELD_NUMBER: _ClassVar[int]
    CODEC_FIELD_NUMBER: _ClassVar[int]
    CODEC_NAME_FIELD_NUMBER: _ClassVar[int]
    preset: QualityPreset
    custom_fps: int
    custom_bitrate: int
    codec: CodecPreference
    codec_name: str
    def __init__(self, preset: _Optional[_Union[QualityPreset, str]] = ..., custom_fps: _Optional[int] = ..., custom_bitrate: _Optional[int] = ..., codec: _Optional[_Union[CodecPreference, str]] = ..., codec_name: _Optional[str] = ...) -> None: ...

class LatencyReport(_message.Message):
    __slots__ = ("rtt_ms", "fps", "bitrate_kbps")
    RTT_MS_FIELD_NUMBER: _ClassVar[int]
    FPS_FIELD_NUMBER: _ClassVar[int]
    BITRATE_KBPS_FIELD_NUMBER: _ClassVar[int]
    rtt_ms: int
    fps: int
    bitrate_kbps: int
    def __init__(self, rtt_ms: _Optional[int] = ..., fps: _Optional[int] = ..., bitrate_kbps: _Optional[int] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("id", "sender", "content", "timestamp")
    ID_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    id: str
    sender: str
    content: str
    timestamp: int
    def __init__(self, id: _Optional[str] = ..., sender: _Optional[str] = ..., content: _Optional[str] = ..., timestamp: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("timestamp",)
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    timestamp: int
    def __init__(self, timestamp: _Optional[int] = ...) -> None: ...

class HeartbeatAck(_message.Message):
    __slots__ = ("client_timestamp", "server_timestamp")
    CLIENT_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    client_timestamp: int
    server_timestamp: int
    def __init__(self, client_timestamp: _Optional[int] = ..., server_timestamp: _Optional[int] = ...) -> None: ...

class Disconnect(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class StartStream(_message.Message):
    __slots__ = ("viewer_id", "display_id", "codecs", "session_panel")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    CODECS_FIELD_NUMBER: _ClassVar[int]
    SESSION_PANEL_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    display_id: int
    codecs: _containers.RepeatedScalarFieldContainer[str]
    session_panel: bool
    def __init__(self, viewer_id: _Optional[str] = ..., display_id: _Optional[int] = ..., codecs: _Optional[_Iterable[str]] = ..., session_panel: bool = ...) -> None: ...

class StopStream(_message.Message):
    __slots__ = ("viewer_id",)
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    def __init__(self, viewer_id: _Optional[str] = ...) -> None: ...

class AgentStatus(_message.Message):
    __slots__ = ("hostname", "os_version", "is_elevated", "uptime_secs", "display_count", "is_streaming", "agent_version", "organization", "site", "tags", "plugins")
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    OS_VERSION_FIELD_NUMBER: _ClassVar[int]
    IS_ELEVATED_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECS_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_COUNT_FIELD_NUMBER: _ClassVar[int]
    IS_STREAMING_FIELD_NUMBER: _ClassVar[int]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ORGANIZATION_FIELD_NUMBER: _ClassVar[int]
    SITE_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    hostname: str
    os_version: str
    is_elevated: bool
    uptime_secs: int
    display_count: int
    is_streaming: bool
    agent_version: str
    organization: str
    site: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    plugins: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, hostname: _Optional[str] = ..., os_version: _Optional[str] = ..., is_elevated: bool = ..., uptime_secs: _Optional[int] = ..., display_count: _Optional[int] = ..., is_streaming: bool = ..., agent_version: _Optional[str] = ..., organization: _Optional[str] = ..., site: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., plugins: _Optional[_Iterable[str]] = ...) -> None: ...

class AdminCommand(_message.Message):
    __slots__ = ("command", "reason")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    command: AdminCommandType
    reason: str
    def __init__(self, command: _Optional[_Union[AdminCommandType, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ConsentRequest(_message.Message):
    __slots__ = ("session_id", "technician_name", "access_mode", "timeout_secs", "organization", "recorded", "backstage", "file_transfer")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TECHNICIAN_NAME_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECS_FIELD_NUMBER: _ClassVar[int]
    ORGANIZATION_FIELD_NUMBER: _ClassVar[int]
    RECORDED_FIELD_NUMBER: _ClassVar[int]
    BACKSTAGE_FIELD_NUMBER: _ClassVar[int]
    FILE_TRANSFER_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    technician_name: str
    access_mode: ConsentAccessMode
    timeout_secs: int
    organization: str
    recorded: bool
    backstage: bool
    file_transfer: bool
    def __init__(self, session_id: _Optional[str] = ..., technician_name: _Optional[str] = ..., access_mode: _Optional[_Union[ConsentAccessMode, str]] = ..., timeout_secs: _Optional[int] = ..., organization: _Optional[str] = ..., recorded: bool = ..., backstage: bool = ..., file_transfer: bool = ...) -> None: ...

class ConsentResponse(_message.Message):
    __slots__ = ("session_id", "granted", "reason")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    granted: bool
    reason: str
    def __init__(self, session_id: _Optional[str] = ..., granted: bool = ..., reason: _Optional[str] = ...) -> None: ...

class UpdateInfo(_message.Message):
    __slots__ = ("version", "download_url", "checksum_sha256", "mandatory")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DOWNLOAD_URL_FIELD_NUMBER: _ClassVar[int]
    CHECKSUM_SHA256_FIELD_NUMBER: _ClassVar[int]
    MANDATORY_FIELD_NUMBER: _ClassVar[int]
    version: str
    download_url: str
    checksum_sha256: str
    mandatory: bool
    def __init__(self, version: _Optional[str] = ..., download_url: _Optional[str] = ..., checksum_sha256: _Optional[str] = ..., mandatory: bool = ...) -> None: ...

class UpdateStatus(_message.Message):
    __slots__ = ("current_version", "state", "error_message", "progress_percent")
    CURRENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_PERCENT_FIELD_NUMBER: _ClassVar[int]
    current_version: str
    state: UpdateState
    error_message: str
    progress_percent: int
    def __init__(self, current_version: _Optional[str] = ..., state: _Optional[_Union[UpdateState, str]] = ..., error_message: _Optional[str] = ..., progress_percent: _Optional[int] = ...) -> None: ...

class Participants(_message.Message):
    __slots__ = ("participants", "recording")
    PARTICIPANTS_FIELD_NUMBER: _ClassVar[int]
    RECORDING_FIELD_NUMBER: _ClassVar[int]
    participants: _containers.RepeatedCompositeFieldContainer[Participant]
    recording: bool
    def __init__(self, participants: _Optional[_Iterable[_Union[Participant, _Mapping]]] = ..., recording: bool = ...) -> None: ...

class Participant(_message.Message):
    __slots__ = ("name", "access_mode", "backstage", "file_transfer")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODE_FIELD_NUMBER: _ClassVar[int]
    BACKSTAGE_FIELD_NUMBER: _ClassVar[int]
    FILE_TRANSFER_FIELD_NUMBER: _ClassVar[int]
    name: str
    access_mode: ConsentAccessMode
    backstage: bool
    file_transfer: bool
    def __init__(self, name: _Optional[str] = ..., access_mode: _Optional[_Union[ConsentAccessMode, str]] = ..., backstage: bool = ..., file_transfer: bool = ...) -> None: ...

class BackstageOpen(_message.Message):
    __slots__ = ("viewer_id", "rows", "cols", "technician_name")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    TECHNICIAN_NAME_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    rows: int
    cols: int
    technician_name: str
    def __init__(self, viewer_id: _Optional[str] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., technician_name: _Optional[str] = ...) -> None: ...

class BackstageData(_message.Message):
    __slots__ = ("viewer_id", "data")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    data: bytes
    def __init__(self, viewer_id: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class BackstageResize(_message.Message):
    __slots__ = ("viewer_id", "rows", "cols")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    rows: int
    cols: int
    def __init__(self, viewer_id: _Optional[str] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...

class BackstageAck(_message.Message):
    __slots__ = ("viewer_id", "bytes")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    bytes: int
    def __init__(self, viewer_id: _Optional[str] = ..., bytes: _Optional[int] = ...) -> None: ...

class BackstageClose(_message.Message):
    __slots__ = ("viewer_id", "reason", "exit_code")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    reason: str
    exit_code: int
    def __init__(self, viewer_id: _Optional[str] = ..., reason: _Optional[str] = ..., exit_code: _Optional[int] = ...) -> None: ...

class FileOpen(_message.Message):
    __slots__ = ("viewer_id", "technician_name")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    TECHNICIAN_NAME_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    technician_name: str
    def __init__(self, viewer_id: _Optional[str] = ..., technician_name: _Optional[str] = ...) -> None: ...

class FileRequest(_message.Message):
    __slots__ = ("viewer_id", "request_id", "op", "path", "offset", "size", "version", "resume", "overwrite")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    OVERWRITE_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    request_id: int
    op: FileOp
    path: str
    offset: int
    size: int
    version: str
    resume: bool
    overwrite: bool
    def __init__(self, viewer_id: _Optional[str] = ..., request_id: _Optional[int] = ..., op: _Optional[_Union[FileOp, str]] = ..., path: _Optional[str] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., version: _Optional[str] = ..., resume: bool = ..., overwrite: bool = ...) -> None: ...

class FileEntry(_message.Message):
    __slots__ = ("name", "is_dir", "size", "mtime", "mode", "is_link")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IS_DIR_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MTIME_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    IS_LINK_FIELD_NUMBER: _ClassVar[int]
    name: str
    is_dir: bool
    size: int
    mtime: int
    mode: int
    is_link: bool
    def __init__(self, name: _Optional[str] = ..., is_dir: bool = ..., size: _Optional[int] = ..., mtime: _Optional[int] = ..., mode: _Optional[int] = ..., is_link: bool = ...) -> None: ...

class FileReply(_message.Message):
    __slots__ = ("viewer_id", "request_id", "error", "message", "entries", "size", "offset", "archive", "version", "sha256", "done", "path")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    request_id: int
    error: str
    message: str
    entries: _containers.RepeatedCompositeFieldContainer[FileEntry]
    size: int
    offset: int
    archive: bool
    version: str
    sha256: str
    done: bool
    path: str
    def __init__(self, viewer_id: _Optional[str] = ..., request_id: _Optional[int] = ..., error: _Optional[str] = ..., message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[FileEntry, _Mapping]]] = ..., size: _Optional[int] = ..., offset: _Optional[int] = ..., archive: bool = ..., version: _Optional[str] = ..., sha256: _Optional[str] = ..., done: bool = ..., path: _Optional[str] = ...) -> None: ...

class FileData(_message.Message):
    __slots__ = ("viewer_id", "request_id", "offset", "data", "last", "sha256")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    request_id: int
    offset: int
    data: bytes
    last: bool
    sha256: str
    def __init__(self, viewer_id: _Optional[str] = ..., request_id: _Optional[int] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ..., last: bool = ..., sha256: _Optional[str] = ...) -> None: ...

class FileAck(_message.Message):
    __slots__ = ("viewer_id", "request_id", "bytes")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    request_id: int
    bytes: int
    def __init__(self, viewer_id: _Optional[str] = ..., request_id: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class FileClose(_message.Message):
    __slots__ = ("viewer_id", "reason")
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    viewer_id: str
    reason: str
    def __init__(self, viewer_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RecordingNote(_message.Message):
    __slots__ = ("kind", "technician", "viewer_id", "data", "text")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TECHNICIAN_FIELD_NUMBER: _ClassVar[int]
    VIEWER_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    technician: str
    viewer_id: str
    data: bytes
    text: str
    def __init__(self, kind: _Optional[str] = ..., technician: _Optional[str] = ..., viewer_id: _Optional[str] = ..., data: _Optional[bytes] = ..., text: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("session_request", "session_response", "video_frame", "video_ack", "switch_display", "cursor_shape", "cursor_position", "mouse_event", "key_event", "special_key", "clipboard_data", "clipboard_request", "quality_settings", "latency_report", "heartbeat", "heartbeat_ack", "disconnect", "start_stream", "stop_stream", "agent_status", "chat_message", "admin_command", "update_info", "update_status", "consent_request", "consent_response", "display_info", "participants", "backstage_open", "backstage_data", "backstage_resize", "backstage_ack", "backstage_close", "file_open", "file_request", "file_reply", "file_data", "file_ack", "file_close", "recording_note")
    SESSION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    SESSION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    VIDEO_FRAME_FIELD_NUMBER: _ClassVar[int]
    VIDEO_ACK_FIELD_NUMBER: _ClassVar[int]
    SWITCH_DISPLAY_FIELD_NUMBER: _ClassVar[int]
    CURSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    CURSOR_POSITION_FIELD_NUMBER: _ClassVar[int]
    MOUSE_EVENT_FIELD_NUMBER: _ClassVar[int]
    KEY_EVENT_FIELD_NUMBER: _ClassVar[int]
    SPECIAL_KEY_FIELD_NUMBER: _ClassVar[int]
    CLIPBOARD_DATA_FIELD_NUMBER: _ClassVar[int]
    CLIPBOARD_REQUEST_FIELD_NUMBER: _ClassVar[int]
    QUALITY_SETTINGS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_REPORT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_ACK_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_FIELD_NUMBER: _ClassVar[int]
    START_STREAM_FIELD_NUMBER: _ClassVar[int]
    STOP_STREAM_FIELD_NUMBER: _ClassVar[int]
    AGENT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CHAT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ADMIN_COMMAND_FIELD_NUMBER: _ClassVar[int]
    UPDATE_INFO_FIELD_NUMBER: _ClassVar[int]
    UPDATE_STATUS_FIELD_NUMBER: _ClassVar[int]
    CONSENT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    CONSENT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_INFO_FIELD_NUMBER: _ClassVar[int]
    PARTICIPANTS_FIELD_NUMBER: _ClassVar[int]
    BACKSTAGE_OPEN_FIELD_NUMBER: _ClassVar[int]
    BACKSTAGE_DATA_FIELD_NUMBER: _ClassVar[int]
    BACKSTAGE_RESIZE_FIELD_NUMBER: _ClassVar[int]
    BACKSTAGE_ACK_FIELD_NUMBER: _ClassVar[int]
    BACKSTAGE_CLOSE_FIELD_NUMBER: _ClassVar[int]
    FILE_OPEN_FIELD_NUMBER: _ClassVar[int]
    FILE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    FILE_REPLY_FIELD_NUMBER: _ClassVar[int]
    FILE_DATA_FIELD_NUMBER: _ClassVar[int]
    FILE_ACK_FIELD_NUMBER: _ClassVar[int]
    FILE_CLOSE_FIELD_NUMBER: _ClassVar[int]
    RECORDING_NOTE_FIELD_NUMBER: _ClassVar[int]
    session_request: SessionRequest
    session_response: SessionResponse
    video_frame: VideoFrame
    video_ack: VideoAck
    switch_display: SwitchDisplay
    cursor_shape: CursorShape
    cursor_position: CursorPosition
    mouse_event: MouseEvent
    key_event: KeyEvent
    special_key: SpecialKeyEvent
    clipboard_data: ClipboardData
    clipboard_request: ClipboardRequest
    quality_settings: QualitySettings
    latency_report: LatencyReport
    heartbeat: Heartbeat
    heartbeat_ack: HeartbeatAck
    disconnect: Disconnect
    start_stream: StartStream
    stop_stream: StopStream
    agent_status: AgentStatus
    chat_message: ChatMessage
    admin_command: AdminCommand
    update_info: UpdateInfo
    update_status: UpdateStatus
    consent_request: ConsentRequest
    consent_response: ConsentResponse
    display_info: DisplayInfo
    participants: Participants
    backstage_open: BackstageOpen
    backstage_data: BackstageData
    backstage_resize: BackstageResize
    backstage_ack: BackstageAck
    backstage_close: BackstageClose
    file_open: FileOpen
    file_request: FileRequest
    file_reply: FileReply
    file_data: FileData
    file_ack: FileAck
    file_close: FileClose
    recording_note: RecordingNote
    def __init__(self, session_request: _Optional[_Union[SessionRequest, _Mapping]] = ..., session_response: _Optional[_Union[SessionResponse, _Mapping]] = ..., video_frame: _Optional[_Union[VideoFrame, _Mapping]] = ..., video_ack: _Optional[_Union[VideoAck, _Mapping]] = ..., switch_display: _Optional[_Union[SwitchDisplay, _Mapping]] = ..., cursor_shape: _Optional[_Union[CursorShape, _Mapping]] = ..., cursor_position: _Optional[_Union[CursorPosition, _Mapping]] = ..., mouse_event: _Optional[_Union[MouseEvent, _Mapping]] = ..., key_event: _Optional[_Union[KeyEvent, _Mapping]] = ..., special_key: _Optional[_Union[SpecialKeyEvent, _Mapping]] = ..., clipboard_data: _Optional[_Union[ClipboardData, _Mapping]] = ..., clipboard_request: _Optional[_Union[ClipboardRequest, _Mapping]] = ..., quality_settings: _Optional[_Union[QualitySettings, _Mapping]] = ..., latency_report: _Optional[_Union[LatencyReport, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., heartbeat_ack: _Optional[_Union[HeartbeatAck, _Mapping]] = ..., disconnect: _Optional[_Union[Disconnect, _Mapping]] = ..., start_stream: _Optional[_Union[StartStream, _Mapping]] = ..., stop_stream: _Optional[_Union[StopStream, _Mapping]] = ..., agent_status: _Optional[_Union[AgentStatus, _Mapping]] = ..., chat_message: _Optional[_Union[ChatMessage, _Mapping]] = ..., admin_command: _Optional[_Union[AdminCommand, _Mapping]] = ..., update_info: _Optional[_Union[UpdateInfo, _Mapping]] = ..., update_status: _Optional[_Union[UpdateStatus, _Mapping]] = ..., consent_request: _Optional[_Union[ConsentRequest, _Mapping]] = ..., consent_response: _Optional[_Union[ConsentResponse, _Mapping]] = ..., display_info: _Optional[_Union[DisplayInfo, _Mapping]] = ..., participants: _Optional[_Union[Participants, _Mapping]] = ..., backstage_open: _Optional[_Union[BackstageOpen, _Mapping]] = ..., backstage_data: _Optional[_Union[BackstageData, _Mapping]] = ..., backstage_resize: _Optional[_Union[BackstageResize, _Mapping]] = ..., backstage_ack: _Optional[_Union[BackstageAck, _Mapping]] = ..., backstage_close: _Optional[_Union[BackstageClose, _Mapping]] = ..., file_open: _Optional[_Union[FileOpen, _Mapping]] = ..., file_request: _Optional[_Union[FileRequest, _Mapping]] = ..., file_reply: _Optional[_Union[FileReply, _Mapping]] = ..., file_data: _Optional[_Union[FileData, _Mapping]] = ..., file_ack: _Optional[_Union[FileAck, _Mapping]] = ..., file_close: _Optional[_Union[FileClose, _Mapping]] = ..., recording_note: _Optional[_Union[RecordingNote, _Mapping]] = ...) -> None: ...
