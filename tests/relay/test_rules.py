"""The relay's small decisions, without sockets."""

from __future__ import annotations

from functools import partial

import pytest
from remote_server.relay.consent import Ask, ConsentBook, Standing
from remote_server.relay.identity import clean_id
from remote_server.relay.rules import (
    channel_consent_refusal,
    check_session_type,
    initial_consent_state,
    shows_session_panel,
    status_report,
)
from remote_server.relay.rules import channel_refusal as channel_refusal_in
from remote_server.relay.rules import viewing_refusal as viewing_refusal_in
from remote_server.settings import ServerSettings

from remote_core.errors import SessionRefused
from remote_core.protocol import Channel, pb
from remote_core.records import DEFAULT_TENANT_ID, User
from remote_core.types import ConsentDecision


@pytest.mark.parametrize(("decision", "attended", "state"), [
    (None, True, "pending"), (None, False, "not_required"),
    (ConsentDecision.ASK, False, "pending"), (ConsentDecision.ASK, True, "pending"),
    (ConsentDecision.APPROVE, True, "granted"), (ConsentDecision.APPROVE, False, "not_required"),
])
def test_consent_starts_as_the_policy_and_the_session_kind_say(decision, attended,
                                                               state) -> None:
    assert initial_consent_state(decision, attended) == state


def user(**fields) -> User:
    return User(id="u", username="u", password_hash="x", **fields)


def test_who_may_view_what() -> None:
    viewing_refusal = partial(viewing_refusal_in, tenant_id=DEFAULT_TENANT_ID)
    assert viewing_refusal(user(role="admin"), "acme") is None
    assert viewing_refusal(user(permissions=("view",), client_access=("*",)), "acme") is None
    assert viewing_refusal(user(permissions=("view",), client_access=("acme",)), "acme") is None
    assert "organization" in viewing_refusal(user(permissions=("view",),
                                                  client_access=("globex",)), "acme")
    assert "may not view" in viewing_refusal(user(permissions=("support_codes",),
                                                  client_access=("*",)), "acme")
    assert "disabled" in viewing_refusal(user(role="admin", disabled=True), "acme")
    assert "disabled" in viewing_refusal(None, "acme")
    assert "another tenant" in viewing_refusal(user(role="admin"), "acme", tenant_id="t-2")


def test_session_types_and_identifiers() -> None:
    check_session_type(pb.SCREEN_CONTROL)
    check_session_type(pb.VIEW_ONLY)
    for own in ("BACKSTAGE", "FILE_TRANSFER"):
        check_session_type(pb.SessionType.Value(own), viewer=True)
        with pytest.raises(SessionRefused, match=f"{own} is a viewer's session type"):
            check_session_type(pb.SessionType.Value(own))
    for role in (False, True):
        with pytest.raises(SessionRefused, match="session type 99 is not supported"):
            check_session_type(99, viewer=role)
    assert clean_id("  agent-1 ", "agent_id") == "agent-1"
    for bad in ("", " ", "x" * 129, "bad\nid"):
        with pytest.raises(SessionRefused, match="printable"):
            clean_id(bad, "agent_id")


def test_an_agent_status_reports_only_what_it_filled_in() -> None:
    report, refused = status_report("a-1", pb.AgentStatus(hostname="pc", is_elevated=True))
    assert (report.hostname, report.is_elevated, report.status) == ("pc", True, "online")
    assert report.organization is None and report.tags is None and report.site is None
    assert refused == []


def test_an_agent_status_field_that_breaks_the_text_rule_is_not_reported() -> None:
    report, refused = status_report("a-1", pb.AgentStatus(
        hostname="pc\x00", site="s" * 201, organization="acme", tags=["ok", "x\ny"]))
    assert (report.hostname, report.site, report.tags) == (None, None, None)
    assert report.organization == "acme"
    assert refused == ["hostname", "site", "tags"]


def test_an_agent_reports_its_plugin_set_within_the_text_rule() -> None:
    report, refused = status_report("a-1", pb.AgentStatus(
        plugins=["codec_raw_zstd 0.1.0", "capture_mss 0.1.0"]))
    assert report.plugins == ("codec_raw_zstd 0.1.0", "capture_mss 0.1.0") and refused == []
    assert status_report("a-1", pb.AgentStatus())[0].plugins is None  # not reported: kept
    for bad in (["ok 1.0", "evil\n1.0"], ["p 1"] * 65, ["x" * 201]):
        report, refused = status_report("a-1", pb.AgentStatus(plugins=bad))
        assert report.plugins is None and refused == ["plugins"]


def test_the_session_panel_shows_as_the_policy_for_the_organization_says() -> None:
    default = ServerSettings()
    assert shows_session_panel(default, managed=False, organization="Acme")  # attended
    assert not shows_session_panel(default, managed=True, organization="Acme")
    some = ServerSettings(session_panel_organizations=("Acme",))
    assert shows_session_panel(some, managed=True, organization="Acme")
    assert not shows_session_panel(some, managed=True, organization="Globex")
    assert not shows_session_panel(some, managed=True, organization="")
    every = ServerSettings(session_panel_managed=True)
    assert shows_session_panel(every, managed=True, organization="Globex")


@pytest.mark.parametrize("channel", list(Channel))
def test_who_may_open_a_terminal_or_move_files(channel: Channel) -> None:
    channel_refusal = partial(channel_refusal_in, tenant_id=DEFAULT_TENANT_ID)
    permission = channel.value
    assert channel_refusal(channel, user(role="admin"), "acme") is None
    assert channel_refusal(channel, user(permissions=(permission,), client_access=("acme",)),
                           "acme") is None
    other = next(c for c in Channel if c is not channel).value  # one channel is not the other
    for viewer in (user(permissions=("view", "control", other), client_access=("*",)),
                   user(permissions=("support_codes", "manage_machines"), client_access=("*",))):
        assert f"needs the '{permission}' permission" in str(
            channel_refusal(channel, viewer, "acme"))
    assert "organization" in str(channel_refusal(
        channel, user(permissions=(permission,), client_access=("other",)), "acme"))
    assert "disabled" in str(channel_refusal(
        channel, user(role="admin", disabled=True), "acme"))
    assert "disabled" in str(channel_refusal(channel, None, "acme"))
    assert "another tenant" in str(channel_refusal(channel, user(role="admin"), "acme",
                                                   tenant_id="t-2"))


def test_consent_to_view_and_consent_to_a_terminal_are_kept_apart() -> None:
    book = ConsentBook(timeout=10)
    view = Ask("u2", "techb", control=True)
    shell = Ask("u2", "techb", control=False, channel=Channel.TERMINAL)
    book.queue(view)
    book.queue(shell)
    assert book.standing("u2") is Standing.ASKING
    assert book.standing("u2", channel=Channel.TERMINAL) is Standing.ASKING
    assert book.next(now=0) == view
    book.admit(book.answered() or view)
    assert book.standing("u2") is Standing.ADMITTED
    assert book.standing("u2", channel=Channel.TERMINAL) is Standing.ASKING  # still queued
    assert book.next(now=1) == shell
    assert book.expire(now=5) is None and book.expire(now=11) == shell
    book.refuse(shell, Standing.TIMED_OUT)
    assert book.standing("u2", channel=Channel.TERMINAL) is Standing.TIMED_OUT
    assert book.standing("u2") is Standing.ADMITTED  # viewing stands
    assert book.admitted == {"u2": True} and book.channels[Channel.TERMINAL] == set()
    assert book.standing("u2", channel=Channel.FILES) is Standing.UNASKED  # nor to files
    book.admit(shell)  # a later grant (say, by the policy)
    assert book.standing("u2", channel=Channel.TERMINAL) is Standing.ADMITTED
    assert "u2" not in book.channels_refused[Channel.TERMINAL]
    for standing, words in ((Standing.ASKING, "being asked"), (Standing.DENIED, "denied"),
                            (Standing.TIMED_OUT, "in time"), (Standing.UNASKED, "not allowed")):
        assert words in str(channel_consent_refusal(Channel.TERMINAL, standing))
        assert "file transfer" in str(channel_consent_refusal(Channel.FILES, standing))
    assert channel_consent_refusal(Channel.TERMINAL, Standing.ADMITTED) is None
