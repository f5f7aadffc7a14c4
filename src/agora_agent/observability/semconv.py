"""Attribute and instrument names, as string literals.

The GenAI names follow the OpenTelemetry GenAI semantic conventions (open-telemetry/semantic-conventions-genai,
docs/gen-ai/gen-ai-spans.md, gen-ai-agent-spans.md and gen-ai-metrics.md, Development status, revision of
2026-06). They are pinned here instead of imported from `opentelemetry.semconv._incubating`, which is private
and marks every `gen_ai` name deprecated. Governance facts live in our own `agora.*` namespace.
"""

from __future__ import annotations

# GenAI (spans)
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"  # includes cached tokens (the convention says SHOULD)
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"  # opt-in content
TOOL_CALL_RESULT = "gen_ai.tool.call.result"  # opt-in content
INPUT_MESSAGES = "gen_ai.input.messages"  # opt-in content
OUTPUT_MESSAGES = "gen_ai.output.messages"  # opt-in content
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"  # opt-in content
TOKEN_TYPE = "gen_ai.token.type"
ERROR_TYPE = "error.type"

# GenAI (metrics)
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"

# Ours
ACTOR_ID = "agora.actor.id"
TENANT_ID = "agora.tenant.id"
THREAD_ID = "agora.thread.id"
RUN_ID = "agora.run.id"
PARENT_RUN_ID = "agora.parent_run.id"
PERSONA = "agora.persona"
TOOL_KIND = "agora.tool.kind"
TOOL_STATUS = "agora.tool.status"
POLICY_DECISION = "agora.policy.decision"
IDEMPOTENCY_KEY = "agora.tool.idempotency_key"
APPROVAL_OUTCOME = "agora.approval.outcome"
APPROVAL_DECIDED_BY = "agora.approval.decided_by"
APPROVAL_REQUESTED_BY = "agora.approval.requested_by"
APPROVAL_REASON = "agora.approval.reason"
RUN_STATUS = "agora.run.status"
RUN_COST_USD = "agora.run.cost_usd"
STEP_COST_USD = "agora.cost_usd"
BUDGET_SCOPE = "agora.budget.scope"

METRIC_TOOL_CALLS = "agora.tool.calls"
METRIC_APPROVALS = "agora.approvals"
METRIC_APPROVAL_WAIT = "agora.approval.wait.duration"
METRIC_BUDGET_REFUSALS = "agora.budget.refusals"

# The standard switch GenAI instrumentations read to record message content.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
