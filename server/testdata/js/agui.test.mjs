// The AG-UI wire's acceptance suite: @ag-ui/client 1.0.0's HttpAgent,
// which nobody here wrote, against a real `trellis serve` (scripted
// models) at TRELLIS_URL and examples/servegraphs at TRELLIS_EXAMPLE_URL
// (its "helper" graph calls a frontend tool). Run by .ci/serve-sdk:
//
//   TRELLIS_URL=... TRELLIS_EXAMPLE_URL=... node --test server/testdata/js/agui.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const apiUrl = process.env.TRELLIS_URL;
const exampleUrl = process.env.TRELLIS_EXAMPLE_URL;
if (!apiUrl || !exampleUrl) throw new Error("set TRELLIS_URL and TRELLIS_EXAMPLE_URL (see .ci/serve-sdk)");

// agent returns an HttpAgent on a new thread and the events it receives,
// each checked against the protocol's own schema as it arrives.
function agent(base, assistant, init = {}) {
  const a = new HttpAgent({ url: `${base}/ag-ui/${assistant}`, threadId: `t-${randomUUID()}`, ...init });
  const events = [];
  const problems = [];
  a.subscribe({
    onEvent({ event }) {
      events.push(event);
      const r = EventSchema.safeParse(event);
      if (!r.success) problems.push(`${event.type}: ${r.error.message}`);
    },
  });
  return { a, events, problems };
}

function types(events) {
  return events.map((e) => e.type);
}

async function threadValues(base, threadId) {
  const res = await fetch(`${base}/threads/${threadId}/state`);
  assert.equal(res.status, 200);
  return (await res.json()).values;
}

const locationTool = {
  name: "get_location",
  description: "Where the user is, from the browser.",
  parameters: { type: "object", properties: { precision: { type: "string" } } },
};

test("a streamed run's events validate and its state snapshot and deltas reproduce the thread's state", async () => {
  const { a, events, problems } = agent(exampleUrl, "helper");
  a.addMessage({ id: randomUUID(), role: "user", content: "Say hello." });
  const { newMessages } = await a.runAgent({ runId: `r-${randomUUID()}` });
  assert.deepEqual(problems, []);
  const ts = types(events);
  assert.equal(ts[0], "RUN_STARTED");
  assert.equal(ts.at(-1), "RUN_FINISHED");
  for (const t of ["STATE_SNAPSHOT", "STATE_DELTA", "STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "REASONING_START", "REASONING_MESSAGE_CONTENT", "REASONING_END"]) {
    assert.ok(ts.includes(t), `${t} not among ${ts}`);
  }
  const answer = newMessages.find((m) => m.role === "assistant");
  assert.equal(answer.content, "Hello from the scripted helper.");
  assert.deepEqual(a.state, await threadValues(exampleUrl, a.threadId));
  assert.equal(events.at(-1).outcome?.type ?? "success", "success");
});

test("a second turn appends only the new message to the thread", async () => {
  const { a } = agent(exampleUrl, "helper");
  a.addMessage({ id: randomUUID(), role: "user", content: "one" });
  await a.runAgent();
  a.addMessage({ id: randomUUID(), role: "user", content: "two" });
  await a.runAgent();
  const values = await threadValues(exampleUrl, a.threadId);
  const human = values.messages.filter((m) => m.type === "human").map((m) => m.content);
  assert.deepEqual(human, ["one", "two"]);
  assert.deepEqual(a.state, values);
});

test("a frontend tool is called, answered by the client, and the run goes on", async () => {
  const { a, events, problems } = agent(exampleUrl, "helper");
  a.addMessage({ id: randomUUID(), role: "user", content: "Where am I?" });
  let finished;
  await a.runAgent({ tools: [locationTool] }, { onRunFinishedEvent: (e) => { finished = e; } });
  assert.deepEqual(problems, []);
  assert.equal(finished.outcome, "success");
  assert.equal(finished.pendingToolCallIds.length, 1);
  const callId = finished.pendingToolCallIds[0];
  const start = events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start.toolCallName, "get_location");
  assert.equal(start.toolCallId, callId);
  const call = a.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === callId);
  assert.deepEqual(JSON.parse(call.function.arguments), { precision: "city" });

  a.addMessage({ id: randomUUID(), role: "tool", toolCallId: callId, content: "Lisbon" });
  events.length = 0;
  const { newMessages } = await a.runAgent({ tools: [locationTool] });
  assert.deepEqual(problems, []);
  assert.equal(newMessages.find((m) => m.role === "assistant")?.content, "Thanks: your app told me where you are.");
  const values = await threadValues(exampleUrl, a.threadId);
  const tool = values.messages.find((m) => m.type === "tool");
  assert.equal(tool.content, "Lisbon");
  assert.equal(tool.tool_call_id, callId);
  assert.equal(values.messages.filter((m) => m.type === "human").length, 1);
});

test("a run that waits for a person ends with the interrupt outcome and is resumed by resume entries", async () => {
  const { a, problems } = agent(apiUrl, "planner");
  a.addMessage({ id: randomUUID(), role: "user", content: "Organise our offsite" });
  let finished;
  await a.runAgent({}, { onRunFinishedEvent: (e) => { finished = e; } });
  assert.deepEqual(problems, []);
  assert.equal(finished.outcome, "interrupt");
  assert.equal(a.pendingInterrupts.length, 1);
  const first = a.pendingInterrupts[0];
  assert.equal(first.reason, "question");
  assert.match(first.message, /Lisbon/);
  assert.ok(first.responseSchema, "the interrupt carries the answer's schema");

  // The client itself refuses a run that leaves the interrupt unanswered.
  await assert.rejects(a.runAgent(), /not addressed by resume/);

  await a.runAgent({ resume: [{ interruptId: first.id, status: "resolved", payload: "Lisbon" }] },
    { onRunFinishedEvent: (e) => { finished = e; } });
  assert.deepEqual(problems, []);
  // The planner goes on to its next question: another interrupt.
  assert.equal(finished.outcome, "interrupt");
  assert.notEqual(a.pendingInterrupts[0].id, first.id);
});

test("an assistant that runs its own tools refuses frontend tools, naming itself", async () => {
  const { a } = agent(exampleUrl, "echo");
  a.addMessage({ id: randomUUID(), role: "user", content: "hi" });
  await assert.rejects(a.runAgent({ tools: [locationTool] }), /HTTP 422.*graph echo.*does not accept client tools/);
});

test("the router's hand-offs to its sub-agents are SUBAGENT events under the router's tool calls", async () => {
  const { a, events, problems } = agent(apiUrl, "sqlrouter");
  a.addMessage({ id: randomUUID(), role: "user", content: "How many loans per genre in 2025?" });
  const { newMessages } = await a.runAgent();
  assert.deepEqual(problems, []);
  const started = events.filter((e) => e.type === "SUBAGENT_STARTED");
  const finished = events.filter((e) => e.type === "SUBAGENT_FINISHED");
  assert.ok(started.length >= 2, `sub-agents started: ${started.map((e) => e.name)}`);
  assert.deepEqual(finished.map((e) => e.subagentRunId), started.map((e) => e.subagentRunId));
  const calls = new Set(events.filter((e) => e.type === "TOOL_CALL_START").map((e) => e.toolCallId));
  for (const s of started) assert.ok(calls.has(s.parentToolCallId), `${s.name}'s parent call ${s.parentToolCallId}`);
  assert.match(newMessages.filter((m) => m.role === "assistant").at(-1).content, /fiction/);
});
