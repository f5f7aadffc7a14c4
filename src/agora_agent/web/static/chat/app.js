// The chat page: threads, streamed replies, tool calls as they change, approvals from `tool` frames,
// generative-UI components, personas, re-attach after a reload or a dropped connection.
import { h, clear, prettyJson } from "./common/dom.js";
import { RunStream, ApiError, apiError } from "./common/sse.js";
import { renderComponent } from "./common/components.js";
import { formatCount, formatTimestamp } from "./common/format.js";

const settings = window.__AGENT_UI__ || {};
const BASE = (settings.base || "/agent").replace(/\/+$/, "");
const ACTIVE_RUN_KEY = "agora.ui.activeRun";

const $ = (id) => document.getElementById(id);
const els = {
  threads: $("threads"),
  messages: $("messages"),
  input: $("input"),
  send: $("send"),
  stop: $("stop"),
  composer: $("composer"),
  persona: $("persona"),
  user: $("user"),
  userField: $("user-field"),
  quota: $("quota"),
  notice: $("notice"),
  modelBadge: $("model-badge"),
  dashboardLink: $("dashboard-link"),
};

const state = {
  threadId: null,
  threads: [],
  active: null, // {stream, view}
};
// For diagnostics and browser tests: `__AGENT_CHAT__.active.stream.drop()` simulates a dropped connection.
window.__AGENT_CHAT__ = state;

// ---------------------------------------------------------------- HTTP

async function api(path, { method = "GET", body, what = "Request failed" } = {}) {
  const response = await fetch(`${BASE}${path}`, {
    method,
    credentials: "include",
    headers: body === undefined ? { Accept: "application/json" } : { "Content-Type": "application/json", Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await apiError(response, what);
  return response.status === 204 ? null : response.json();
}

function explain(err) {
  if (!(err instanceof ApiError)) return `Something went wrong: ${err.message || err}`;
  if (err.status === 401) return `You are not signed in — ${err.message}.${settings.demo ? " Pick a demo user at the top right." : ""}`;
  if (err.status === 429) return `Budget reached — ${err.message}`;
  if (err.status === 403) return `Not allowed — ${err.message}`;
  return err.message;
}

function showNotice(text, kind = "error") {
  if (!text) {
    els.notice.hidden = true;
    return;
  }
  clear(els.notice, h(`div.banner.${kind}`, {}, text));
  els.notice.hidden = false;
}

// ---------------------------------------------------------------- message views

function userMessage(text) {
  return h("div.msg.user", {}, h("div.bubble", {}, text));
}

// One assistant reply being built from frames (or from history).
class AssistantView {
  constructor(label = "Assistant") {
    this.body = h("div.body");
    this.el = h("div.msg.assistant", {}, h("div.who", {}, label), this.body);
    this.tools = new Map();
    this.subagents = new Map();
    this.lastText = null;
    this.runId = null;
  }

  setStreaming(on) {
    this.el.classList.toggle("streaming", on);
  }

  text(delta) {
    if (!this.lastText) {
      this.lastText = h("div.text");
      this.body.append(this.lastText);
    }
    this.lastText.textContent += delta;
  }

  breakText() {
    this.lastText = null;
  }

  component(name, data) {
    this.breakText();
    this.body.append(renderComponent(name, data));
  }

  subagent(agent, delta) {
    let block = this.subagents.get(agent);
    if (!block) {
      const text = h("div.text");
      block = { el: h("div.subagent", {}, h("div.who", {}, `${agent} (delegated agent)`), text), text };
      this.subagents.set(agent, block);
      this.breakText();
      this.body.append(block.el);
    }
    block.text.textContent += delta;
  }

  tool(frame, runId) {
    let card = this.tools.get(frame.toolCallId);
    if (!card) {
      card = new ToolCard(frame.toolCallId, runId || this.runId);
      this.tools.set(frame.toolCallId, card);
      this.breakText();
      this.body.append(card.el);
    }
    card.update(frame);
  }

  error(message) {
    this.breakText();
    this.body.append(h("div.run-error", { role: "alert" }, message));
  }

  note(message) {
    const el = h("div.reconnect", {}, message);
    this.body.append(el);
    return el;
  }
}

const STATUS_LABEL = {
  started: "running",
  pending_approval: "needs approval",
  approved: "approved",
  executed: "done",
  auto_executed: "done",
  rejected: "rejected",
  failed: "failed",
  expired: "expired",
};

// `order_id=1003 · reason="customer request"`: what a person approves must be visible without a click.
function compactArgs(input) {
  if (!input || typeof input !== "object") return "";
  const text = Object.entries(input)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" ? JSON.stringify(v) : typeof v === "object" ? JSON.stringify(v) : v}`)
    .join(" · ");
  return text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

// A tool call: name, kind, status pill, input/output, and Approve/Reject while it waits for a decision.
class ToolCard {
  constructor(toolCallId, runId) {
    this.toolCallId = toolCallId;
    this.runId = runId;
    this.el = h("div.tool", { dataset: { toolCallId } });
    this.decision = null; // what this page asked for, until the frame confirms it
  }

  update(frame) {
    this.frame = { ...(this.frame || {}), ...Object.fromEntries(Object.entries(frame).filter(([, v]) => v !== null && v !== undefined)) };
    const f = this.frame;
    const status = f.status || "started";
    this.el.className = `tool ${status}`;
    this.el.dataset.status = status;
    const parts = [
      h(
        "div.tool-head",
        {},
        h("span.tool-kind", {}, f.kind || "tool"),
        h("span.tool-name", {}, f.name || "tool"),
        f.agent ? h("span.muted", {}, `via ${f.agent}`) : null,
        h(`span.pill.${status}`, {}, STATUS_LABEL[status] || status),
      ),
    ];
    const args = compactArgs(f.input);
    if (args) parts.push(h("div.tool-args", {}, args));
    if (f.error) parts.push(h("div.tool-error", {}, f.error));
    const details = [];
    if (f.input !== undefined) details.push(h("div", {}, h("div.muted", {}, "input"), h("pre", {}, prettyJson(f.input))));
    if (f.output !== undefined) details.push(h("div", {}, h("div.muted", {}, "output"), h("pre", {}, prettyJson(f.output))));
    if (details.length) parts.push(h("details", {}, h("summary", {}, "details"), details));
    if (status === "pending_approval") parts.push(this.approvalBar());
    clear(this.el, parts);
  }

  approvalBar() {
    const result = h("span.result");
    const approve = h("button.approve", { type: "button" }, "Approve");
    const reject = h("button.reject", { type: "button" }, "Reject");
    const decide = async (verb) => {
      approve.disabled = reject.disabled = true;
      result.textContent = verb === "approve" ? "Approving…" : "Rejecting…";
      try {
        await api(`/tool-call/${verb}`, { method: "POST", body: { runId: this.runId, toolCallId: this.toolCallId }, what: `Could not ${verb}` });
        result.textContent = verb === "approve" ? "Approved — running…" : "Rejected";
      } catch (err) {
        const standing = err.body && err.body.detail && err.body.detail.status;
        result.textContent = err.status === 409 && standing ? `Already decided: ${standing}` : explain(err);
        if (err.status !== 409) approve.disabled = reject.disabled = false;
      }
    };
    approve.addEventListener("click", () => decide("approve"));
    reject.addEventListener("click", () => decide("reject"));
    if (!this.runId) approve.disabled = reject.disabled = true;
    return h("div.approval", {}, h("span.ask", {}, "This action needs your approval."), result, reject, approve);
  }
}

// ---------------------------------------------------------------- threads

async function loadThreads() {
  try {
    state.threads = await api("/threads", { what: "Could not list threads" });
  } catch (err) {
    state.threads = [];
    if (err.status === 401) showNotice(explain(err));
  }
  renderThreads();
}

function renderThreads() {
  clear(
    els.threads,
    state.threads.length
      ? state.threads.map((t) =>
          h(
            "a.thread",
            { href: `#${t.id}`, class: t.id === state.threadId ? "active" : null, dataset: { threadId: t.id }, onclick: (e) => { e.preventDefault(); openThread(t.id); } },
            h("div.t-main", {}, h("div.t-title", {}, t.title || "New chat"), h("div.t-preview", {}, t.lastMessagePreview || formatTimestamp(t.updatedAt))),
            h("button.t-delete", { type: "button", title: "Delete thread", "aria-label": "Delete thread", onclick: (e) => { e.preventDefault(); e.stopPropagation(); deleteThread(t.id); } }, "×"),
          ),
        )
      : h("div.muted", { style: "padding: 6px 8px; font-size: 13px" }, "No threads yet"),
  );
}

async function deleteThread(id) {
  try {
    await api(`/threads/${encodeURIComponent(id)}`, { method: "DELETE", what: "Could not delete the thread" });
    if (state.threadId === id) newChat();
    await loadThreads();
  } catch (err) {
    showNotice(explain(err));
  }
}

function emptyState() {
  const suggestions = settings.suggestions || [];
  return h(
    "div.empty-state",
    {},
    h("h2", {}, settings.title || "How can I help?"),
    settings.subtitle ? h("div", {}, settings.subtitle) : null,
    suggestions.length
      ? h("div.suggestions", {}, suggestions.map((text) => h("button", { type: "button", onclick: () => send(text) }, text)))
      : null,
  );
}

function newChat() {
  if (state.active) return;
  state.threadId = null;
  history.replaceState(null, "", location.pathname + location.search);
  clear(els.messages, emptyState());
  renderThreads();
  els.input.focus();
}

// Renders a stored thread. Messages of `skipRunId` (a run being re-attached) are left to the replay.
async function openThread(id, { skipRunId = null } = {}) {
  if (state.active && !skipRunId) return;
  let detail;
  try {
    detail = await api(`/threads/${encodeURIComponent(id)}`, { what: "Could not open the thread" });
  } catch (err) {
    showNotice(explain(err));
    return false;
  }
  if (!detail) return false;
  state.threadId = id;
  history.replaceState(null, "", `#${id}`);
  if (detail.persona && [...els.persona.options].some((o) => o.value === detail.persona)) els.persona.value = detail.persona;
  const audit = new Map((detail.toolCalls || []).map((t) => [t.toolCallId, t]));
  const nodes = [];
  let view = null;
  for (const m of detail.messages || []) {
    if (skipRunId && m.runId === skipRunId && m.role !== "user") continue;
    if (m.role === "user") {
      view = null;
      nodes.push(userMessage(m.content));
    } else if (m.role === "assistant") {
      if (!view) {
        view = new AssistantView();
        nodes.push(view.el);
      }
      if (m.content) {
        view.text(m.content);
        view.breakText();
      }
      for (const call of m.toolCalls || []) {
        const row = audit.get(call.id);
        view.tool(
          { toolCallId: call.id, name: call.name, input: call.input, kind: row?.toolType, status: row?.status || "started", output: row?.output, error: row?.error },
          row?.runId || m.runId,
        );
      }
    }
  }
  clear(els.messages, nodes.length ? nodes : emptyState());
  renderThreads();
  scrollDown(true);
  return true;
}

// ---------------------------------------------------------------- sending and streaming

function setBusy(busy) {
  els.send.disabled = busy;
  els.stop.hidden = !busy;
  els.input.disabled = false;
}

function scrollDown(force = false) {
  const m = els.messages;
  if (force || m.scrollHeight - m.scrollTop - m.clientHeight < 160) m.scrollTop = m.scrollHeight;
}

function handleFrame(view, frame, stream) {
  const d = frame.data || {};
  switch (frame.event) {
    case "meta":
      if (d.runId) {
        view.runId = d.runId;
        view.el.dataset.runId = d.runId;
        rememberRun(d.runId, d.threadId || state.threadId);
      }
      if (d.threadId && d.threadId !== state.threadId) {
        state.threadId = d.threadId;
        history.replaceState(null, "", `#${d.threadId}`);
      }
      break;
    case "message":
      if (typeof d.delta === "string") view.text(d.delta);
      break;
    case "component":
      if (typeof d.name === "string") view.component(d.name, d.data);
      break;
    case "tool":
      if (d.toolCallId) view.tool(d, stream.runId);
      break;
    case "agent":
      view.subagent(d.agent || "agent", d.text ?? d.delta ?? "");
      break;
    case "error":
      view.error(`The run failed: ${d.message || "unknown error"}`);
      break;
    default:
      break;
  }
  scrollDown();
}

function rememberRun(runId, threadId) {
  sessionStorage.setItem(ACTIVE_RUN_KEY, JSON.stringify({ runId, threadId }));
}

function forgetRun() {
  sessionStorage.removeItem(ACTIVE_RUN_KEY);
}

async function follow(view, run) {
  const stream = new RunStream({
    base: BASE,
    onEvent: (frame) => handleFrame(view, frame, stream),
    onReconnect: (attempt) => {
      const note = view.note(`Connection lost — re-attaching (attempt ${attempt})…`);
      setTimeout(() => note.remove(), 2500);
    },
  });
  state.active = { stream, view };
  view.setStreaming(true);
  setBusy(true);
  try {
    await run(stream);
    forgetRun();
  } catch (err) {
    if (err.name !== "AbortError") {
      view.error(explain(err));
      if (!(err instanceof ApiError) || err.status !== 0) forgetRun();
    }
  } finally {
    view.setStreaming(false);
    state.active = null;
    setBusy(false);
    scrollDown();
    await Promise.all([loadThreads(), loadQuota()]);
  }
}

async function send(text) {
  const message = (text ?? els.input.value).trim();
  if (!message || state.active) return;
  els.input.value = "";
  autosize();
  showNotice(null);
  if (!state.threadId) clear(els.messages);
  els.messages.append(userMessage(message));
  const view = new AssistantView();
  els.messages.append(view.el);
  scrollDown(true);
  const body = { message };
  if (state.threadId) body.threadId = state.threadId;
  if (els.persona.value) body.persona = els.persona.value;
  await follow(view, (stream) => stream.start(body));
}

async function resume(runId, threadId) {
  if (threadId) await openThread(threadId, { skipRunId: runId });
  const view = new AssistantView();
  view.runId = runId;
  els.messages.querySelector(".empty-state")?.remove();
  els.messages.append(view.el);
  await follow(view, (stream) => stream.attach(runId));
}

async function stop() {
  const active = state.active;
  if (!active || !active.stream.runId) return;
  try {
    await api(`/chat/${encodeURIComponent(active.stream.runId)}/cancel`, { method: "POST", what: "Could not cancel" });
  } catch (err) {
    showNotice(explain(err));
  }
}

// ---------------------------------------------------------------- header: personas, quota, demo users, theme

async function loadPersonas() {
  let personas = [];
  try {
    personas = await api("/threads/personas/catalog", { what: "Could not load personas" });
  } catch {
    personas = [];
  }
  const keep = els.persona.value;
  clear(els.persona, personas.length ? personas.map((p) => h("option", { value: p.id }, p.label || p.id)) : h("option", { value: "" }, "Default"));
  if (keep && personas.some((p) => p.id === keep)) els.persona.value = keep;
}

async function loadQuota() {
  try {
    const q = await api("/quota/today", { what: "Could not read the quota" });
    const used = formatCount(q.usedTokens);
    els.quota.textContent = q.limitTokens ? `${used} / ${formatCount(q.limitTokens)} tokens today` : `${used} tokens today`;
  } catch {
    els.quota.textContent = "";
  }
}

async function loadDemoUsers() {
  const demo = settings.demo;
  if (!demo || !demo.usersPath) return;
  try {
    const r = await fetch(demo.usersPath, { credentials: "include" });
    const info = await r.json();
    clear(
      els.user,
      h("option", { value: "" }, "— sign in —"),
      info.users.map((u) => h("option", { value: u.id }, `${u.label}`)),
    );
    els.user.value = info.current || "";
    els.userField.hidden = false;
  } catch {
    els.userField.hidden = true;
  }
}

async function switchUser(userId) {
  const demo = settings.demo;
  await fetch(demo.loginPath, {
    method: "POST",
    credentials: "include",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ user: userId || null }),
  });
  state.threadId = null;
  forgetRun();
  showNotice(null);
  await refreshAll();
  newChat();
}

function toggleTheme() {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("agora.theme", next);
}

function autosize() {
  els.input.style.height = "auto";
  els.input.style.height = `${Math.min(els.input.scrollHeight, 200)}px`;
}

async function refreshAll() {
  await Promise.all([loadPersonas(), loadThreads(), loadQuota()]);
}

async function boot() {
  if (settings.modelLabel) {
    els.modelBadge.textContent = settings.modelLabel;
    els.modelBadge.classList.toggle("real", !settings.demoModel);
    els.modelBadge.hidden = false;
  }
  if (settings.dashboard) {
    els.dashboardLink.href = settings.dashboard;
    els.dashboardLink.hidden = false;
  }
  els.composer.addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  els.input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  els.input.addEventListener("input", autosize);
  els.stop.addEventListener("click", stop);
  $("new-chat").addEventListener("click", newChat);
  $("theme").addEventListener("click", toggleTheme);
  els.user.addEventListener("change", () => switchUser(els.user.value));
  await loadDemoUsers();
  await refreshAll();
  const saved = JSON.parse(sessionStorage.getItem(ACTIVE_RUN_KEY) || "null");
  if (saved && saved.runId) {
    resume(saved.runId, saved.threadId); // runs until the reply ends; the page is usable meanwhile
  } else if (location.hash.length > 1) {
    if (!(await openThread(decodeURIComponent(location.hash.slice(1))))) newChat();
  } else {
    newChat();
  }
  document.body.dataset.ready = "true";
}

boot();
