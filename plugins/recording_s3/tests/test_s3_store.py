"""The S3 recording store against a real S3 API (moto's server, or the one named by
``REMOTE_SUPPORT_TEST_S3_URL`` for the contract): segments whole, big ones in parts, a
missing one said as such, a stalled endpoint a StoreError in bounded time, and URLs it
cannot use (or that carry credentials) refused at start-up."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from remote_recording_s3 import S3Location, S3RecordingStore, location_of
from remote_recording_s3 import register_recording_stores as registered
from remote_server.testing.processes import BIN, free_port

from remote_core.errors import ConfigError, NotFoundError, StoreError
from remote_core.testing.recording_store_contract import RecordingStoreContract

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024
TEST_URL = "REMOTE_SUPPORT_TEST_S3_URL"


async def opened(url: str) -> S3RecordingStore:
    store = S3RecordingStore(url)
    await store.open()
    return store


async def test_segments_are_kept_under_the_prefix_and_removed(s3_url: str, moto: Any) -> None:
    store = await opened(s3_url)
    prefix = location_of(s3_url).prefix
    data = [os.urandom(1000 + i) for i in range(3)]
    for index, segment in enumerate(data):
        await store.put_segment("rec-1", index, segment)
    await store.put_segment("rec-10", 0, b"a neighbour whose id starts alike")
    listed = moto.client().list_objects_v2(Bucket=moto.bucket, Prefix=f"{prefix}/")["Contents"]
    assert sorted(o["Key"] for o in listed) == [
        f"{prefix}/rec-1/000000.seg", f"{prefix}/rec-1/000001.seg",
        f"{prefix}/rec-1/000002.seg", f"{prefix}/rec-10/000000.seg"]
    assert [await store.get_segment("rec-1", i) for i in range(3)] == data
    with pytest.raises(NotFoundError, match="segment 3 of recording rec-1 is missing"):
        await store.get_segment("rec-1", 3)
    await store.delete_recording("rec-1")
    listed = moto.client().list_objects_v2(Bucket=moto.bucket, Prefix=f"{prefix}/")["Contents"]
    assert [o["Key"] for o in listed] == [f"{prefix}/rec-10/000000.seg"]
    await store.delete_recording("rec-1")  # already gone: no error
    await store.close()


async def test_a_recording_is_removed_in_batches(s3_url: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """DeleteObjects takes 1,000 keys at most; here 2, so 5 segments take 3 batches."""
    monkeypatch.setattr("remote_recording_s3.bucket.DELETE_BATCH", 2)
    store = await opened(s3_url)
    for index in range(5):
        await store.put_segment("many", index, b"x")
    await store.delete_recording("many")
    for index in range(5):
        with pytest.raises(NotFoundError):
            await store.get_segment("many", index)
    await store.close()


async def test_a_big_segment_goes_up_in_parts(s3_url: str, moto: Any) -> None:
    """17 MiB in 8 MiB parts: S3 gives a multipart object an ETag ending in -<parts>."""
    store = await opened(s3_url)
    data = os.urandom(17 * MiB)
    await store.put_segment("big", 0, data)
    await store.put_segment("big", 1, b"small")
    key = store.location.key("big", "000000.seg")
    assert moto.client().head_object(Bucket=moto.bucket, Key=key)["ETag"].endswith('-3"')
    small = moto.client().head_object(Bucket=moto.bucket,
                                      Key=store.location.key("big", "000001.seg"))
    assert "-" not in small["ETag"]  # one PutObject
    assert await store.get_segment("big", 0) == data
    await store.close()


@pytest.mark.timeout(90)
async def test_a_stalled_endpoint_is_a_store_error_in_bounded_time(
        s3_url: str, stall: Callable[[], AbstractContextManager[None]]) -> None:
    """Connected, then the endpoint stops answering: 5 s to connect, 10 s a read, two
    retries; a StoreError, never a hang."""
    store = await opened(s3_url)
    await store.put_segment("stalled", 0, b"before")
    with stall():
        began = time.monotonic()
        with pytest.raises(StoreError, match=r"cannot write .*stalled/000001\.seg.*timeout"):
            await store.put_segment("stalled", 1, os.urandom(100_000))
        took = time.monotonic() - began
    print(f"a stalled endpoint failed a segment after {took:.1f} s")
    assert 10 <= took <= 40, took
    await store.close()


async def test_an_endpoint_that_is_not_there_is_a_clear_error(aws_env: dict[str, str]) -> None:
    secret = aws_env["AWS_SECRET_ACCESS_KEY"]
    store = S3RecordingStore(f"s3://recordings-test?endpoint=http://127.0.0.1:{free_port()}")
    with pytest.raises(StoreError, match=r"cannot reach bucket recordings-test at http://127"
                                         r".*Could not connect") as caught:
        await store.open()
    assert secret not in str(caught.value) and "\n" not in str(caught.value)
    await store.close()


def test_errors_are_one_line_without_the_credentials(aws_env: dict[str, str]) -> None:
    from remote_recording_s3.bucket import Bucket

    bucket = Bucket(location_of("s3://recordings-test/x?endpoint=http://127.0.0.1:9"))
    echoed = OSError(f"the server said:\n{aws_env['AWS_SECRET_ACCESS_KEY']} is wrong "
                     f"for {aws_env['AWS_ACCESS_KEY_ID']}")
    assert str(bucket.error(echoed, "cannot write k")) == \
        "cannot write k: the server said: *** is wrong for ***"
    bucket.close()


async def test_a_missing_bucket_is_said_at_open(moto: Any, aws_env: dict[str, str]) -> None:
    store = S3RecordingStore(moto.url("x", bucket="no-such-bucket"))
    with pytest.raises(StoreError, match=r"bucket no-such-bucket at http://.* does not exist"):
        await store.open()


async def test_no_credentials_is_said_as_such(moto: Any, aws_env: dict[str, str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    store = S3RecordingStore(moto.url("x"))
    with pytest.raises(StoreError, match=r"no AWS credentials found .*AWS_ACCESS_KEY_ID"):
        await store.open()


async def test_ids_cannot_leave_their_folder() -> None:
    store = S3RecordingStore("s3://bucket/prefix")  # never opened: refused before any call
    for bad in ("../escape", "a/b", "", ".hidden", "x" * 65):
        with pytest.raises(ValueError, match="not a recording id"):
            await store.put_segment(bad, 0, b"x")
        with pytest.raises(ValueError, match="not a recording id"):
            await store.delete_recording(bad)
    with pytest.raises(ValueError, match="not a recording id"):
        await store.get_segment("rec-1", -1)


def test_urls() -> None:
    assert location_of("s3://recordings") == S3Location("recordings")
    assert location_of("s3://my.bucket-1/a/b/?region=eu-west-3") == S3Location(
        "my.bucket-1", "a/b", region="eu-west-3")
    assert location_of("s3://b12/p%20q?endpoint=http://127.0.0.1:9000&region=us-east-1") \
        == S3Location("b12", "p q", "http://127.0.0.1:9000", "us-east-1")
    assert location_of("s3://b12/x?endpoint=https://s3.example.net").endpoint == \
        "https://s3.example.net"
    assert S3Location("b12", "a/b").key("rec", "000001.seg") == "a/b/rec/000001.seg"
    assert S3Location("b12").key("rec", "000001.seg") == "rec/000001.seg"
    [spec] = registered()
    assert (spec.name, spec.schemes, spec.factory) == ("s3", ("s3",), S3RecordingStore)


@pytest.mark.parametrize(("url", "why"), [
    ("file:recordings", "takes s3://BUCKET"),
    ("s3://AKIAEXAMPLE:wJalrXUtnFEMI@bucket/x", "credentials do not belong"),
    ("s3://AKIAEXAMPLE:wJalrX/tnFEMI@bucket/x", "credentials do not belong"),  # "/" in it
    ("s3://bucket:9000/x", "port goes in \\?endpoint="),
    ("s3://bucket/x?endpoint=http://AKIAEXAMPLE:wJalrXUtnFEMI@127.0.0.1:9000",
     "credentials do not belong"),
    ("s3://bucket/x?aws_secret_access_key=wJalrXUtnFEMI", "unknown parameter "
                                                          "'aws_secret_access_key'"),
    ("s3://bucket/x?endpoint=http://a&endpoint=http://b", "given twice"),
    ("s3://bucket/x?endpoint=ftp://host", "http:// or https://"),
    ("s3://bucket/x?endpoint=http://host:port", "port is not a number"),
    ("s3://bucket/x?region=Not%20a%20region", "not a region"),
    ("s3://Bucket_Upper/x", "not an S3 bucket name"),
    ("s3://ab/x", "not an S3 bucket name"),
    ("s3:///x", "not an S3 bucket name"),
    ("s3://bucket/a/../b", "'..' part"),
    ("s3://bucket/a//b", "empty"),
    ("s3://bucket/x#frag", "no #fragment"),
])
def test_urls_it_refuses(url: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why) as caught:
        location_of(url)
    assert "wJalrX" not in str(caught.value)  # a secret is never repeated


def test_serve_stops_with_one_line_on_a_url_with_credentials(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
           "REMOTE_SUPPORT_RECORDINGS": "on",
           "REMOTE_SUPPORT_RECORDINGS_URL": "s3://AKIAEXAMPLE:wJalrXUtnFEMI@bucket/x",
           "REMOTE_SUPPORT_DATABASE_URL": f"sqlite:///{tmp_path / 'server.db'}",
           "REMOTE_SUPPORT_PORT": "0"}
    done = subprocess.run([str(BIN / "remote-support"), "serve"],
                          env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = [x for x in done.stderr.splitlines() if "error" in x]
    assert "credentials do not belong in an s3: URL" in line
    assert "wJalrX" not in done.stderr + done.stdout


@pytest.fixture
def contract_url(request: pytest.FixtureRequest) -> str:
    """Another S3 API's URL when one is given, else a fresh prefix in moto's bucket."""
    given = os.environ.get(TEST_URL)
    if given:
        base, mark, query = given.partition("?")
        return f"{base.rstrip('/')}/contract-{uuid.uuid4().hex[:12]}{mark}{query}"
    url: str = request.getfixturevalue("s3_url")
    return url


class TestS3RecordingStore(RecordingStoreContract):
    @pytest.fixture
    async def recordings(self, contract_url: str) -> AsyncIterator[S3RecordingStore]:
        store = S3RecordingStore(contract_url)
        await store.open()
        yield store
        await store.close()
