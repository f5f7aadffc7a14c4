"""`AgentConfig`: one object that describes the whole agent (the reference's `defineConfig`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agora_agent.actors import Actor, ActorResolver, UnconfiguredActorResolver
from agora_agent.agents import AgentDefinition
from agora_agent.errors import ConfigurationError
from agora_agent.governance.directory import ActorDirectory
from agora_agent.governance.pricing import PricingStore
from agora_agent.governance.queries import GovernanceQueries
from agora_agent.governance.quota import Budget, QuotaStore
from agora_agent.models.base import ModelProvider
from agora_agent.rag.access import RetrievalFilter, acl_filter
from agora_agent.rag.retrievers import Retriever
from agora_agent.runners.durable.settings import DurableConfig
from agora_agent.stores.attachments import AttachmentStagingStore
from agora_agent.stores.base import AgentStore
from agora_agent.streaming.sink import TokenSink
from agora_agent.tools.retry import TransientRetry
from agora_agent.tools.spec import RolesPolicy

if TYPE_CHECKING:
    from agora_agent.genui.present import PresentationErrorHandler
    from agora_agent.genui.registry import ComponentSource
    from agora_agent.governance.gate import GovernanceScope
    from agora_agent.media.download import SafeDownloader
    from agora_agent.observability.events import EventHandler
    from agora_agent.tools.mcp.config import MCPServer

__all__ = ["AgentConfig", "DashboardConfig", "GovernanceAuthorize"]

GovernanceAuthorize = Callable[[Actor, Any], "bool | GovernanceScope | Awaitable[bool | GovernanceScope]"]
"""`(actor, request) -> True | False | GovernanceScope`: the one predicate behind the governance routes, the
dashboard and privilege over other actors' runs and threads (a `GovernanceScope` limits it to tenants)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DashboardConfig:
    """The governance dashboard's shell. The data it shows is always gated by
    `AgentConfig.governance_authorize`; these options only shape the page itself.

    - `path`: where to mount it (default `<prefix>/dashboard`), normalised to one leading slash.
    - `authorize(actor, request)`: an extra gate for the page (default: `governance_authorize`).
      It may return a Starlette `Response` (e.g. a redirect), which is sent as is.
    - `on_unauthenticated(request)`: runs before a 401; return a `Response` (e.g. a redirect to your
      login page) to send it instead of the JSON 401.
    """

    enabled: bool = True
    path: str | None = None
    authorize: Callable[[Actor, Any], Any] | None = None
    on_unauthenticated: Callable[[Any], Any] | None = None


def _sqlite_attachment_dir(url: str) -> Path | None:
    """`<db dir>/attachments` for a SQLite file URL; None for other stores and in-memory SQLite."""
    scheme, sep, rest = url.partition(":///")
    if not sep or not scheme.startswith("sqlite"):
        return None
    db = rest.split("?", 1)[0]
    if not db or db == ":memory:":
        return None
    return Path(db).parent / "attachments"


def _default_factory(cls: type) -> object:
    return cls()


@dataclass(kw_only=True)
class AgentConfig:
    """Everything the runtime needs. Only `model` is required; every other field has a safe default.

    - `model`: a `ModelProvider`, a string such as `"openai:gpt-4o-mini"`, or a zero-argument factory.
    - `tools` / `tools_package`: tool objects or classes, and/or a package whose modules are scanned.
    - `store`: None (in memory), an `AgentStore`, or a URL (`"sqlite:///agent.db"`,
      `"postgresql+asyncpg://…"`) for the SQL store. `store_commit="effects"` (a PostgreSQL URL) lets a budget
      reservation's commit return before its WAL flush, as it only precedes a model call; every commit before
      an effect still waits (docs/persistence.md "Commits that wait for the disk"). Default `"sync"`: all wait.
    - `budget` (or a ready `quota` store) turns on budgets; with the memory or a SQL store its limits are the
      defaults and per-actor / per-tenant rules are stored and edited at run time (`governance/budgets`,
      docs/observability.md "Budgets as data"); `pricing` and `governance_queries` default to the twin of
      the store (None) and can be switched off with False.
    - `governance_authorize` gates the governance routes, the dashboard and privileged access to
      other actors' runs and threads: True = a global admin, a `GovernanceScope(tenants=...)` = a tenant
      admin (every query, the inbox and decisions limited to those tenants); without it nobody is privileged.
    - `actor_resolver` is the only source of identity; the default refuses every request.
    - `recover_interrupted_runs`: close runs whose process died (run `failed`, calls that had started
      or were approved `unknown_after_crash`, pending approvals `expired`, reservations released).
      With a URL store every process holds a lease (a heartbeat every `run_lease_interval` seconds;
      lapsed after `run_lease_ttl`), and any live process recovers runs whose owner's lease lapsed —
      at start-up and on every heartbeat — so it is safe with several processes. Default: on for a
      URL store; `True` with a store object recovers every `running` run at start-up (one process only).
    - `retriever` turns on inject mode: every run retrieves `retrieval_top_k` passages for the
      user's text and appends them to the system prompt. `retrieval_filter(actor) -> filter` scopes it;
      the default is `agora_agent.rag.acl_filter` (tenant + roles stamped at ingestion) — pass
      `agora_agent.rag.unscoped` (or None) to opt out explicitly. A filter that raises fails the run.
    - `durable`: run every run as a DBOS workflow (True, or a `DurableConfig`): runs survive a crash and
      resume from their last step, approvals and streams work from any process. Needs the `durable`
      extra and a persistent store (docs/durable.md).
    - `trusted_origins`: other origins (`"https://app.example.com"`) allowed to send cookie-authenticated
      POST/PUT/PATCH/DELETE requests; requests from this host are always allowed, any other site gets a 403.
    - `debug`: show internal error messages to callers (401/403 reasons, failed-run details).
    - `on_event`: a function or coroutine function receiving typed lifecycle events
      (`agora_agent.observability`); its errors are logged and ignored.
    - `tracer_provider` / `meter_provider`: OpenTelemetry providers (the `otel` extra); default: the
      global ones when the app configured them, else no spans or metrics at all.
      `capture_content`: record message content and tool arguments on spans (default: the
      `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` environment switch); arguments pass `redactor`.
    - `mcp_servers`: external MCP servers (`agora_agent.mcp.MCPServer`, the `mcp` extra) whose tools
      join the registry as governed tools; connected in `start()`, closed in `close()`.
    - `attachment_staging`: where uploads go (default for a SQLite file store: a
      `FilesystemAttachmentStore` beside the database; otherwise none, and no upload route).
      `attachment_downloader` (a `SafeDownloader`, SSRF-guarded) fetches URLs the provider cannot
      reach — always for text attachments, for images/PDFs when `attachment_download_remote` is on;
      text attachments are inlined up to `attachment_text_max_chars`.
    - `components`: the generative-UI `ComponentRegistry` tools push into (default: the builtins
      `DataTable` and `Chart`), or a function `(actor) -> ComponentRegistry | None` choosing one per
      caller (per tenant; None means the builtins), asked at a tool call's first push;
      `on_presentation_error(error, info)` hears a failed `present()` (default: a warning in the log).
    """

    model: ModelProvider | str | Callable[[], ModelProvider]
    tools: Sequence[object] = ()
    tools_package: str | None = None
    tool_factory: Callable[[type], object] = _default_factory
    default_agent: AgentDefinition = field(default_factory=AgentDefinition)
    agents: Sequence[AgentDefinition] = ()
    store: AgentStore | str | None = None
    store_commit: Literal["sync", "effects"] = "sync"
    sink: TokenSink | None = None
    budget: Budget | None = None
    quota: QuotaStore | None = None
    pricing: PricingStore | bool | None = None
    governance_queries: GovernanceQueries | bool | None = None
    governance_authorize: GovernanceAuthorize | None = None
    actor_resolver: ActorResolver = field(default_factory=UnconfiguredActorResolver)
    actor_directory: ActorDirectory | None = None
    roles_policy: RolesPolicy | None = None
    default_roles: tuple[str, ...] = ()
    empty_roles: Literal["allow", "deny"] = "allow"
    path: str = "/agent"
    max_steps: int = 8
    max_delegation_depth: int = 3
    tool_transient_retry: TransientRetry | bool = True
    redactor: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    debug: bool = False
    components: ComponentSource | None = None
    on_presentation_error: PresentationErrorHandler | None = None
    recover_interrupted_runs: bool | None = None
    durable: bool | DurableConfig = False
    run_lease_interval: float = 5.0
    run_lease_ttl: float = 30.0
    dashboard: bool | DashboardConfig = True
    on_event: EventHandler | None = None
    tracer_provider: Any = None
    meter_provider: Any = None
    capture_content: bool | None = None
    mcp_servers: Sequence[MCPServer] = ()
    request_max_bytes: int = 1_048_576
    trusted_origins: tuple[str, ...] = ()
    attachment_staging: AttachmentStagingStore | None = None
    attachment_max_bytes: int = 20 * 1024 * 1024
    attachment_downloader: SafeDownloader | None = None
    attachment_download_remote: bool = False
    attachment_text_max_chars: int = 100_000
    attachment_allowed_content_types: tuple[str, ...] = (
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "application/pdf",
        "text/plain",
        "text/csv",
    )

    retriever: Retriever | None = None
    retrieval_top_k: int = 5
    retrieval_filter: RetrievalFilter | None = acl_filter

    def __post_init__(self) -> None:
        if self.store_commit not in ("sync", "effects"):
            raise ConfigurationError(f'store_commit must be "sync" or "effects", not {self.store_commit!r}')
        if self.store_commit != "sync" and not isinstance(self.store, str):
            raise ConfigurationError(
                "store_commit applies to a store given by its URL; "
                "for a store object, pass store_commit to open_sql_backend() that built it"
            )
        # Uploads on by default for the embedded SQLite deployment: files next to the database file.
        if self.attachment_staging is None and isinstance(self.store, str):
            directory = _sqlite_attachment_dir(self.store)
            if directory is not None:
                from agora_agent.stores.attachments import FilesystemAttachmentStore

                self.attachment_staging = FilesystemAttachmentStore(directory)

    def all_agents(self) -> list[AgentDefinition]:
        """The default agent first, then the extra agents."""
        return [self.default_agent, *self.agents]

    @property
    def prefix(self) -> str:
        """`path` normalised to one leading slash and no trailing slash."""
        return "/" + self.path.strip("/") if self.path.strip("/") else ""
