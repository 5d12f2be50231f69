"""The ways to log in besides a password, for the console's login page.

A web app a plugin mounts (``register_web_apps``) offers one by carrying a
``sign_in_offer`` attribute: a mapping with ``name`` (shown as "Sign in with <name>")
and ``start`` (the same-origin address the button opens). The answer is always 200,
so a console without any offer loads its login page without a failed request.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.routing import Mount

from .endpoint import Call, Endpoint
from .schemas import Out

__all__ = ["ENDPOINTS", "SignInOffer"]


class SignInOffer(Out):
    name: str
    start: str


async def sign_in_offers(call: Call) -> list[SignInOffer]:
    offers = []
    for mounted in call.request.app.routes:
        offer = getattr(mounted.app, "sign_in_offer", None) if isinstance(mounted, Mount) \
            else None
        if isinstance(offer, Mapping):
            offers.append(SignInOffer(name=str(offer["name"]), start=str(offer["start"])))
    return offers


ENDPOINTS = [
    Endpoint("GET", "/api/auth/sign-in-offers", sign_in_offers,
             "Ways to log in besides a password (single sign-on buttons); may be empty",
             access="public", result=list[SignInOffer], tag="auth", store=False),
]
