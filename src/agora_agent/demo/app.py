"""The demo application: the shop, its tools, two agents, personas, a budget, prices and demo users.

    from agora_agent.demo import create_demo_app
    app = create_demo_app(".agora/demo.db")          # uvicorn-ready FastAPI app

`agora-agent demo` serves this app. Everything lives in two SQLite files (the agent's store and the
shop) and one process (the inline runner). The model is a real one when `AGORA_MODEL` is set
(see `agora_agent.models.infer.model_from_env`), else the offline `DemoModel`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from starlette.responses import RedirectResponse, Response

from agora_agent.actors import Actor
from agora_agent.agents import AgentDefinition, Persona
from agora_agent.config import AgentConfig
from agora_agent.demo.helpcentre import HelpCentre
from agora_agent.demo.model import DEMO_MODEL_ID, DemoModel
from agora_agent.demo.shop import create_shop
from agora_agent.demo.tools import shop_tools
from agora_agent.demo.users import DemoIdentity
from agora_agent.governance.pricing import ModelPrice
from agora_agent.governance.quota import Budget
from agora_agent.models.base import ModelProvider
from agora_agent.rag import knowledge_tool
from agora_agent.runners.durable import DurableConfig
from agora_agent.service import AgentService
from agora_agent.tools.sql import GroupTableAccessPolicy, TenantScope, sql_tool
from agora_agent.web import agent_router
from agora_agent.web.app import install_error_handlers
from agora_agent.web.pages import mount_pages

__all__ = ["DEMO_PRICES", "DemoSetup", "build_demo", "create_demo_app"]

logger = logging.getLogger("agora_agent.demo")

# Illustrative prices (USD per million tokens). The demo model is priced like a large model so that its
# spend is visible on the dashboard after a few messages; it costs nothing to run.
DEMO_PRICES = (
    ModelPrice(model_id=DEMO_MODEL_ID, input_price_per_1m=30.00, output_price_per_1m=60.00),
    ModelPrice(model_id="gpt-4o-mini", input_price_per_1m=0.15, output_price_per_1m=0.60),
    ModelPrice(model_id="gpt-4o", input_price_per_1m=2.50, output_price_per_1m=10.00),
    ModelPrice(model_id="claude-sonnet-4-5", input_price_per_1m=3.00, output_price_per_1m=15.00),
)

SUPPORT_PROMPT = (
    "You are the support assistant of a small online shop. Use the tools to answer: show_orders, lookup_order, "
    "sales_chart, query_shop (read-only SQL over customers, products, orders) and refund_order (needs approval). "
    "Hand data questions to the analyst with ask_analyst. Never invent orders or numbers. Answer policy questions "
    "from the retrieved help-centre context (cite it by its bracket number); search_help searches it again."
)
ANALYST_PROMPT = (
    "You are the shop's data analyst. Answer questions about sales with query_shop (SQLite SQL over the "
    "customers, products and orders tables) and sales_chart. Answer briefly with numbers."
)

SUGGESTIONS = (
    "Show my orders",
    "Refund order 1001",
    "Chart sales",
    "Ask the analyst which product sells best",
    "How many customers do we have",
    "How long do refunds take?",
    "What is the escalation code for urgent tickets?",
    "Tell me a long story",
)


@dataclass(frozen=True, kw_only=True)
class DemoSetup:
    """What `build_demo` made: the config, the identity, the shop engine and the model label."""

    config: AgentConfig
    identity: DemoIdentity
    shop_engine: AsyncEngine
    shop_path: Path
    model_label: str
    demo_model: bool
    help_centre: HelpCentre


def _shop_path(db_path: Path) -> Path:
    return db_path.with_name(f"{db_path.stem}-shop{db_path.suffix or '.db'}")


def _is_admin(actor: Actor, request: Any) -> bool:
    return "admin" in actor.roles


def build_demo(
    db_path: str | Path = ".agora/demo.db",
    *,
    model: ModelProvider | None = None,
    word_delay: float = 0.03,
    daily_tokens: int | None = 200_000,
    daily_usd: float | None = 2.0,
    durable: bool = False,
) -> DemoSetup:
    """Create (or reuse) the SQLite files and build the demo's `AgentConfig`.

    `model` overrides the model choice (default: `AGORA_MODEL` when set, else the `DemoModel`);
    `daily_tokens` / `daily_usd` are the per-user daily budget (None = no limit); `durable` runs every
    run as a DBOS workflow with its system database next to the demo's SQLite file (docs/durable.md).
    """
    db = Path(db_path)
    db.parent.mkdir(parents=True, exist_ok=True)
    shop_path = create_shop(_shop_path(db))
    shop_engine = create_async_engine(f"sqlite+aiosqlite:///{shop_path}")
    label, is_demo = "", False
    if model is None:
        from agora_agent.models.infer import model_from_env

        model = model_from_env()
        if model is not None:
            label = f"Model: {getattr(model, 'model_id', None) or type(model).__name__}"
    if model is None:
        model, is_demo = DemoModel(word_delay=word_delay), True
    if isinstance(model, DemoModel):
        is_demo = True
        label = "Demo model · offline, not an LLM"
    elif not label:
        label = f"Model: {getattr(model, 'model_id', None) or type(model).__name__}"

    identity = DemoIdentity()
    # The help centre's chunks live in demo-rag.db beside the agent store's file (the embedded default).
    help_centre = HelpCentre(db)
    search_help = knowledge_tool(
        help_centre.retriever,
        name="search_help",
        description="Search the shop's help centre (returns, shipping, invoices, accounts …); your tenant's "
        "private documents are included, other tenants' never are.",
        top_k=3,
    )
    tools: list[object] = [*shop_tools(shop_engine), *_sql_tools(shop_engine), search_help]
    default = AgentDefinition(
        name="default",
        system_prompt=SUPPORT_PROMPT,
        delegates_to=("analyst",),
        personas=(
            Persona(id="default", label="Support assistant"),
            Persona(
                id="readonly",
                label="Read-only viewer",
                system_prompt=lambda ctx: ctx.base_prompt + " You only look things up; you never change anything.",
                allowed_tools=("show_orders", "lookup_order", "sales_chart", "query_shop", "ask_analyst"),
            ),
        ),
    )
    analyst = AgentDefinition(
        name="analyst",
        system_prompt=ANALYST_PROMPT,
        description="a data analyst who answers questions about the shop's sales with SQL",
        tools=("query_shop", "sales_chart"),
    )
    config = AgentConfig(
        model=model,
        tools=tools,
        default_agent=default,
        agents=(analyst,),
        store=f"sqlite:///{db}",
        # Always on: the config's daily limits are the defaults, and admins edit per-user / per-tenant budgets in
        # the dashboard's Quota panel (budgets as data).
        budget=Budget(tokens_per_actor=daily_tokens, usd_per_actor=daily_usd, reserve_tokens=2048, reserve_usd=0.01),
        governance_authorize=_is_admin,
        actor_resolver=identity.resolver,
        retriever=help_centre.retriever,  # inject mode: the default access filter (tenant + roles) applies
        retrieval_top_k=3,
        debug=True,  # the demo shows real error messages (never do this in production)
        durable=DurableConfig(executor_id="demo") if durable else False,
    )
    return DemoSetup(
        config=config,
        identity=identity,
        shop_engine=shop_engine,
        shop_path=shop_path,
        model_label=label,
        demo_model=is_demo,
        help_centre=help_centre,
    )


def _sql_tools(engine: AsyncEngine) -> list[object]:
    """The governed SQL tool over the shop, scoped to the caller's tenant.

    Members read the catalog and orders; customers (personal data) also need the support or admin role.
    """
    access = GroupTableAccessPolicy(
        role_groups={"member": ["catalog", "sales"], "support": ["catalog", "sales", "people"], "admin": ["*"]},
        tables_by_group={"catalog": ["products"], "sales": ["orders"], "people": ["customers"]},
    )
    return [
        sql_tool(
            engine,
            name="query_shop",
            description=(
                "Run one read-only SQLite SELECT over the shop: customers(id, name, email, city), "
                "products(id, name, category, price), orders(id, customer_id, product_id, quantity, total, status, "
                "ordered_at). Results are limited to your tenant automatically."
            ),
            table_access=access,
            tenant=TenantScope("tenant", ["customers", "products", "orders"]),
        )
    ]


def demo_mcp_keys(identity: DemoIdentity) -> dict[str, Actor]:
    """DEMO ONLY: one fixed MCP key per demo user (`demo-alice` …) — anyone who knows the name is that user."""
    return {f"demo-{user.id}": user.actor() for user in identity.users.values()}


def _mount_demo_mcp(app: FastAPI, service: AgentService, setup: DemoSetup) -> dict[str, Actor]:
    """Serve the shop's tools over MCP at /agent/mcp (actions refused) when the `mcp` extra is installed."""
    try:
        from agora_agent.mcp import api_key_auth, mount_mcp

        keys = demo_mcp_keys(setup.identity)
        mount_mcp(app, service, auth=api_key_auth(keys), actions="refuse")
    except ModuleNotFoundError as exc:  # the SDK is an extra; the rest of the demo works without it
        if exc.name not in ("mcp", "mcp_types"):
            raise
        logger.warning("agora-agent demo: MCP is off (pip install 'agora-agent[mcp]' to serve /agent/mcp)")
        return {}
    return keys


def create_demo_app(db_path: str | Path = ".agora/demo.db", **options: Any) -> FastAPI:
    """The demo as a FastAPI app: agent API under /agent, chat at /agent/ui (and /), dashboard at /agent/dashboard."""
    setup = build_demo(db_path, **options)
    service = AgentService.from_config(setup.config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if setup.demo_model:
            logger.warning(
                "agora-agent demo: using the offline DEMO MODEL (deterministic, not an LLM). "
                "Set AGORA_MODEL=openai:gpt-4o-mini (with OPENAI_API_KEY) to use a real model."
            )
        async with service:
            chunks = await setup.help_centre.load()
            logger.info("agora-agent demo: help centre loaded (%d chunks, %s store)", chunks, setup.help_centre.kind)
            if service.pricing is not None:
                priced = {p.model_id for p in await service.pricing.list_current_prices()}
                for price in DEMO_PRICES:
                    if price.model_id not in priced:
                        await service.pricing.upsert_price(price)
            try:
                yield
            finally:
                await setup.shop_engine.dispose()
                await setup.help_centre.close()

    app = FastAPI(title="agora-agent demo", lifespan=lifespan)
    app.state.agent_service = service
    app.state.demo = setup
    app.include_router(agent_router(service))
    app.include_router(setup.identity.router())
    app.state.demo_mcp_keys = _mount_demo_mcp(app, service, setup)
    mount_pages(
        app,
        service,
        ui_settings={
            "modelLabel": setup.model_label,
            "demoModel": setup.demo_model,
            "title": "Shop support assistant",
            "subtitle": "A governed agent over a demo shop. Pick a user, then try:",
            "suggestions": list(SUGGESTIONS),
            "demo": {"usersPath": "/demo/users", "loginPath": "/demo/login"},
        },
    )

    @app.get("/", include_in_schema=False)
    async def home() -> Response:
        return RedirectResponse("/agent/ui/", status_code=307)

    install_error_handlers(app)
    return app
