"""The agent's pieces with no I/O: backoff, flow window, stream state, framing, config."""

from __future__ import annotations

import dataclasses

import pytest
from remote_agent.adaptive import (
    MAX_CALM_SECONDS,
    ChosenSize,
    ContentSwitch,
    MotionSize,
    changed_share,
)
from remote_agent.backoff import Backoff
from remote_agent.config import AgentConfig
from remote_agent.flow import QUEUE_POLL, QUEUED_BYTES, FlowWindow
from remote_agent.linkrate import DeliveryRate
from remote_agent.presence import Connected, Presence, describe
from remote_agent.session import HANDLERS, NOT_ACTED_ON
from remote_agent.stream import StreamState
from remote_agent.streamer import video_message, wire_frame

from remote_core.protocol import ALLOWED, Role, pb
from remote_core.types import CodecSpec, EncodedFrame, Rect


# -- backoff ---------------------------------------------------------------------------------
def test_backoff_grows_exponentially_to_the_cap_with_jitter_below_the_ceiling():
    top = Backoff(base=1, cap=8, factor=2, rand=lambda: 1.0)
    assert [top.next_delay() for _ in range(6)] == [1, 2, 4, 8, 8, 8]
    bottom = Backoff(base=1, cap=8, rand=lambda: 0.0)
    assert [bottom.next_delay() for _ in range(3)] == [0.5, 0.5, 0.5]


def test_the_shipped_backoff_grows_by_1_6_to_a_minute():
    """Not doubling: an agent waits about as long again as the server was away, so a
    restart's few seconds down do not grow into a 16 s wait once it is back."""
    shipped = Backoff(rand=lambda: 1.0)
    delays = [shipped.next_delay() for _ in range(11)]
    assert delays[:5] == pytest.approx([1, 1.6, 2.56, 4.096, 6.5536])
    assert delays[-2:] == [60, 60] and max(delays) == 60


def test_backoff_resets_only_after_a_stable_connection():
    b = Backoff(base=1, cap=60, factor=2, stable_after=30, rand=lambda: 1.0)
    for _ in range(4):
        b.next_delay()
    b.connected(100.0)
    b.disconnected(110.0)  # thrown out after 10 s: keep backing off
    assert b.next_delay() == 16
    b.connected(200.0)
    b.disconnected(231.0)  # lasted 31 s: start over
    assert b.next_delay() == 1


def test_backoff_rejects_nonsense():
    with pytest.raises(ValueError, match="base"):
        Backoff(base=0)
    with pytest.raises(ValueError, match="factor"):
        Backoff(factor=1)


# -- flow window --------------------------------------------------------------------------------
BIG = 100_000  # a frame's bytes: over what small frames may have in flight


def test_window_bounds_frames_in_flight_and_acks_open_it():
    flow = FlowWindow(window=2, stall_after=1.0)
    flow.sent(1, BIG, 0.0)
    flow.sent(2, BIG, 0.0)
    assert not flow.can_send(0.1)
    flow.ack(1)
    assert flow.can_send(0.1)
    flow.sent(3, BIG, 0.1)
    flow.ack(3)  # acknowledging 3 covers 2 as well
    assert flow.in_flight(0.2) == 0


def test_small_frames_go_beyond_the_window_over_a_long_round_trip():
    """Typing over 120 ms: four frames of a few hundred bytes in flight, none waiting."""
    flow = FlowWindow(window=3, small_bytes=32 * 1024, most=16)
    for seq in range(1, 17):
        assert flow.can_send(seq / 30)
        flow.sent(seq, 400, seq / 30)
    assert not flow.can_send(17 / 30)  # ``most`` frames, however small
    flow.ack(1)
    assert flow.can_send(17 / 30)


def test_a_large_frame_in_flight_holds_the_rest_to_the_window():
    flow = FlowWindow(window=3, small_bytes=32 * 1024)
    flow.sent(1, 400, 0.0)
    flow.sent(2, 400, 0.0)
    flow.sent(3, 400, 0.0)
    assert flow.can_send(0.0)  # beyond the window: all small
    flow.sent(4, 40_000, 0.0)  # a window opening: now too much is unacknowledged
    assert not flow.can_send(0.0)
    flow.ack(3)
    assert flow.can_send(0.0)  # back within the window, whatever the bytes
    flow.sent(5, 400, 0.0)
    flow.sent(6, 400, 0.0)
    assert not flow.can_send(0.0)
    flow.ack(4)  # the large one acknowledged: small ones go beyond again
    flow.sent(7, 400, 0.0)
    assert flow.in_flight(0.0) == 3 and flow.can_send(0.0)


def test_highest_ack_wins_and_stale_acks_change_nothing():
    flow = FlowWindow(window=3)
    for seq in (1, 2, 3):
        flow.sent(seq, BIG, 0.0)
    flow.ack(2)
    flow.ack(1)  # a slower viewer's older ack
    assert flow.acked == 2 and flow.in_flight(0.0) == 1


def test_lost_acks_do_not_stall_the_stream_forever():
    flow = FlowWindow(window=1, stall_after=0.5)
    flow.sent(1, BIG, 10.0)
    assert not flow.can_send(10.2)
    assert flow.next_deadline(10.2) == 10.5
    assert flow.can_send(10.5)
    assert flow.next_deadline(10.5) is None
    flow.sent(2, BIG, 10.5)  # the expired frame's bytes no longer count
    assert not flow.can_send(10.6)
    assert flow.can_send(11.0)


def test_a_frame_still_in_the_agents_socket_is_not_counted_as_delivered():
    """A slow link carrying a large frame is not a lost acknowledgement: while the socket
    holds much unsent, the frame in flight keeps its place, and the stream looks again a
    little later rather than at once."""
    queued = [500_000]
    flow = FlowWindow(window=1, stall_after=0.5, unsent=lambda: queued[0])
    flow.sent(1, 500_000, 10.0)
    assert not flow.can_send(10.6)
    assert flow.next_deadline(10.6) == pytest.approx(10.6 + QUEUE_POLL)
    queued[0] = QUEUED_BYTES  # nearly on its way: an acknowledgement lost after all
    assert flow.can_send(10.7)


def test_a_frame_the_link_is_still_carrying_is_not_counted_as_delivered():
    """Over a link of known rate, a frame counts as delivered for its age only once the
    link should have carried it and the frames ahead of it: the next frame then waits for
    the acknowledgement and takes the newest picture, not one from before the last of
    the frame on its way arrived (the socket down to its last 64 KB said little)."""
    flow = FlowWindow(window=3, stall_after=1.0)
    flow.link_rate = 250_000  # 2 Mbit/s
    flow.sent(1, 100_000, 10.0)  # 0.4 s of the link
    flow.sent(2, 400_000, 10.0)  # 1.6 s more, behind it
    assert flow.next_deadline(10.0) == pytest.approx(11.4)
    assert flow.in_flight(11.5) == 1  # the first, lost; the second still on its way
    assert flow.next_deadline(11.5) == pytest.approx(13.0)
    assert flow.in_flight(13.0) == 0
    flow.link_rate = None  # not known: its age alone
    flow.sent(3, 400_000, 20.0)
    assert flow.next_deadline(20.0) == pytest.approx(21.0)


def test_frames_of_more_than_a_second_of_the_link_go_one_at_a_time():
    flow = FlowWindow(window=3)
    flow.most_bytes = 200_000  # a second of a 2 Mbit/s link
    flow.sent(1, 150_000, 0.0)
    assert flow.can_send(0.0)  # within a second of the link, the window decides
    flow.sent(2, 150_000, 0.0)
    assert not flow.can_send(0.0)
    flow.ack(2)
    flow.sent(3, 900_000, 0.1)  # a frame larger than that goes alone
    assert not flow.can_send(0.1)
    flow.ack(3)
    assert flow.can_send(0.2)


# -- stream state -------------------------------------------------------------------------------
def test_first_viewer_picks_the_display_and_each_start_wants_a_keyframe():
    s = StreamState()
    s.start("v1", 2)
    assert s.active and s.display_id == 2 and s.take_keyframe()
    assert not s.take_keyframe()
    s.start("v2", 1)  # joins the shared stream; does not move it
    assert s.display_id == 2 and s.take_keyframe()
    s.stop("v1")
    s.stop("v2")
    assert not s.active


def test_switch_and_quality_rebuild_the_encoder_and_force_a_keyframe():
    s = StreamState()
    s.start("v", 0)
    s.take_keyframe()
    generation = s.generation
    s.switch(2)
    assert s.generation == generation + 1 and s.take_keyframe()
    s.set_quality(pb.QualitySettings(preset=pb.QUALITY_LOW))
    assert s.fps() == 10 and s.take_keyframe()
    s.set_quality(pb.QualitySettings(custom_fps=45))
    assert s.fps() == 45


CODECS = [CodecSpec(name="raw_zstd", preference=pb.CODEC_RAW, frame_field="raw", auto_rank=10,
                    encoder_factory=lambda config: None),
          CodecSpec(name="h264", preference=pb.CODEC_H264, frame_field="h264", auto_rank=40,
                    encoder_factory=lambda config: None),
          CodecSpec(name="png", encoder_factory=lambda config: None, auto_rank=90)]


def test_the_codec_is_chosen_again_as_viewers_come_and_go():
    s = StreamState(codecs=CODECS)
    s.start("browser", 0, ["raw", "h264", "png"])
    assert s.codec is not None and s.codec.name == "h264"
    s.set_quality(pb.QualitySettings(codec_name="png"))
    assert s.codec.name == "png"
    generation = s.generation
    s.take_keyframe()
    s.start("script", 0, [])  # lists nothing: the codec slots, no plugin frames
    assert s.codec.name == "h264" and s.generation == generation + 1 and s.take_keyframe()
    s.start("script", 0, [])  # a lagging viewer's repeat: a keyframe, the same codec
    assert s.codec.name == "h264" and s.generation == generation + 1 and s.take_keyframe()
    s.stop("script")
    assert s.codec.name == "png" and s.generation == generation + 2 and s.take_keyframe()
    s.stop("browser")
    s.stop("gone already")
    assert not s.active and s.codec.name == "png"


def test_a_codec_extension_is_on_only_while_every_viewer_lists_it():
    raw = dataclasses.replace(CODECS[0], extensions=("raw_copy",))
    s = StreamState(codecs=[raw])
    s.start("browser", 0, ["raw", "raw_copy"])
    assert s.extensions == {"raw_copy"}
    generation = s.generation
    s.take_keyframe()
    s.start("old viewer", 0, ["raw"])  # the encoder is rebuilt without it, from a keyframe
    assert s.extensions == frozenset() and s.generation == generation + 1 and s.take_keyframe()
    s.stop("old viewer")
    assert s.extensions == {"raw_copy"} and s.generation == generation + 2
    s.start("script", 0, [])  # SPEC's viewer lists nothing, so knows no extension
    assert s.extensions == frozenset()


def test_bad_quality_is_refused_and_changes_nothing():
    s = StreamState()
    with pytest.raises(ValueError, match="custom_fps"):
        s.set_quality(pb.QualitySettings(custom_fps=120))
    assert s.fps() == 30 and s.generation == 0


# -- framing ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 5, 200, 70_000])
def test_video_message_equals_the_wrapper_serialization(size):
    frame = pb.VideoFrame(sequence=7, timestamp=123,
                          raw=pb.RawFrame(width=1, height=1, data=b"x" * size, is_keyframe=True))
    expected = pb.Message(video_frame=frame).SerializeToString()
    assert video_message(frame) == expected


def test_a_codecs_frame_is_wrapped_into_its_slot_once():
    spec = CodecSpec(name="h264", frame_field="h264")
    data = wire_frame(EncodedFrame(b"\x00\x00\x01", keyframe=True, pts=5, dts=5), spec,
                      timestamp=123, display_id=2, sequence=9)
    video = pb.Message.FromString(data).video_frame
    assert (video.timestamp, video.display_id, video.sequence) == (123, 2, 9)
    assert video.h264 == pb.EncodedFrame(data=b"\x00\x00\x01", keyframe=True, pts=5, dts=5)
    with pytest.raises(ValueError, match="carries no dirty rectangles"):
        wire_frame(EncodedFrame(b"x", rects=(Rect(0, 0, 1, 1),)), spec, timestamp=0,
                   display_id=1, sequence=1)


# -- config ----------------------------------------------------------------------------------
def test_config_round_trip_is_owner_only_and_keeps_the_identity(tmp_path):
    path = tmp_path / "agent" / "agent.toml"
    config = AgentConfig(server="http://h:1", key="cak_secret", organization="Acme \"Ltd\"",
                         tags=("a", "b"))
    config.save(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert AgentConfig.load(path) == config
    assert "cak_secret" not in repr(config)
    first = AgentConfig(server="http://h:1").with_identity(path)
    again = AgentConfig().with_identity(path)
    assert first.agent_id and first.agent_id == again.agent_id


def test_identity_creation_never_writes_a_command_line_key(tmp_path):
    path = tmp_path / "agent.toml"
    AgentConfig(key="cak_from_cli").with_identity(path)
    assert "cak_from_cli" not in path.read_text()


def test_broken_config_is_a_clear_error(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text("server = [")
    with pytest.raises(ValueError, match="not valid TOML"):
        AgentConfig.load(path)
    path.write_text('colour = "red"\n')
    with pytest.raises(ValueError, match="unknown keys"):
        AgentConfig.load(path)


# -- pacing ------------------------------------------------------------------------------------
def test_pacer_sends_a_change_at_once_and_caps_the_average_rate():
    from remote_agent.pacing import Pacer

    pacer = Pacer(fps=10, burst=2)
    assert pacer.wait_time(0.0) == 0
    pacer.sent(0.0)
    pacer.sent(0.0)  # the burst is spent
    assert pacer.wait_time(0.0) == pytest.approx(0.1)
    assert pacer.wait_time(0.05) == pytest.approx(0.05)
    assert pacer.wait_time(0.1) == 0
    sent = 0
    now = 0.1
    while now < 10.1:  # a change every millisecond for 10 s
        if pacer.wait_time(now) == 0:
            pacer.sent(now)
            sent += 1
        now += 0.001
    assert 99 <= sent <= 102


def test_small_lossless_frames_cost_the_pacer_a_quarter_of_a_frame():
    """A change that reaches the screen in two small steps (a scroll's move, then its
    new line), 30 times a second on a 30 fps stream, never waits for the bucket; whole
    frames at that rate would."""
    from remote_agent.pacing import SMALL_COST, Pacer

    assert SMALL_COST == 0.25
    for small, waits in [(True, 0), (False, 1)]:
        pacer = Pacer(fps=30)
        waited = 0
        for change in range(300):
            now = change / 30
            for step in (0.0, 0.002):
                if pacer.wait_time(now + step) > 0:
                    waited += 1
                    continue
                pacer.sent(now + step, small=small)
        assert (waited > 100) == bool(waits), waited


def test_pacer_rejects_nonsense():
    from remote_agent.pacing import Pacer

    with pytest.raises(ValueError, match="fps"):
        Pacer(fps=0)


# -- who is connected -------------------------------------------------------------------------
def test_presence_tells_its_listeners_each_change_once():
    heard = []
    presence = Presence()
    presence.listen(heard.append)
    both = pb.Participants(participants=[
        pb.Participant(name="techa", access_mode=pb.CONSENT_CONTROL),
        pb.Participant(name="tech\nb", access_mode=pb.CONSENT_VIEW)])
    presence.told(both)
    presence.told(both)  # the same again: nothing new to tell
    presence.clear()
    assert heard == [(Connected("techa", True), Connected("tech\\x0ab", False)), ()]
    presence.told(pb.Participants(participants=[
        pb.Participant(name="techc", access_mode=pb.CONSENT_VIEW, backstage=True)]))
    assert presence.connected == (Connected("techc", False, backstage=True),)
    assert describe(presence.connected) == "techc (view, terminal)"
    presence.told(pb.Participants(participants=[
        pb.Participant(name="techd", access_mode=pb.CONSENT_VIEW, file_transfer=True)]))
    assert presence.connected == (Connected("techd", False, file_transfer=True),)
    assert describe(presence.connected) == "techd (view, files)"
    assert describe(heard[0]) == "techa (view and control), tech\\x0ab (view)"
    assert describe(()) == "nobody"


def test_the_agent_acts_on_every_kind_the_server_may_send_it_or_says_why_not() -> None:
    # The route table says what reaches an agent; the handshake answer and the goodbye
    # are read before the handler table.
    reaching = ALLOWED[(Role.SERVER, Role.AGENT)] - {"session_response", "disconnect"}
    assert set(HANDLERS).isdisjoint(NOT_ACTED_ON)
    assert set(HANDLERS) | set(NOT_ACTED_ON) == reaching


def test_the_content_switch_moves_to_video_for_motion_and_back_when_calm() -> None:
    switch = ContentSwitch(motion_share=0.1, enter_frames=2, calm_seconds=1.0)
    assert switch.motion_from() is None  # no big change yet: the next is no motion
    assert not switch.observe(0.01, 0.0)  # typing
    assert not switch.observe(None, 0.1)  # the capture does not know: nothing changes
    assert not switch.observe(0.8, 0.2)  # one big change is not yet motion
    assert not switch.observe(0.01, 0.3)
    assert not switch.observe(0.8, 0.4)
    assert switch.motion_from() == 0.1  # a second big change would make motion: video
    assert switch.observe(0.9, 0.5)  # two in a row are
    assert switch.motion_from() is None  # in motion already
    assert switch.calm_left(0.5) == 1.0  # a loop waiting for changes wakes by then
    assert switch.observe(0.01, 1.0)  # a small change inside the motion keeps it
    assert switch.calm_left(1.2) == pytest.approx(0.3)
    assert switch.tick(1.4)
    assert not switch.tick(1.5)  # a second without a big change: lossless again
    assert switch.calm_left(1.5) is None  # no motion to end
    assert not switch.observe(0.9, 1.6)


def test_a_motion_whose_frames_take_most_of_their_time_goes_on_smaller_once() -> None:
    size = MotionSize(busy_share=0.75, frames=3, factor=2, remember=10.0)
    frame = 1 / 30
    assert size.begin(0.0) == 1  # the first motion begins at full size
    assert size.made(0.030, frame, 0.1) is None  # a keyframe's spike alone is not a short CPU
    assert size.made(0.010, frame, 0.1) is None
    assert size.made(0.026, frame, 0.1) is None and size.made(0.026, frame, 0.1) is None
    assert size.made(0.024, frame, 0.1) is None  # under 3/4 of the frame's time: starts over
    assert [size.made(0.030, frame, 0.2) for _ in range(3)] == [None, None, 2]
    assert size.made(0.040, frame, 5.0) is None  # once a motion: its size stays
    # A motion within ten seconds of the last frame of one that went smaller begins smaller,
    # and stays so; after a longer calm, at full size.
    assert size.begin(14.9) == 2
    assert size.made(0.030, frame, 15.0) is None and size.made(0.001, frame, 15.0) is None
    assert size.begin(25.1) == 1
    assert [size.made(0.030, frame, 25.2) for _ in range(3)] == [None, None, 2]


def test_a_chosen_codec_goes_smaller_in_a_motion_short_of_cpu_and_whole_once_calm() -> None:
    chosen = ChosenSize(ContentSwitch(motion_share=0.1, enter_frames=2, calm_seconds=1.0),
                        MotionSize(busy_share=0.75, frames=3, factor=2, remember=10.0))
    frame = 1 / 30
    # Typing is no motion, however slow its frames: its size stays.
    assert [chosen.made(0.01, 0.05, frame, t / 10) for t in range(5)] == [None] * 5
    # A motion begins (two large changes) at full size, goes on at half size after three
    # slow frames, and keeps it while it lasts.
    assert chosen.made(0.5, 0.05, frame, 1.0) is None
    assert chosen.made(0.5, 0.05, frame, 1.1) == 1
    assert [chosen.made(0.5, 0.05, frame, 1.2) for _ in range(3)] == [None, None, 2]
    assert chosen.made(0.5, 0.01, frame, 1.3) is None
    assert chosen.calm_left(1.5) == pytest.approx(0.8)
    assert chosen.tick(2.2) is None  # a still screen, not yet a calm second
    assert chosen.tick(2.31) == 1  # calm: full size again
    assert chosen.tick(2.4) is None and chosen.calm_left(2.4) is None
    # The next motion within ten seconds begins at half size; a calm that a small change
    # brings ends it too.
    assert chosen.made(0.5, 0.01, frame, 3.0) is None
    assert chosen.made(0.5, 0.01, frame, 3.1) == 2
    assert chosen.made(0.01, 0.01, frame, 4.2) == 1
    # After a longer calm a motion begins at full size again.
    assert chosen.made(0.5, 0.01, frame, 20.0) is None
    assert chosen.made(0.5, 0.01, frame, 20.1) == 1


def test_the_changed_share_of_the_screen() -> None:
    assert changed_share(None, 100, 100) is None
    assert changed_share([], 100, 100) == 0.0
    assert changed_share([Rect(0, 0, 10, 10), Rect(50, 50, 10, 10)], 100, 100) == 0.02
    assert changed_share([Rect(0, 0, 100, 100)] * 2, 100, 100) == 1.0


def test_a_costly_lossless_picture_waits_longer_each_time_and_a_cheap_one_resets() -> None:
    switch = ContentSwitch(calm_seconds=1.0)
    switch.lossless_too_costly(0.0)  # a large change while lossless: the usual wait
    assert switch.motion and switch.tick(0.9) and not switch.tick(1.0)
    switch.lossless_too_costly(1.0)  # the picture restored after it was too costly
    assert switch.tick(2.9) and not switch.tick(3.0)  # twice the wait
    switch.lossless_too_costly(3.0)
    assert switch.tick(6.9) and not switch.tick(7.0)  # four times
    for _ in range(6):
        switch.lossless_too_costly(100.0)
        switch.tick(1000.0)
    switch.lossless_too_costly(1000.0)
    assert switch.tick(1000.0 + MAX_CALM_SECONDS - 0.1)  # never longer than the cap
    assert not switch.tick(1000.0 + MAX_CALM_SECONDS)
    switch.observe(0.01, 1017.0)  # a lossless frame went out: back to the usual wait
    switch.lossless_too_costly(1018.0)
    assert not switch.tick(1019.0)


def test_the_link_rate_comes_from_acknowledged_large_frames_less_the_round_trip() -> None:
    rate = DeliveryRate(window=5.0)
    assert rate.bytes_per_second(0.0) is None
    rate.sent(1, 1000, 0.0)
    rate.acked(1, 0.04)  # a small frame: the round trip, 40 ms
    assert rate.round_trip(0.04) == pytest.approx(0.04)
    assert rate.bytes_per_second(0.04) is None  # small frames are no samples
    rate.sent(2, 125_000, 1.0)  # 125 kB over a 10 Mbit/s link: 100 ms, plus the round trip
    rate.acked(2, 1.14)
    assert rate.bytes_per_second(1.14) == pytest.approx(1_250_000)
    rate.sent(3, 125_000, 1.14)  # queued behind nothing; a slower spell: 5 Mbit/s
    rate.sent(4, 125_000, 1.15)  # queued behind 3: its bytes follow 3's on the link
    rate.acked(3, 1.38)  # 200 ms, plus the round trip
    rate.acked(4, 1.58)  # 200 ms after 3's: the round trip is in both acknowledgements
    assert rate.bytes_per_second(1.58) == pytest.approx(1_250_000)  # the best sample
    assert rate.bytes_per_second(7.0) == pytest.approx(125_000 / 0.2)  # the latest, once old


def test_frames_sent_back_to_back_are_timed_at_the_links_rate() -> None:
    """Over a 2 Mbit/s link with a 120 ms round trip, frames of 40 kB sent back to back
    are acknowledged 160 ms apart: that is the link's rate, not 40 kB in 40 ms."""
    rate = DeliveryRate()
    rate.sent(1, 1000, 0.0)
    rate.acked(1, 0.12)
    for n in range(2, 6):
        rate.sent(n, 40_000, 1.0 + (n - 2) * 0.01)
    for n in range(2, 6):
        rate.acked(n, 1.0 + 0.16 * (n - 1) + 0.12)
    assert rate.bytes_per_second(2.0) == pytest.approx(250_000, rel=0.1)


def test_a_lost_sample_of_an_unsent_sequence_changes_nothing() -> None:
    rate = DeliveryRate()
    rate.acked(7, 1.0)
    assert rate.bytes_per_second(1.0) is None and rate.round_trip(1.0) == 0.0


def test_a_viewer_that_never_acknowledges_does_not_grow_the_link_rate_lists() -> None:
    rate = DeliveryRate()
    for sequence in range(1, 100_000):
        rate.sent(sequence, 100_000, sequence / 30)
    assert len(rate._in_flight) <= 1024
    rate.acked(99_999, 99_999 / 30 + 0.1)  # the newest is still known
    assert rate.bytes_per_second(99_999 / 30 + 0.1) is not None


def test_large_frames_acknowledged_at_once_are_timed_together() -> None:
    rate = DeliveryRate()
    rate.sent(1, 200_000, 0.0)
    rate.sent(2, 200_000, 0.0)  # an acknowledgement was lost: the next covers both
    rate.acked(2, 0.5)
    assert rate.bytes_per_second(0.5) == pytest.approx(800_000)  # both, in half a second


def test_acknowledgements_read_close_together_do_not_make_the_link_look_faster() -> None:
    """The agent may read an acknowledgement late, together with the next one: timed from
    the one before it, that next frame would look delivered in no time. Frames one behind
    the other are timed together, from the first one's start."""
    rate = DeliveryRate()
    rate.sent(1, 1000, 0.0)
    rate.acked(1, 0.12)
    for n, at in ((2, 1.0), (3, 1.01), (4, 1.02)):  # 2 Mbit/s: 200 ms each
        rate.sent(n, 50_000, at)
    rate.acked(2, 1.32)  # 200 ms, plus the round trip
    rate.acked(3, 1.70)  # due at 1.52, read late
    rate.acked(4, 1.72)  # with this one, due then
    assert rate.bytes_per_second(1.72) == pytest.approx(250_000, rel=0.1)
    rate.sent(5, 1000, 2.0)  # a small frame first: its acknowledgement times nothing
    rate.sent(6, 50_000, 2.01)
    rate.sent(7, 50_000, 2.02)
    rate.acked(5, 2.12)
    rate.acked(6, 2.50)  # due at 2.33, read late
    rate.acked(7, 2.53)  # with this one
    samples = [r for _, r in rate._samples]
    assert max(samples) == pytest.approx(250_000, rel=0.1), samples
