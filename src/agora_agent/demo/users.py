"""Demo-only identity: three users, a login route that sets a signed cookie, and the resolver reading it.

DEMO ONLY. Anyone who can reach the demo server can sign in as any demo user: that is the point of a
user switcher. A real application resolves identity from its own authentication (a session, a JWT
verified by a gateway …) with `CallableActorResolver` — never from a value the browser chooses.

The cookie is `<user id>.<HMAC-SHA256 of it>` with a secret made per process, so it cannot be forged
for a user that does not exist and dies with the server.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, ValidationError
from starlette.responses import JSONResponse, Response

from agora_agent.actors import Actor, CallableActorResolver
from agora_agent.errors import UnauthenticatedError

__all__ = ["COOKIE", "DEMO_USERS", "DemoIdentity", "DemoUser"]

COOKIE = "agora_demo_user"


@dataclass(frozen=True, kw_only=True)
class DemoUser:
    """A demo user: id, label shown in the switcher, roles and tenant."""

    id: str
    label: str
    roles: tuple[str, ...]
    tenant: str | None

    def actor(self) -> Actor:
        return Actor(id=self.id, roles=self.roles, tenant_ref=self.tenant)


DEMO_USERS: tuple[DemoUser, ...] = (
    DemoUser(id="alice", label="Alice (support, acme)", roles=("support",), tenant="acme"),
    DemoUser(id="bob", label="Bob (member, globex)", roles=("member",), tenant="globex"),
    DemoUser(id="carol", label="Carol (admin, acme)", roles=("admin",), tenant="acme"),
)


LOGIN_MAX_BYTES = 4096


class _Login(BaseModel):
    user: str | None = Field(default=None, max_length=128)


class DemoIdentity:
    """The demo's users, cookie signing, resolver and routes (`GET /demo/users`, `POST /demo/login`)."""

    def __init__(self, users: tuple[DemoUser, ...] = DEMO_USERS, *, secret: bytes | None = None) -> None:
        self.users = {u.id: u for u in users}
        self._secret = secret or secrets.token_bytes(32)
        self.resolver = CallableActorResolver(self._resolve)

    def sign(self, user_id: str) -> str:
        mac = hmac.new(self._secret, user_id.encode(), hashlib.sha256).hexdigest()
        return f"{user_id}.{mac}"

    def verify(self, cookie: str | None) -> DemoUser | None:
        """The user a cookie names, or None when it is missing, forged or names no demo user."""
        if not cookie or "." not in cookie:
            return None
        user_id, _, mac = cookie.rpartition(".")
        if not hmac.compare_digest(self.sign(user_id).rpartition(".")[2], mac):
            return None
        return self.users.get(user_id)

    def _resolve(self, request: Request) -> Actor:
        user = self.verify(request.cookies.get(COOKIE))
        if user is None:
            raise UnauthenticatedError("not signed in: pick a demo user in the page (demo-only login)")
        return user.actor()

    def router(self) -> APIRouter:
        """The demo login routes (not part of the agent API; never mount them in a real application)."""
        router = APIRouter(prefix="/demo", tags=["demo"], include_in_schema=False)

        @router.get("/users")
        async def users(request: Request) -> dict[str, object]:
            current = self.verify(request.cookies.get(COOKIE))
            return {
                "users": [
                    {"id": u.id, "label": u.label, "roles": list(u.roles), "tenant": u.tenant}
                    for u in self.users.values()
                ],
                "current": current.id if current else None,
            }

        @router.post("/login")
        async def login(request: Request) -> Response:
            # Read at most LOGIN_MAX_BYTES: the body is one user id, never megabytes.
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > LOGIN_MAX_BYTES:
                return JSONResponse({"error": f"login body exceeds {LOGIN_MAX_BYTES} bytes"}, status_code=413)
            raw = b""
            async for chunk in request.stream():
                raw += chunk
                if len(raw) > LOGIN_MAX_BYTES:
                    return JSONResponse({"error": f"login body exceeds {LOGIN_MAX_BYTES} bytes"}, status_code=413)
            try:
                body = _Login.model_validate_json(raw or b"{}")
            except ValidationError:
                return JSONResponse({"error": 'expected {"user": "<demo user id>"}'}, status_code=422)
            if body.user is None or body.user == "":
                response = JSONResponse({"ok": True, "user": None})
                response.delete_cookie(COOKIE, path="/")
                return response
            if body.user not in self.users:
                known = ", ".join(self.users)
                return JSONResponse({"error": f'unknown demo user "{body.user}" (known: {known})'}, status_code=404)
            response = JSONResponse({"ok": True, "user": body.user})
            response.set_cookie(COOKIE, self.sign(body.user), httponly=True, samesite="lax", path="/")
            return response

        return router
