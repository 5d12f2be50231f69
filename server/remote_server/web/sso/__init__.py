"""Single sign-on for technicians with OpenID Connect: the authorization code flow with
PKCE (S256), ``state`` and ``nonce``, the ID token verified on the provider's JWKS.

Off until ``oidc_issuer`` is set. Provider groups map to roles, permissions and
organizations (``oidc_group_*``); unknown users are refused unless ``oidc_create_users``.
Local accounts keep working beside it (the break-glass admin).
"""

from .routes import routes

__all__ = ["routes"]
