// The chat page: threads, streamed replies rendered as Markdown, tool calls as they change, approvals from
// `tool` frames, generative-UI components (loading states, replaced by id), attachments (pick, drop, paste),
// personas, re-attach after a reload or a dropped connection, and a layout that works on a phone.
import { h, clear, prettyJson } from "./common/dom.js";
import { RunStream, ApiError, apiError } from "./common/sse.js";
import { renderComponent, capabilities, loadComponentModules } from "./common/components.js";
import { renderMarkdown } from "./common/markdown.js";
import { formatCount, formatTimestamp } from "./common/format.js";

const settings = window.__AGENT_UI__ || {};
const BASE = (settings.base || "/agent").replace(/\/+$/, "");
const ACTIVE_RUN_KEY = "agora.ui.activeRun";
const MOBILE = window.matchMedia("(max-width: 760px)");

const $ = (id) => document.getElementById(id);
const els = {
  layout: $("layout"),
  threads: $("threads"),
  messages: $("messages"),
  input: $("input"),
  send: $("send"),
  stop: $("stop"),
  composer: $("composer"),
  persona: $("persona"),
  user: $("user"),
  userField: $("user-field"),
  pickers: $("pickers"),
  topbarPickers: $("topbar-pickers"),
  drawerPickers: $("drawer-pickers"),
  quota: $("quota"),
  notice: $("notice"),
  modelBadge: $("model-badge"),
  dashboardLink: $("dashboard-link"),
  attach: $("attach"),
  file: $("file"),
  pending: $("pending-attachments"),
};

const state = {
  threadId: null,
  threads: [],
  active: null, // {stream, view}
  uploads: [], // {id, file, status: "uploading"|"ready"|"failed", attachment, el}
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

function untilReset(resetsAt) {
  const ms = resetsAt - Date.now();
  if (!(ms > 0)) return "soon";
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.max(1, Math.round((ms % 3_600_000) / 60_000));
  return hours ? `in ${hours} h ${minutes} min` : `in ${minutes} min`;
}

// A budget refusal in words a person can act on: what ran out and when it comes back (not a config hint).
function budgetMessage(err) {
  const detail = (err.body && err.body.detail) || {};
  let resets = detail.resetsAt ? new Date(detail.resetsAt) : null;
  if (!resets || Number.isNaN(resets.getTime())) {
    const now = new Date();
    resets = detail.period === "month"
      ? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))
      : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  }
  const who = detail.scope === "tenant" ? "Your team has" : "You have";
  const period = detail.period === "month" ? "this month's" : "today's";
  const at = `${String(resets.getUTCHours()).padStart(2, "0")}:${String(resets.getUTCMinutes()).padStart(2, "0")} UTC`;
  const day = detail.period === "month" ? ` on ${formatTimestamp(resets).split(",")[0]}` : "";
  return `${who} used ${period} assistant budget. It resets at ${at}${day} (${untilReset(resets.getTime())}).`;
}

function explain(err) {
  if (!(err instanceof ApiError)) return `Something went wrong: ${err.message || err}`;
  if (err.status === 401) return `You are not signed in — ${err.message}.${settings.demo ? " Pick a demo user at the top right." : ""}`;
  if (err.status === 429) return budgetMessage(err);
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

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => (button.textContent = "Copy"), 1500);
}

// ---------------------------------------------------------------- message views

function timeLabel(value) {
  const d = value ? new Date(value) : new Date();
  return h("time", { datetime: d.toISOString(), title: d.toISOString() }, formatTimestamp(d));
}

function attachmentChip(att) {
  const type = (att.contentType || "").toLowerCase();
  const inlineImage = ["image/png", "image/jpeg", "image/gif", "image/webp"].includes(type);
  const url = att.url && (att.url.startsWith("data:") || att.url.startsWith("/") || att.url.startsWith("http")) ? att.url : null;
  return h(
    "a.attachment",
    { href: url || "#", target: "_blank", rel: "noopener", title: `${att.name} (${type})` },
    inlineImage && url ? h("img.thumb", { src: url, alt: att.name }) : h("span.file-icon", { "aria-hidden": "true" }, type === "application/pdf" ? "PDF" : "FILE"),
    h("span.att-name", {}, att.name),
  );
}

function userMessage(text, { attachments = [], createdAt = null } = {}) {
  return h(
    "div.msg.user",
    {},
    h("div.who", {}, "You", timeLabel(createdAt)),
    attachments.length ? h("div.attachments", {}, attachments.map(attachmentChip)) : null,
    h("div.bubble", {}, text),
  );
}

// One run of Markdown text: the raw text grows with each delta; the rendering is redone once per frame.
class TextBlock {
  constructor() {
    this.raw = "";
    this.el = h("div.text.md");
    this.pending = false;
  }

  append(delta) {
    this.raw += delta;
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => this.flush());
  }

  flush() {
    this.pending = false;
    this.el.replaceChildren(renderMarkdown(this.raw));
  }
}

// One assistant reply being built from frames (or from history).
class AssistantView {
  constructor({ label = "Assistant", createdAt = null } = {}) {
    this.body = h("div.body");
    this.actions = h("div.msg-actions");
    this.inspect = h("span.inspect");
    this.el = h("div.msg.assistant", {}, h("div.who", {}, label, timeLabel(createdAt), this.inspect), this.body, this.actions);
    this.tools = new Map();
    this.subagents = new Map();
    this.components = new Map();
    this.blocks = [];
    this.lastText = null;
    this.runId = null;
    this.userText = null;
    this.stopRequested = false;
  }

  // The run this reply belongs to; governance admins get a link to it in the dashboard's run inspector.
  showRun(runId) {
    this.runId = runId;
    if (!runId) return;
    this.el.dataset.runId = runId;
    const href = `${settings.dashboard}#runs/${encodeURIComponent(runId)}`;
    clear(this.inspect, gate.admin ? h("a.inspect-run", { href, target: "_blank", rel: "noopener", title: "Open this run in the run inspector" }, "Inspect run →") : null);
  }

  setStreaming(on) {
    this.el.classList.toggle("streaming", on);
    if (!on) {
      for (const block of this.blocks) block.flush();
      this.renderActions();
    }
  }

  rawText() {
    return this.blocks.map((b) => b.raw).join("\n\n");
  }

  renderActions() {
    const copy = h("button.ghost.copy", { type: "button", title: "Copy the answer" }, "Copy");
    copy.addEventListener("click", () => copyText(this.rawText(), copy));
    const regenerate = this.userText
      ? h("button.ghost.regenerate", { type: "button", title: "Ask the same question again", onclick: () => send(this.userText) }, "Regenerate")
      : null;
    clear(this.actions, this.rawText() ? copy : null, regenerate);
  }

  text(delta) {
    if (!this.lastText) {
      this.lastText = new TextBlock();
      this.blocks.push(this.lastText);
      this.body.append(this.lastText.el);
    }
    this.lastText.append(delta);
  }

  breakText() {
    if (this.lastText) this.lastText.flush();
    this.lastText = null;
  }

  // `id` ties frames of one component together: a loading skeleton is replaced by its data.
  component(name, data, id = null) {
    const node = renderComponent(name, data);
    if (id) node.dataset.componentId = id;
    const existing = id ? this.components.get(id) : null;
    if (existing && existing.isConnected) {
      existing.replaceWith(node);
    } else {
      this.breakText();
      this.body.append(node);
    }
    if (id) this.components.set(id, node);
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

  markStopped() {
    if (this.el.querySelector(".stopped-note")) return;
    this.breakText();
    this.el.classList.add("stopped");
    this.body.append(h("div.stopped-note", {}, "Stopped — this reply was cut short."));
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
  unknown_after_crash: "outcome unknown",
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

// A tool call: name, kind, status pill, input/output, and Approve/Reject (with a reason) while it waits.
class ToolCard {
  constructor(toolCallId, runId) {
    this.toolCallId = toolCallId;
    this.runId = runId;
    this.el = h("div.tool", { dataset: { toolCallId } });
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
    const reason = h("input.reject-reason", { type: "text", maxlength: "4000", placeholder: "Reason, if you reject (optional)", "aria-label": "Reason for rejecting" });
    const approve = h("button.approve", { type: "button" }, "Approve");
    const reject = h("button.reject", { type: "button" }, "Reject");
    const decide = async (verb) => {
      approve.disabled = reject.disabled = reason.disabled = true;
      result.textContent = verb === "approve" ? "Approving…" : "Rejecting…";
      const body = { runId: this.runId, toolCallId: this.toolCallId };
      if (verb === "reject" && reason.value.trim()) body.reason = reason.value.trim();
      try {
        await api(`/tool-call/${verb}`, { method: "POST", body, what: `Could not ${verb}` });
        result.textContent = verb === "approve" ? "Approved — running…" : "Rejected";
      } catch (err) {
        const standing = err.body && err.body.detail && err.body.detail.status;
        result.textContent = err.status === 409 && standing ? `Already decided: ${standing}` : explain(err);
        if (err.status !== 409) approve.disabled = reject.disabled = reason.disabled = false;
      }
    };
    approve.addEventListener("click", () => decide("approve"));
    reject.addEventListener("click", () => decide("reject"));
    reason.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        decide("reject");
      }
    });
    if (!this.runId) approve.disabled = reject.disabled = true;
    return h("div.approval", {}, h("span.ask", {}, "This action needs your approval."), reason, result, reject, approve);
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

function threadRow(t) {
  const title = h("div.t-title", {}, t.title || "New chat");
  const row = h(
    "a.thread",
    {
      href: `#${t.id}`,
      class: t.id === state.threadId ? "active" : null,
      dataset: { threadId: t.id },
      onclick: (e) => {
        e.preventDefault();
        if (row.querySelector("input")) return;
        openThread(t.id);
        closeDrawer();
      },
    },
    h("div.t-main", {}, title, h("div.t-preview", {}, t.lastMessagePreview || formatTimestamp(t.updatedAt))),
    h("button.t-rename", { type: "button", title: "Rename thread", "aria-label": "Rename thread", onclick: (e) => { e.preventDefault(); e.stopPropagation(); renameThread(t, title); } }, "✎"),
    h("button.t-delete", { type: "button", title: "Delete thread", "aria-label": "Delete thread", onclick: (e) => { e.preventDefault(); e.stopPropagation(); deleteThread(t.id); } }, "×"),
  );
  return row;
}

function renderThreads() {
  clear(
    els.threads,
    state.threads.length ? state.threads.map(threadRow) : h("div.muted", { style: "padding: 6px 8px; font-size: 13px" }, "No threads yet"),
  );
}

function renameThread(thread, titleEl) {
  const input = h("input.t-title-input", { type: "text", value: thread.title || "", maxlength: "200", "aria-label": "Thread title" });
  titleEl.replaceWith(input);
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    if (save && title && title !== thread.title) {
      try {
        await api(`/threads/${encodeURIComponent(thread.id)}`, { method: "PATCH", body: { title }, what: "Could not rename the thread" });
      } catch (err) {
        showNotice(explain(err));
      }
    }
    await loadThreads();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      finish(true);
    } else if (e.key === "Escape") {
      finish(false);
    }
  });
  input.addEventListener("blur", () => finish(true));
  input.addEventListener("click", (e) => e.stopPropagation());
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

// A reply that is still streaming keeps running on the server: "New chat" only stops following it here.
function detachActive() {
  const active = state.active;
  if (!active) return;
  state.active = null;
  active.detached = true;
  active.stream.stop();
  active.view.setStreaming(false);
  forgetRun();
  setBusy(false);
}

function newChat() {
  detachActive();
  state.threadId = null;
  history.replaceState(null, "", location.pathname + location.search);
  clear(els.messages, emptyState());
  renderThreads();
  closeDrawer();
  els.input.focus();
}

// Renders a stored thread. Messages of `skipRunId` (a run being re-attached) are left to the replay.
async function openThread(id, { skipRunId = null } = {}) {
  if (!skipRunId) detachActive();
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
  const runStatus = new Map((detail.runs || []).map((r) => [r.runId, r.status]));
  const nodes = [];
  let view = null;
  let lastUser = null;
  const views = [];
  for (const m of detail.messages || []) {
    if (skipRunId && m.runId === skipRunId && m.role !== "user") continue;
    if (m.role === "user") {
      view = null;
      lastUser = m.content;
      nodes.push(userMessage(m.content, { attachments: m.attachments || [], createdAt: m.createdAt }));
    } else if (m.role === "assistant") {
      if (!view) {
        view = new AssistantView({ createdAt: m.createdAt });
        view.userText = lastUser;
        view.showRun(m.runId);
        views.push(view);
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
        for (const c of row?.components || []) view.component(c.name, c.data, c.id);
      }
    }
  }
  for (const v of views) {
    v.setStreaming(false);
    if (runStatus.get(v.runId) === "cancelled") v.markStopped();
  }
  clear(els.messages, nodes.length ? nodes : emptyState());
  renderThreads();
  scrollDown(true);
  return true;
}

// ---------------------------------------------------------------- attachments

const uploadsReady = () => state.uploads.every((u) => u.status !== "uploading");

function humanBytes(n) {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(n >= 10 * 1024 * 1024 ? 0 : 1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} bytes`;
}

// The upload route's refusals, in words (the server's message says which type or size it saw).
function uploadError(file, status, body) {
  const said = body && typeof body.error === "string" ? body.error : "";
  if (status === 413) {
    const limit = settings.attachments && settings.attachments.maxBytes;
    return `“${file.name}” is too large (${humanBytes(file.size)})${limit ? `: the limit is ${humanBytes(limit)}` : ""}.`;
  }
  if (status === 415) return `“${file.name}” is a kind of file this assistant cannot read. ${said}`.trim();
  if (status === 401) return "Sign in before attaching files.";
  if (status === 0) return `“${file.name}” could not be uploaded: the connection failed.`;
  return `“${file.name}” could not be uploaded (HTTP ${status}). ${said}`.trim();
}

function renderUploads() {
  clear(
    els.pending,
    state.uploads.map((u) => {
      const remove = h("button.ghost.remove", { type: "button", "aria-label": `Remove ${u.file.name}`, onclick: () => removeUpload(u) }, "×");
      const preview = u.previewUrl ? h("img.thumb", { src: u.previewUrl, alt: "" }) : h("span.file-icon", { "aria-hidden": "true" }, u.file.type === "application/pdf" ? "PDF" : "FILE");
      return h(
        `div.upload.${u.status}`,
        { dataset: { status: u.status }, title: u.error || u.file.name },
        preview,
        h("span.att-name", {}, u.file.name),
        u.status === "uploading" ? h("progress", { max: "100", value: String(u.progress || 0) }) : null,
        u.status === "failed" ? h("span.upload-error", {}, u.error) : null,
        remove,
      );
    }),
  );
  els.pending.hidden = state.uploads.length === 0;
  els.send.disabled = !!state.active || !uploadsReady();
}

function removeUpload(upload) {
  upload.xhr?.abort();
  if (upload.previewUrl) URL.revokeObjectURL(upload.previewUrl);
  state.uploads = state.uploads.filter((u) => u !== upload);
  renderUploads();
}

function upload(file) {
  const entry = { file, status: "uploading", progress: 0, attachment: null, error: null };
  if (["image/png", "image/jpeg", "image/gif", "image/webp"].includes(file.type)) entry.previewUrl = URL.createObjectURL(file);
  state.uploads.push(entry);
  renderUploads();
  const form = new FormData();
  form.append("file", file, file.name);
  const xhr = new XMLHttpRequest();
  entry.xhr = xhr;
  xhr.open("POST", `${BASE}/attachments`);
  xhr.withCredentials = true;
  xhr.setRequestHeader("Accept", "application/json");
  xhr.upload.addEventListener("progress", (e) => {
    if (e.lengthComputable) {
      entry.progress = Math.round((e.loaded / e.total) * 100);
      const bar = els.pending.querySelectorAll(".upload")[state.uploads.indexOf(entry)]?.querySelector("progress");
      if (bar) bar.value = entry.progress;
    }
  });
  xhr.addEventListener("load", () => {
    let body = null;
    try {
      body = JSON.parse(xhr.responseText);
    } catch {
      body = null;
    }
    if (xhr.status >= 200 && xhr.status < 300 && body) {
      entry.status = "ready";
      entry.attachment = body;
    } else {
      entry.status = "failed";
      entry.error = uploadError(file, xhr.status, body);
    }
    renderUploads();
  });
  xhr.addEventListener("error", () => {
    entry.status = "failed";
    entry.error = uploadError(file, 0, null);
    renderUploads();
  });
  xhr.send(form);
}

function addFiles(files) {
  if (!settings.attachments) {
    showNotice("This assistant does not accept attachments.", "info");
    return;
  }
  for (const file of files) upload(file);
}

function setupAttachments() {
  if (!settings.attachments) {
    els.attach.hidden = true;
    return;
  }
  els.attach.hidden = false;
  els.attach.addEventListener("click", () => els.file.click());
  els.file.addEventListener("change", () => {
    addFiles([...els.file.files]);
    els.file.value = "";
  });
  const zone = document.querySelector(".main");
  zone.addEventListener("dragover", (e) => {
    if ([...(e.dataTransfer?.types || [])].includes("Files")) {
      e.preventDefault();
      zone.classList.add("dragging");
    }
  });
  zone.addEventListener("dragleave", (e) => {
    if (e.target === zone || !zone.contains(e.relatedTarget)) zone.classList.remove("dragging");
  });
  zone.addEventListener("drop", (e) => {
    zone.classList.remove("dragging");
    if (e.dataTransfer?.files?.length) {
      e.preventDefault();
      addFiles([...e.dataTransfer.files]);
    }
  });
  els.input.addEventListener("paste", (e) => {
    const files = [...(e.clipboardData?.files || [])];
    if (files.length) {
      e.preventDefault();
      addFiles(files);
    }
  });
}

// ---------------------------------------------------------------- sending and streaming

function setBusy(busy) {
  els.send.disabled = busy || !uploadsReady();
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
        view.showRun(d.runId);
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
      if (typeof d.name === "string") view.component(d.name, d.data, d.id || null);
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
  const mine = { stream, view, detached: false };
  state.active = mine;
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
    if (mine.detached) return; // "New chat" took over the page; the run goes on without us
    view.setStreaming(false);
    if (view.stopRequested) view.markStopped();
    if (state.active === mine) state.active = null;
    setBusy(false);
    scrollDown();
    await Promise.all([loadThreads(), loadQuota()]);
  }
}

async function send(text) {
  const message = (text ?? els.input.value).trim();
  if (!message || state.active || !uploadsReady()) return;
  const attachments = state.uploads.filter((u) => u.status === "ready").map((u) => u.attachment);
  els.input.value = "";
  autosize();
  showNotice(null);
  for (const u of state.uploads) if (u.previewUrl) URL.revokeObjectURL(u.previewUrl);
  state.uploads = [];
  renderUploads();
  if (!state.threadId) clear(els.messages);
  els.messages.append(userMessage(message, { attachments }));
  const view = new AssistantView();
  view.userText = message;
  els.messages.append(view.el);
  scrollDown(true);
  const body = { message, uiCapabilities: capabilities() };
  if (state.threadId) body.threadId = state.threadId;
  if (els.persona.value) body.persona = els.persona.value;
  if (attachments.length) body.attachments = attachments;
  await follow(view, (stream) => stream.start(body));
}

async function resume(runId, threadId) {
  if (threadId) await openThread(threadId, { skipRunId: runId });
  const view = new AssistantView();
  view.showRun(runId);
  els.messages.querySelector(".empty-state")?.remove();
  els.messages.append(view.el);
  await follow(view, (stream) => stream.attach(runId));
}

async function stop() {
  const active = state.active;
  if (!active || !active.stream.runId) return;
  active.view.stopRequested = true;
  try {
    await api(`/chat/${encodeURIComponent(active.stream.runId)}/cancel`, { method: "POST", what: "Could not cancel" });
  } catch (err) {
    active.view.stopRequested = false;
    showNotice(explain(err));
  }
}

// ---------------------------------------------------------------- header: personas, quota, demo users, theme, drawer

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
    if (q.limitTokens && q.period === "month") {
      els.quota.textContent = `${formatCount(q.periodUsedTokens ?? q.usedTokens)} / ${formatCount(q.limitTokens)} tokens this month`;
    } else {
      els.quota.textContent = q.limitTokens ? `${used} / ${formatCount(q.limitTokens)} tokens today` : `${used} tokens today`;
    }
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

function openDrawer() {
  els.layout.classList.add("drawer-open");
}

function closeDrawer() {
  els.layout.classList.remove("drawer-open");
}

// On a phone the persona and user pickers live in the drawer with the threads; on a desktop in the top bar.
function placePickers() {
  (MOBILE.matches ? els.drawerPickers : els.topbarPickers).append(els.pickers);
  if (!MOBILE.matches) closeDrawer();
}

function autosize() {
  els.input.style.height = "auto";
  els.input.style.height = `${Math.min(els.input.scrollHeight, 200)}px`;
}

// Whether the caller passes the governance gate (asked once per user through an existing gated route): only
// then does a reply link to its run in the inspector. Everyone else sees nothing.
const gate = { admin: false };

async function checkAdmin() {
  gate.admin = false;
  if (!settings.dashboard) return;
  try {
    const r = await fetch(`${BASE}/governance/runs?limit=1`, { credentials: "same-origin", headers: { Accept: "application/json" } });
    gate.admin = r.ok;
  } catch {
    gate.admin = false;
  }
  document.body.dataset.admin = gate.admin ? "yes" : "no";
}

async function refreshAll() {
  await Promise.all([loadPersonas(), loadThreads(), loadQuota(), checkAdmin()]);
}

async function boot() {
  if (settings.modelLabel) {
    els.modelBadge.textContent = settings.modelLabel;
    els.modelBadge.title = settings.modelLabel;
    els.modelBadge.classList.toggle("real", !settings.demoModel);
    els.modelBadge.hidden = false;
  }
  if (settings.dashboard) {
    els.dashboardLink.href = settings.dashboard;
    els.dashboardLink.hidden = false;
  }
  const failures = await loadComponentModules(settings.componentModules || []);
  if (failures.length) showNotice(`Some components could not be loaded: ${failures.join("; ")}`, "info");
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
  $("menu").addEventListener("click", openDrawer);
  $("scrim").addEventListener("click", closeDrawer);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") closeDrawer();
  });
  MOBILE.addEventListener("change", placePickers);
  placePickers();
  els.user.addEventListener("change", () => switchUser(els.user.value));
  setupAttachments();
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
