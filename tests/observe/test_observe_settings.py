"""The metrics and log settings: what cannot work stops start-up with one clear line."""

from __future__ import annotations

import contextvars
import json
import logging

import pytest
from remote_server.cli import main
from remote_server.observe.logs import ContextFilter, JsonFormatter, bind_peer, mask_secrets
from remote_server.settings import ServerSettings

from remote_core.errors import ConfigError


@pytest.mark.parametrize(("environ", "words"), [
    ({"REMOTE_SUPPORT_METRICS": "on"}, "needs 'metrics_token' or 'metrics_networks'"),
    ({"REMOTE_SUPPORT_METRICS": "on", "REMOTE_SUPPORT_METRICS_TOKEN": "short"},
     "at least 16"),
    ({"REMOTE_SUPPORT_METRICS": "on", "REMOTE_SUPPORT_METRICS_NETWORKS": "10.0.0.0/33"},
     "not an address or network"),
    ({"REMOTE_SUPPORT_LOG_FORMAT": "xml"}, "must be text or json"),
])
def test_bad_observing_settings_are_refused(environ: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        ServerSettings.load(environ=environ)


def test_the_cli_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("REMOTE_SUPPORT_METRICS", "on")
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "metrics_token" in err, err


def test_metrics_are_off_and_logs_text_by_default() -> None:
    settings = ServerSettings.load(environ={})
    assert not settings.metrics and settings.log_format == "text"
    secret = ServerSettings.load(environ={"REMOTE_SUPPORT_METRICS_TOKEN": "a-secret-of-length"})
    assert "a-secret-of-length" not in repr(secret)


def test_a_json_line_carries_its_context_and_masks_credentials() -> None:
    record = logging.LogRecord("remote_server.x", logging.INFO, __file__, 1,
                               "agent used %s and %s", ("cak_" + "a" * 40,
                                                        "eyJhbGciOi.eyJzdWIiOi.sig"), None)

    def in_a_socket_task() -> str:
        bind_peer(session_id="s-1", agent_id="a-1", viewer_id="v-1")
        assert ContextFilter().filter(record)
        return JsonFormatter().format(record)

    line = json.loads(contextvars.copy_context().run(in_a_socket_task))
    assert line["session_id"] == "s-1" and line["agent_id"] == "a-1"
    assert line["viewer_id"] == "v-1" and line["level"] == "info"
    assert "a" * 40 not in line["message"] and "eyJzdWIiOi" not in line["message"]
    assert mask_secrets("no secret here") == "no secret here"
