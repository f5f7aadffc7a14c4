// The governance dashboard (REFERENCE DASH-09..20): nine panels behind hash navigation, reading the
// governance routes of the agent API. Plain ES modules, no build step.
import { h, clear, prettyJson } from "./common/dom.js";
import { apiError } from "./common/sse.js";
import { donut, legend, comboChart, barChart } from "./common/charts.js";
import { ragPanel } from "./rag.js";
import { budgetSections } from "./budgets.js";
import { formatUsd, formatCount, formatPercent, formatDuration, formatModelLabel, formatTimestamp, shortId } from "./common/format.js";
import { waterfall, compareView, startLive } from "./console.js";

// The API base is injected by the server (DASH-05); else derived by stripping /dashboard from the URL.
const BASE = (window.__AGENT_DASHBOARD_BASE__ || location.pathname.replace(/\/dashboard(\/.*)?$/, "")).replace(/\/+$/, "");
const PANELS = ["overview", "runs", "threads", "tools", "approvals", "toolstats", "reliability", "quota", "pricing", "rag"];
const root = document.getElementById("panel");

// ---------------------------------------------------------------- API client (DASH-09)

async function get(path, params = {}) {
  const qs = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== ""));
  const url = `${BASE}${path}${qs.toString() ? `?${qs}` : ""}`;
  const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!r.ok) throw await apiError(r, `GET ${path} failed`);
  return r.json();
}

async function post(path, body) {
  const r = await fetch(`${BASE}${path}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw await apiError(r, `POST ${path} failed`);
  return r.json();
}

// PUT / DELETE with a JSON body (the budget editor).
async function send(method, path, body) {
  const r = await fetch(`${BASE}${path}`, {
    method,
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!r.ok) throw await apiError(r, `${method} ${path} failed`);
  return r.json();
}

// What the caller's governance grant covers ({scope: "global"} or {scope: "tenants", tenants}), asked once: a
// tenant admin is not offered the edits that need a global grant (prices, the `*` budget rules).
let grantAsked = null;
function grant() {
  grantAsked ??= get("/governance/grant").catch(() => ({ scope: "global", tenants: null })); // an older server: offer everything
  return grantAsked;
}

// ---------------------------------------------------------------- small view helpers

const actorOf = (row) => row.actorLabel || row.actorRef || "—";
const pill = (status) => h(`span.pill.${status}`, {}, String(status || "—").replace(/_/g, " "));
const stat = (label, value, sub = null) => h("div.card.stat", {}, h("div.label", {}, label), h("div.value", {}, value), sub ? h("div.sub", {}, sub) : null);
const section = (title, ...children) => h("section.card.section", {}, typeof title === "string" ? h("h2", {}, title) : title, ...children);
const head = (title, ...right) => h("div.panel-head", {}, h("h1", {}, title), ...right);
const errorBox = (err) => h("div.banner.error", { role: "alert" }, err.message || String(err));

// columns: [{label, value: row => node|string, num?}]
function table(columns, rows, { onRow = null, empty = "Nothing yet" } = {}) {
  return h(
    "div.table-scroll",
    {},
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : null }, c.label)))),
      h(
        "tbody",
        {},
        rows.length
          ? rows.map((row) =>
              h(
                "tr",
                { class: onRow ? "clickable" : null, onclick: onRow ? () => onRow(row) : null },
                columns.map((c) => h("td", { class: c.num ? "num" : null }, c.value(row))),
              ),
            )
          : h("tr", {}, h("td.empty", { colspan: columns.length }, empty)),
      ),
    ),
  );
}

function utcDay(offsetDays = 0) {
  const d = new Date();
  d.setUTCDate(d.getUTCDate() + offsetDays);
  return d.toISOString().slice(0, 10);
}

const validDay = (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(new Date(`${s}T00:00:00Z`).getTime());

// ---------------------------------------------------------------- Overview (DASH-10)

const range = { from: utcDay(-6), to: utcDay(0) };

function rangePicker(onChange) {
  const from = h("input", { type: "date", value: range.from, "aria-label": "From" });
  const to = h("input", { type: "date", value: range.to, "aria-label": "To" });
  const apply = () => {
    let [f, t] = [from.value, to.value];
    if (!validDay(f) || !validDay(t)) return; // invalid input is ignored
    if (f > t) [f, t] = [t, f]; // an inverted range is swapped
    range.from = f;
    range.to = t;
    onChange();
  };
  from.addEventListener("change", apply);
  to.addEventListener("change", apply);
  return h("div.filters", {}, h("label", {}, "From", from), h("label", {}, "To", to));
}

async function overview() {
  const [models, trend, actors] = await Promise.all([
    get("/governance/spend/model", range),
    get("/governance/usage/trend", range),
    get("/governance/spend/actor", range),
  ]);
  const totalCost = models.reduce((a, m) => a + (m.costUsd || 0), 0);
  const totalTokens = models.reduce((a, m) => a + m.inputTokens + m.outputTokens, 0);
  const requests = models.reduce((a, m) => a + m.requests, 0);
  const byCost = totalCost > 0; // fall back to token share when nothing is priced
  const shareOf = (m) => (byCost ? m.costUsd || 0 : m.inputTokens + m.outputTokens);
  const shareTotal = byCost ? totalCost : totalTokens;
  const items = models.map((m) => ({ label: formatModelLabel(m.modelId), value: shareOf(m) }));
  const fmtShare = byCost ? formatUsd : formatCount;
  return [
    head("Overview", rangePicker(render)),
    h(
      "div.stats",
      { "data-testid": "overview-stats" },
      stat("Total spend", formatUsd(totalCost), `${range.from} → ${range.to}`),
      stat("Tokens", formatCount(totalTokens)),
      stat("Requests", formatCount(requests)),
      stat("Models", String(models.length)),
    ),
    h(
      "div.grid-2",
      {},
      section(
        h("h2", {}, "Spend by model", h("span.muted", {}, byCost ? "share of cost" : "share of tokens (nothing priced)")),
        models.length
          ? h("div.donut-wrap", {}, donut(items, { centerTop: byCost ? formatUsd(totalCost) : formatCount(totalTokens), centerBottom: byCost ? "spend" : "tokens", format: fmtShare }), legend(items, fmtShare))
          : h("div.empty", {}, "No model usage in this range"),
        table(
          [
            { label: "Model", value: (m) => h("span", { title: m.modelId }, formatModelLabel(m.modelId)) },
            { label: "Requests", value: (m) => formatCount(m.requests), num: true },
            { label: "Input", value: (m) => formatCount(m.inputTokens), num: true },
            { label: "Output", value: (m) => formatCount(m.outputTokens), num: true },
            { label: "Cost", value: (m) => formatUsd(m.costUsd), num: true },
            { label: "Share", value: (m) => formatPercent(shareTotal ? shareOf(m) / shareTotal : 0), num: true },
          ],
          models,
        ),
      ),
      section(
        h("h2", {}, "Usage trend", h("span.muted", {}, "tokens (bars) and cost (line) per UTC day")),
        trend.length
          ? trendChart(trend)
          : h("div.empty", {}, "No usage in this range"),
        legend([{ label: "tokens" }, { label: "cost (USD)" }]),
      ),
    ),
    section(
      "Spend by actor",
      table(
        [
          { label: "Actor", value: actorOf },
          { label: "Requests", value: (a) => formatCount(a.requests), num: true },
          { label: "Tokens", value: (a) => formatCount(a.totalTokens), num: true },
          { label: "Cost", value: (a) => formatUsd(a.costUsd), num: true },
        ],
        actors,
        { empty: "No usage in this range" },
      ),
    ),
  ];
}

// Days without usage are omitted by the server (GQ-03); the chart shows them as zero so gaps read as gaps.
function fillDays(points, from, to, empty) {
  const byDay = new Map(points.map((p) => [String(p.day), p]));
  const days = [];
  for (let d = new Date(`${from}T00:00:00Z`); d <= new Date(`${to}T00:00:00Z`) && days.length < 400; d.setUTCDate(d.getUTCDate() + 1)) {
    const key = d.toISOString().slice(0, 10);
    days.push(byDay.get(key) || { day: key, ...empty });
  }
  return days;
}

// Axis labels need more precision than table cells: $0.0025 rather than <$0.01.
const usdAxis = (v) => (v === 0 ? "$0" : v < 0.01 ? `$${v.toFixed(4)}` : v < 1 ? `$${v.toFixed(2)}` : formatUsd(v));

function trendChart(trend) {
  const days = fillDays(trend, range.from, range.to, { totalTokens: 0, costUsd: 0 });
  return comboChart({
    labels: days.map((p) => String(p.day).slice(5)),
    bars: { name: "tokens", values: days.map((p) => p.totalTokens) },
    line: { name: "cost", values: days.map((p) => p.costUsd) },
    barFormat: formatCount,
    lineFormat: usdAxis,
  });
}

// ---------------------------------------------------------------- Runs (DASH-11)

const runFilters = { status: "", agent: "", actor: "" };

const compareSelection = new Set();

const runColumns = [
  {
    label: "",
    value: (r) => {
      // pick two runs to compare side by side (a click on the box must not open the run)
      const box = h("input", { type: "checkbox", "aria-label": `Compare run ${r.id}`, dataset: { compare: r.id } });
      box.checked = compareSelection.has(r.id);
      box.addEventListener("click", (e) => e.stopPropagation());
      box.addEventListener("change", () => {
        if (box.checked) compareSelection.add(r.id);
        else compareSelection.delete(r.id);
        document.dispatchEvent(new CustomEvent("compare-changed"));
      });
      return box;
    },
  },
  { label: "Run", value: (r) => h("a.mono", { title: r.id, href: `#runs/${encodeURIComponent(r.id)}` }, shortId(r.id)) },
  { label: "Status", value: (r) => pill(r.status) },
  { label: "Agent", value: (r) => r.agentName || "default" },
  { label: "Actor", value: actorOf },
  { label: "Steps", value: (r) => String(r.stepCount), num: true },
  { label: "Tokens", value: (r) => formatCount(r.inputTokens + r.outputTokens), num: true },
  { label: "Cost", value: (r) => (r.costUsd === null || r.costUsd === undefined ? "—" : formatUsd(r.costUsd)), num: true },
  { label: "Duration", value: (r) => formatDuration(r.durationMs), num: true },
  { label: "Started", value: (r) => formatTimestamp(r.startedAt) },
];

async function runs() {
  const status = h(
    "select",
    { "aria-label": "Status" },
    ["", "running", "queued", "completed", "failed", "cancelled"].map((s) => h("option", { value: s }, s || "All")),
  );
  status.value = runFilters.status;
  const agent = h("input", { placeholder: "agent", value: runFilters.agent, size: 10, "aria-label": "Agent" });
  const actor = h("input", { placeholder: "actor", value: runFilters.actor, size: 10, "aria-label": "Actor" });
  const apply = () => {
    Object.assign(runFilters, { status: status.value, agent: agent.value.trim(), actor: actor.value.trim() });
    render();
  };
  status.addEventListener("change", apply);
  for (const input of [agent, actor]) input.addEventListener("change", apply);

  const params = { ...runFilters, limit: 50 };
  const page = await get("/governance/runs", params);
  const rows = [...page.runs];
  const body = h("div");
  const more = h("button.more", { type: "button" }, "Load more");
  let cursor = page.nextCursor;
  const draw = () => {
    clear(body, table(runColumns, rows, { onRow: (r) => (location.hash = `#runs/${encodeURIComponent(r.id)}`), empty: "No runs match" }));
    more.hidden = !cursor;
  };
  more.addEventListener("click", async () => {
    more.disabled = true;
    try {
      const next = await get("/governance/runs", { ...params, cursor });
      rows.push(...next.runs);
      cursor = next.nextCursor;
      draw();
    } finally {
      more.disabled = false;
    }
  });
  draw();
  const compare = h("button.more", { type: "button", id: "compare-runs" }, "Compare 2 selected");
  const syncCompare = () => (compare.disabled = compareSelection.size !== 2);
  document.addEventListener("compare-changed", syncCompare);
  syncCompare();
  compare.addEventListener("click", () => {
    const [a, b] = [...compareSelection];
    location.hash = `#compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
  });
  return [
    head("Runs", h("div.filters", {}, h("label", {}, "Status", status), h("label", {}, "Agent", agent), h("label", {}, "Actor", actor), compare)),
    section(null, body, more),
  ];
}

async function runDetail(id) {
  const back = h("a.back", { href: "#runs" }, "← All runs");
  const d = await get(`/governance/runs/${encodeURIComponent(id)}`);
  if (!d) return [back, h("div.card.empty", {}, `No run with id ${id}.`)];
  const r = d.run;
  let timeline;
  try {
    timeline = waterfall(await get(`/governance/runs/${encodeURIComponent(id)}/inspect`));
  } catch (err) {
    timeline = errorBox(err);
  }
  return [
    back,
    head(`Run ${shortId(r.id)}`, pill(r.status)),
    h(
      "div.stats",
      {},
      stat("Steps", String(r.stepCount)),
      stat("Tokens", formatCount(r.inputTokens + r.outputTokens), `${formatCount(r.inputTokens)} in · ${formatCount(r.outputTokens)} out`),
      stat("Cost", r.costUsd === null || r.costUsd === undefined ? "—" : formatUsd(r.costUsd)),
      stat("Duration", formatDuration(r.durationMs)),
    ),
    section(
      "Summary",
      h(
        "dl.kv",
        {},
        kv("Run id", h("span.mono", {}, r.id)),
        kv("Thread", h("a", { href: `#threads/${encodeURIComponent(r.threadId)}` }, r.threadId)),
        kv("Agent", r.agentName || "default"),
        kv("Actor", actorOf(r)),
        kv("Tenant", r.tenantRef || "—"),
        kv("Started", formatTimestamp(r.startedAt)),
        kv("Finished", formatTimestamp(r.finishedAt)),
        r.error ? kv("Error", h("span", { style: "color: var(--bad)" }, r.error)) : null,
      ),
    ),
    section("Timeline", timeline),
    d.approvals.length ? section("Pending approvals", approvalsTable(d.approvals.map((a) => ({ ...a, runId: r.id, actorRef: r.actorRef, actorLabel: r.actorLabel })), () => render())) : null,
    section("Messages", messagesList(d.messages)),
    section("Tool calls", toolCallsTable(d.toolCalls)),
    section(
      "Usage ledger",
      table(
        [
          { label: "Model", value: (u) => formatModelLabel(u.modelId) },
          { label: "Purpose", value: (u) => u.purpose },
          { label: "Input", value: (u) => formatCount(u.inputTokens), num: true },
          { label: "Output", value: (u) => formatCount(u.outputTokens), num: true },
          { label: "Cost", value: (u) => (u.costUsd === null || u.costUsd === undefined ? "—" : formatUsd(u.costUsd)), num: true },
          { label: "When", value: (u) => formatTimestamp(u.createdAt) },
        ],
        d.usage,
        { empty: "No model calls recorded" },
      ),
    ),
  ];
}

const kv = (k, v) => [h("dt", {}, k), h("dd", {}, v)];

function messagesList(messages) {
  if (!messages.length) return h("div.empty", {}, "No messages");
  return h(
    "div",
    { style: "display: flex; flex-direction: column; gap: 10px" },
    messages.map((m) =>
      h("div", {}, h("div.message-role", {}, `${m.role} · ${formatTimestamp(m.createdAt)}`), h("div.message-content", {}, m.content || h("span.muted", {}, "(tool calls only)"))),
    ),
  );
}

function toolCallsTable(calls) {
  return table(
    [
      { label: "Tool", value: (t) => h("span.mono", {}, t.toolName) },
      { label: "Type", value: (t) => t.toolType },
      { label: "Status", value: (t) => pill(t.status) },
      { label: "Input", value: (t) => h("pre.io", {}, prettyJson(t.input, 1200)) },
      { label: "Output / error", value: (t) => (t.error ? h("span", { style: "color: var(--bad)" }, t.error) : h("pre.io", {}, prettyJson(t.output, 1200))) },
      { label: "Time", value: (t) => formatDuration(t.executionMs), num: true },
    ],
    calls,
    { empty: "No tool calls" },
  );
}

// ---------------------------------------------------------------- Threads (DASH-12)

async function threads() {
  const rows = await get("/governance/threads/recent", { limit: 100 });
  return [
    head("Threads"),
    section(
      null,
      table(
        [
          { label: "Thread", value: (t) => t.title || h("span.muted", {}, "New chat") },
          { label: "Actor", value: actorOf },
          { label: "Messages", value: (t) => formatCount(t.messageCount), num: true },
          { label: "Tokens", value: (t) => formatCount(t.totalTokens), num: true },
          { label: "Last activity", value: (t) => formatTimestamp(t.lastActivityAt) },
        ],
        rows,
        { onRow: (t) => (location.hash = `#threads/${encodeURIComponent(t.threadId)}`), empty: "No threads yet" },
      ),
    ),
  ];
}

async function threadDetail(id) {
  const back = h("a.back", { href: "#threads" }, "← All threads");
  let d;
  try {
    d = await get(`/governance/threads/${encodeURIComponent(id)}`);
  } catch (err) {
    if (err.status === 501) return [back, h("div.banner.info", {}, "This governance adapter does not support thread detail.")];
    throw err;
  }
  if (!d) return [back, h("div.card.empty", {}, `No thread with id ${id}.`)];
  return [
    back,
    head(d.title || "New chat"),
    d.deleted ? h("div.banner.warn", {}, "This thread was deleted by its owner; it is kept for the audit trail.") : null,
    h(
      "div.stats",
      {},
      stat("Lifetime cost", d.usage.costUsd === null || d.usage.costUsd === undefined ? "—" : formatUsd(d.usage.costUsd)),
      stat("Tokens", formatCount(d.usage.totalTokens)),
      stat("Runs", String(d.usage.runCount)),
      stat("Messages", String(d.usage.messageCount)),
    ),
    section(
      "Summary",
      h("dl.kv", {}, kv("Thread id", h("span.mono", {}, d.threadId)), kv("Actor", actorOf(d)), kv("Persona", d.persona || "—"), kv("Created", formatTimestamp(d.createdAt)), kv("Updated", formatTimestamp(d.updatedAt))),
    ),
    section("Runs", table(runColumns, d.runs, { onRow: (r) => (location.hash = `#runs/${encodeURIComponent(r.id)}`), empty: "No runs" })),
    section("Messages", messagesList([...d.messages].reverse())),
  ];
}

// ---------------------------------------------------------------- Tool calls (DASH-13)

async function tools() {
  const rows = await get("/governance/tool-calls/recent", { limit: 100 });
  // The audit export: every tool call (actor, arguments, decision, decider, reason) and governance change.
  const from = h("input", { type: "date", value: utcDay(-6), "aria-label": "Audit from" });
  const to = h("input", { type: "date", value: utcDay(0), "aria-label": "Audit to" });
  const exportLink = (format, label) => {
    const a = h("a.button", { href: "#", dataset: { export: format } }, label);
    a.addEventListener("click", () => {
      a.href = `${BASE}/governance/audit?${new URLSearchParams({ from: from.value, to: to.value, format })}`;
    });
    return a;
  };
  return [
    head("Tool calls", h("div.filters", {}, h("label", {}, "Audit from", from), h("label", {}, "to", to), exportLink("csv", "Export CSV"), exportLink("json", "Export JSON"))),
    section(
      null,
      table(
        [
          { label: "Tool", value: (t) => h("span.mono", {}, t.toolName) },
          { label: "Type", value: (t) => t.toolType },
          { label: "Status", value: (t) => pill(t.status) },
          { label: "Actor", value: (t) => t.actorRef || "—" },
          { label: "Arguments", value: (t) => h("pre.io", {}, prettyJson(t.input, 300)) },
          { label: "Decision", value: (t) => t.policyDecision || "—" },
          { label: "Decided by", value: (t) => t.decidedBy || "—" },
          { label: "Reason", value: (t) => t.reason || "—" },
          { label: "Run", value: (t) => (t.runId ? h("a", { href: `#runs/${encodeURIComponent(t.runId)}` }, shortId(t.runId)) : "—") },
          { label: "Thread", value: (t) => (t.threadId ? h("a", { href: `#threads/${encodeURIComponent(t.threadId)}` }, shortId(t.threadId)) : "—") },
          { label: "When", value: (t) => formatTimestamp(t.createdAt) },
        ],
        rows,
        { empty: "No tool calls yet" },
      ),
    ),
  ];
}

// ---------------------------------------------------------------- Approvals (DASH-14)

function approvalsTable(rows, reload) {
  let busy = false;
  const decide = async (row, verb, buttons, note) => {
    if (busy) return;
    busy = true;
    buttons.forEach((b) => (b.disabled = true));
    try {
      await post(`/tool-call/${verb}`, { runId: row.runId, toolCallId: row.toolCallId });
      note.textContent = verb === "approve" ? "approved" : "rejected";
      await reload();
    } catch (err) {
      note.textContent = err.message;
      buttons.forEach((b) => (b.disabled = !row.runId));
    } finally {
      busy = false;
    }
  };
  return table(
    [
      { label: "Tool", value: (a) => h("span.mono", {}, a.toolName) },
      { label: "Input", value: (a) => h("pre.io", {}, prettyJson(a.input, 800)) },
      { label: "Actor", value: actorOf },
      { label: "Thread", value: (a) => (a.threadId ? h("a", { href: `#threads/${encodeURIComponent(a.threadId)}` }, shortId(a.threadId)) : "—") },
      { label: "Requested", value: (a) => formatTimestamp(a.requestedAt || a.createdAt) },
      {
        label: "",
        value: (a) => {
          const approve = h("button.approve", { type: "button", disabled: !a.runId, dataset: { action: "approve" } }, "Approve");
          const reject = h("button.reject", { type: "button", disabled: !a.runId, dataset: { action: "reject" } }, "Reject");
          const note = h("span.muted");
          approve.addEventListener("click", () => decide(a, "approve", [approve, reject], note));
          reject.addEventListener("click", () => decide(a, "reject", [approve, reject], note));
          return h("div.actions", {}, reject, approve, note);
        },
      },
    ],
    rows,
    { empty: "Nothing is waiting for approval" },
  );
}

async function approvals() {
  const rows = await get("/governance/approvals/pending", { limit: 200 });
  setApprovalCount(rows.length);
  return [head("Approvals", h("span.muted", {}, "pending actions of every actor, oldest first")), section(null, approvalsTable(rows, render))];
}

function setApprovalCount(n) {
  const badge = document.getElementById("approvals-count");
  badge.textContent = String(n);
  badge.hidden = !n;
}

// ---------------------------------------------------------------- Tools (DASH-15)

const toolSort = { key: "toolName", dir: "asc" };

async function toolstats() {
  const rows = await get("/governance/tools/stats");
  const cols = [
    { key: "toolName", label: "Tool", num: false },
    { key: "toolType", label: "Type", num: false },
    { key: "calls", label: "Calls", num: true },
    { key: "failed", label: "Failed", num: true },
    { key: "rejected", label: "Rejected", num: true },
    { key: "avgDurationMs", label: "Avg duration", num: true },
  ];
  const sorted = [...rows].sort((a, b) => {
    const x = a[toolSort.key];
    const y = b[toolSort.key];
    if (x === null || x === undefined) return y === null || y === undefined ? 0 : 1; // nulls always last
    if (y === null || y === undefined) return -1;
    const c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
    return toolSort.dir === "asc" ? c : -c;
  });
  const th = (c) =>
    h(
      "th.sortable",
      {
        class: c.num ? "num" : null,
        dataset: { sort: c.key },
        onclick: () => {
          if (toolSort.key === c.key) toolSort.dir = toolSort.dir === "asc" ? "desc" : "asc";
          else Object.assign(toolSort, { key: c.key, dir: c.num ? "desc" : "asc" });
          render();
        },
      },
      c.label,
      toolSort.key === c.key ? h("span.arrow", {}, toolSort.dir === "asc" ? "▲" : "▼") : null,
    );
  const cell = (c, r) =>
    h("td", { class: c.num ? "num" : null }, c.key === "avgDurationMs" ? formatDuration(r[c.key]) : c.key === "toolName" ? h("span.mono", {}, r[c.key]) : c.num ? formatCount(r[c.key]) : r[c.key]);
  return [
    head("Tools"),
    section(
      null,
      h(
        "div.table-scroll",
        {},
        h(
          "table",
          {},
          h("thead", {}, h("tr", {}, cols.map(th))),
          h("tbody", {}, sorted.length ? sorted.map((r) => h("tr", {}, cols.map((c) => cell(c, r)))) : h("tr", {}, h("td.empty", { colspan: cols.length }, "No tool calls yet"))),
        ),
      ),
    ),
  ];
}

// ---------------------------------------------------------------- Reliability (DASH-16)

async function reliability() {
  const r = await get("/governance/reliability");
  if (!r.runs) return [head("Reliability"), h("div.card.empty", {}, "No runs yet — reliability appears after the first chat.")];
  const parts = [
    { label: "completed", n: r.completed, cls: "bg-ok" },
    { label: "failed", n: r.failed, cls: "bg-bad" },
    { label: "cancelled", n: r.cancelled, cls: "bg-muted" },
    { label: "running", n: r.running, cls: "bg-warn" },
  ];
  return [
    head("Reliability"),
    h(
      "div.stats",
      {},
      stat("Runs", formatCount(r.runs)),
      stat("Success rate", formatPercent(r.successRate)),
      stat("Failure rate", formatPercent(r.failureRate), `cancelled ${formatPercent(r.cancelRate)}`),
      stat("Avg duration", formatDuration(r.avgDurationMs)),
    ),
    section(
      "Outcomes",
      h("div.breakdown", {}, parts.filter((p) => p.n).map((p) => h(`span.${p.cls}`, { style: `width: ${(p.n / r.runs) * 100}%`, title: `${p.label}: ${p.n}` }))),
      h("div.filters", {}, parts.map((p) => h("span", {}, h(`span.swatch.${p.cls}`), ` ${p.label} ${p.n}`))),
    ),
    h(
      "div.grid-2",
      {},
      Array.isArray(r.byAgent)
        ? section(
            "By agent",
            table(
              [
                { label: "Agent", value: (a) => a.agentName || "default" },
                { label: "Runs", value: (a) => formatCount(a.runs), num: true },
                { label: "Failed", value: (a) => formatCount(a.failed), num: true },
                { label: "Success", value: (a) => formatPercent(a.successRate), num: true },
              ],
              r.byAgent,
            ),
          )
        : null,
      Array.isArray(r.trend) && r.trend.length
        ? section(
            "Runs vs failed per day",
            barChart({ labels: r.trend.map((p) => String(p.day).slice(5)), series: [{ name: "runs", values: r.trend.map((p) => p.runs) }, { name: "failed", values: r.trend.map((p) => p.failed) }], format: formatCount, minStep: 1 }),
            legend([{ label: "runs" }, { label: "failed" }]),
          )
        : null,
    ),
  ];
}

// ---------------------------------------------------------------- Quota (DASH-17)

async function quota() {
  const q = await get("/quota/today");
  const limit = q.limitTokens;
  const share = limit ? Math.min(1, q.usedTokens / limit) : 0;
  return [
    head("Quota", h("span.muted", {}, `your usage on ${q.day || utcDay(0)} (UTC)`)),
    h(
      "div.stats",
      {},
      stat("Tokens used today", formatCount(q.usedTokens), limit ? `of ${formatCount(limit)} (${formatPercent(share)})` : "no token limit"),
      q.usedUsd !== null && q.usedUsd !== undefined ? stat("Spend today", formatUsd(q.usedUsd), q.limitUsd ? `of ${formatUsd(q.limitUsd)}` : "no USD limit") : null,
    ),
    limit ? section("Your token budget", h(`div.meter${share >= 1 ? ".over" : ""}`, {}, h("span", { style: `width: ${share * 100}%` }))) : null,
    ...(await budgetSections({ get, send, h, clear, section, table, errorBox, formatCount, formatUsd, formatTimestamp, render, grant })),
  ];
}

// ---------------------------------------------------------------- Pricing (DASH-18)

async function pricing() {
  let prices;
  try {
    prices = await get("/governance/pricing");
  } catch (err) {
    if (err.status === 501 || err.status === 404) {
      return [head("Pricing"), h("div.banner.info", {}, "No pricing store is configured, so costs cannot be estimated. Configure `pricing` in AgentConfig.")];
    }
    throw err;
  }
  const per1m = (v) => (v === null || v === undefined ? "—" : `$${Number(v).toFixed(2)}`);
  const { scope, tenants } = await grant();
  const editor = scope === "global" ? priceEditor() : h("div.banner.info", { id: "price-readonly" }, `Prices apply to every tenant, so changing one needs a global governance grant; yours covers ${(tenants || []).join(", ") || "no tenant"}.`);
  return [
    head("Pricing", h("span.muted", {}, "USD per million tokens; a new price supersedes the current one")),
    section(
      "Current prices",
      table(
        [
          { label: "Model", value: (p) => h("span", { title: p.modelId }, formatModelLabel(p.modelId)) },
          { label: "Input", value: (p) => per1m(p.inputPricePer1m), num: true },
          { label: "Output", value: (p) => per1m(p.outputPricePer1m), num: true },
          { label: "Cache write", value: (p) => per1m(p.cacheWritePricePer1m), num: true },
          { label: "Cache read", value: (p) => per1m(p.cacheReadPricePer1m), num: true },
          { label: "Effective from", value: (p) => formatTimestamp(p.effectiveFrom) },
        ],
        prices,
        { empty: "No prices yet" },
      ),
    ),
    section("Add or update a price", editor),
  ];
}

// The price form (global admins only: a tenant admin's save would be refused with 403).
function priceEditor() {
  const field = (name, label, required) => h("label", {}, label, h("input", { name, required, type: name === "modelId" ? "text" : "number", step: "any", min: name === "modelId" ? null : "0" }));
  const status = h("div");
  const form = h(
    "form.price-form",
    {},
    field("modelId", "Model id", true),
    field("inputPricePer1m", "Input $ / 1M", true),
    field("outputPricePer1m", "Output $ / 1M", true),
    field("cacheWritePricePer1m", "Cache write $ / 1M", false),
    field("cacheReadPricePer1m", "Cache read $ / 1M", false),
    h("button.primary", { type: "submit" }, "Save price"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const body = { modelId: String(data.get("modelId")).trim(), inputPricePer1m: Number(data.get("inputPricePer1m")), outputPricePer1m: Number(data.get("outputPricePer1m")) };
    for (const key of ["cacheWritePricePer1m", "cacheReadPricePer1m"]) {
      const raw = data.get(key);
      const v = raw === "" || raw === null ? NaN : Number(raw);
      if (Number.isFinite(v)) body[key] = v; // an empty or invalid optional rate is dropped
    }
    try {
      try {
        await post("/governance/pricing", body);
      } catch (err) {
        // A change beyond the sanity bound (10×) is refused with 422 until it is confirmed: ask, then resend.
        if (err.status !== 422 || !/confirm/.test(err.message) || !window.confirm(`${err.message}\n\nSave it anyway?`)) throw err;
        await post("/governance/pricing", { ...body, confirm: true });
      }
      render();
    } catch (err) {
      clear(status, errorBox(err));
    }
  });
  return h("div", {}, form, status);
}

// ---------------------------------------------------------------- routing (DASH-19)

const VIEWS = { overview, runs, threads, tools, approvals, toolstats, reliability, quota, pricing, rag: () => ragPanel({ get, h, head, stat, section, table, barChart, legend, formatCount, formatPercent, range, rangePicker, render }) };
let renderSeq = 0;

async function render() {
  const [rawPanel, ...rest] = location.hash.replace(/^#/, "").split("/");
  const comparing = rawPanel === "compare" && rest.length === 2;
  const panel = comparing ? "runs" : PANELS.includes(rawPanel) ? rawPanel : "overview";
  const id = rest.length ? decodeURIComponent(rest.join("/")) : null;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.panel === panel);
  document.body.dataset.panel = panel;
  const seq = ++renderSeq;
  if (!root.childElementCount) clear(root, h("div.loading", {}, "Loading…"));
  try {
    let view;
    if (comparing) view = await compareView(get, decodeURIComponent(rest[0]), decodeURIComponent(rest[1]));
    else if (panel === "runs" && id) view = await runDetail(id);
    else if (panel === "threads" && id) view = await threadDetail(id);
    else view = await VIEWS[panel]();
    if (seq !== renderSeq) return;
    clear(root, view);
  } catch (err) {
    if (seq !== renderSeq) return;
    clear(root, head(panel[0].toUpperCase() + panel.slice(1)), errorBox(err));
  }
  root.dataset.loaded = `${panel}${id ? `/${id}` : ""}`;
}

function toggleTheme() {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("agora.theme", next);
}

document.getElementById("theme").addEventListener("click", toggleTheme);
document.getElementById("chat-link").href = `${BASE}/ui/`;
window.addEventListener("hashchange", () => {
  root.replaceChildren();
  render();
});
render();
get("/governance/approvals/pending", { limit: 200 }).then((rows) => setApprovalCount(rows.length), () => {});

// Live: the approvals inbox and the runs list re-render as things happen; the badge follows the count.
let liveTimer = null;
startLive(BASE, {
  onCount: setApprovalCount,
  onChange: (change) => {
    const panel = document.body.dataset.panel;
    const relevant =
      (panel === "approvals" && change.kind.startsWith("approval.")) ||
      (panel === "runs" && !location.hash.includes("/") && change.kind.startsWith("run.")) ||
      (panel === "tools" && change.kind === "tool_call.status") ||
      (panel === "quota" && (change.kind === "run.finished" || change.kind.startsWith("budget.") || change.kind.startsWith("quota.")));
    if (!relevant || document.activeElement?.matches?.("input, select, textarea")) return;
    clearTimeout(liveTimer);
    liveTimer = setTimeout(render, 150); // a burst of events re-renders once
  },
});
