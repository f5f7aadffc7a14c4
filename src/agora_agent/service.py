"""`AgentService`: the runtime facade — chat, stream, approve, reject, cancel, threads, quota.

No HTTP and no identity lookup here: callers pass an already-resolved `Actor` (or a `Caller`: the actor
plus the request the governance gate may look at, or an explicit grant). Every method that takes a run or
thread id takes the caller first and decides itself: unknown -> NotFoundError, someone else's without a
grant covering it -> ForbiddenError. A Python caller gets the same protection as an HTTP caller.

    async with AgentService.from_config(config) as service:
        started = await service.chat(actor, "refund order 1001")
        async for event in await service.subscribe(actor, started.run_id):
            ...
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeVar, cast

from agora_agent._frozen import constructor
from agora_agent._ids import new_id
from agora_agent.actors import Actor
from agora_agent.agents import AgentDefinition, Persona, delegation_specs
from agora_agent.config import AgentConfig
from agora_agent.errors import (
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    QuotaExceededError,
)
from agora_agent.genui.registry import ComponentRegistry, ComponentSource
from agora_agent.governance.audit import AuditLog, MemoryAuditLog
from agora_agent.governance.budgets import BudgetRuleStore, UsageLedger
from agora_agent.governance.gate import Caller, Grant
from agora_agent.governance.ownership import OwnershipDecision, evaluate_ownership
from agora_agent.governance.policy import DefaultRolesPolicy
from agora_agent.governance.pricing import MemoryPricingStore, PricingStore
from agora_agent.governance.quota import Budget, MemoryQuotaStore, QuotaStore, utc_day
from agora_agent.loop import LoopDeps, RunInput
from agora_agent.loop.history import HistoryCache
from agora_agent.media.prepare import AttachmentPreparer, check_supported
from agora_agent.messages import Attachment
from agora_agent.models.base import ModelProvider
from agora_agent.observability.telemetry import Telemetry
from agora_agent.rag.inject import InjectRetrieval
from agora_agent.records import ApprovalRecord, MessageRecord, RunRecord, ThreadRecord, ThreadSummary, ToolCallRecord
from agora_agent.runners.base import RecordingRunner, Runner, StreamingRunner
from agora_agent.runners.inline import InlineRunner
from agora_agent.runners.transcript import follow_transcript
from agora_agent.stores.attachments import ReadableAttachmentStore
from agora_agent.stores.base import AgentStore, NewThread
from agora_agent.stores.memory import MemoryAgentStore
from agora_agent.streaming.frames import StreamEvent
from agora_agent.streaming.sink import MemoryTokenSink, StreamGap, StreamUnavailable, TokenSink
from agora_agent.tools.discovery import discover_tools
from agora_agent.tools.registry import ToolRegistry
from agora_agent.tools.retry import TransientRetry
from agora_agent.tools.spec import RolesPolicy

if TYPE_CHECKING:
    from agora_agent.governance.queries import GovernanceQueries
    from agora_agent.runners.leases import LeaseKeeper
    from agora_agent.stores.leases import LeaseStore, ProcessIdentity

__all__ = ["AgentService", "ChatStarted", "QuotaToday", "ThreadDetail"]

logger = logging.getLogger("agora_agent")


class _OwnedRow(Protocol):
    """A stored run or thread: who it belongs to, and the tenant it was written in."""

    @property
    def actor_ref(self) -> str: ...

    @property
    def tenant_ref(self) -> str | None: ...


_Row = TypeVar("_Row", bound=_OwnedRow)


@dataclass(frozen=True, slots=True)
class ChatStarted:
    """A run was accepted: follow it with `await service.subscribe(actor, started)` (or its `run_id`)."""

    run_id: str
    thread_id: str
    run: RunRecord | None = field(default=None, repr=False, compare=False)
    """The run row `chat` recorded: `subscribe` given this object checks it instead of reading it back."""


# What every chat builds, made without the class call (`_frozen.constructor`; about 25 keywords a chat).
_chat_started = constructor(ChatStarted)
_new_thread = constructor(NewThread)
_run_record = constructor(RunRecord)
_run_input = constructor(RunInput)
_loop_deps = constructor(LoopDeps)  # per run too (`deps_for`)


@dataclass(frozen=True, kw_only=True, slots=True)
class QuotaToday:
    """Where the actor stands today (UTC). Limits are None when no budget applies."""

    day: str
    used_tokens: int
    limit_tokens: int | None = None
    used_usd: float | None = None
    limit_usd: float | None = None
    period: str | None = None  # the actor's own budget period (day | month) when one applies
    period_used_tokens: int | None = None  # tokens counted against it in that period


@dataclass(frozen=True, kw_only=True, slots=True)
class ThreadDetail:
    """A thread with its messages and the audit rows of its tool calls."""

    thread: ThreadRecord
    messages: list[MessageRecord]
    tool_calls: list[ToolCallRecord]
    last_message_preview: str | None
    runs: list[RunRecord] = field(default_factory=list)  # the runs of its messages (status: a stopped reply …)


class AgentService:
    """The governed agent runtime for one configuration. Use `from_config`, then `async with` (or `start()`)."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        agents = config.all_agents()
        names = [a.name for a in agents]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(f"agent names must be unique; duplicated: {', '.join(duplicates)}")
        self._agents: dict[str, AgentDefinition] = {a.name: a for a in agents}
        for agent in agents:
            for edge in agent.delegations():
                if edge.agent not in self._agents:
                    raise ConfigurationError(
                        f'agent "{agent.name}" delegates to "{edge.agent}", which is not configured '
                        f"(known agents: {', '.join(sorted(self._agents))})"
                    )
        self.registry = ToolRegistry(factory=config.tool_factory)  # type: ignore[arg-type]
        for tool in config.tools:
            self.registry.register(tool)
        for spec in delegation_specs(agents):
            if spec.name not in self.registry:
                self.registry.register_spec(spec)
        if config.tools_package:
            for tool in discover_tools(config.tools_package):
                self.registry.register(tool)
        self.registry.warn_unguarded_actions()
        self.components: ComponentSource = config.components if config.components is not None else ComponentRegistry()
        self.attachment_preparer = AttachmentPreparer(
            store=config.attachment_staging,
            downloader=config.attachment_downloader,
            download_remote=config.attachment_download_remote,
            text_max_chars=config.attachment_text_max_chars,
        )
        self.policy: RolesPolicy = config.roles_policy or DefaultRolesPolicy(
            default_roles=config.default_roles, empty_roles=config.empty_roles
        )
        self.retry: TransientRetry | None = (
            config.tool_transient_retry
            if isinstance(config.tool_transient_retry, TransientRetry)
            else (TransientRetry() if config.tool_transient_retry else None)
        )
        self.model: ModelProvider = _resolve_model(config.model)
        self.sink: TokenSink = config.sink or MemoryTokenSink()
        self.telemetry = Telemetry(
            on_event=config.on_event,
            tracer_provider=config.tracer_provider,
            meter_provider=config.meter_provider,
            capture_content=config.capture_content,
            redactor=config.redactor,
        )
        # Resolved in start(): a URL store needs a connection.
        self.store: AgentStore = MemoryAgentStore()
        self.pricing: PricingStore | None = None
        self.quota: QuotaStore | None = config.quota
        self.budget_rules: BudgetRuleStore | None = None  # budgets as data (with `budget=`), built in start()
        self.usage_ledger: UsageLedger | None = None
        self.governance_queries: GovernanceQueries | None = None
        self.audit: AuditLog = MemoryAuditLog()
        self._backend: Any = None
        self._runner: Runner | None = None
        self._recording: tuple[Runner, bool] | None = None  # see `_records_runs`
        # Rendered thread history kept between runs: a run loads only what came after (loop/history.py).
        self._history = HistoryCache()
        self._mcp: Any = None  # agora_agent.mcp.MCPConnections, built in start() (the SDK is an extra)
        self.lease_keeper: LeaseKeeper | None = None  # SQL stores: this process's heartbeat (add_tick to hook in)
        self.leases: LeaseStore | None = None
        self.identity: ProcessIdentity | None = None
        self._started = False
        self._retrieval = _inject_retrieval(config)

    @classmethod
    def from_config(cls, config: AgentConfig) -> AgentService:
        """Build the service (tools registered, agents checked); connect with `start()` or `async with`."""
        return cls(config)

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect the store (creating tables where configured) and start the runner. Idempotent."""
        if self._started:
            return
        config = self.config
        store = config.store
        if isinstance(store, str):
            from agora_agent.stores.sql import open_sql_backend

            self._backend = await open_sql_backend(store, store_commit=config.store_commit)
            self.store = self._backend.store
        elif store is not None:
            self.store = store
        self._bind_attachment_store()
        self.pricing = self._resolve_pricing()
        if self._backend is not None:
            self.audit = self._backend.audit
        if self.quota is None and config.budget is not None:
            self._open_budgets(config.budget)
        self.governance_queries = self._resolve_governance_queries()
        self._bind_confirm_tokens()
        if config.mcp_servers and self._mcp is None:
            from agora_agent.tools.mcp.client import MCPConnections

            self._mcp = MCPConnections(list(config.mcp_servers), self.registry)
            await self._mcp.start()  # bounded by each server's connect_timeout; a down server never blocks
        if config.durable:
            try:
                self._runner = await self._durable_runner()
            except BaseException:
                await self.close()  # a refused configuration leaves no connection open
                raise
        else:
            leases = None
            releases = self.quota
            if self._backend is not None:
                from agora_agent.runners.leases import LeaseKeeper
                from agora_agent.stores.leases import ProcessIdentity
                from agora_agent.stores.sql.leases import SqlLeaseStore

                leases = self.leases = SqlLeaseStore(self._backend.engine)
                self.identity = ProcessIdentity()
                if releases is None:  # a dead process's reservations are released even if we have no budget
                    releases = self._backend.quota(Budget())
            inline = self._runner = InlineRunner(
                deps_for=self.deps_for,
                store=self.store,
                sink=self.sink,
                debug=config.debug,
                quota=releases,
                leases=leases,
                identity=self.identity,
                lease_ttl=config.run_lease_ttl,
            )
            recovers = self._recovers_interrupted_runs()
            if leases is not None and self.identity is not None:
                self.lease_keeper = LeaseKeeper(
                    leases,
                    self.identity,
                    interval=config.run_lease_interval,
                    ttl=config.run_lease_ttl,
                    on_tick=inline.sweep if recovers else None,
                )
                await self.lease_keeper.start()  # our lease exists before we judge anyone else's
            if recovers:
                await inline.recover_interrupted()
        self._started = True

    def _open_budgets(self, budget: Budget) -> None:
        """Budgets as data: the stored rules (config values as defaults), beside the agent store."""
        from agora_agent.stores.budgets import open_budget_stores

        engine = self._backend.engine if self._backend is not None else None
        stores = open_budget_stores(budget, engine=engine, store=self.store)
        if stores is None:  # a custom store: the config's budget alone, in process
            self.quota = MemoryQuotaStore(budget)
            return
        self.quota, self.budget_rules, self.usage_ledger = stores.quota, stores.rules, stores.ledger

    async def _durable_runner(self) -> Runner:
        """The DBOS runner (`durable=True`): a ConfigurationError naming the extra when dbos is missing."""
        from agora_agent.runners.durable import DurableConfig
        from agora_agent.runners.durable.runner import DurableRunner  # ConfigurationError without the extra

        sink = self.config.sink
        if sink is not None and not callable(getattr(sink, "publish", None)):
            raise ConfigurationError(
                "durable runs number their frames across processes and publish them themselves: leave "
                "AgentConfig.sink unset, or use RedisTokenSink to stream them through Redis",
                option="sink",
            )
        setting = self.config.durable
        runner = DurableRunner(
            deps_for=self.deps_for,
            store=self.store,
            config=setting if isinstance(setting, DurableConfig) else DurableConfig(),
            store_setting=self.config.store,
            debug=self.config.debug,
            redis=sink,
        )
        keeper = None
        if self._backend is not None:  # failover: every process heartbeats; a live one resumes a dead one's runs
            from agora_agent.runners.leases import LeaseKeeper
            from agora_agent.stores.sql.leases import SqlLeaseStore

            ttl = runner.config.failover_after
            self.leases = SqlLeaseStore(self._backend.engine)
            self.identity = runner.owner_identity()
            runner.attach_leases(self.leases, self.identity, ttl)
            keeper = self.lease_keeper = LeaseKeeper(
                self.leases, self.identity, interval=min(self.config.run_lease_interval, ttl / 3), ttl=ttl
            )
            keeper.add_tick(runner.failover)
            if self.quota is not None:
                keeper.add_tick(self.quota.release_expired)  # an interrupted model step's reservation
            # Heartbeat BEFORE launching: DBOS resumes this executor's runs at launch, and another process
            # must already see the executor alive, or its failover would resume the same runs too.
            await keeper.start()
        await runner.launch()
        if keeper is not None:
            await runner.failover()  # at start-up too: a dead process's runs need not wait for a tick
        return runner

    async def _own_attachments(self, actor: Actor, attachments: Sequence[Attachment]) -> list[Attachment]:
        """A chat's attachments as the staging store recorded them: each must have been uploaded by `actor`
        (422 otherwise — an unknown id and someone else's read the same); the client's url, type and name
        are replaced by the stored ones, so `file://`, metadata-service and foreign URLs never reach a model."""
        if not attachments:
            return []
        staging = self.config.attachment_staging
        if not isinstance(staging, ReadableAttachmentStore):
            raise InvalidRequestError(
                "attachments must be uploaded first (POST /attachments): this agent has no staging store to check them"
            )
        owned: list[Attachment] = []
        for attachment in attachments:
            record = await staging.get(attachment.media_id)
            if record is None or record.actor_id != actor.id or not record.url:
                raise InvalidRequestError(f'attachment "{attachment.media_id[:80]}" is not one of your uploads')
            stored = Attachment(
                media_id=record.media_id, url=record.url, content_type=record.content_type, name=record.filename
            )
            check_supported(stored)  # 422 now rather than a failed run later
            owned.append(stored)
        return owned

    def _bind_attachment_store(self) -> None:
        """A filesystem staging store serves files from our route and keeps metadata in our SQL database."""
        from agora_agent.stores.attachments import FilesystemAttachmentStore

        staging = self.config.attachment_staging
        if not isinstance(staging, FilesystemAttachmentStore):
            return
        if not staging.url_prefix:
            staging.url_prefix = f"{self.config.prefix}/attachments"
        if self._backend is not None:
            from agora_agent.stores.sql.attachments import SqlAttachmentIndex

            staging.bind_index(SqlAttachmentIndex(self._backend.engine))

    async def close(self) -> None:
        """Cancel runs in flight and release connections."""
        if self._runner is not None:
            await self._runner.close()
        if self._mcp is not None:
            await self._mcp.close()
            self._mcp = None
        if self.lease_keeper is not None:
            await self.lease_keeper.stop()  # our runs are closed: drop the lease so nobody waits for it
            self.lease_keeper = None
        if self._backend is not None:
            await self._backend.close()
            self._backend = None
        if isinstance(self.config.model, str):  # we built the adapter, so we own its HTTP pool
            aclose = getattr(self.model, "aclose", None)
            if aclose is not None:
                await aclose()
        self._started = False

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def mcp_status(self) -> list[Any]:
        """One `agora_agent.mcp.ServerStatus` per configured external MCP server (for readiness checks)."""
        return self._mcp.status() if self._mcp is not None else []

    def _bind_confirm_tokens(self) -> None:
        """Confirmed tools record used tokens in the agent's SQL store when it has one (single use across processes)."""
        from agora_agent.tools.confirmed import ConfirmedTool

        tools = [t for t in self.config.tools if isinstance(t, ConfirmedTool)]
        if not tools:
            return
        store = None
        if self._backend is not None:
            from agora_agent.stores.sql.confirm_tokens import SqlConfirmTokenStore

            store = SqlConfirmTokenStore(self._backend.engine)
        for tool in tools:
            tool.bind_agent_store(store)

    def _recovers_interrupted_runs(self) -> bool:
        """`recover_interrupted_runs`, defaulting to on for a URL store (run owner leases)."""
        setting = self.config.recover_interrupted_runs
        if setting is not None:
            return setting
        return isinstance(self.config.store, str)  # leases make it safe with several processes

    def _resolve_pricing(self) -> PricingStore | None:
        setting = self.config.pricing
        if setting is False:
            return None
        if setting is None or setting is True:
            if self._backend is not None:
                return self._backend.pricing  # type: ignore[no-any-return]
            return MemoryPricingStore()
        return setting

    def _resolve_governance_queries(self) -> GovernanceQueries | None:
        setting = self.config.governance_queries
        if setting is False:
            return None
        if setting is not None and setting is not True:
            return setting
        if self._backend is not None:
            return self._backend.queries  # type: ignore[no-any-return]
        if isinstance(self.store, MemoryAgentStore):
            from agora_agent.stores.memory_queries import MemoryGovernanceQueries

            return MemoryGovernanceQueries(self.store, self.pricing)
        return None

    def _records_runs(self, runner: Runner) -> bool:
        """`isinstance(runner, RecordingRunner)`, asked once per runner (a protocol check costs ~10 µs a chat)."""
        known = self._recording
        if known is None or known[0] is not runner:
            known = self._recording = (runner, isinstance(runner, RecordingRunner))
        return known[1]

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            raise ConfigurationError("the agent service is not started: use `async with service` or `await start()`")
        return self._runner

    # -- agents ------------------------------------------------------------------------------------

    def agent(self, name: str | None) -> AgentDefinition:
        """The named agent (the default agent for None); NotFoundError for an unknown name."""
        key = name if name is not None else self.config.default_agent.name
        agent = self._agents.get(key)
        if agent is None:
            raise NotFoundError(
                f'unknown agent "{key}" (known: {", ".join(sorted(self._agents))})', code="unknown_agent"
            )
        return agent

    def deps_for(self, agent_name: str) -> LoopDeps:
        """Per-agent loop dependencies."""
        agent = self.agent(agent_name)
        return _loop_deps(
            model=self.model,
            store=self.store,
            registry=self.registry,
            policy=self.policy,
            agent=agent,
            quota=self.quota,
            pricing=self.pricing,
            retry=self.retry,
            max_steps=agent.max_steps if agent.max_steps is not None else self.config.max_steps,
            redactor=self.config.redactor,
            max_delegation_depth=self.config.max_delegation_depth,
            telemetry=self.telemetry,
            retrieval=self._retrieval,
            history=self._history,
            components=self.components,
            on_presentation_error=self.config.on_presentation_error,
            attachments=self.attachment_preparer,
        )

    def persona_catalog(self, agent: str | None = None) -> list[Persona]:
        """The personas of an agent (the default agent when None), in declaration order."""
        return list(self.agent(agent).personas)

    # -- chat --------------------------------------------------------------------------------------

    async def chat(
        self,
        caller: Actor | Caller,
        message: str,
        *,
        thread_id: str | None = None,
        agent: str | None = None,
        persona: str | None = None,
        page_context: Mapping[str, Any] | None = None,
        attachments: Sequence[Attachment] = (),
        new_thread_id: str | None = None,
        ui_capabilities: Sequence[str] | None = None,
    ) -> ChatStarted:
        """Validate, check the budget, record the run and start it. Returns at once.

        Without `thread_id` a new thread is created, with the id `new_thread_id` when given (a front
        end that names its chats maps them onto ours; an existing id -> ConflictError).

        Raises InvalidRequestError (empty message, unknown persona), NotFoundError (unknown agent or
        thread), ForbiddenError (a thread that is not the caller's and no grant covers) and
        QuotaExceededError (no budget left: refuse before any stream opens).
        """
        who = Caller.of(caller)
        actor = who.actor
        if not isinstance(message, str) or not message.strip():
            raise InvalidRequestError("message must be a non-empty string")
        definition = self.agent(agent)
        thread = await self._owned_thread(who, thread_id) if thread_id is not None else None
        if persona is not None and definition.persona(persona) is None:
            known = ", ".join(p.id for p in definition.personas) or "none"
            raise InvalidRequestError(
                f'unknown persona "{persona}" for agent "{definition.name}" (known: {known})', code="unknown_persona"
            )
        attachments = await self._own_attachments(actor, attachments)
        runner = self.runner
        day = utc_day()
        if self.quota is not None:  # before anything is stored: a refused chat leaves no trace
            try:
                await self.quota.check(actor, day)
            except QuotaExceededError as exc:
                await self.telemetry.quota_refused(actor, exc, thread_id=thread_id)
                raise
        new_thread: NewThread | None = None
        if thread is None:
            chosen = definition.persona(persona)
            new_thread = _new_thread(
                actor_ref=actor.id,
                tenant_ref=actor.tenant_ref,
                persona=chosen.id if chosen else (persona or definition.default_persona),
                thread_id=new_thread_id,
            )
        record = _run_record(
            id=new_id(),
            thread_id=thread.id if thread is not None else "",  # a new thread's id is the store's
            agent_name=definition.name,
            actor_ref=actor.id,
            tenant_ref=actor.tenant_ref,
            started_at=datetime.now(UTC),
            durable=bool(self.config.durable),
        )
        record = await self._record_run(runner, record, new_thread)
        run_input = _run_input(
            run_id=record.id,
            thread_id=record.thread_id,
            actor=actor,
            user_text=message,
            day=day,
            agent_name=definition.name,
            persona_id=persona,
            page_context=page_context,
            attachments=tuple(attachments),
            ui_capabilities=frozenset(ui_capabilities) if ui_capabilities is not None else None,
            # checked above, an instant before the inline runner starts the run: the loop need not ask again
            quota_checked=self.quota is not None and isinstance(runner, InlineRunner),
        )
        if self._records_runs(runner):
            await cast(RecordingRunner, runner).start_recorded(run_input, record)
        else:
            await runner.start(run_input)
        return _chat_started(run_id=record.id, thread_id=record.thread_id, run=record)

    async def _record_run(self, runner: Runner, record: RunRecord, new_thread: NewThread | None) -> RunRecord:
        """What is stored before a run starts; returns its row (with its thread's id).

        Inline: ONE write (`AgentStore.open_run`) — the new thread, the run row with its rollup and active
        stream, and its owner. Durable: only the new thread; the runner enqueues the workflow first and then
        writes the run row (`start_recorded`), so a crash in between loses no run — the workflow carries the
        row and writes it itself, and its thread must exist by then."""
        if self._records_runs(runner):
            if new_thread is None:
                return record
            created = await self.store.create_thread(**_thread_arguments(new_thread))
            return replace(record, thread_id=created.id)
        owner = await self._run_owner(runner, record.id)
        opened = await self.store.open_run(record, new_thread=new_thread, owner_id=owner, active_stream=True)
        return opened.run

    async def _run_owner(self, runner: Runner, run_id: str) -> str | None:
        """The lease owner `open_run` records with the run: the inline runner's process when its leases live in
        the store's database (the service built both on one engine); any other lease store claims here, first,
        so a crash right after the run row still leaves a run someone owns."""
        if not isinstance(runner, InlineRunner):
            return None
        if self._backend is not None and runner.leases is self.leases:
            return runner.owner_id
        await runner.claim(run_id)
        return None

    async def subscribe(
        self, caller: Actor | Caller, run: str | ChatStarted, *, after: int | None = None
    ) -> AsyncIterator[StreamEvent]:
        """The frames of `run` (its id, or what `chat` returned) after id `after` (all when None), then live
        ones until the run ends.

            async for event in await service.subscribe(actor, run_id):
                ...

        Awaiting it checks the run first, so NotFoundError (unknown run) and ForbiddenError (not the
        caller's) are raised before any frame; given `chat`'s `ChatStarted`, the run row it recorded is
        checked without reading it back. A run whose frames this process does not hold replays its stored
        transcript (runners/transcript.py).
        """
        who = Caller.of(caller)
        if isinstance(run, ChatStarted) and run.run is not None:
            record = await self._owned(who, "run", run.run)
        else:
            record = await self._owned_run(who, run.run_id if isinstance(run, ChatStarted) else run)
        run_id = record.id
        runner = self.runner
        inline = runner if isinstance(runner, InlineRunner) else None  # never a StreamingRunner: no Protocol check
        if inline is not None and record.status == "running" and not inline.is_active(run_id):
            await inline.recover_lapsed(run_id=run_id)  # a dead owner's run ends with an error frame
        if inline is None and isinstance(runner, StreamingRunner):
            return await runner.stream(run_id, after=after)
        if not runner.is_active(run_id) and not await self.sink.has_stream(run_id):
            # Not in this process (a restart, another process): never an empty stream — the stored transcript.
            return follow_transcript(self.store, run_id, after=after)
        return _with_fallback(self.sink.subscribe(run_id, after=after), self.store, run_id)

    # -- approvals ---------------------------------------------------------------------------------

    async def approve(self, caller: Actor | Caller, run_id: str, tool_call_id: str) -> ApprovalRecord:
        """Approve a pending action. See `_decide` for the rules and errors."""
        return await self._decide(Caller.of(caller), run_id, tool_call_id, "approved", None)

    async def reject(
        self, caller: Actor | Caller, run_id: str, tool_call_id: str, *, reason: str | None = None
    ) -> ApprovalRecord:
        """Reject a pending action; `reason` reaches the model."""
        return await self._decide(Caller.of(caller), run_id, tool_call_id, "rejected", reason)

    async def _decide(
        self,
        caller: Caller,
        run_id: str,
        tool_call_id: str,
        status: Literal["approved", "rejected"],
        reason: str | None,
    ) -> ApprovalRecord:
        """Server-authoritative decision.

        NotFoundError: unknown run, or no approval for that tool call in that run.
        ForbiddenError: not the requester's run and no grant covering it; or approving a tool with
        `approver_roles` without one of them, or as its requester (four eyes; the tool's `self_approval=True`
        allows the latter). Rejecting one's own call is always allowed.
        ConflictError: already decided or expired (`detail` carries the standing decision).
        """
        actor = caller.actor
        run = await self._owned_run(caller, run_id)
        approval = await self.store.get_approval(run_id, tool_call_id)
        if approval is None:
            call = await self.store.get_tool_call(run_id, tool_call_id)
            if call is None:
                raise NotFoundError("tool call not found")
            raise NotFoundError(f'tool call {tool_call_id} ("{call.tool_name}") is not awaiting approval')
        runner = self.runner
        lapsed = isinstance(runner, InlineRunner) and run.status == "running" and not runner.is_active(run_id)
        if lapsed and isinstance(runner, InlineRunner) and await runner.recover_lapsed(run_id=run_id):
            # its process died: recovery closed its approvals (nobody would execute this call)
            run = await self.store.get_run(run_id) or run
            approval = await self.store.get_approval(run_id, tool_call_id) or approval
        if approval.status == "pending" and approval.expired():
            approval, _ = await self.store.decide_approval(
                run_id, tool_call_id, status="expired", decided_by=None, reason="approval expired"
            )
            await self.runner.signal(run_id, tool_call_id)
        if approval.status != "pending":
            why = f" ({approval.reason})" if approval.reason else ""
            raise ConflictError(
                f"tool call already {approval.status}{why}", detail=_standing(approval), code="already_decided"
            )
        if run.status != "running":  # a pending approval of a run that ended: never a silent 200
            why = f": {run.error}" if run.error else ""
            raise ConflictError(
                f"run is {run.status}{why}; nothing will execute this call", detail=_standing(approval), code="run_over"
            )
        if status == "approved" and approval.approver_roles:
            self._four_eyes(actor, approval)
        record, changed = await self.store.decide_approval(
            run_id, tool_call_id, status=status, decided_by=actor.id, reason=reason
        )
        if not changed:
            raise ConflictError(f"tool call already {record.status}", detail=_standing(record), code="already_decided")
        runner = self.runner
        if isinstance(runner, InlineRunner) and actor.id == approval.requested_by:
            # the parked run re-authorizes the action with the requester's identity as resolved now
            await runner.signal(run_id, tool_call_id, requester=actor)
        else:
            await runner.signal(run_id, tool_call_id)
        return record

    def _four_eyes(self, actor: Actor, approval: ApprovalRecord) -> None:
        """Approving a tool with `approver_roles` needs one of them, and someone other than the requester —
        unless the tool says `self_approval=True` (a tool no longer registered counts as False)."""
        roles = approval.approver_roles or ()
        if not set(actor.roles) & set(roles):
            raise ForbiddenError(
                f'approving "{approval.tool_name}" needs one of the roles: {", ".join(roles)}', code="approver_role"
            )
        if actor.id == approval.requested_by:
            spec = self.registry.get(approval.tool_name)
            if spec is None or not spec.self_approval:
                raise ForbiddenError(
                    f'"{approval.tool_name}" needs a second person: the requester cannot approve their own call '
                    "(reject it, or ask someone with one of the approver roles)",
                    code="self_approval",
                )

    async def readiness(self) -> dict[str, bool]:
        """What `GET /readyz` reports: the store answers, Redis answers (when the sink is Redis), and the
        durable engine is launched and reaches its system database (when `durable` is on)."""
        checks: dict[str, bool] = {"store": False}
        try:
            await self.store.get_run("readyz-probe")
            checks["store"] = self._started
        except Exception:
            logger.warning("readiness: the store does not answer", exc_info=True)
        ping = getattr(self.sink, "ping", None)
        if callable(ping):
            checks["redis"] = bool(await ping())
        if self.config.durable:
            ready = getattr(self._runner, "ready", None)
            checks["durable"] = bool(await ready()) if callable(ready) else False
        return checks

    async def pending_approvals(
        self, caller: Actor | Caller, *, actor_ref: str | None = None, limit: int = 50
    ) -> list[ApprovalRecord]:
        """Pending approvals the caller may decide, oldest first: their own; with a grant, everyone's
        (a `GovernanceScope`: inside its tenants), or one requester's with `actor_ref`.

        ForbiddenError: `actor_ref` names someone else and the caller has no grant.
        """
        who = Caller.of(caller)
        grant = await self.grant(who)
        if grant is False:
            if actor_ref not in (None, who.actor.id):
                raise ForbiddenError("forbidden")
            return await self.store.list_pending_approvals(actor_ref=who.actor.id, limit=limit)
        if grant is True:
            return await self.store.list_pending_approvals(actor_ref=actor_ref, limit=limit)
        # A tenant scope: the store lists by requester only; the governance queries filter by the run's tenant.
        if self.governance_queries is not None:
            rows = await self.governance_queries.pending_approvals(actor=actor_ref, limit=limit, scope=grant)
            found = [await self.store.get_approval(r.run_id, r.tool_call_id) for r in rows if r.run_id]
            return [a for a in found if a is not None and a.status == "pending"]
        pending = await self.store.list_pending_approvals(actor_ref=actor_ref, limit=max(limit, 500))
        tenants: dict[str, str | None] = {}
        for row in pending:
            if row.run_id not in tenants:
                run = await self.store.get_run(row.run_id)
                tenants[row.run_id] = run.tenant_ref if run is not None else None
        return [r for r in pending if grant.covers(tenants[r.run_id])][:limit]

    async def queued_runs(self, run_ids: Sequence[str]) -> set[str]:
        """Which of these `running` runs have not begun: they wait in the durable run queue for capacity
        (`DurableConfig.worker_concurrency` / `tenant_concurrency`). Always empty with the inline runner.
        For views that already passed the governance gate (it says nothing but the ids' queue state)."""
        runner = self.runner
        if not run_ids or not isinstance(runner, StreamingRunner):
            return set()
        return await runner.queued(list(run_ids))

    async def cancel(self, caller: Actor | Caller, run_id: str) -> bool:
        """Cancel a run: its model call or tool is cancelled, it ends `cancelled`, its stream ends.
        NotFoundError / ForbiddenError as for `get_run`."""
        await self._owned_run(Caller.of(caller), run_id)
        return await self.runner.cancel(run_id)

    # -- threads, runs, quota ----------------------------------------------------------------------

    async def list_threads(self, caller: Actor | Caller, *, limit: int = 50) -> list[ThreadSummary]:
        """The caller's own threads, newest activity first."""
        return await self.store.list_threads(Caller.of(caller).actor.id, limit=limit)

    async def get_thread(self, caller: Actor | Caller, thread_id: str) -> ThreadDetail:
        """The thread with its messages, tool calls and runs.

        NotFoundError: unknown (or deleted). ForbiddenError: someone else's and no grant covers it.
        """
        thread = await self._owned_thread(Caller.of(caller), thread_id)
        messages = await self.store.list_messages(thread_id)
        calls = await self.store.list_tool_calls(thread_id=thread_id)
        preview = messages[-1].content[:120] if messages else None
        run_ids = list(dict.fromkeys(m.run_id for m in messages if m.run_id))
        runs = [r for r in [await self.store.get_run(rid) for rid in run_ids[-50:]] if r is not None]
        return ThreadDetail(thread=thread, messages=messages, tool_calls=calls, last_message_preview=preview, runs=runs)

    async def thread_record(self, caller: Actor | Caller, thread_id: str) -> ThreadRecord:
        """The thread's stored record without its messages. NotFoundError / ForbiddenError as for `get_thread`."""
        return await self._owned_thread(Caller.of(caller), thread_id)

    async def rename_thread(self, caller: Actor | Caller, thread_id: str, title: str) -> None:
        """Give the thread a title of 1-200 characters (InvalidRequestError otherwise).
        NotFoundError / ForbiddenError as for `get_thread`."""
        await self._owned_thread(Caller.of(caller), thread_id)
        title = title.strip() if isinstance(title, str) else ""
        if not title or len(title) > 200:
            raise InvalidRequestError("title must be 1 to 200 characters")
        await self.store.set_title(thread_id, title)

    async def delete_thread(self, caller: Actor | Caller, thread_id: str) -> None:
        """Soft-delete the thread; afterwards it is not found for everyone.
        NotFoundError / ForbiddenError as for `get_thread`."""
        await self._owned_thread(Caller.of(caller), thread_id)
        if not await self.store.soft_delete_thread(thread_id):
            raise NotFoundError("thread not found")

    async def fork_thread(self, caller: Actor | Caller, thread_id: str, message_id: str) -> ThreadSummary:
        """A new thread holding the messages up to and including `message_id`.
        NotFoundError / ForbiddenError as for `get_thread`."""
        await self._owned_thread(Caller.of(caller), thread_id)
        thread = await self.store.fork_thread(thread_id, message_id)
        messages = await self.store.list_messages(thread.id)
        return ThreadSummary(thread=thread, last_message_preview=messages[-1].content[:120] if messages else None)

    async def quota_today(self, caller: Actor | Caller) -> QuotaToday:
        """Tokens the caller used today from the usage ledger, plus budget limits when set."""
        actor = Caller.of(caller).actor
        day = utc_day()
        start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
        end = start + timedelta(days=1) - timedelta(microseconds=1)
        used = await self.store.usage_tokens(actor.id, start, end)
        if self.quota is None:
            return QuotaToday(day=day, used_tokens=used)
        usage = await self.quota.usage(actor, day)
        limited = usage.limit_tokens is not None or usage.limit_usd is not None
        return QuotaToday(
            day=day,
            used_tokens=used,
            limit_tokens=usage.limit_tokens,
            used_usd=usage.used_usd,
            limit_usd=usage.limit_usd,
            period=("month" if len(usage.period_key) == 7 else "day") if limited else None,
            period_used_tokens=usage.used_tokens if limited else None,
        )

    async def get_run(self, caller: Actor | Caller, run_id: str) -> RunRecord:
        """The stored run. NotFoundError: unknown. ForbiddenError: someone else's and no grant covers it."""
        return await self._owned_run(Caller.of(caller), run_id)

    async def wait_for_run(self, caller: Actor | Caller, run: str | ChatStarted, *, timeout: float = 30) -> RunRecord:
        """Wait until the run (its id, or what `chat` returned) finishes in this process; returns the stored run.
        NotFoundError / ForbiddenError as for `get_run`.

        The caller's right to wait is checked before waiting; given `chat`'s `ChatStarted`, against the run row
        it recorded (a run's owner and tenant never change), without reading it back — as `subscribe` does."""
        who = Caller.of(caller)
        if isinstance(run, ChatStarted) and run.run is not None:
            run_id = (await self._owned(who, "run", run.run)).id
        else:
            run_id = run.run_id if isinstance(run, ChatStarted) else run
            await self._owned_run(who, run_id)
        await self.runner.wait(run_id, timeout)
        return await self._owned_run(who, run_id)

    # -- the governance gate and ownership ---------------------------------------------------------

    async def grant(self, caller: Actor | Caller) -> Grant:
        """What `governance_authorize` grants the caller: True (global), a `GovernanceScope` (some
        tenants) or False (a refusal, a raise, or no predicate configured). Asked once per `Caller`."""
        return (await Caller.of(caller).decision(self.config.governance_authorize)).grant

    async def governance_grant(self, caller: Actor | Caller) -> Grant:
        """The grant of a caller of the governance views; ForbiddenError when the gate refuses (its
        message is the predicate's error only with `debug`, else "forbidden")."""
        decision = await Caller.of(caller).decision(self.config.governance_authorize)
        if not decision.ok:
            raise ForbiddenError(decision.reason if self.config.debug and decision.reason else "forbidden")
        return decision.grant

    async def global_grant(self, caller: Actor | Caller) -> None:
        """Refuse (ForbiddenError) a caller whose grant is not global: operations that are not any one
        tenant's (prices) need a global admin."""
        if await self.governance_grant(caller) is not True:
            raise ForbiddenError("this operation needs a global governance grant, not a tenant scope")

    async def _ownership(self, caller: Caller, owner_ref: str, tenant_ref: str | None) -> OwnershipDecision:
        """The ownership verdict for an existing row; the gate is asked only when the caller is not the owner."""
        if owner_ref == caller.actor.id:
            return evaluate_ownership(caller.actor.id, owner_ref, False)
        return evaluate_ownership(caller.actor.id, owner_ref, await self.grant(caller), tenant_ref=tenant_ref)

    async def _owned_run(self, caller: Caller, run_id: str) -> RunRecord:
        """The run if the caller may touch it: NotFoundError (unknown) / ForbiddenError (not covered)."""
        return await self._owned(caller, "run", await self.store.get_run(run_id))

    async def _owned_thread(self, caller: Caller, thread_id: str) -> ThreadRecord:
        """The thread if the caller may touch it: NotFoundError (unknown, deleted) / ForbiddenError."""
        return await self._owned(caller, "thread", await self.store.get_thread(thread_id))

    async def _owned(self, caller: Caller, kind: str, row: _Row | None) -> _Row:
        if row is None:
            raise NotFoundError(f"{kind} not found")
        if not (await self._ownership(caller, row.actor_ref, row.tenant_ref)).ok:
            raise ForbiddenError("forbidden")
        return row


def _thread_arguments(spec: NewThread) -> dict[str, Any]:
    """`create_thread`'s keyword arguments for the thread `spec` describes."""
    return {f.name: getattr(spec, f.name) for f in fields(spec)}


def _standing(approval: ApprovalRecord) -> dict[str, Any]:
    """The standing decision a 409 carries (the web layer writes its keys in camelCase)."""
    return {
        "status": approval.status,
        "decided_by": approval.decided_by,
        "decided_at": approval.decided_at,
        "reason": approval.reason,
    }


async def _with_fallback(
    events: AsyncIterator[StreamEvent], store: AgentStore, run_id: str
) -> AsyncIterator[StreamEvent]:
    """A sink that loses the stream (Redis down, frames trimmed) hands over to the stored transcript."""
    try:
        async for event in events:
            yield event
    except (StreamGap, StreamUnavailable) as exc:
        logger.warning("run %s: %s; replaying the stored transcript", run_id, exc)
        async for event in follow_transcript(store, run_id):
            yield event


def _inject_retrieval(config: AgentConfig) -> InjectRetrieval | None:
    if config.retriever is None:
        return None
    return InjectRetrieval(retriever=config.retriever, top_k=config.retrieval_top_k, filter=config.retrieval_filter)


def _resolve_model(model: ModelProvider | str | Any) -> ModelProvider:
    if isinstance(model, str):
        from agora_agent.models.infer import env_base_url, infer_model

        return infer_model(model, base_url=env_base_url())
    if isinstance(model, ModelProvider):
        return model
    if callable(model):
        built = model()
        if isinstance(built, ModelProvider):
            return built
    raise ConfigurationError(
        f"AgentConfig.model must be a ModelProvider, a model string such as 'openai:gpt-4o-mini', or a factory; "
        f"got {type(model).__name__}"
    )
