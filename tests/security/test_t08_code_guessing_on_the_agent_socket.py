"""T08: support codes guessed through the agent socket meet the same limiter as the REST API.

The limiter used to decide "is this a code attempt?" with an ASCII pattern,
while the support-code plugin upper-cased what it was given with Python's
Unicode rules: the long s (U+017F) upper-cases to S, the ligature U+FB00 to FF. A code
spelt with such letters was judged as a code but never counted, an
unthrottled oracle for every code containing an S (a quarter of them), and
it bound the session like the real spelling.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from remote_server.relay.auth import looks_like_support_code
from remote_server.testing.liveserver import LiveServer, fresh_ip

from remote_core.supportcode import ALPHABET, normalize_support_code

from .conftest import Admin, Peer

UNKNOWN = "unknown or expired support code"
LOCKED = "too many support-code attempts"
LOCKOUT_AFTER = 10  # SPEC 8


def look_alike(code: str) -> str:
    """``code`` with every S written as a long s, which upper-cases back to S."""
    return code.replace("S", "\u017f")


def code_with_an_s(admin: Admin) -> str:
    """A fresh pending code that has an S in it (one in four does)."""
    for _ in range(200):
        code = admin.code()
        if "S" in code:
            return code
    raise AssertionError("200 codes without an S: the generator is broken")


async def answer(server: LiveServer, token: str, ip: str) -> str:
    agent = await Peer.agent(server, token, headers={"X-Forwarded-For": ip})
    response = await agent.response()
    await agent.close()
    return "" if response.success else str(response.error)


@pytest.mark.anyio
async def test_t08_every_attempt_judged_as_a_code_counts_towards_the_lockout(
        server: LiveServer) -> None:
    ip = fresh_ip()
    guesses = [look_alike("SSS-SSS-SS" + tail) for tail in "23456789AB"]
    guesses += ["ZZZ-ZZZ-ZZ" + tail for tail in "23456789ABC"]
    judged = 0
    for guess in guesses:
        error = await answer(server, guess, ip)
        if judged >= LOCKOUT_AFTER:
            assert error.startswith(LOCKED), (guess, error, judged)
            return
        judged += error == UNKNOWN
    raise AssertionError(f"{len(guesses)} guesses from one address, never locked out")


@pytest.mark.anyio
async def test_t08_a_look_alike_spelling_never_binds_a_live_code(server: LiveServer,
                                                                 admin: Admin) -> None:
    code = code_with_an_s(admin)
    spelt = look_alike(code)
    unknown = look_alike("SSS-SSS-SSS") if code != "SSS-SSS-SSS" else look_alike("SSS-SSS-SS2")
    # Neither binds, and the answers do not tell a live code from an unknown one.
    assert await answer(server, spelt, fresh_ip()) == await answer(server, unknown, fresh_ip())
    assert await answer(server, spelt, fresh_ip()) != ""
    listed = {c["code"]: c for c in admin.ok("GET", "/api/codes")}
    assert listed[code]["status"] == "pending", "the look-alike consumed the code"
    agent = await Peer.agent(server, code)
    await agent.accepted()  # the real spelling still works, once


# Letters that upper-case into the alphabet (long s, ff ligature, sharp s, dotless i),
# the Kelvin sign, a full-width A, and the separators a person might type.
TRICKY = ["\u017f", "\ufb00", "\u00df", "\u0131", "\u212a", "\uff21", "-", " ", "\t", "\u00a0"]
SPELLINGS = st.text(alphabet=st.sampled_from([*ALPHABET, *ALPHABET.lower(), *TRICKY]),
                    max_size=14)


@settings(max_examples=1000, deadline=None)
@given(SPELLINGS)
def test_t08_whatever_the_plugin_reads_as_a_code_the_limiter_counts(text: str) -> None:
    """The socket's limiter and the support-code plugin agree on what is a code attempt."""
    if normalize_support_code(text) is not None:
        assert looks_like_support_code(text), text


@pytest.mark.parametrize("spelling", ["ABC-DEF-GH\u017f", "ABC-DEF-H\ufb00", "ABC-DEF-GH\u00df",
                                      "\uff21BC-DEF-GHJ"])
def test_t08_only_ascii_spellings_are_codes(spelling: str) -> None:
    assert normalize_support_code(spelling) is None
