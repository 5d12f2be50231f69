"""A real Prometheus scrapes a real server's /metrics; the test reads values back from its
query API. And /metrics is refused to whoever lacks the access the settings require."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from remote_server.testing.liveserver import assert_problem
from remote_server.testing.processes import Api, ServerProcess, next_message
from remote_server.testing.prometheus import Prometheus
from websockets.sync.client import ClientConnection, connect

from remote_core.protocol import pb, wrap

pytestmark = pytest.mark.slow

TOKEN = "metrics-token-for-the-test-0123456789"
KEYFRAME = pb.VideoFrame(timestamp=1, sequence=1, display_id=0, raw=pb.RawFrame(
    width=10, height=10, data=bytes(300), is_keyframe=True))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("metrics"), metrics="on",
                            metrics_token=TOKEN).start()
    try:
        yield process
    finally:
        process.stop()




def handshake(ws: ClientConnection, token: str, agent_id: str) -> None:
    """Open a session as an agent (``agent_id`` and its key) or a viewer (its token)."""
    ws.send(wrap("session_request", pb.SessionRequest(agent_id=agent_id, session_token=token)))
    response = next_message(ws, "session_response").session_response
    assert response.success, response


def test_prometheus_scrapes_agents_online_and_refused_credentials(
        server: ServerProcess, tmp_path: Path) -> None:
    api = Api(server)
    agent_id, key = api.machine_with_key()
    assert httpx.post(f"{server.url}/api/auth/login", timeout=10,
                      json={"username": "admin", "password": "not-it"}).status_code == 401
    prometheus = Prometheus(tmp_path / "prometheus", f"127.0.0.1:{server.port}", TOKEN)
    try:
        with connect(server.ws_url("/ws/agent")) as agent:
            handshake(agent, key, agent_id)
            session_id = api.live_session(agent_id)["id"]
            with connect(server.ws_url("/ws/viewer")) as viewer:
                handshake(viewer, api.viewer_token(session_id), "")
                agent.send(wrap("video_frame", KEYFRAME))
                next_message(viewer, "video_frame")
                prometheus.wait_for("remote_support_viewers", 1)
            prometheus.wait_for('up{job="remote-support"}', 1)
            prometheus.wait_for("remote_support_agents_online", 1)
            prometheus.wait_for("remote_support_video_frames_relayed_total", 1)
            prometheus.wait_for("remote_support_video_bytes_received_total",
                                len(wrap("video_frame", KEYFRAME)))
            prometheus.wait_for('remote_support_sessions{state="not_required",kind="managed"}',
                                1)
            prometheus.wait_for('remote_support_auth_failures_total{method="password"}', 1)
            build = prometheus.query("remote_support_build_info")
            assert build and build[0]["metric"]["version"], build
            assert prometheus.query("remote_support_store_seconds_count"), \
                "the store's calls are timed"
            assert prometheus.query("remote_support_event_loop_lag_seconds")
        prometheus.wait_for("remote_support_agents_online", 0)
    finally:
        prometheus.stop()
        api.close()


def test_metrics_are_refused_without_the_token(server: ServerProcess) -> None:
    url = f"{server.url}/metrics"
    assert_problem(httpx.get(url, timeout=10), 401, "token")
    assert_problem(httpx.get(url, timeout=10, headers={"Authorization": "Bearer wrong"}), 401)
    assert_problem(httpx.get(url, timeout=10, headers={"Authorization": f"Basic {TOKEN}"}),
                   401)
    ok = httpx.get(url, timeout=10, headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and "remote_support_agents_online" in ok.text


def test_metrics_are_off_by_default_and_networks_restrict_them(tmp_path: Path) -> None:
    default = ServerProcess(tmp_path / "default").start()
    try:
        assert_problem(httpx.get(f"{default.url}/metrics", timeout=10), 404, "off")
    finally:
        default.stop()
    elsewhere = ServerProcess(tmp_path / "elsewhere", metrics="on",
                              metrics_networks="192.0.2.0/24").start()
    try:
        assert_problem(httpx.get(f"{elsewhere.url}/metrics", timeout=10), 403, "address")
    finally:
        elsewhere.stop()


def test_metrics_on_alone_is_a_configuration_error(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "open", metrics="on")
    with pytest.raises(RuntimeError, match="metrics_token"):
        process.start()
