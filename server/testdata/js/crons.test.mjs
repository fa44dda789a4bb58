// Crons through the SDK's crons API, against examples/servegraphs
// (TRELLIS_EXAMPLE_URL). Firing is covered by the Go tests, which drive the
// cron loop's clock; here the shapes the SDK sends and reads are checked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.TRELLIS_EXAMPLE_URL;
if (!apiUrl) throw new Error("set TRELLIS_EXAMPLE_URL to a running examples/servegraphs");
const client = new Client({ apiUrl });

test("crons: create, createForThread, search, count, update, delete", async () => {
  const suite = randomUUID();
  const hi = { messages: [{ role: "user", content: "hi" }] };
  const stateless = await client.crons.create("echo", { schedule: "*/5 * * * *", input: hi, metadata: { suite }, onRunCompleted: "keep", timezone: "Europe/Paris" });
  assert.ok(stateless.cron_id);
  assert.equal(stateless.assistant_id, "echo");
  assert.equal(stateless.thread_id, null);
  assert.equal(stateless.schedule, "*/5 * * * *");
  assert.equal(stateless.timezone, "Europe/Paris");
  assert.equal(stateless.on_run_completed, "keep");
  assert.equal(stateless.enabled, true);
  assert.deepEqual(stateless.payload.input, hi);
  assert.equal(new Date(stateless.next_run_date).getUTCMinutes() % 5, 0);

  const thread = await client.threads.create();
  const end = new Date(Date.now() + 3600e3).toISOString();
  const onThread = await client.crons.createForThread(thread.thread_id, "echo", { schedule: "0 9 * * mon-fri", input: hi, metadata: { suite }, enabled: false, endTime: end });
  assert.equal(onThread.thread_id, thread.thread_id);
  assert.equal(onThread.enabled, false);
  assert.equal(new Date(onThread.end_time).toISOString(), end);

  assert.equal(await client.crons.count({ metadata: { suite } }), 2);
  assert.equal(await client.crons.count({ threadId: thread.thread_id }), 1);
  const found = await client.crons.search({ metadata: { suite }, sortBy: "cron_id", sortOrder: "asc" });
  assert.deepEqual(found.map((c) => c.cron_id), [stateless.cron_id, onThread.cron_id].sort());
  const enabled = await client.crons.search({ metadata: { suite }, enabled: true, select: ["cron_id", "schedule"] });
  assert.deepEqual(enabled, [{ cron_id: stateless.cron_id, schedule: "*/5 * * * *" }]);

  const updated = await client.crons.update(onThread.cron_id, { schedule: "30 * * * *", enabled: true, input: { messages: [{ role: "user", content: "later" }] }, metadata: { round: 2 } });
  assert.equal(updated.schedule, "30 * * * *");
  assert.equal(updated.enabled, true);
  assert.equal(updated.payload.input.messages[0].content, "later");
  assert.deepEqual(updated.metadata, { suite, round: 2 });
  assert.equal(new Date(updated.next_run_date).getUTCMinutes() % 30, 0);

  await assert.rejects(client.crons.create("echo", { schedule: "every day" }), /422|schedule/);
  await client.crons.delete(stateless.cron_id);
  await client.crons.delete(onThread.cron_id);
  assert.equal(await client.crons.count({ metadata: { suite } }), 0);
  await assert.rejects(client.crons.delete(onThread.cron_id), /404|not found/i);
});
