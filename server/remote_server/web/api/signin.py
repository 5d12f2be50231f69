"""The ways to log in besides a password, for the console's login page.

The answer is always 200 (an empty list when single sign-on is off), so the console's
login page loads without a failed request.
"""

from __future__ import annotations

from ..sso.config import START_PATH
from .endpoint import Call, Endpoint
from .schemas import Out

__all__ = ["ENDPOINTS", "SignInOffer"]


class SignInOffer(Out):
    name: str
    start: str


async def sign_in_offers(call: Call) -> list[SignInOffer]:
    settings = call.ctx.settings
    if not settings.oidc_issuer:
        return []
    return [SignInOffer(name=settings.oidc_provider_name, start=START_PATH)]


ENDPOINTS = [
    Endpoint("GET", "/api/auth/sign-in-offers", sign_in_offers,
             "Ways to log in besides a password (the single sign-on button); may be empty",
             access="public", result=list[SignInOffer], tag="auth", store=False),
]
