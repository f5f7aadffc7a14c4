"""The chat page (`<prefix>/ui`) and the governance dashboard (`<prefix>/dashboard`), served from the package.

    from agora_agent.web.pages import mount_pages
    mount_pages(app, service)            # or an APIRouter, or an AgentConfig

Both are static ES modules shipped in `web/static/` (no build step). The dashboard follows the reference:

- mount decision: `dashboard=False` -> not mounted, silently; no `governance_authorize` ->
  not mounted, with one warning naming it; `governance_queries=False` -> not mounted, with a distinct
  warning; otherwise mounted at `<prefix>/dashboard`;
- gate on every dashboard request: no identity -> 401, `governance_authorize` falsy -> 403,
  each `{"error": …}` (the resolver's or predicate's message only when `debug`); a predicate that
  returns a Starlette `Response` (e.g. a redirect to a login page) has it sent as is;
- `GET <mount>` -> index.html with `<base href="<mount>/">` as the first child of `<head>` and
  `window.__AGENT_DASHBOARD_BASE__` (the API prefix) before `</head>`, `no-store`;
- `GET <mount>/<asset>` -> the file; `..`, NUL or `\\` in the path -> 400 `{"error":"bad asset path"}`;
  an unknown path -> the index (SPA fallback); content type by extension.

The chat page is not gated: it is a static shell, and every call it makes is authenticated by the
agent routes. Its settings (API base, model label, demo users …) are injected as `window.__AGENT_UI__`.
"""

from __future__ import annotations

import html
import inspect
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any, Protocol

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agora_agent.actors import Actor, ActorResolver
from agora_agent.config import DashboardConfig
from agora_agent.errors import ConfigurationError
from agora_agent.governance.gate import evaluate_governance_gate

__all__ = ["DASHBOARD_GATE_WARNING", "DASHBOARD_QUERIES_WARNING", "PagesMount", "mount_pages"]

logger = logging.getLogger("agora_agent.web.pages")

DASHBOARD_GATE_WARNING = (
    "agora-agent: the governance dashboard is NOT mounted because `governance_authorize` (the reference's "
    "`governanceAuthorize`) is not set. Set AgentConfig(governance_authorize=lambda actor, request: 'admin' in "
    "actor.roles) — or `governanceAuthorize: () => true` semantics, lambda actor, request: True, to open it to every "
    "authenticated caller. Callers still see their own pending actions at GET {prefix}/approvals/mine. "
    "Silence this with AgentConfig(dashboard=False)."
)
DASHBOARD_QUERIES_WARNING = (
    "agora-agent: the governance dashboard is NOT mounted because `governance_queries=False` turns the governance "
    "governance queries off; it has nothing to show. Remove governance_queries=False, or set dashboard=False."
)

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
    ".map": "application/json",
}
_NO_STORE = "no-store, must-revalidate"
# Assets have no content hash in their names (no build step), so browsers revalidate them each time.
_ASSET_CACHE = "no-cache"


class _PagesConfig(Protocol):
    """The part of `AgentConfig` the pages read."""

    actor_resolver: ActorResolver
    governance_authorize: Any
    governance_queries: Any
    dashboard: Any
    debug: bool
    path: str


def _dashboard(config: _PagesConfig) -> DashboardConfig:
    value = config.dashboard
    return value if isinstance(value, DashboardConfig) else DashboardConfig(enabled=bool(value))


@dataclass(frozen=True, kw_only=True)
class PagesMount:
    """What `mount_pages` mounted: the chat page path, the dashboard path (None when not mounted), warnings."""

    chat_path: str | None
    dashboard_path: str | None
    warnings: list[str] = field(default_factory=list)


def _static_root() -> Traversable:
    return files("agora_agent.web").joinpath("static")


def _normalise(prefix: str) -> str:
    return "/" + prefix.strip("/") if prefix.strip("/") else ""


def _script(name: str, value: Any) -> str:
    # json.dumps + escaping "<" keeps a value from closing the <script> element early.
    payload = json.dumps(value).replace("<", "\\u003c")
    return f"<script>window.{name}={payload}</script>"


def _inject(index_html: str, *, base_href: str, script: str) -> str:
    """`<base href>` first in <head>, the settings script last."""
    html = index_html.replace("<head>", f'<head>\n<base href="{base_href}">', 1)
    return html.replace("</head>", f"{script}\n</head>", 1)


def _bad_asset_path(path: str) -> bool:
    return "\0" in path or "\\" in path or ".." in path


def _read_asset(page_dir: str, path: str) -> tuple[bytes, str] | None:
    """The bytes and content type of `<page_dir>/<path>`, or of `common/<rest>`; None when absent."""
    root = _static_root()
    parts = [p for p in path.split("/") if p and p != "."]
    if not parts:
        return None
    node = (
        root.joinpath("common", *parts[1:])
        if parts[0] == "common" and len(parts) > 1
        else root.joinpath(page_dir, *parts)
    )
    if not node.is_file():
        return None
    suffix = "." + parts[-1].rsplit(".", 1)[-1] if "." in parts[-1] else ""
    return node.read_bytes(), _CONTENT_TYPES.get(suffix.lower(), "application/octet-stream")


def decide_dashboard_mount(config: _PagesConfig) -> tuple[bool, str | None]:
    """(mount?, warning). Silent when the dashboard is switched off."""
    if not _dashboard(config).enabled:
        return False, None
    if config.governance_authorize is None:
        return False, DASHBOARD_GATE_WARNING.format(prefix=_normalise(config.path))
    if config.governance_queries is False:
        return False, DASHBOARD_QUERIES_WARNING
    return True, None


async def _gate(request: Request, config: _PagesConfig) -> Response | None:
    """None when the caller may see the dashboard, else the response to send."""
    debug = bool(config.debug)
    settings = _dashboard(config)
    try:
        actor = await config.actor_resolver.resolve(request)
    except Exception as exc:
        message = str(exc) if debug and str(exc) else "unauthorized"
        return await _unauthenticated(request, settings, message)
    if not isinstance(actor, Actor):
        return await _unauthenticated(request, settings, "unauthorized")
    # The page's own gate when it has one (it may answer with a Response, e.g. a redirect to a login page),
    # else the governance gate itself (a tenant admin's scope opens the page too): asked the same way.
    decision = await evaluate_governance_gate(actor, request, settings.authorize or config.governance_authorize)
    if decision.ok:
        return None
    if isinstance(decision.response, Response):
        return decision.response
    message = decision.reason if debug and decision.reason else "forbidden"
    return JSONResponse({"error": message}, status_code=403)


async def _unauthenticated(request: Request, settings: DashboardConfig, message: str) -> Response:
    """`on_unauthenticated` runs before every 401 and may answer instead (e.g. a redirect)."""
    if settings.on_unauthenticated is not None:
        answer = settings.on_unauthenticated(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, Response):
            return answer
    return JSONResponse({"error": message}, status_code=401)


_REFUSAL_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:12vh auto;padding:0 1.5rem;color:#222}}
h1{{font-size:1.4rem}}code{{background:#f2f2f2;padding:0 .25rem;border-radius:3px}}.muted{{color:#666}}</style>
</head><body><h1>{title}</h1><p>{why}</p><p class="muted">{detail}</p>{back}</body></html>"""


def _refusal_page(request: Request, refused: Response, chat_path: str | None) -> Response:
    """A browser asking for the dashboard gets a page that says why it may not see it (a JSON client keeps
    the JSON body; a redirect or an app's own response is sent as is)."""
    accept = request.headers.get("accept", "")
    if refused.status_code not in (401, 403) or "text/html" not in accept or not isinstance(refused, JSONResponse):
        return refused
    try:
        message = str(json.loads(bytes(refused.body)).get("error", ""))
    except ValueError:
        message = ""
    if refused.status_code == 401:
        title = "Sign in to see the governance dashboard"
        why = "The dashboard could not tell who you are: no identity came with this request."
    else:
        title = "The governance dashboard is for governance admins"
        why = (
            "You are signed in, but this application's <code>governance_authorize</code> rule does not admit you, "
            "so the runs, spend and approvals of other people stay hidden. Ask an administrator for access."
        )
    detail = html.escape(message) if message and message not in ("forbidden", "unauthorized") else ""
    back = f'<p><a href="{html.escape(chat_path)}/">Back to the chat</a></p>' if chat_path else ""
    body = _REFUSAL_HTML.format(title=title, why=why, detail=detail, back=back)
    return Response(body, status_code=refused.status_code, media_type="text/html; charset=utf-8")


def dashboard_mount_path(api_base: str, override: str | None) -> str:
    """`<api base>/dashboard`, or the override with exactly one leading slash."""
    if override is None:
        return f"{api_base}/dashboard"
    return "/" + override.strip("/")


def mount_pages(
    target: FastAPI | APIRouter,
    source: Any,
    prefix: str | None = None,
    *,
    chat: bool = True,
    ui_settings: Mapping[str, Any] | None = None,
) -> PagesMount:
    """Serve the chat page at `<prefix>/ui` and (when its mount rule allows) the dashboard at `<prefix>/dashboard`.

    `source` is an `AgentService` or an `AgentConfig`; `prefix` is the URL prefix of the agent API
    (default `config.path`). When `target` is an `APIRouter` with its own prefix, routes are added
    relative to it. `ui_settings` are extra keys for the chat page's `window.__AGENT_UI__` (e.g.
    `modelLabel`, `suggestions`, `demo`, `componentModules`: URLs of ES modules registering your own
    component renderers). Returns what was mounted; warnings are also logged.
    """
    config: _PagesConfig = getattr(source, "config", source)
    api_base = _normalise(prefix if prefix is not None else config.path)
    router_prefix = getattr(target, "prefix", "") if isinstance(target, APIRouter) else ""
    add = _adder(target)
    chat_path = _mount_chat(add, config, api_base, _local(api_base, router_prefix), ui_settings) if chat else None
    warnings: list[str] = []
    mount_ok, warning = decide_dashboard_mount(config)
    if warning:
        warnings.append(warning)
        logger.warning(warning)
    dashboard_path = _mount_dashboard(add, target, config, api_base, router_prefix, chat_path) if mount_ok else None
    return PagesMount(chat_path=chat_path, dashboard_path=dashboard_path, warnings=warnings)


Adder = Callable[[str, Any], None]


def _adder(target: FastAPI | APIRouter) -> Adder:
    """How a page route is added to `target`: a GET outside the OpenAPI document."""

    def add(path: str, endpoint: Any) -> None:
        if isinstance(target, APIRouter):
            # The agent router's route class authenticates every route; these pages gate themselves.
            target.add_api_route(
                path, endpoint, methods=["GET"], include_in_schema=False, route_class_override=APIRoute
            )
        else:
            target.add_api_route(path, endpoint, methods=["GET"], include_in_schema=False)

    return add


def _local(path: str, router_prefix: str) -> str:
    """`path` relative to a router's own prefix (routes of a prefixed `APIRouter` are added without it)."""
    return path[len(router_prefix) :] if router_prefix and path.startswith(router_prefix) else path


def _mount_chat(
    add: Adder, config: _PagesConfig, api_base: str, local: str, ui_settings: Mapping[str, Any] | None
) -> str:
    """The chat page at `<api_base>/ui` (its shell and assets); returns its path."""
    chat_path = f"{api_base}/ui"
    dashboard_ok = decide_dashboard_mount(config)[0]
    dash_url = dashboard_mount_path(api_base, _dashboard(config).path) + "/"
    settings: dict[str, Any] = {"base": api_base, "dashboard": dash_url if dashboard_ok else None}
    if getattr(config, "attachment_staging", None) is not None:  # the upload route is mounted
        settings["attachments"] = {
            "maxBytes": getattr(config, "attachment_max_bytes", None),
            "allowed": list(getattr(config, "attachment_allowed_content_types", ())),
        }
    settings.update(ui_settings or {})
    chat_index = _inject(
        _static_root().joinpath("chat", "index.html").read_text("utf-8"),
        base_href=f"{chat_path}/",
        script=_script("__AGENT_UI__", settings),
    ).encode()

    async def chat_index_page() -> Response:
        return Response(chat_index, media_type="text/html; charset=utf-8", headers={"cache-control": _NO_STORE})

    async def chat_asset(path: str) -> Response:
        if _bad_asset_path(path):
            return JSONResponse({"error": "bad asset path"}, status_code=400)
        found = _read_asset("chat", path)
        if found is None:
            return await chat_index_page()
        body, content_type = found
        return Response(body, media_type=content_type, headers={"cache-control": _ASSET_CACHE})

    add(f"{local}/ui", chat_index_page)
    add(f"{local}/ui/{{path:path}}", chat_asset)
    return chat_path


def _mount_dashboard(
    add: Adder,
    target: FastAPI | APIRouter,
    config: _PagesConfig,
    api_base: str,
    router_prefix: str,
    chat_path: str | None,
) -> str:
    """The gated dashboard (its shell and assets); returns its path. Mounting it twice is a wiring mistake."""
    dashboard_path = dashboard_mount_path(api_base, _dashboard(config).path)
    taken = {getattr(r, "path", None) for r in target.routes}
    if dashboard_path in taken:
        raise ConfigurationError(
            f"the governance dashboard is already mounted at {dashboard_path}", code="already_mounted"
        )
    dash_index = _inject(
        _static_root().joinpath("dashboard", "index.html").read_text("utf-8"),
        base_href=f"{dashboard_path}/",
        script=_script("__AGENT_DASHBOARD_BASE__", api_base),
    ).encode()

    async def dashboard_index(request: Request) -> Response:
        refused = await _gate(request, config)
        if refused is not None:
            return _refusal_page(request, refused, chat_path)
        return Response(dash_index, media_type="text/html; charset=utf-8", headers={"cache-control": _NO_STORE})

    async def dashboard_asset(request: Request, path: str) -> Response:
        refused = await _gate(request, config)
        if refused is not None:
            return _refusal_page(request, refused, chat_path)
        if _bad_asset_path(path):
            return JSONResponse({"error": "bad asset path"}, status_code=400)
        found = _read_asset("dashboard", path)
        if found is None:
            return Response(dash_index, media_type="text/html; charset=utf-8", headers={"cache-control": _NO_STORE})
        body, content_type = found
        return Response(body, media_type=content_type, headers={"cache-control": _ASSET_CACHE})

    dash_local = _local(dashboard_path, router_prefix)
    add(dash_local, dashboard_index)
    add(f"{dash_local}/{{path:path}}", dashboard_asset)
    return dashboard_path
