"""The relay carries out the protocol's route table: every kind sent to the server is acted on."""

from __future__ import annotations

import pytest
from remote_server.relay.peer import CONNECTION_HANDLERS
from remote_server.relay.registry import HANDLERS

from remote_core.protocol import Role, To, routes_from


@pytest.mark.parametrize("role", [Role.AGENT, Role.VIEWER])
def test_every_kind_the_table_sends_to_the_server_has_exactly_one_handler(role: Role) -> None:
    to_server = {kind for kind, route in routes_from(role).items() if route.to & To.SERVER}
    handled = [*CONNECTION_HANDLERS, *HANDLERS[role], "session_request"]  # the handshake
    assert sorted(handled) == sorted(to_server)


@pytest.mark.parametrize("role", [Role.AGENT, Role.VIEWER])
def test_no_handler_for_a_kind_the_table_does_not_send_to_the_server(role: Role) -> None:
    for kind in HANDLERS[role]:
        route = routes_from(role).get(kind)
        assert route is not None and route.to & To.SERVER, kind
