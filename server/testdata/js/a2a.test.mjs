// The A2A wire's acceptance suite: @a2a-js/sdk's client (protocol 1.0),
// which nobody here wrote, against a real `trellis serve` (scripted
// models) at TRELLIS_URL. Run by .ci/serve-sdk:
//
//   TRELLIS_URL=... TRELLIS_EXAMPLE_URL=... node --test server/testdata/js/a2a.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { ClientFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const apiUrl = process.env.TRELLIS_URL;
if (!apiUrl) throw new Error("set TRELLIS_URL (see .ci/serve-sdk)");

// The SDK resolves the card's path against the URL it is given, so the
// endpoint's URL goes with a trailing slash.
const client = (assistant) => new ClientFactory().createFromUrl(`${apiUrl}/a2a/${assistant}/`);

const textPart = (value) => ({ content: { $case: "text", value } });
const dataPart = (value) => ({ content: { $case: "data", value } });
const message = (parts, taskId = "") => ({ messageId: randomUUID(), role: Role.ROLE_USER, parts, taskId });
const text = (m) => (m?.parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
const data = (m) => (m?.parts ?? []).find((p) => p.content?.$case === "data")?.content.value;

test("the card is 1.0's: no top-level url, a JSON-RPC interface per protocol version and a REST one at the endpoint's absolute URL", async () => {
  const res = await fetch(`${apiUrl}/.well-known/agent-card.json?assistant_id=planner`);
  assert.equal(res.status, 200);
  const card = await res.json();
  assert.equal(card.url, undefined);
  assert.deepEqual(card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`).sort(), ["HTTP+JSON 1.0", "JSONRPC 0.3", "JSONRPC 1.0"]);
  for (const i of card.supportedInterfaces) {
    assert.match(i.url, new RegExp(`^${apiUrl}/a2a/`));
  }
  assert.equal(card.capabilities.streaming, true);
  assert.ok(card.skills.length >= 1);
});

test("the planner's questions come as input-required and are answered by the next messages of the task until it completes", async () => {
  const c = await client("planner");
  let task = await c.sendMessage({ message: message([textPart("Organise our team offsite")]) });
  assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  assert.match(text(task.status.message), /Which city/);
  const q = data(task.status.message);
  assert.ok(q.interrupts[0].response_schema, "the question's data part carries the answer's schema");
  const id = task.id;
  const answer = async (parts) => {
    const t = await c.sendMessage({ message: message(parts, id) });
    assert.equal(t.id, id);
    return t;
  };
  task = await answer([textPart("7")]);
  assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  assert.match(text(task.status.message), /7 is not an option/);
  task = await answer([textPart("lisbon")]);
  assert.match(text(task.status.message), /Number of people/);
  task = await answer([dataPart({ people: 12, length: "2 days" })]);
  assert.match(text(task.status.message), /Find venues/);
  for (let i = 0; i < 4 && task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED; i++) {
    task = await answer([textPart("yes")]);
  }
  assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
  assert.ok(task.artifacts.length === 1 && text(task.artifacts[0]).length > 0);
  const got = await c.getTask({ id, historyLength: 1 });
  assert.equal(got.history.length, 1);
  assert.equal(got.history[0].role, Role.ROLE_AGENT);
  await assert.rejects(c.sendMessage({ message: message([textPart("again")], id) }), /finished task takes no more messages/);
});

test("a stream starts with the task and ends after input-required", async () => {
  const c = await client("planner");
  const events = [];
  for await (const ev of c.sendMessageStream({ message: message([textPart("Organise our team offsite")]) })) {
    events.push(ev.payload);
  }
  assert.equal(events[0].$case, "task");
  const last = events.at(-1);
  assert.equal(last.$case, "statusUpdate");
  assert.equal(last.value.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  assert.equal(last.value.taskId, events[0].value.id);
});

test("an unknown task is the SDK's task-not-found error", async () => {
  const c = await client("planner");
  await assert.rejects(c.getTask({ id: "no-such-task" }), (e) => e.constructor.name === "JsonRpcTaskNotFoundError");
});

test("the REST binding: a client that speaks only REST sends, answers and reads a task", async () => {
  const c = await new ClientFactory({ transports: [new RestTransportFactory()] }).createFromUrl(`${apiUrl}/a2a/planner/`);
  const task = await c.sendMessage({ message: message([textPart("Organise our team offsite")]) });
  assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const next = await c.sendMessage({ message: message([textPart("lisbon")], task.id) });
  assert.equal(next.id, task.id);
  assert.match(text(next.status.message), /Number of people/);
  const got = await c.getTask({ id: task.id });
  assert.equal(got.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
});
