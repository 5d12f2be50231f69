"""The sans-I/O protocol layer, with paired Connection objects and no sockets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remote_core.protocol import (
    ALLOWED,
    CloseCode,
    Connection,
    Dropped,
    Inbound,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    Role,
    State,
    pb,
    wrap,
)


def pair(peer: Role = Role.AGENT) -> tuple[Connection, Connection]:
    """(server side, client side) of one connection."""
    return Connection(Role.SERVER, peer), Connection(peer, Role.SERVER)


def handshake(server: Connection, client: Connection, session_id: str = "s-1",
              view_only: bool = False) -> None:
    request = client.send("session_request", pb.SessionRequest(agent_id="a", session_token="t"))
    event = server.receive_data(request)
    assert isinstance(event, Inbound) and event.kind == "session_request"
    assert event.payload().session_token == "t"
    response = server.accept(session_id, view_only=view_only)
    answer = client.receive_data(response)
    assert isinstance(answer, Inbound) and answer.payload().session_id == session_id
    client.authenticated()


def test_handshake_moves_both_sides_to_authenticated() -> None:
    server, client = pair()
    assert server.state is State.AWAITING_REQUEST
    handshake(server, client)
    assert server.state is State.AUTHENTICATED and client.state is State.AUTHENTICATED


@pytest.mark.parametrize("kind", ["heartbeat", "video_frame", "agent_status"])
def test_first_message_must_be_session_request(kind: str) -> None:
    server, _ = pair()
    payload = getattr(pb, pb.Message.DESCRIPTOR.fields_by_name[kind].message_type.name)()
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(wrap(kind, payload))
    assert info.value.close_code == CloseCode.POLICY_VIOLATION
    assert server.state is State.CLOSED


def test_text_message_closes_with_1003() -> None:
    server, _ = pair()
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data("hello")
    assert info.value.close_code == CloseCode.UNSUPPORTED_DATA


def test_garbage_closes_with_1007() -> None:
    server, _ = pair()
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(b"\xff\xff\xff")
    assert info.value.close_code == CloseCode.INVALID_PAYLOAD


def test_oversize_closes_with_1009() -> None:
    server = Connection(Role.SERVER, Role.AGENT, max_message_bytes=100)
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(wrap("session_request", pb.SessionRequest(agent_id="x" * 200)))
    assert info.value.close_code == CloseCode.TOO_BIG


def test_rejection_answers_then_closes() -> None:
    server, client = pair()
    server.receive_data(client.send("session_request", pb.SessionRequest()))
    data = server.reject("unknown key")
    answer = client.receive_data(data)
    assert isinstance(answer, Inbound)
    response = answer.payload()
    assert not response.success and response.error == "unknown key"
    assert server.state is State.CLOSED
    with pytest.raises(LocalProtocolError):
        server.send("heartbeat_ack", pb.HeartbeatAck())


def test_video_from_agent_is_passed_through_without_parsing() -> None:
    server, client = pair()
    handshake(server, client)
    frame = client.send("video_frame", pb.VideoFrame(sequence=9, raw=pb.RawFrame(width=4)))
    event = server.receive_data(frame)
    assert isinstance(event, Inbound) and event.kind == "video_frame" and event.number == 10
    assert event.data == frame  # forwardable as it is
    assert event.payload().sequence == 9


@pytest.mark.parametrize(("peer", "kind"), [
    (Role.VIEWER, "admin_command"), (Role.VIEWER, "update_info"),
    (Role.VIEWER, "consent_response"), (Role.VIEWER, "start_stream"),
    (Role.VIEWER, "video_frame"), (Role.AGENT, "consent_request"),
    (Role.AGENT, "mouse_event"), (Role.AGENT, "key_event"), (Role.AGENT, "start_stream"),
])
def test_messages_from_the_wrong_side_are_dropped_and_counted(peer: Role, kind: str) -> None:
    server, client = pair(peer)
    handshake(server, client)
    payload = getattr(pb, pb.Message.DESCRIPTOR.fields_by_name[kind].message_type.name)()
    event = server.receive_data(wrap(kind, payload))
    assert isinstance(event, Dropped) and event.kind == kind
    assert server.dropped[kind] == 1
    assert server.state is State.AUTHENTICATED


@pytest.mark.parametrize("kind", ["mouse_event", "key_event", "special_key", "clipboard_data"])
def test_view_only_viewer_input_is_dropped(kind: str) -> None:
    server, client = pair(Role.VIEWER)
    handshake(server, client, view_only=True)
    payload = getattr(pb, pb.Message.DESCRIPTOR.fields_by_name[kind].message_type.name)()
    event = server.receive_data(wrap(kind, payload))
    assert isinstance(event, Dropped) and event.reason == "view-only session"
    assert isinstance(server.receive_data(wrap("video_ack", pb.VideoAck(sequence=1))), Inbound)


def test_control_viewer_input_passes() -> None:
    server, client = pair(Role.VIEWER)
    handshake(server, client)
    event = server.receive_data(client.send("mouse_event", pb.MouseEvent(x=5, y=6)))
    assert isinstance(event, Inbound) and event.payload().x == 5


def test_second_session_request_is_dropped() -> None:
    server, client = pair()
    handshake(server, client)
    event = server.receive_data(wrap("session_request", pb.SessionRequest()))
    assert isinstance(event, Dropped)


def test_client_cannot_send_before_authenticated() -> None:
    _, client = pair()
    with pytest.raises(LocalProtocolError):
        client.send("heartbeat", pb.Heartbeat())


def test_client_may_not_send_what_its_role_forbids() -> None:
    server, client = pair(Role.VIEWER)
    handshake(server, client)
    with pytest.raises(LocalProtocolError):
        client.send("admin_command", pb.AdminCommand())


def test_participants_go_to_agents_only_and_only_from_the_server() -> None:
    who = pb.Participants(participants=[pb.Participant(name="techa",
                                                       access_mode=pb.CONSENT_CONTROL)])
    server, agent = pair(Role.AGENT)
    handshake(server, agent)
    event = agent.receive_data(server.send("participants", who))
    assert isinstance(event, Inbound) and event.payload() == who
    dropped = server.receive_data(wrap("participants", who))  # an agent may not claim it
    assert isinstance(dropped, Dropped) and server.dropped["participants"] == 1
    to_viewer, viewer = pair(Role.VIEWER)
    handshake(to_viewer, viewer)
    with pytest.raises(LocalProtocolError):
        to_viewer.send("participants", who)
    assert isinstance(viewer.receive_data(wrap("participants", who)), Dropped)


def test_non_canonical_encoding_is_normalised() -> None:
    server, client = pair()
    handshake(server, client)
    # Two heartbeat fields: protobuf merges them; the event carries one canonical field.
    doubled = wrap("heartbeat", pb.Heartbeat(timestamp=1)) + wrap("heartbeat",
                                                                 pb.Heartbeat(timestamp=2))
    event = server.receive_data(doubled)
    assert isinstance(event, Inbound)
    assert event.data == wrap("heartbeat", pb.Heartbeat(timestamp=2))


def test_unknown_field_is_dropped() -> None:
    server, client = pair()
    handshake(server, client)
    event = server.receive_data(bytes.fromhex("fa3e0100"))  # field 999, length 1
    assert isinstance(event, Dropped)


def test_role_table_is_consistent() -> None:
    every_kind = {f.name for f in pb.Message.DESCRIPTOR.oneofs_by_name["payload"].fields}
    for kinds in ALLOWED.values():
        assert kinds <= every_kind


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=256), st.sampled_from([Role.AGENT, Role.VIEWER]), st.booleans())
def test_random_bytes_never_raise_anything_but_protocol_errors(
    data: bytes, peer: Role, authenticated: bool
) -> None:
    server, client = pair(peer)
    if authenticated:
        handshake(server, client)
    try:
        event = server.receive_data(data)
        if isinstance(event, Inbound):
            event.payload()
    except ProtocolError:
        pass
