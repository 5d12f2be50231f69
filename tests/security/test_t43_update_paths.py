"""T43: nothing the server sends in an update becomes a path on the agent's machine.

ScreenConnect CVE-2024-1708 and SimpleHelp CVE-2024-57728 wrote outside their
directory from names inside an archive. The agent's updater names its files
after its own artifact only; here it is offered hostile versions and download
names over real HTTPS (remote_core.testing.release_server), and the whole
temporary tree is compared before and after.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from remote_agent.config import AgentConfig
from remote_agent.update import Offer, Updater
from remote_server.release import build_agent

from remote_core.protocol import pb
from remote_core.testing.release_server import ReleaseServer, Route

pytestmark = pytest.mark.anyio

HOSTILE_VERSIONS = ["../../x", "/tmp/x", "1.0.1/../../x", "..\\..\\x", "1.0.1\x00/../x"]
HOSTILE_NAMES = ["..%2f..%2fremote-agent.pyz", "%2e%2e%2f%2e%2e%2fevil.pyz",
                 "..%5c..%5cevil.pyz", "a%2f..%2f..%2f..%2fetc%2fcron.d%2fevil"]


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


class Statuses(list[pb.UpdateStatus]):
    async def __call__(self, status: pb.UpdateStatus) -> None:
        self.append(status)


def agent_in(root: Path) -> Path:
    """A running agent's single file, version 1.0.0, in ``root/agent``."""
    return build_agent(root / "agent" / "remote-agent.pyz", version="1.0.0").path


@pytest.mark.parametrize("version", HOSTILE_VERSIONS)
async def test_t43_a_version_that_is_a_path_is_refused_before_any_download(
        tmp_path: Path, version: str) -> None:
    artifact = agent_in(tmp_path)
    with ReleaseServer(tmp_path / "releases") as releases:
        new = build_agent(tmp_path / "build" / "new.pyz", version="1.0.1")
        url = releases.publish("new.pyz", Route(new.path.read_bytes()))
        before = tree(tmp_path)
        updater = Updater(AgentConfig(server="http://127.0.0.1:9",
                                      ca_bundle=str(releases.ca_bundle)),
                          artifact, current="1.0.0", retry_delay=0.01)
        statuses = Statuses()
        assert await updater.run(Offer(version, url, new.sha256), statuses) is False
        assert statuses[-1].state == pb.UPDATE_FAILED
        assert releases.hits["/new.pyz"] == 0
        assert tree(tmp_path) == before


@pytest.mark.parametrize("name", HOSTILE_NAMES)
async def test_t43_a_download_name_with_separators_lands_in_the_agents_own_file(
        tmp_path: Path, name: str) -> None:
    artifact = agent_in(tmp_path)
    with ReleaseServer(tmp_path / "releases") as releases:
        new = build_agent(tmp_path / "build" / "new.pyz", version="1.0.1")
        url = releases.publish(name, Route(new.path.read_bytes()))
        before = tree(tmp_path)
        updater = Updater(AgentConfig(server="http://127.0.0.1:9",
                                      ca_bundle=str(releases.ca_bundle)),
                          artifact, current="1.0.0", retry_delay=0.01)
        statuses = Statuses()
        installed = await updater.run(Offer("1.0.1", url, new.sha256), statuses)
        assert installed, statuses[-1].error_message
        assert artifact.read_bytes() == new.path.read_bytes()
        added = tree(tmp_path) - before
        own = (f"agent/{artifact.name}", f"agent/.{artifact.name}")  # the agent's own names
        assert all(a.startswith(own) for a in added), added
