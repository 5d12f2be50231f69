"""The API's problem types (RFC 9457 ``type``): one stable URI per kind of error.

A client switches on ``type`` rather than on prose: the different 409s (username taken,
release exists, machine offline, awaiting consent) differ in ``type``. Each URI is a
relative reference to ``GET /api/problems/{slug}``, which describes it; the OpenAPI
document and the README list them all.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BY_SLUG", "BY_STATUS", "PROBLEM_PATH", "PROBLEM_TYPES", "ProblemType"]

PROBLEM_PATH = "/api/problems/"


@dataclass(frozen=True)
class ProblemType:
    slug: str
    status: int
    title: str
    meaning: str

    @property
    def uri(self) -> str:
        return PROBLEM_PATH + self.slug

    @property
    def name(self) -> str:
        """The enum member a generated client gives it (``USERNAME_TAKEN``)."""
        return self.slug.replace("-", "_").upper()


PROBLEM_TYPES: tuple[ProblemType, ...] = (
    ProblemType("malformed-body", 400, "Malformed request body",
                "the body is not JSON, is nested too deeply or is missing, or its "
                "Content-Length is not a number"),
    ProblemType("unauthorized", 401, "Not authenticated",
                "no bearer login token, or one that is invalid, expired, of the wrong kind "
                "or no longer valid for its account"),
    ProblemType("bad-credentials", 401, "Wrong username or password",
                "a login with credentials that do not match an enabled account"),
    ProblemType("second-factor-needed", 401, "Second factor needed",
                "a login whose password matched, by an account with a second factor: send "
                "the TOTP code (otp), a recovery code (recovery_code) or a passkey's "
                "assertion (passkey, answering the passkey_options of this problem) with the "
                "password"),
    ProblemType("bad-second-factor", 401, "Wrong second factor",
                "a login whose TOTP code, recovery code or passkey assertion does not "
                "match (it counts toward the login limit and the account's guard)"),
    ProblemType("second-factor-required", 403, "Second factor required",
                "the server requires a second factor of this account and the token does not "
                "carry one: enrol one (POST /api/auth/totp or POST /api/auth/passkeys) and "
                "log in with it"),
    ProblemType("forbidden", 403, "Not allowed",
                "an administrator's endpoint, or a permission the caller lacks"),
    ProblemType("wrong-password", 403, "Current password is wrong",
                "a change of password whose current password does not match"),
    ProblemType("consent-refused", 403, "The end user refused",
                "a viewer token of an attended session whose end user denied this "
                "technician or let the question time out (see the consent member)"),
    ProblemType("not-found", 404, "Not found",
                "no such resource, or one the caller may not see"),
    ProblemType("no-join-agent", 404, "No agent to hand out",
                "a join-page download from a server whose join_agent_file is unset or "
                "unreadable"),
    ProblemType("method-not-allowed", 405, "Method not allowed",
                "the path exists but not with this method (see the Allow header)"),
    ProblemType("body-timeout", 408, "Request body too slow",
                "the request body did not arrive within the server's time for bodies"),
    ProblemType("username-taken", 409, "Username taken", "another account has this username"),
    ProblemType("tenant-name-taken", 409, "Tenant name taken", "another tenant has this name"),
    ProblemType("release-exists", 409, "Release exists", "a release of this version exists"),
    ProblemType("machine-offline", 409, "Machine not connected",
                "an update pushed to a machine that is not connected"),
    ProblemType("session-not-live", 409, "Session not live",
                "a viewer token for a session that has ended"),
    ProblemType("awaiting-consent", 409, "Awaiting consent",
                "the end user has not yet admitted the session or this technician; ask "
                "again after Retry-After"),
    ProblemType("self-lockout", 409, "Would lock the caller out",
                "an administrator disabling, demoting or deleting their own account, or "
                "disabling the default tenant, which holds the global administrators"),
    ProblemType("second-factor-enrolled", 409, "Second factor already enrolled",
                "enrolling TOTP on an account that has it; reset it first"),
    ProblemType("passkey-registered", 409, "Passkey already registered",
                "registering a passkey (WebAuthn credential) that is registered already"),
    ProblemType("passkey-limit", 409, "Passkey limit reached",
                "registering a passkey on an account that holds ten: remove one first"),
    ProblemType("passkeys-unavailable", 409, "Passkeys unavailable at this address",
                "a passkey ceremony at an address WebAuthn refuses (an IP address, or a "
                "name that is not this server's): open the console at the server's name, "
                "or set REMOTE_SUPPORT_PUBLIC_ORIGINS"),
    ProblemType("code-not-pending", 409, "Support code not pending",
                "cancelling a support code that was used, cancelled or has expired"),
    ProblemType("conflict", 409, "Conflict",
                "the change collided with another made at the same moment; retry"),
    ProblemType("body-too-large", 413, "Request body too large",
                "the body is larger than the endpoint accepts"),
    ProblemType("unsupported-media-type", 415, "Unsupported media type",
                "a body whose Content-Type is not application/json"),
    ProblemType("validation-failed", 422, "Validation failed",
                "a body field or query parameter is missing, unknown, repeated or of the "
                "wrong type or range (see the errors member)"),
    ProblemType("rate-limited", 429, "Too many requests",
                "a rate limit or lockout; wait Retry-After seconds"),
    ProblemType("headers-too-large", 431, "Request headers too large",
                "the request line and headers together pass 64 KiB, or there are more "
                "than 100 header fields"),
    ProblemType("internal-error", 500, "Internal server error",
                "an unexpected failure, logged by the server"),
    ProblemType("not-implemented", 501, "Not implemented",
                "no loaded plugin provides what the request needs (an agent-key issuer, a "
                "method that accepts support codes)"),
    ProblemType("unavailable", 503, "Service unavailable",
                "the database is unreachable, or a support code could not be allocated; "
                "try again shortly"),
    ProblemType("recordings-unavailable", 503, "Recordings cannot be read",
                "the recording store is unreachable, or no loaded plugin reads the "
                "server's recordings_url"),
)

BY_SLUG = {problem.slug: problem for problem in PROBLEM_TYPES}
BY_STATUS = {BY_SLUG[slug].status: BY_SLUG[slug] for slug in (
    "malformed-body", "unauthorized", "forbidden", "not-found", "method-not-allowed",
    "body-timeout", "conflict", "body-too-large", "unsupported-media-type",
    "validation-failed", "rate-limited", "headers-too-large", "internal-error",
    "not-implemented", "unavailable")}
"""The type a status gets where the code answering it names none."""
