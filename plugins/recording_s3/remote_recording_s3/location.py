"""What an ``s3:`` recordings URL names: a bucket, a key prefix, and where the S3 API is.

``s3://BUCKET/optional/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1``. The URL
is a setting, so it is logged and shown: credentials never go in it (they come from
boto3's chain: the ``AWS_*`` environment, a shared config, an instance role), and one that
carries a user or password is refused, as is a parameter this store does not know (a typo
must not pass silently). No message here repeats the URL, which may hold a secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from remote_core.errors import ConfigError

__all__ = ["PARAMETERS", "S3Location", "location_of"]

PARAMETERS = ("endpoint", "region")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


@dataclass(frozen=True)
class S3Location:
    """A bucket, the key prefix recordings go under ("" for the bucket's top), and the
    API's endpoint and region (``None``: AWS's own, as boto3 finds them)."""

    bucket: str
    prefix: str = ""
    endpoint: str | None = None
    region: str | None = None

    def key(self, *parts: str) -> str:
        """The object key of ``parts`` under the prefix."""
        return "/".join([self.prefix, *parts] if self.prefix else parts)


def location_of(url: str) -> S3Location:
    """Parse an ``s3:`` recordings URL.

    :raises ConfigError: not an ``s3:`` URL, credentials in it, a bad bucket, prefix,
        endpoint or region, or a parameter it does not know.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "s3":
        raise ConfigError("recordings URL: the s3 store takes s3://BUCKET/prefix URLs")
    bucket = parts.netloc
    if "@" in bucket or ":" in bucket:  # user:password@, or a secret cut short at its "/"
        raise ConfigError(_NO_CREDENTIALS + " (and an endpoint's port goes in ?endpoint=)")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise ConfigError(f"recordings URL: {bucket!r} is not an S3 bucket name (3 to 63 "
                          "lower-case letters, digits, dots and hyphens; the endpoint goes "
                          "in ?endpoint=)")
    if parts.fragment:
        raise ConfigError("recordings URL: an s3: URL takes no #fragment")
    return S3Location(bucket, _prefix(parts.path), **_parameters(parts.query))


_NO_CREDENTIALS = ("recordings URL: credentials do not belong in an s3: URL (settings are "
                   "logged and shown); give them as AWS_ACCESS_KEY_ID and "
                   "AWS_SECRET_ACCESS_KEY, a shared AWS config or an instance role")


def _prefix(path: str) -> str:
    prefix = unquote(path).strip("/")
    if prefix and any(p in ("", ".", "..") for p in prefix.split("/")):
        raise ConfigError(f"recordings URL: the key prefix {prefix!r} has an empty, '.' or "
                          "'..' part")
    return prefix


def _parameters(query: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in PARAMETERS:
            raise ConfigError(f"recordings URL: unknown parameter {name!r} (an s3: URL takes "
                              f"{', '.join(PARAMETERS)}; credentials come from the AWS "
                              "environment or config)")
        if name in found:
            raise ConfigError(f"recordings URL: parameter {name!r} is given twice")
        found[name] = value
    if "endpoint" in found:
        _check_endpoint(found["endpoint"])
    if "region" in found and not _REGION.match(found["region"]):
        raise ConfigError(f"recordings URL: {found['region']!r} is not a region name "
                          "(such as us-east-1)")
    return found


def _check_endpoint(endpoint: str) -> None:
    parts = urlsplit(endpoint)
    if "@" in parts.netloc:
        raise ConfigError(_NO_CREDENTIALS)
    try:
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise ConfigError("recordings URL: the endpoint's port is not a number") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("recordings URL: endpoint= takes the S3 API's http:// or https:// "
                          "URL, such as http://127.0.0.1:9000")
    if parts.query or parts.fragment:
        raise ConfigError("recordings URL: the endpoint takes no query or fragment (give "
                          "several parameters as ?endpoint=...&region=...)")
