// The console's run views: the inspector waterfall, two runs side by side, and the live feed.
// Reads GET governance/runs/{id}/inspect, governance/compare and governance/live. Plain ES module.
import { h, prettyJson } from "./common/dom.js";
import { formatUsd, formatCount, formatDuration, formatTimestamp, shortId } from "./common/format.js";

const usd = (v) => (v === null || v === undefined ? "unpriced" : formatUsd(v));
const KIND_LABEL = { model: "model", tool: "tool", approval: "approval", delegation: "delegation", retrieval: "retrieval" };

// One line of facts per step kind: what a reviewer asks first.
function facts(step) {
  const d = step.detail || {};
  const bits = [];
  if (step.kind === "model") {
    bits.push(`${formatCount(d.inputTokens ?? 0)} in · ${formatCount(d.outputTokens ?? 0)} out`);
    bits.push(usd(d.costUsd));
    if (d.finishReason) bits.push(`finish: ${d.finishReason}`);
    if (d.latencyMs !== null && d.latencyMs !== undefined) bits.push(`latency ${formatDuration(d.latencyMs)}`);
  } else if (step.kind === "approval") {
    bits.push(`requested by ${d.requestedBy || "—"}`);
    bits.push(d.decidedBy ? `decided by ${d.decidedBy}` : step.status === "pending" ? "waiting" : "no decider");
    if (d.decidedAt) bits.push(`at ${formatTimestamp(d.decidedAt)}`);
    if (d.reason) bits.push(`reason: ${d.reason}`);
    if (d.policyDecision) bits.push(`policy: ${d.policyDecision}`);
  } else {
    if (d.policyDecision) bits.push(`policy: ${d.policyDecision}`);
    if (d.executionMs !== null && d.executionMs !== undefined) bits.push(`ran ${formatDuration(d.executionMs)}`);
    if (d.attempt) bits.push(`attempt ${d.attempt}`);
    if (d.idempotencyKey) bits.push(`idempotency key ${d.idempotencyKey}`);
    if (d.decidedBy) bits.push(`approved by ${d.decidedBy}`);
  }
  return bits.join(" · ");
}

function stepBody(step) {
  const d = step.detail || {};
  const parts = [];
  if (step.kind === "model") {
    if (d.request) parts.push(h("div.io-label", {}, "request"), h("pre.io", {}, prettyJson(d.request, 4000)));
    if (d.response) parts.push(h("div.io-label", {}, "response"), h("pre.io", {}, prettyJson(d.response, 4000)));
    if (d.priceId) parts.push(h("div.muted", {}, `priced with price ${shortId(d.priceId)} (${d.costSource})`));
  } else if (step.kind !== "approval") {
    parts.push(h("div.io-label", {}, "arguments"), h("pre.io", {}, prettyJson(d.arguments, 2000)));
    if (d.error) parts.push(h("div.io-label", {}, "error"), h("pre.io.bad", {}, d.error));
    else if (d.output !== null && d.output !== undefined) parts.push(h("div.io-label", {}, "output"), h("pre.io", {}, prettyJson(d.output, 2000)));
  }
  return parts;
}

// The waterfall: one row per step, a bar placed by offset and width by duration, relative to the run.
export function waterfall(inspection, { depth = 0 } = {}) {
  const run = inspection.run;
  const steps = inspection.steps || [];
  const total = Math.max(
    run.durationMs || 0,
    ...steps.map((s) => (s.offsetMs || 0) + (s.durationMs || 0)),
    1,
  );
  const rows = steps.map((step) => {
    const left = ((step.offsetMs || 0) / total) * 100;
    const width = Math.max(((step.durationMs || 0) / total) * 100, 0.6);
    const details = h(
      "details.wf-step",
      { dataset: { kind: step.kind, status: step.status, step: step.id } },
      h(
        "summary",
        {},
        h("span.wf-kind", {}, KIND_LABEL[step.kind] || step.kind),
        h("span.wf-name.mono", {}, step.name),
        h(`span.pill.${step.status}`, {}, String(step.status).replace(/_/g, " ")),
        h("span.wf-time", {}, `+${formatDuration(step.offsetMs)} · ${step.durationMs === null ? "…" : formatDuration(step.durationMs)}`),
        h("span.wf-track", {}, h(`span.wf-bar.${step.kind}`, { style: `left:${left}%;width:${width}%` })),
      ),
      h("div.wf-facts", {}, facts(step)),
      stepBody(step),
      step.child ? h("div.wf-child", {}, h("div.muted", {}, `delegated run `, h("a", { href: `#runs/${encodeURIComponent(step.child.run.id)}` }, shortId(step.child.run.id)), ` · agent ${step.child.run.agentName || "default"} · ${step.child.run.status}`), waterfall(step.child, { depth: depth + 1 })) : null,
    );
    return details;
  });
  return h(
    "div.waterfall",
    { dataset: { run: run.id, depth: String(depth) } },
    rows.length ? rows : h("div.empty", {}, "No steps recorded"),
    depth === 0 ? h("div.wf-legend.muted", {}, `run ${formatDuration(run.durationMs)} · ${formatCount(run.inputTokens + run.outputTokens)} tokens · ${usd(run.costUsd)}${inspection.contentCaptured ? " · content captured" : ""}`) : null,
  );
}

export async function compareView(get, a, b) {
  const back = h("a.back", { href: "#runs" }, "← All runs");
  const c = await get("/governance/compare", { a, b });
  const d = c.diff;
  const row = (label, x, y) => h("tr", {}, h("th", {}, label), h("td", {}, x), h("td", {}, y));
  return [
    back,
    h("div.panel-head", {}, h("h1", {}, `Compare ${shortId(a)} and ${shortId(b)}`)),
    h(
      "section.card.section",
      {},
      h("h2", {}, "What differs"),
      h(
        "table.compare-diff",
        {},
        h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, h("a", { href: `#runs/${encodeURIComponent(a)}` }, shortId(a))), h("th", {}, h("a", { href: `#runs/${encodeURIComponent(b)}` }, shortId(b))))),
        h(
          "tbody",
          {},
          row("Input", h("pre.io", {}, d.input.a ?? "—"), h("pre.io", {}, d.input.b ?? "—")),
          row("Status", d.status.a, d.status.b),
          row("Tools", d.tools.a.join(", ") || "—", d.tools.b.join(", ") || "—"),
          row("Only here", d.tools.onlyA.join(", ") || "—", d.tools.onlyB.join(", ") || "—"),
          row("Tokens", formatCount(d.tokens.a), formatCount(d.tokens.b)),
          row("Cost", usd(d.costUsd.a), `${usd(d.costUsd.b)}${d.costUsd.delta !== null ? ` (${d.costUsd.delta >= 0 ? "+" : "−"}${formatUsd(Math.abs(d.costUsd.delta))})` : ""}`),
          row("Duration", formatDuration(d.durationMs.a), formatDuration(d.durationMs.b)),
        ),
      ),
    ),
    h("div.compare", {}, h("section.card.section", {}, h("h2", {}, `Run ${shortId(a)}`), waterfall(c.a)), h("section.card.section", {}, h("h2", {}, `Run ${shortId(b)}`), waterfall(c.b))),
  ];
}

// The live feed: the pending count on every approval change, and a callback for the views to refresh.
export function startLive(base, { onCount, onChange }) {
  if (typeof EventSource === "undefined") return null;
  const source = new EventSource(`${base}/governance/live`, { withCredentials: true });
  const read = (e) => {
    try {
      return JSON.parse(e.data);
    } catch {
      return null;
    }
  };
  source.addEventListener("hello", (e) => {
    const data = read(e);
    if (data && typeof data.pendingApprovals === "number") onCount(data.pendingApprovals);
    document.body.dataset.live = "on";
  });
  source.addEventListener("change", (e) => {
    const data = read(e);
    if (!data) return;
    if (typeof data.pendingApprovals === "number") onCount(data.pendingApprovals);
    onChange(data);
  });
  source.addEventListener("error", () => {
    document.body.dataset.live = "off"; // EventSource reconnects by itself
  });
  return source;
}
