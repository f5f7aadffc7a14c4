// SSE over fetch (EventSource cannot POST): parse frames, follow a run, re-attach after a drop.
//
// Wire format (REFERENCE SSE-*, DESIGN §3): `event: meta` {runId, threadId}; unnamed `data: {"delta": …}`;
// `event: component` {name, data}; `event: tool` {toolCallId, name, kind, status, input, output, error, agent};
// `event: agent` {agent, delta}; `event: error` {message}; `event: done` {}. Every frame carries `id:`, and a
// re-attach sends `Last-Event-ID` so the server resumes after it: nothing is received twice.

export class ApiError extends Error {
  constructor(message, status, body) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

// Reads a JSON error body ({"error": …}) into an ApiError with a message a person can act on.
export async function apiError(response, what) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const detail = body && typeof body.error === "string" ? body.error : response.statusText || "request failed";
  return new ApiError(`${what} (HTTP ${response.status}): ${detail}`, response.status, body);
}

// Yields {id, event, data} for every data-bearing SSE event of a fetch body (comments/keep-alives skipped).
export async function* readSse(body, onReader = null) {
  const reader = body.getReader();
  if (onReader) onReader(reader);
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const parsed = parseBlock(block);
        if (parsed) yield parsed;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

export function parseBlock(block) {
  let event = "message";
  let id = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  if (!data.length) return null;
  let payload;
  try {
    payload = JSON.parse(data.join("\n"));
  } catch {
    return null;
  }
  return { id, event, data: payload };
}

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new DOMException("aborted", "AbortError"));
    });
  });

// Follows one run from `POST <base>/chat` (start) or `GET <base>/chat/<runId>/stream` (attach) to `done`.
// `onEvent({event, data, id})` receives every frame once; a dropped connection re-attaches with backoff
// (CLIENT-04: min(400 n, 3000) ms before each try, up to `maxAttempts` consecutive failures).
export class RunStream {
  constructor({ base, onEvent, onReconnect, maxAttempts = 6, headers = {} }) {
    this.base = base.replace(/\/+$/, "");
    this.onEvent = onEvent;
    this.onReconnect = onReconnect || (() => {});
    this.maxAttempts = maxAttempts;
    this.headers = headers;
    this.runId = null;
    this.threadId = null;
    this.lastEventId = null;
    this.finished = false;
    this.controller = new AbortController();
  }

  stop() {
    this.controller.abort();
  }

  // Cut the current connection as a network failure would (the run goes on; this client re-attaches).
  drop() {
    this.reader?.cancel().catch(() => {});
  }

  async start(body) {
    const response = await fetch(`${this.base}/chat`, {
      method: "POST",
      credentials: "include",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...this.headers },
      body: JSON.stringify(body),
      signal: this.controller.signal,
    });
    if (!response.ok || !response.body) throw await apiError(response, "Could not start the chat");
    this.runId = response.headers.get("X-Agent-Run-Id") || this.runId;
    this.threadId = response.headers.get("X-Agent-Thread-Id") || this.threadId;
    if (this.runId) this.onEvent({ event: "meta", data: { runId: this.runId, threadId: this.threadId }, id: null });
    await this.follow(response);
  }

  // Attach to a run already going (after a reload): replays from the start unless `lastEventId` is given.
  async attach(runId, lastEventId = null) {
    this.runId = runId;
    this.lastEventId = lastEventId;
    await this.follow(null);
  }

  async follow(firstResponse) {
    let response = firstResponse;
    let failures = 0;
    for (;;) {
      if (response) {
        try {
          await this.consume(response);
          if (this.finished) return;
          failures = 0; // a stream that delivered and then dropped starts the budget again
        } catch (err) {
          if (err.name === "AbortError") throw err;
        }
      }
      if (!this.runId) throw new ApiError("The stream ended before the run started", 0, null);
      if (failures >= this.maxAttempts) {
        throw new ApiError(`Lost the connection to run ${this.runId} after ${failures} attempts`, 0, null);
      }
      if (response) this.onReconnect(failures + 1);
      if (response || failures > 0) await sleep(Math.min(400 * (failures + 1), 3000), this.controller.signal);
      failures += 1;
      response = null;
      try {
        const headers = { Accept: "text/event-stream", ...this.headers };
        if (this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
        const r = await fetch(`${this.base}/chat/${encodeURIComponent(this.runId)}/stream`, {
          credentials: "include",
          headers,
          signal: this.controller.signal,
        });
        if (r.status === 404 || r.status === 403 || r.status === 401) {
          throw await apiError(r, "Could not re-attach to the run");
        }
        if (r.ok && r.body) response = r;
      } catch (err) {
        if (err.name === "AbortError" || err instanceof ApiError) throw err;
      }
    }
  }

  async consume(response) {
    for await (const frame of readSse(response.body, (reader) => (this.reader = reader))) {
      if (frame.id) this.lastEventId = frame.id;
      if (frame.event === "meta") {
        this.runId = frame.data.runId || this.runId;
        this.threadId = frame.data.threadId || this.threadId;
      }
      if (frame.event === "done") {
        this.finished = true;
        this.onEvent(frame);
        return;
      }
      this.onEvent(frame);
    }
  }
}
