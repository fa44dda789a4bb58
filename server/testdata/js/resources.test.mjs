// Assistants, thread search and the store through the SDK, against
// examples/servegraphs (TRELLIS_EXAMPLE_URL), so the assistants these tests
// create do not show up in serve.test.mjs's list of the five apps.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.TRELLIS_EXAMPLE_URL;
if (!apiUrl) throw new Error("set TRELLIS_EXAMPLE_URL to a running examples/servegraphs");
const client = new Client({ apiUrl });

const hi = { messages: [{ role: "user", content: "hi" }] };
const lastText = (values) => values.messages.at(-1).content;

test("assistants: create with config, update to a new version, versions, setLatest, graph, schemas, subgraphs, delete", async () => {
  const a = await client.assistants.create({ graphId: "echo", name: "French echo", config: { configurable: { greeting: "Bonjour" } }, metadata: { suite: "sdk" } });
  assert.equal(a.graph_id, "echo");
  assert.equal(a.version, 1);
  assert.equal(lastText(await client.runs.wait(null, a.assistant_id, { input: hi })), "Bonjour: hi");

  const b = await client.assistants.update(a.assistant_id, { config: { configurable: { greeting: "Hola" } } });
  assert.equal(b.version, 2);
  assert.equal(lastText(await client.runs.wait(null, a.assistant_id, { input: hi })), "Hola: hi");
  const versions = await client.assistants.getVersions(a.assistant_id);
  assert.deepEqual(versions.map((v) => v.version).sort(), [1, 2]);
  const back = await client.assistants.setLatest(a.assistant_id, 1);
  assert.equal(back.version, 1);
  assert.equal((await client.assistants.get(a.assistant_id)).version, 1);
  assert.equal(lastText(await client.runs.wait(null, a.assistant_id, { input: hi })), "Bonjour: hi");

  const g = await client.assistants.getGraph(a.assistant_id);
  assert.ok(g.nodes.some((n) => n.id === "reply"), `graph nodes ${JSON.stringify(g.nodes)}`);
  const schemas = await client.assistants.getSchemas(a.assistant_id);
  assert.equal(schemas.graph_id, "echo");
  assert.ok(schemas.state_schema?.properties?.messages, "the state schema has no messages");
  assert.deepEqual(await client.assistants.getSubgraphs(a.assistant_id), {});
  const found = await client.assistants.search({ metadata: { suite: "sdk" } });
  assert.deepEqual(found.map((x) => x.assistant_id), [a.assistant_id]);

  await client.assistants.delete(a.assistant_id);
  await assert.rejects(client.assistants.get(a.assistant_id), (e) => e.status === 404);
  await assert.rejects(client.assistants.create({ graphId: "nosuch" }), (e) => e.status >= 400 && e.status < 500);
});

test("threads: search by metadata and status, count, delete", async () => {
  const tag = randomUUID();
  const idle = await client.threads.create({ metadata: { tag } });
  const ran = await client.threads.create({ metadata: { tag } });
  await client.runs.wait(ran.thread_id, "echo", { input: hi });
  const all = await client.threads.search({ metadata: { tag } });
  assert.deepEqual(all.map((t) => t.thread_id).sort(), [idle.thread_id, ran.thread_id].sort());
  assert.equal(await client.threads.count({ metadata: { tag } }), 2);
  const busy = await client.threads.create({ metadata: { tag } });
  const slow = await client.runs.create(busy.thread_id, "steps", { input: { steps: 1 }, config: { configurable: { step_ms: 5000 } } });
  // Its first event (metadata) is logged once it runs; then the thread is busy.
  for await (const p of client.runs.joinStream(busy.thread_id, slow.run_id, { lastEventId: "-1" })) {
    if (p.event === "metadata") break;
  }
  assert.equal((await client.threads.get(busy.thread_id)).status, "busy");
  assert.deepEqual((await client.threads.search({ metadata: { tag }, status: "busy" })).map((t) => t.thread_id), [busy.thread_id]);
  const errored = await client.threads.create({ metadata: { tag } });
  await client.runs.wait(errored.thread_id, "steps", { input: { steps: 0 }, raiseError: false });
  const byStatus = await client.threads.search({ metadata: { tag }, status: "error" });
  assert.deepEqual(byStatus.map((t) => t.thread_id), [errored.thread_id]);
  assert.equal(await client.threads.count({ metadata: { tag }, status: "idle" }), 2);
  await client.threads.delete(busy.thread_id);
  await client.threads.delete(idle.thread_id);
  await assert.rejects(client.threads.get(idle.thread_id), (e) => e.status === 404);
  assert.equal(await client.threads.count({ metadata: { tag } }), 2);
});

test("store: namespaces are listed; a missing item is null", async () => {
  const root = `suite-${randomUUID()}`;
  await client.store.putItem([root, "a"], "k", { v: 1 });
  await client.store.putItem([root, "b", "c"], "k", { v: 2 });
  const all = await client.store.listNamespaces({ prefix: [root] });
  assert.deepEqual(all.namespaces.map((n) => n.join("/")).sort(), [`${root}/a`, `${root}/b/c`]);
  const shallow = await client.store.listNamespaces({ prefix: [root], maxDepth: 2 });
  assert.deepEqual(shallow.namespaces.map((n) => n.join("/")).sort(), [`${root}/a`, `${root}/b`]);
  assert.equal(await client.store.getItem([root, "a"], "missing"), null);
  assert.deepEqual((await client.store.getItem([root, "a"], "k")).value, { v: 1 });
});
