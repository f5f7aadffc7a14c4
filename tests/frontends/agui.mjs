// Drives the REAL AG-UI client (`@ag-ui/client`'s HttpAgent) against a live agora-agent app.
// Usage: node agui.mjs '<plan json>'  ->  prints {<scenario name>: [a snapshot after every step]}.
//
// plan = {url, scenarios: [{name, threadId, headers, steps}]}, run in order, each with a fresh
// HttpAgent (what a new page would have); a step is one of
//   {send: "text"}                    addMessage(user) + runAgent
//   {resume: {approved, reason?}}     answer agent.pendingInterrupts with buildResumeArray + runAgent
//   {cancel: true}                    answer them with status "cancelled"
//   {forge_from: {scenario, step, payload}}  runAgent resuming the interrupt another scenario's client
//                                     received at that step (this client never did)
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
const results = {};
let n = 0;

async function scenario({ threadId, headers, steps }) {
  const agent = new Agent({ url: plan.url, headers, threadId });

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
    for (const m of agent.messages) for (const c of m.toolCalls || []) if (c.id === interrupt.toolCallId) return c;
    throw new Error("pending call not in messages");
  }

  const snapshots = [];
  for (const step of steps) {
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
      } else if (step.forge_from !== undefined) {
        const seen = results[step.forge_from.scenario][step.forge_from.step];
        const interruptId = seen.pendingInterrupts[0].id;
        result = await run({ resume: [{ interruptId, status: "resolved", payload: step.forge_from.payload }] });
      } else if (step.edit_args !== undefined) {
        pendingCall().function.arguments = JSON.stringify(step.edit_args);
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
  return snapshots;
}

const quiet = console.error;
console.error = () => {}; // the client logs a failed run; the snapshot carries the error
for (const s of plan.scenarios) results[s.name] = await scenario(s);
console.error = quiet;
process.stdout.write(JSON.stringify(results));
