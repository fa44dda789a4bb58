// The acceptance suite: @langchain/langgraph-sdk's own client against a real
// `trellis serve` (scripted models) at TRELLIS_URL. Run by .ci/serve-sdk:
//
//   TRELLIS_URL=http://127.0.0.1:PORT node --test server/testdata/js/serve.test.mjs
//
// The other *.test.mjs files run against examples/servegraphs
// (TRELLIS_EXAMPLE_URL), whose "steps" graph is slow enough to double-text.
//
// A build whose thread or run handlers still answer 501 skips every test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.TRELLIS_URL;
if (!apiUrl) throw new Error("set TRELLIS_URL to a running `trellis serve`");
const client = new Client({ apiUrl });

const probe = await fetch(`${apiUrl}/threads/search`, {
  method: "POST", headers: { "content-type": "application/json" }, body: '{"limit":1}',
});
// Read the body: an unread one holds its connection open, and the file's
// process with it.
await probe.text();
const skip = probe.status === 501 ? "this build's thread/run handlers answer 501" : false;

// stream collects what the SDK yields for one streamed run.
async function stream(threadId, body) {
  const parts = [];
  for await (const p of client.runs.stream(threadId, "planner", body)) parts.push(p);
  return parts;
}

function interruptOf(parts) {
  const withInterrupt = parts.filter((p) => p.event === "updates" && p.data?.__interrupt__);
  assert.ok(withInterrupt.length > 0, `no __interrupt__ update in ${parts.map((p) => p.event)}`);
  return withInterrupt.at(-1).data.__interrupt__[0];
}

test("/info says the models are scripted", async () => {
  const info = await (await fetch(`${apiUrl}/info`)).json();
  assert.equal(info.scripted_models, true);
});

test("the apps and the tool agent are assistants created by the system", { skip }, async () => {
  const found = await client.assistants.search({ limit: 20 });
  const graphs = found.map((a) => a.graph_id).sort();
  assert.deepEqual(graphs, ["agent", "builder", "deep", "planner", "scheduler", "sqlrouter", "testplanner"]);
  for (const a of found) assert.equal(a.metadata.created_by, "system");
});

test("threads take the SDK's ttl on create and update", { skip }, async () => {
  const thread = await client.threads.create({ ttl: 60 });
  assert.ok(thread.thread_id);
  const updated = await client.threads.update(thread.thread_id, { ttl: { ttl: 5, strategy: "delete" } });
  assert.equal(updated.thread_id, thread.thread_id);
  await assert.rejects(
    fetch(`${apiUrl}/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ttl: -1 }) })
      .then((r) => { if (!r.ok) throw new Error(String(r.status)); }),
    /422/,
  );
});

test("a streamed run stops at the planner's question; a plain command answers it; the run replays", { skip }, async () => {
  const thread = await client.threads.create();
  let created = null;
  const first = await stream(thread.thread_id, {
    input: {}, streamMode: ["values", "updates", "messages-tuple"],
    onRunCreated: (m) => { created = m; },
  });
  assert.equal(first[0].event, "metadata");
  assert.equal(first[0].data.thread_id, thread.thread_id);
  assert.equal(created?.run_id, first[0].data.run_id);
  const ids = first.filter((p) => p.event !== "end").map((p) => Number(p.id));
  ids.forEach((id, i) => assert.ok(i === 0 || id > ids[i - 1], `ids not increasing: ${ids}`));
  const tuples = first.filter((p) => p.event === "messages");
  assert.ok(tuples.length > 0, "no messages-tuple events");
  const [chunk, meta] = tuples[0].data;
  assert.equal(chunk.type, "AIMessageChunk");
  assert.ok(chunk.id && meta.langgraph_node, "a chunk lacks its message id or node");
  assert.ok(first.some((p) => p.event === "values"));

  const asked = interruptOf(first);
  assert.equal(asked.value.mode, "select");
  assert.ok(asked.value.options.length > 1);
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.next, ["ask"]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

  const second = await stream(thread.thread_id, {
    command: { resume: { choice: asked.value.options[0] } }, streamMode: ["updates"],
  });
  const next = interruptOf(second);
  assert.notEqual(next.id, asked.id, "the same question was asked again");

  const replay = [];
  for await (const p of client.runs.joinStream(thread.thread_id, created.run_id, { lastEventId: "-1" })) replay.push(p.event);
  assert.deepEqual(replay, first.map((p) => p.event));

  const history = await client.threads.getHistory(thread.thread_id, { limit: 50 });
  assert.ok(history.length >= 2, `history has ${history.length} states`);
  const runs = await client.runs.list(thread.thread_id);
  assert.equal(runs.length, 2);
  for (const r of runs) assert.equal(r.status, "interrupted");
});

test("an answer that does not fit is not taken and the thread keeps waiting", { skip }, async () => {
  const thread = await client.threads.create();
  const asked = interruptOf(await stream(thread.thread_id, { input: {}, streamMode: ["updates"] }));
  // Either a 4xx naming what was expected, or the agent asks again saying
  // what was wrong: never an accepted answer.
  let again = null;
  try {
    again = await client.runs.wait(thread.thread_id, "planner", { command: { resume: { nosuch: 1 } } });
  } catch (e) {
    assert.match(String(e.message), /HTTP 4\d\d/);
  }
  if (again) {
    const re = again.__interrupt__?.[0];
    assert.equal(re?.value?.question, asked.value.question);
    assert.ok(re.value.problems?.length > 0, "the question is asked again without saying what was wrong");
  }
  assert.deepEqual((await client.threads.getState(thread.thread_id)).next, ["ask"]);
});

test("enqueued runs run in order; a delayed run can be cancelled while pending", { skip }, async () => {
  const thread = await client.threads.create();
  const a = await client.runs.create(thread.thread_id, "scheduler", { input: {} });
  const b = await client.runs.create(thread.thread_id, "scheduler", { input: {}, multitaskStrategy: "enqueue" });
  await client.runs.join(thread.thread_id, b.run_id);
  const ra = await client.runs.get(thread.thread_id, a.run_id);
  const rb = await client.runs.get(thread.thread_id, b.run_id);
  for (const r of [ra, rb]) assert.ok(!["pending", "running"].includes(r.status), `run still ${r.status}`);
  assert.ok(new Date(ra.updated_at) <= new Date(rb.updated_at));

  const later = await client.runs.create(thread.thread_id, "scheduler", { input: {}, afterSeconds: 60, multitaskStrategy: "enqueue" });
  assert.equal(later.status, "pending");
  await client.runs.cancel(thread.thread_id, later.run_id);
  assert.equal((await client.runs.get(thread.thread_id, later.run_id)).status, "interrupted");
});

test("the store keeps items by namespace", { skip }, async () => {
  await client.store.putItem(["users", "ada"], "prefs", { theme: "dark" });
  const item = await client.store.getItem(["users", "ada"], "prefs");
  assert.deepEqual(item.value, { theme: "dark" });
  const found = await client.store.searchItems(["users"]);
  assert.ok(found.items.some((i) => i.key === "prefs"));
  await client.store.deleteItem(["users", "ada"], "prefs");
  // Gone: the server answers 200 null, as LangGraph's does; the SDK gives null.
  assert.equal(await client.store.getItem(["users", "ada"], "prefs"), null);
});
