// Thread state, history, forks, checkpoint metadata and the thread stream,
// against examples/servegraphs (TRELLIS_EXAMPLE_URL) and its "steps" graph.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.TRELLIS_EXAMPLE_URL;
if (!apiUrl) throw new Error("set TRELLIS_EXAMPLE_URL to a running examples/servegraphs");
const client = new Client({ apiUrl });

const steps = (n, ms = 0, extra = {}) => ({
  input: { steps: n }, config: { configurable: { step_ms: ms } }, streamMode: ["values", "updates", "custom"], ...extra,
});

async function read(gen, ctrl, stop = () => false) {
  const parts = [];
  try {
    for await (const p of gen) {
      parts.push(p);
      if (stop(p, parts)) { ctrl?.abort(); break; }
    }
  } catch (e) {
    if (!ctrl?.signal.aborted) throw e;
  }
  return parts;
}

const idOf = (s) => s.checkpoint.checkpoint_id;

test("updateState as a node, history with limit/before/metadata, state at a checkpoint", async () => {
  const thread = await client.threads.create({ graphId: "steps" });
  await client.runs.wait(thread.thread_id, "steps", steps(3));
  const upd = await client.threads.updateState(thread.thread_id, { values: { done: [99] }, asNode: "step" });
  assert.ok(upd.checkpoint.checkpoint_id);
  const now = await client.threads.getState(thread.thread_id);
  assert.deepEqual(now.values.done, [1, 2, 3, 99]);
  assert.equal(idOf(now), upd.checkpoint.checkpoint_id);
  assert.equal(now.metadata.source, "update");

  const all = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  assert.ok(all.length >= 5, `history has ${all.length} states`);
  assert.equal(idOf(all[0]), idOf(now));
  const two = await client.threads.getHistory(thread.thread_id, { limit: 2 });
  assert.deepEqual(two.map(idOf), all.slice(0, 2).map(idOf));
  const older = await client.threads.getHistory(thread.thread_id, { limit: 2, before: { configurable: { checkpoint_id: idOf(all[0]) } } });
  assert.deepEqual(older.map(idOf), all.slice(1, 3).map(idOf));
  const updates = await client.threads.getHistory(thread.thread_id, { metadata: { source: "update" } });
  assert.deepEqual(updates.map(idOf), [idOf(now)]);

  const then = all.find((s) => (s.values.done ?? []).length === 1);
  assert.ok(then, "no checkpoint after the first step");
  const at = await client.threads.getState(thread.thread_id, idOf(then));
  assert.deepEqual(at.values.done, [1]);
  const atObj = await client.threads.getState(thread.thread_id, { checkpoint_id: idOf(then) });
  assert.deepEqual(atObj.values.done, [1]);
  await assert.rejects(client.threads.getState(thread.thread_id, "no-such-checkpoint"), (e) => e.status === 404);
});

test("a run from an earlier checkpoint forks: both branches stay in history; copy keeps the state", async () => {
  const thread = await client.threads.create({ graphId: "steps" });
  await client.runs.wait(thread.thread_id, "steps", steps(3));
  const before = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  const fork = before.find((s) => (s.values.done ?? []).length === 1);
  const out = await client.runs.wait(thread.thread_id, "steps", steps(2, 0, { checkpointId: idOf(fork) }));
  assert.deepEqual(out.done, [1, 2]);
  const after = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  const ids = new Set(after.map(idOf));
  for (const s of before) assert.ok(ids.has(idOf(s)), "a checkpoint of the first branch is gone");
  assert.ok(after.length > before.length);
  const branch = after.filter((s) => !before.some((b) => idOf(b) === idOf(s)));
  assert.equal(branch.at(-1).parent_checkpoint.checkpoint_id, idOf(fork), "the new branch does not start at the fork");
  assert.deepEqual((await client.threads.getState(thread.thread_id)).values.done, [1, 2]);

  const copy = await client.threads.copy(thread.thread_id);
  assert.notEqual(copy.thread_id, thread.thread_id);
  const copied = await client.threads.getState(copy.thread_id);
  assert.deepEqual(copied.values.done, [1, 2]);
  assert.equal((await client.threads.getHistory(copy.thread_id, { limit: 100 })).length, after.length);
});

test("patchState merges metadata into the latest checkpoint; history filters on it", async () => {
  const thread = await client.threads.create({ graphId: "steps" });
  await client.runs.wait(thread.thread_id, "steps", steps(2));
  const latest = await client.threads.getState(thread.thread_id);
  await client.threads.patchState(thread.thread_id, { label: "reviewed", score: 3 });
  await client.threads.patchState(thread.thread_id, { score: 4 });
  const now = await client.threads.getState(thread.thread_id);
  assert.equal(idOf(now), idOf(latest), "patching made a new checkpoint");
  assert.equal(now.metadata.label, "reviewed");
  assert.equal(now.metadata.score, 4);
  assert.equal(now.metadata.step, latest.metadata.step, "the checkpoint's own metadata was lost");
  const labelled = await client.threads.getHistory(thread.thread_id, { metadata: { label: "reviewed" } });
  assert.deepEqual(labelled.map(idOf), [idOf(latest)]);
  const hist = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  assert.equal(hist.filter((s) => s.metadata.label === "reviewed").length, 1);
  await assert.rejects(client.threads.patchState(thread.thread_id, "not an object"), (e) => e.status >= 400 && e.status < 500);
});

test("the thread stream resumes from its last id across runs: no gap, no duplicate", async () => {
  const thread = await client.threads.create();
  const r1 = await client.runs.create(thread.thread_id, "steps", steps(4, 200));
  const r2 = await client.runs.create(thread.thread_id, "steps", steps(7, 200, { multitaskStrategy: "enqueue" }));
  const customs = (ps) => ps.filter((p) => p.event === "custom").length;
  const ctrl = new AbortController();
  const first = await read(client.threads.joinStream(thread.thread_id, { signal: ctrl.signal }), ctrl, (p, all) => customs(all) >= 2);
  const last = first.at(-1).id;
  assert.ok(last, "thread stream events carry no id");
  const ctrl2 = new AbortController();
  const rest = await read(client.threads.joinStream(thread.thread_id, { lastEventId: last, signal: ctrl2.signal }), ctrl2,
    (p) => p.event === "values" && p.data.done?.length === 7);
  const union = [...first, ...rest];
  const ids = union.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, `duplicate ids: ${ids}`);

  const log = [];
  for (const r of [r1, r2]) {
    for await (const p of client.runs.joinStream(thread.thread_id, r.run_id, { lastEventId: "-1" })) {
      if (p.event !== "end") log.push(p);
    }
  }
  const key = (p) => `${p.event} ${JSON.stringify(p.data)}`;
  assert.deepEqual(union.map(key), log.slice(0, union.length).map(key));
  assert.equal(customs(union), 7);
});
