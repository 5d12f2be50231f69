"""Codec plugins' browser decoders, served from the server's own origin at /codecs/."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from remote_server.testing.liveserver import LiveServer
from remote_server.web.codecs import codec_modules

from remote_core.errors import PluginError
from remote_core.types import CodecSpec


@pytest.mark.anyio
async def test_each_browser_decoder_is_listed_and_served_as_a_module(tmp_path: Path) -> None:
    module = tmp_path / "acme.js"
    module.write_text('export default { codec: "acme", createDecoder() {} };\n')
    app = codec_modules([CodecSpec(name="acme", browser_decoder=module),
                         CodecSpec(name="raw_zstd", frame_field="raw")])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://server") as client:
        listed = await client.get("/index.json")
        assert listed.json() == [{"codec": "acme", "module": "/codecs/acme.js"}]
        served = await client.get("/acme.js")
        assert served.status_code == 200 and served.text == module.read_text()
        assert served.headers["content-type"] == "text/javascript; charset=utf-8"
        assert served.headers["x-content-type-options"] == "nosniff"
        assert (await client.get("/raw.js")).status_code == 404
        assert (await client.get("/acme%2F..%2Facme.js")).status_code == 404  # names only


def test_a_browser_decoder_that_is_not_a_readable_module_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match=r"is not a \.js module"):
        codec_modules([CodecSpec(name="acme", browser_decoder=tmp_path / "acme.py")])
    with pytest.raises(PluginError, match="cannot be read"):
        codec_modules([CodecSpec(name="acme", browser_decoder=tmp_path / "missing.js")])


def test_the_server_lists_no_browser_decoder_of_its_own(server: LiveServer) -> None:
    index = httpx.get(f"{server.base_url}/codecs/index.json", timeout=10)
    assert index.status_code == 200 and index.json() == []
