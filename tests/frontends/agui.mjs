// Drives the REAL AG-UI client (`@ag-ui/client`'s HttpAgent) against a live agora-agent app.
// Usage: node agui.mjs '<plan json>'  ->  prints one JSON document: a snapshot after every step.
//
// plan = {url, threadId, headers, steps: [...]}; a step is one of
//   {send: "text"}                    addMessage(user) + runAgent
//   {resume: {approved, reason?}}     answer agent.pendingInterrupts with buildResumeArray + runAgent
//   {cancel: true}                    answer them with status "cancelled"
//   {forge: {interruptId, payload}}   runAgent with a resume entry the client never received
//   {edit_args: {...}}                change the pending call's arguments in the client's messages
//   {connect: true}                   connectAgent (re-attach to the thread's run in flight)
import {
  HttpAgent,
  buildResumeArray,
  enforceOutgoingInput,
  runHttpRequest,
  transformHttpEventStream,
} from "@ag-ui/client";

class Agent extends HttpAgent {
  // HttpAgent has no re-attach of its own; connectAgent() calls connect(), which we point at /connect.
  connect(input) {
    return transformHttpEventStream(
      runHttpRequest(() => this.fetch(this.url + "/connect", this.requestInit(enforceOutgoingInput(input)))),
      this.debugLogger,
    );
  }
}

const plan = JSON.parse(process.argv[2]);
const agent = new Agent({ url: plan.url, headers: plan.headers, threadId: plan.threadId });
let n = 0;

async function run(params, connect = false) {
  const events = [];
  const subscriber = { onEvent: ({ event }) => void events.push(event) };
  let error = null;
  try {
    if (connect) await agent.connectAgent({ runId: "connect-" + ++n }, subscriber);
    else await agent.runAgent({ runId: "run-" + ++n, ...params }, subscriber);
  } catch (e) {
    error = String(e && e.message ? e.message : e);
  }
  return { events, error };
}

function pendingCall() {
  const interrupt = agent.pendingInterrupts[0];
  if (!interrupt) throw new Error("no pending interrupt");
  for (const m of agent.messages) for (const c of m.toolCalls || []) if (c.id === interrupt.toolCallId) return [m, c];
  throw new Error("pending call not in messages");
}

const snapshots = [];
const quiet = console.error;
console.error = () => {}; // the client logs a failed run; the snapshot carries the error
for (const step of plan.steps) {
  let result = { events: [], error: null };
  try {
    if (step.send !== undefined) {
      agent.addMessage({ id: "u" + ++n, role: "user", content: step.send });
      result = await run({});
    } else if (step.resume !== undefined || step.cancel !== undefined) {
      const responses = {};
      for (const i of agent.pendingInterrupts) {
        responses[i.id] = step.cancel ? { status: "cancelled" } : { status: "resolved", payload: step.resume };
      }
      result = await run({ resume: buildResumeArray(agent.pendingInterrupts, responses) });
    } else if (step.forge !== undefined) {
      result = await run({ resume: [{ interruptId: step.forge.interruptId, status: "resolved", payload: step.forge.payload }] });
    } else if (step.edit_args !== undefined) {
      const [, call] = pendingCall();
      call.function.arguments = JSON.stringify(step.edit_args);
    } else if (step.connect !== undefined) {
      result = await run({}, true);
    }
  } catch (e) {
    result.error = String(e && e.message ? e.message : e);
  }
  snapshots.push({
    step,
    error: result.error,
    events: result.events,
    messages: structuredClone(agent.messages),
    pendingInterrupts: structuredClone(agent.pendingInterrupts),
  });
}
console.error = quiet;
process.stdout.write(JSON.stringify(snapshots));
