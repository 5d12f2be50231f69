"""The route table is complete, and the protocol does what it says (no sockets)."""

from __future__ import annotations

import pytest

from remote_core.protocol import (
    ALLOWED,
    BACKSTAGE_KINDS,
    CHANNEL_KINDS,
    FILE_KINDS,
    INPUT_KINDS,
    RECORDING_ONLY,
    ROUTES,
    Channel,
    Connection,
    Dropped,
    Inbound,
    LocalProtocolError,
    Role,
    To,
    pb,
    wrap,
)

ANY_CHANNEL = frozenset().union(*CHANNEL_KINDS.values())
EVERY_KIND = sorted(f.name for f in pb.Message.DESCRIPTOR.oneofs_by_name["payload"].fields)
CLIENTS = [Role.AGENT, Role.VIEWER]


def empty(kind: str) -> object:
    return getattr(pb, pb.Message.DESCRIPTOR.fields_by_name[kind].message_type.name)()


def authenticated(peer: Role, *, view_only: bool = False,
                  channel: Channel | None = None) -> Connection:
    server = Connection(Role.SERVER, peer)
    server.receive_data(wrap("session_request", pb.SessionRequest()))
    server.accept("s-1", view_only=view_only, channel=channel)
    return server


@pytest.mark.parametrize("kind", EVERY_KIND)
def test_every_message_kind_has_a_row(kind: str) -> None:
    """Every kind but those only recordings hold (which have none: nobody sends them)."""
    senders = [role for role in Role if (role, kind) in ROUTES]
    if kind in RECORDING_ONLY:
        assert not senders, f"Message.{kind} is for recordings only, yet has a row"
    else:
        assert senders, f"Message.{kind} has no row in ROUTES: nobody may send it"


@pytest.mark.parametrize("peer", CLIENTS)
@pytest.mark.parametrize("kind", EVERY_KIND)
def test_the_server_takes_from_a_peer_exactly_its_rows(peer: Role, kind: str) -> None:
    event = authenticated(peer).receive_data(wrap(kind, empty(kind)))
    routed = (peer, kind) in ROUTES and kind != "session_request"
    screen = peer is Role.AGENT or kind not in ANY_CHANNEL  # a screen viewer's session
    assert isinstance(event, Inbound if routed and screen else Dropped), (peer, kind, event)


@pytest.mark.parametrize("channel", list(Channel))
@pytest.mark.parametrize("kind", EVERY_KIND)
def test_a_channel_viewer_sends_its_channel_heartbeats_and_goodbyes_only(
        kind: str, channel: Channel) -> None:
    event = authenticated(Role.VIEWER, channel=channel).receive_data(wrap(kind, empty(kind)))
    passes = (kind in CHANNEL_KINDS[channel] | {"heartbeat", "disconnect"}
              and (Role.VIEWER, kind) in ROUTES)
    assert isinstance(event, Inbound if passes else Dropped), (kind, event)


def test_terminal_and_file_messages_are_channels_of_their_own() -> None:
    assert {"backstage_open", "backstage_data", "backstage_resize", "backstage_ack",
            "backstage_close"} == BACKSTAGE_KINDS
    assert {"file_open", "file_request", "file_reply", "file_data", "file_ack",
            "file_close"} == FILE_KINDS
    assert not BACKSTAGE_KINDS & FILE_KINDS
    for (sender, kind), route in ROUTES.items():
        if kind in ANY_CHANNEL and sender is not Role.SERVER:
            # the server addresses each one itself: never fanned out to every viewer
            assert route.to == To.SERVER, (sender, kind)


@pytest.mark.parametrize("kind", EVERY_KIND)
def test_a_view_only_viewer_sends_no_control_only_kind(kind: str) -> None:
    event = authenticated(Role.VIEWER, view_only=True).receive_data(wrap(kind, empty(kind)))
    route = ROUTES.get((Role.VIEWER, kind))
    passes = (route is not None and not route.control_only and kind != "session_request"
              and kind not in ANY_CHANNEL)
    assert isinstance(event, Inbound if passes else Dropped), (kind, event)
    assert (kind in INPUT_KINDS) == (route is not None and route.control_only)


def reaches(peer: Role, kind: str) -> bool:
    """Whether the table sends ``kind`` to ``peer``: originated for it, or relayed to it by
    the other side (a viewer's message to the other viewers included)."""
    for (sender, k), route in ROUTES.items():
        if k != kind or (sender is peer and not route.to & To.OTHER_VIEWERS):
            continue
        if peer is Role.AGENT and route.to & To.AGENT:
            return True
        if peer is Role.VIEWER and (route.to & To.VIEWERS or (sender is Role.VIEWER
                                    and route.to & To.OTHER_VIEWERS)):
            return True
    return False


@pytest.mark.parametrize("peer", CLIENTS)
@pytest.mark.parametrize("kind", EVERY_KIND)
def test_the_server_sends_a_peer_what_it_originates_or_relays_to_it(peer: Role,
                                                                      kind: str) -> None:
    server = authenticated(peer)
    if reaches(peer, kind):
        server.send(kind, empty(kind))
    else:
        with pytest.raises(LocalProtocolError):
            server.send(kind, empty(kind))
    assert (kind in ALLOWED[(Role.SERVER, peer)]) == reaches(peer, kind)


def test_only_video_is_forwarded_unread() -> None:
    assert [k for (_, k), r in ROUTES.items() if r.forwarded_as_bytes] == ["video_frame"]


@pytest.mark.parametrize("peer", CLIENTS)
def test_the_video_fast_path_is_the_protocols_rule(peer: Role) -> None:
    frame = wrap("video_frame", pb.VideoFrame(sequence=7))
    assert authenticated(peer).video_offset(frame) == (2 if peer is Role.AGENT else None)
    assert Connection(Role.SERVER, peer).video_offset(frame) is None  # before authentication
    assert authenticated(Role.AGENT).video_offset(wrap("heartbeat", pb.Heartbeat())) is None
    too_big = Connection(Role.SERVER, Role.AGENT, max_message_bytes=len(frame) - 1)
    too_big.receive_data(wrap("session_request", pb.SessionRequest()))
    too_big.accept("s-1")
    assert too_big.video_offset(frame) is None
