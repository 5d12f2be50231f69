"""Unauthenticated bodies and request heads are bounded before they are read (findings 4
and 5 of the review).

Over raw sockets, because the point is what the server does before a whole
request exists: refuse by the declared length, stop reading a body that
streams past the cap, give a slow sender a fixed time, and answer JSON nested
past the parser's depth with a 400 problem instead of a traceback.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator

import pytest
from remote_server.testing.liveserver import LiveServer, fresh_ip, live_server
from remote_server.web.api.endpoint import MAX_BODY_BYTES
from remote_server.web.serving import MAX_HEADER_BYTES, MAX_HEADER_FIELDS

from .conftest import server_settings

BODY_SECONDS = 1.0


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = server_settings(tmp_path_factory.mktemp("bounds"),
                               request_body_timeout=BODY_SECONDS)
    with live_server(settings) as live:
        yield live


def request_head(path: str, **headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"X-Forwarded-For: {fresh_ip()}",
             "Content-Type: application/json",
             *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split()[1])


def read_answer(sock: socket.socket, within: float) -> bytes:
    sock.settimeout(within)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        pass
    return data


def test_a_declared_length_over_the_cap_is_refused_before_reading(bounded: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", bounded.port)) as sock:
        sock.sendall(request_head("/api/auth/login", Content_Length="2000000000") + b"{")
        started = time.monotonic()
        answer = read_answer(sock, within=5)
    assert status_of(answer) == 413 and time.monotonic() - started < 5


def test_a_streamed_body_is_cut_off_at_the_cap(bounded: LiveServer) -> None:
    """No Content-Length (chunked): the server stops at the cap, not at 200 MB."""
    chunk = b" " * 65536
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", bounded.port)) as sock:
        sock.sendall(request_head("/api/auth/login", Transfer_Encoding="chunked"))
        try:
            while sent < 200 * 1024 * 1024:
                sock.sendall(framed)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = read_answer(sock, within=5)
    assert status_of(answer) == 413
    assert sent < 50 * MAX_BODY_BYTES, f"the client got {sent} bytes in before the refusal"


def test_a_slow_sender_gets_408_in_fixed_time(bounded: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", bounded.port)) as sock:
        sock.sendall(request_head("/api/auth/login", Content_Length="100") + b'{"user')
        started = time.monotonic()
        answer = read_answer(sock, within=BODY_SECONDS * 10)
    assert status_of(answer) == 408
    assert BODY_SECONDS * 0.9 < time.monotonic() - started < BODY_SECONDS * 5


@pytest.mark.parametrize("path", ["/api/auth/login", "/api/codes/validate", "/api/csp-report"])
def test_deeply_nested_json_is_a_400_without_a_traceback(
        bounded: LiveServer, path: str, caplog: pytest.LogCaptureFixture) -> None:
    body = b"[" * 5_000 + b"]" * 5_000
    with caplog.at_level(logging.WARNING), socket.create_connection(
            ("127.0.0.1", bounded.port)) as sock:
        kind = "application/csp-report" if path.endswith("csp-report") else "application/json"
        head = request_head(path, Content_Length=str(len(body))).replace(
            b"application/json", kind.encode())
        sock.sendall(head + body)
        answer = read_answer(sock, within=5)
        while b"nested" not in answer and len(answer) < 4096:
            more = sock.recv(4096)
            if not more:
                break
            answer += more
    assert status_of(answer) == 400
    problem = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert "nested too deeply" in problem["detail"]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_a_header_line_past_the_bound_is_refused_early(bounded: LiveServer) -> None:
    """The request line and headers together are bounded (64 KiB): a 100 MB header line
    is refused (431) and the connection closed long before it is all sent."""
    sent = 0
    with socket.create_connection(("127.0.0.1", bounded.port)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        try:
            while sent < 100 * 1024 * 1024:
                sock.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = read_answer(sock, within=5)
    assert sent < 20 * 1024 * 1024, f"{sent} bytes of one header line were taken in"
    # The refusal may be lost to the reset of a connection still being written to.
    assert answer == b"" or status_of(answer) == 431


def send_head(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head)
        answer = read_answer(sock, within=5)
        while not answer.endswith(b"}") and len(answer) < 8192:
            more = sock.recv(4096)
            if not more:
                break
            answer += more
    return answer


def test_headers_past_the_byte_bound_are_a_431_problem(bounded: LiveServer) -> None:
    big = "a" * (MAX_HEADER_BYTES + 1024)
    answer = send_head(bounded.port, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     f"X-Big: {big}\r\n\r\n".encode())
    assert status_of(answer) == 431
    problem = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert problem["type"] == "/api/problems/headers-too-large" and problem["status"] == 431
    assert b"application/problem+json" in answer.split(b"\r\n\r\n", 1)[0]


def test_more_header_fields_than_the_bound_are_a_431_problem(bounded: LiveServer) -> None:
    fields = "".join(f"X-F{i}: {i}\r\n" for i in range(MAX_HEADER_FIELDS))
    answer = send_head(bounded.port, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     f"{fields}\r\n".encode())
    assert status_of(answer) == 431
    problem = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert problem["type"] == "/api/problems/headers-too-large"
    assert str(MAX_HEADER_FIELDS) in problem["detail"]
    fewer = "".join(f"X-F{i}: {i}\r\n" for i in range(MAX_HEADER_FIELDS - 2))
    answer = send_head(bounded.port, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     f"{fewer}Connection: close\r\n\r\n".encode())
    assert status_of(answer) == 200
