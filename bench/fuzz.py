"""Coverage-guided fuzzing (atheris/libFuzzer) of what the server parses from strangers.

Each target runs in its own process for a fixed time and may only fail the way
the product promises to fail on bad input; anything else is a crash, saved
under ``bench/results/fuzz/<target>/`` for a regression test:

- ``protocol``: one WebSocket message on an agent's and a viewer's connection,
  before and after the handshake, then the payload parsed and turned into the
  records the relay keeps (``RemoteProtocolError`` is the promised failure);
- ``json_bodies``: a request body through the bounded JSON parser and every
  public and user body model (a ``Problem`` or a ``ValidationError``);
- ``csp_report``: a browser's violation report through the same parser and the
  report reader (a ``Problem``).

The hypothesis tests in CI throw random bytes at the protocol on every run;
this runs longer and follows coverage.

    uv run python -m bench.fuzz                      # every target, 60 s each
    uv run python -m bench.fuzz --seconds 600 --targets protocol
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.report import report

RESULTS = Path(__file__).resolve().parent / "results" / "fuzz"
TARGETS = ("protocol", "json_bodies", "csp_report")


# -- the targets (run inside the fuzzing process) ---------------------------------------

def _protocol_target() -> Callable[[bytes], None]:
    from remote_server.relay.rules import status_report, update_status_detail

    from remote_core.protocol import Connection, Inbound, RemoteProtocolError, Role, pb, wrap

    hello = wrap("session_request", pb.SessionRequest(session_token="x"))

    def one(data: bytes) -> None:
        if not data:
            return
        peer = Role.AGENT if data[0] & 1 else Role.VIEWER
        conn = Connection(Role.SERVER, peer, 1 << 20)
        try:
            if data[0] & 2:
                conn.receive_data(hello)
                conn.authenticated()
            event = conn.receive_data(data[1:])
            if not isinstance(event, Inbound):
                return
            payload = event.payload()
            if event.kind == "agent_status":
                status_report("a-1", payload)
            elif event.kind == "update_status":
                update_status_detail(payload)
        except RemoteProtocolError:
            pass

    return one


def _json_bodies_target() -> Callable[[bytes], None]:
    from pydantic import BaseModel, ValidationError
    from remote_server.web.api import schemas
    from remote_server.web.bodies import parse_json
    from remote_server.web.problem import Problem

    models = [m for m in vars(schemas).values() if isinstance(m, type)
              and issubclass(m, schemas.Body) and m is not schemas.Body]
    assert all(issubclass(m, BaseModel) for m in models) and len(models) > 5

    def one(data: bytes) -> None:
        try:
            value = parse_json(data)
        except Problem:
            return
        for model in models:
            try:
                model.model_validate(value)
            except ValidationError:
                pass

    return one


def _csp_report_target() -> Callable[[bytes], None]:
    from remote_server.web.api.csp import violations
    from remote_server.web.bodies import parse_json
    from remote_server.web.problem import Problem

    def one(data: bytes) -> None:
        try:
            for violation in violations(parse_json(data)):
                json.dumps(violation)
        except Problem:
            pass

    return one


def _seeds(target: str) -> list[bytes]:
    """Well-formed inputs to start from, so the fuzzer mutates past the first parse."""
    if target == "protocol":
        from remote_core.protocol import pb, wrap

        messages = [
            ("agent_status", pb.AgentStatus(hostname="pc", organization="acme", tags=["a"])),
            ("update_status", pb.UpdateStatus(current_version="1.0.0", state=pb.UPDATE_FAILED)),
            ("video_frame", pb.VideoFrame(sequence=1, raw=pb.RawFrame(
                width=2, height=1, data=b"\0" * 8, is_keyframe=True))),
            ("mouse_event", pb.MouseEvent(x=1, y=2)), ("heartbeat", pb.Heartbeat(timestamp=1)),
            ("consent_response", pb.ConsentResponse(session_id="s", granted=True)),
            ("display_info", pb.DisplayInfo(displays=[pb.Display(id=1, width=800)])),
        ]
        return [bytes([flags]) + wrap(kind, payload) for kind, payload in messages
                for flags in (1, 2, 3)]
    if target == "json_bodies":
        return [json.dumps(body).encode() for body in (
            {"username": "admin", "password": "secret-password"}, {"code": "ABC-DEF-GHJ"},
            {"organization": "acme", "site": "x", "tags": ["a", "b"]},
            {"agent_ids": ["a"], "purge": True}, {"permissions": ["view"]},
            {"version": "1.2.3", "download_url": "https://x/y", "checksum_sha256": "ab" * 32})]
    return [json.dumps({"csp-report": {"document-uri": "https://x/", "blocked-uri": "inline",
                                       "effective-directive": "script-src"}}).encode(),
            json.dumps([{"type": "csp-violation", "body": {"documentURL": "https://x/"}}]).encode()]


FACTORIES: dict[str, Callable[[], Callable[[bytes], None]]] = {
    "protocol": _protocol_target, "json_bodies": _json_bodies_target,
    "csp_report": _csp_report_target,
}


def _run_one(target: str, seconds: int) -> None:
    """Inside the child: instrument the project's modules, then fuzz until time is up."""
    import atheris

    with atheris.instrument_imports(include=["remote_core"]):
        one = FACTORIES[target]()
    out = RESULTS / target
    out.mkdir(parents=True, exist_ok=True)
    corpus = out / "corpus"
    corpus.mkdir(exist_ok=True)
    for number, seed in enumerate(_seeds(target)):
        (corpus / f"seed-{number}").write_bytes(seed)
    atheris.Setup([sys.argv[0], f"-max_total_time={seconds}", f"-artifact_prefix={out}/",
                   "-rss_limit_mb=2048", "-print_final_stats=1", str(corpus)], one)
    atheris.Fuzz()


# -- the driver ---------------------------------------------------------------------------

def _fuzz(target: str, seconds: int) -> dict[str, Any]:
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "bench.fuzz", "--child", target,
                          "--seconds", str(seconds)], capture_output=True, text=True,
                         timeout=seconds + 120)
    log = run.stdout + run.stderr
    (RESULTS / target).mkdir(parents=True, exist_ok=True)
    (RESULTS / target / "last.log").write_text(log)
    execs = re.search(r"stat::number_of_executed_units:\s*(\d+)", log)
    coverage = re.findall(r"cov: (\d+)", log)
    crashes = sorted(p.name for p in (RESULTS / target).glob("crash-*"))
    return {"target": target, "seconds": round(time.monotonic() - started, 1),
            "executions": int(execs.group(1)) if execs else 0,
            "coverage": int(coverage[-1]) if coverage else 0,
            "crashes": len(crashes), "exit": run.returncode, "crash_files": crashes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="per target")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--child", choices=TARGETS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _run_one(args.child, args.seconds)
        return 0
    rows = [_fuzz(target, args.seconds) for target in args.targets.split(",")]
    report("fuzz", [{k: v for k, v in row.items() if k != "crash_files"} for row in rows],
           title="Coverage-guided fuzzing (atheris)",
           notes=[f"crash: {RESULTS / r['target'] / n}  (make it a regression test)"
                  for r in rows for n in r["crash_files"]])
    return 1 if any(row["crashes"] for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
