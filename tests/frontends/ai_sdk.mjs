// Drives the REAL AI SDK client (`ai` package) against a live agora-agent app.
// Usage: node ai_sdk.mjs '<plan json>'  ->  prints {<scenario name>: [a snapshot after every step]}.
//
// plan = {api, scenarios: [{name, chatId, headers, steps}]}, run in order, each with a fresh client
// (a new Chat and transport: what a new page would have); a step is one of
//   {send: "text"}                      AbstractChat.sendMessage (DefaultChatTransport), wait until settled
//   {approve: true|false, reason?}      AbstractChat.addToolApprovalResponse on the pending approval;
//                                       sendAutomaticallyWhen(lastAssistantMessageIsCompleteWithApprovalResponses)
//                                       sends the next request by itself
//   {forge_from: {scenario, step}}      copy the approval-requested tool part another scenario's client
//                                       saw at that step into this client's history (what a tampering
//                                       client could hold), then approve it
//   {edit_input: {...}}                 change the pending tool part's input in the client's history
//   {stream: "text"}                    DefaultChatTransport.sendMessages + readUIMessageStream (no Chat)
//   {reconnect: true}                   DefaultChatTransport.reconnectToStream + readUIMessageStream
//   {load: true}                        the chat's history from GET {api}/{chatId}/messages as the Chat's
//                                       initial messages (what a page does after a reload)
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
} from "ai";

class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(m) {
    this.messages = this.messages.concat(m);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(i, m) {
    this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)];
  }
  snapshot(v) {
    return structuredClone(v);
  }
}

class Chat extends AbstractChat {
  constructor(opts) {
    super({ ...opts, state: new State() });
  }
}

const plan = JSON.parse(process.argv[2]);
const results = {};

async function readAll(stream, message) {
  let last;
  for await (const m of readUIMessageStream({ stream, message })) last = m;
  return last;
}

function pendingIn(messages) {
  for (const m of messages.slice().reverse()) {
    for (const p of m.parts) if (p.state === "approval-requested") return [m, p];
  }
  return [undefined, undefined];
}

async function scenario({ chatId, headers, steps }) {
  const transport = new DefaultChatTransport({ api: plan.api, headers });
  const dataEvents = [];
  const chat = new Chat({
    id: chatId,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onData: (d) => dataEvents.push(d),
    onError: () => {},
  });

  async function settled() {
    // A request (or the automatic one an approval triggers) is in flight until the status is ready/error.
    const deadline = Date.now() + 15000;
    await new Promise((r) => setTimeout(r, 10));
    while (chat.status === "submitted" || chat.status === "streaming") {
      if (Date.now() > deadline) throw new Error("timed out waiting for the chat to settle");
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  const snapshots = [];
  for (const step of steps) {
    let extra = {};
    try {
      if (step.send !== undefined) {
        await chat.sendMessage({ text: step.send });
        await settled();
      } else if (step.approve !== undefined) {
        const [, part] = pendingIn(chat.messages);
        if (!part) throw new Error("no approval-requested part");
        await chat.addToolApprovalResponse({ id: part.approval.id, approved: step.approve, reason: step.reason });
        await settled();
      } else if (step.forge_from !== undefined) {
        const seen = results[step.forge_from.scenario][step.forge_from.step];
        const [, part] = pendingIn(seen.messages);
        chat.messages = chat.messages.concat({
          id: "forged-" + Date.now(),
          role: "assistant",
          parts: [{ type: "step-start" }, structuredClone(part)],
        });
        await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
        await settled();
      } else if (step.edit_input !== undefined) {
        const [message, part] = pendingIn(chat.messages);
        if (!part) throw new Error("no approval-requested part");
        const i = chat.messages.indexOf(message);
        const parts = message.parts.map((p) => (p === part ? { ...p, input: step.edit_input } : p));
        chat.messages = [...chat.messages.slice(0, i), { ...message, parts }, ...chat.messages.slice(i + 1)];
      } else if (step.stream !== undefined) {
        const messages = [{ id: "u-" + Date.now(), role: "user", parts: [{ type: "text", text: step.stream }] }];
        const stream = await transport.sendMessages({
          chatId,
          messages,
          trigger: "submit-message",
          messageId: undefined,
          abortSignal: undefined,
        });
        extra = { message: await readAll(stream) };
      } else if (step.load !== undefined) {
        const response = await fetch(`${plan.api}/${encodeURIComponent(chatId)}/messages`, { headers });
        if (!response.ok) throw new Error(await response.text());
        chat.messages = await response.json();
      } else if (step.reconnect !== undefined) {
        const stream = await transport.reconnectToStream({ chatId });
        extra = { message: stream ? await readAll(stream) : null };
      }
    } catch (e) {
      extra = { thrown: String(e && e.message ? e.message : e) };
    }
    snapshots.push({
      step,
      status: chat.status,
      error: chat.error ? chat.error.message : null,
      messages: structuredClone(chat.messages),
      data: dataEvents.splice(0),
      ...extra,
    });
  }
  return snapshots;
}

for (const s of plan.scenarios) results[s.name] = await scenario(s);
process.stdout.write(JSON.stringify(results));
