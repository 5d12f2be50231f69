"""The blocking side: one bucket through boto3, every failure turned into a one-line
:class:`~remote_core.errors.StoreError` (a missing object into ``NotFoundError``).

Imported only once a recording store opens, so a server with recordings off, or on
another store, never pays for importing boto3 (more than half a second).

Every request is bounded: 5 s to connect, 10 s for each read, at most 2 retries, so a
stalled endpoint fails a segment in about half a minute instead of holding the
recording's writer forever.
"""

from __future__ import annotations

import io
from typing import Any

import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from s3transfer.exceptions import S3UploadFailedError

from remote_core.errors import NotFoundError, StoreError

from .location import S3Location

__all__ = ["CONNECT_TIMEOUT", "MULTIPART_BYTES", "READ_TIMEOUT", "RETRIES", "Bucket"]

MiB = 1024 * 1024
MULTIPART_BYTES = 8 * MiB
"""A segment this big goes up in parts of this size (a 16 MiB one in two)."""
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
RETRIES = 2
CONTENT_TYPE = "application/octet-stream"
DELETE_BATCH = 1000  # the most DeleteObjects takes at once
FAILURES = (BotoCoreError, ClientError, Boto3Error, S3UploadFailedError, OSError)
"""What boto3 and s3transfer raise when the storage fails (timeouts are BotoCoreErrors)."""


class Bucket:
    """Objects under a location's prefix, with blocking calls (run them in a thread)."""

    def __init__(self, location: S3Location) -> None:
        self.location = location
        custom = location.endpoint is not None
        # S3-compatible servers take path-style addressing (virtual hosts need DNS for each
        # bucket), and many refuse the checksum headers boto3 now sends by default
        compatible: dict[str, Any] = {
            "s3": {"addressing_style": "path"},
            "request_checksum_calculation": "when_required",
            "response_checksum_validation": "when_required"} if custom else {}
        config = Config(connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT,
                        retries={"max_attempts": RETRIES, "mode": "standard"}, **compatible)
        self._session = boto3.session.Session()
        self.client: Any = self._session.client(
            "s3", endpoint_url=location.endpoint, region_name=location.region, config=config)
        self.transfer = TransferConfig(multipart_threshold=MULTIPART_BYTES,
                                       multipart_chunksize=MULTIPART_BYTES, max_concurrency=4)
        self.where = (f"bucket {location.bucket}"
                      + (f" at {location.endpoint}" if custom else ""))

    def check(self) -> None:
        """Whether the bucket is there and these credentials reach it."""
        try:
            self.client.head_bucket(Bucket=self.location.bucket)
        except ClientError as exc:
            status = _status(exc)
            if status == 404:
                raise StoreError(f"recordings: {self.where} does not exist") from exc
            if status == 403:
                raise StoreError(f"recordings: access to {self.where} is denied (check the "
                                 "AWS credentials and the bucket's policy)") from exc
            raise self.error(exc, f"cannot reach {self.where}") from exc
        except FAILURES as exc:
            raise self.error(exc, f"cannot reach {self.where}") from exc

    def put(self, key: str, data: bytes) -> None:
        """Store one object whole (in parts past ``MULTIPART_BYTES``; S3 shows an object
        only once its upload is complete)."""
        try:
            if len(data) < MULTIPART_BYTES:  # one request, without a transfer manager's threads
                self.client.put_object(Bucket=self.location.bucket, Key=key, Body=data,
                                       ContentType=CONTENT_TYPE)
            else:
                self.client.upload_fileobj(io.BytesIO(data), self.location.bucket, key,
                                           ExtraArgs={"ContentType": CONTENT_TYPE},
                                           Config=self.transfer)
        except FAILURES as exc:
            raise self.error(exc, f"cannot write {key} to {self.where}") from exc

    def get(self, key: str, missing: str) -> bytes:
        """One object's bytes; ``NotFoundError(missing)`` when there is none."""
        try:
            answer = self.client.get_object(Bucket=self.location.bucket, Key=key)
            data: bytes = answer["Body"].read()
        except ClientError as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                raise NotFoundError(missing) from exc
            raise self.error(exc, f"cannot read {key} from {self.where}") from exc
        except FAILURES as exc:
            raise self.error(exc, f"cannot read {key} from {self.where}") from exc
        return data

    def delete_under(self, prefix: str) -> None:
        """Remove every object whose key starts with ``prefix`` (none is no error)."""
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.location.bucket, Prefix=prefix)
            keys = [item["Key"] for page in pages for item in page.get("Contents", ())]
            for start in range(0, len(keys), DELETE_BATCH):
                batch = keys[start:start + DELETE_BATCH]
                answer = self.client.delete_objects(
                    Bucket=self.location.bucket,
                    Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
                if answer.get("Errors"):
                    first = answer["Errors"][0]
                    raise StoreError(_one_line(
                        f"cannot remove {first.get('Key')} from {self.where}: S3 answered "
                        f"{first.get('Code')}: {first.get('Message', '')}"))
        except FAILURES as exc:
            raise self.error(exc, f"cannot remove {prefix} from {self.where}") from exc

    def close(self) -> None:
        self.client.close()

    def error(self, exc: BaseException, doing: str) -> StoreError:
        """One line saying what failed and why, with no credential in it."""
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            why = f"S3 answered {_status(exc) or ''} {error.get('Code', '')}".replace("  ", " ")
            if error.get("Message"):
                why += f": {error['Message']}"
        elif isinstance(exc, NoCredentialsError):
            why = ("no AWS credentials found (set AWS_ACCESS_KEY_ID and "
                   "AWS_SECRET_ACCESS_KEY, a shared AWS config or an instance role)")
        else:
            why = str(exc) or type(exc).__name__
        return StoreError(self._redact(_one_line(f"{doing}: {why}")))

    def _redact(self, text: str) -> str:
        """``text`` with the credentials in use blanked out, should a server echo them."""
        try:
            credentials = self._session.get_credentials()
        except FAILURES:
            return text
        if credentials is not None:
            for secret in (credentials.access_key, credentials.secret_key, credentials.token):
                if secret and len(secret) >= 8:  # a real one; not a test's "x" in every word
                    text = text.replace(secret, "***")
        return text


def _status(exc: ClientError) -> int | None:
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
