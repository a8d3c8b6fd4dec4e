"""Security headers on every response (PRODUCT.md §10)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"strict-origin-when-cross-origin"),
    (b"x-frame-options", b"DENY"),
]
# Two years, subdomains included: sent only when the site is served over HTTPS
# (``KERNELINDEX_HTTPS_ONLY``), where a browser must never be sent back to plain HTTP.
STRICT_TRANSPORT_SECURITY = (b"strict-transport-security", b"max-age=63072000; includeSubDomains")


class SecurityHeaders:
    """Pure ASGI middleware (cheaper than BaseHTTPMiddleware on every request)."""

    def __init__(self, app: ASGIApp, hsts: bool = False):
        self.app = app
        self.headers = [*HEADERS, STRICT_TRANSPORT_SECURITY] if hsts else HEADERS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)
