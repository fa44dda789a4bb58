// Double-texting, cancelling and rejoining against examples/servegraphs at
// TRELLIS_EXAMPLE_URL, whose "steps" graph runs {"steps": n} steps of
// step_ms each, streaming a custom event {step, of} per step. Tests wait
// for a run's first custom event before they act on it, so they depend on
// no timing beyond "a 20-step run of 200 ms steps is still running after
// its first step".
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.TRELLIS_EXAMPLE_URL;
if (!apiUrl) throw new Error("set TRELLIS_EXAMPLE_URL to a running examples/servegraphs");
const client = new Client({ apiUrl });

// slow is the body of a run of n steps, step_ms apart, logging every mode
// the tests read.
const slow = (n, ms = 200, extra = {}) => ({
  input: { steps: n }, config: { configurable: { step_ms: ms } },
  streamMode: ["values", "updates", "custom"], ...extra,
});

// read collects a stream's parts until stop(part, all) says so (then the
// request is aborted) or the stream ends.
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

// started waits until run has sent `customs` custom events: a step sends
// its event before it ends, so after two the first step has committed.
async function started(threadId, runId, customs = 1) {
  const ctrl = new AbortController();
  const count = (parts) => parts.filter((p) => p.event === "custom").length;
  const parts = await read(client.runs.joinStream(threadId, runId, { lastEventId: "-1", signal: ctrl.signal }), ctrl, (_, all) => count(all) >= customs);
  assert.ok(count(parts) >= customs, `run ${runId} ended before step ${customs}: ${parts.map((p) => p.event)}`);
}

// startSlow creates a thread and a running 20-step run on it, returning
// once the run has sent `customs` custom events.
async function startSlow(n = 20, ms = 200, customs = 1) {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "steps", slow(n, ms));
  await started(thread.thread_id, run.run_id, customs);
  return { thread, run };
}

const doneOf = (state) => state.values.done ?? [];

test("the steps graph runs its steps and refuses bad input clearly", async () => {
  const thread = await client.threads.create();
  const out = await client.runs.wait(thread.thread_id, "steps", slow(3, 0));
  assert.deepEqual(out.done, [1, 2, 3]);
  await assert.rejects(client.runs.wait(thread.thread_id, "steps", slow(51, 0)), /between 1 and 50/);
});

test("multitask reject: 409, and the running run goes on untouched", async () => {
  const { thread, run } = await startSlow(8, 200);
  await assert.rejects(
    client.runs.create(thread.thread_id, "steps", slow(1, 0, { multitaskStrategy: "reject" })),
    (e) => { assert.equal(e.status, 409, String(e)); return true; },
  );
  await client.runs.join(thread.thread_id, run.run_id);
  assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "success");
  assert.deepEqual(doneOf(await client.threads.getState(thread.thread_id)), [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.equal((await client.runs.list(thread.thread_id)).length, 1);
});

test("multitask interrupt: the first run ends interrupted with its steps kept; the second succeeds", async () => {
  const { thread, run } = await startSlow(20, 200, 2); // its first step is done
  const second = await client.runs.create(thread.thread_id, "steps", slow(1, 0, { multitaskStrategy: "interrupt" }));
  await client.runs.join(thread.thread_id, second.run_id);
  assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "interrupted");
  assert.equal((await client.runs.get(thread.thread_id, second.run_id)).status, "success");
  const done = doneOf(await client.threads.getState(thread.thread_id));
  assert.ok(done.length >= 2 && done.length < 20, `done ${done}`);
  assert.deepEqual(done, done.map((_, i) => i + 1), "steps out of order or lost");
  const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  const runsInHistory = new Set(history.map((s) => s.metadata.run_id));
  assert.ok(runsInHistory.has(run.run_id), "the interrupted run's checkpoints are gone");
  assert.ok(runsInHistory.has(second.run_id));
});

test("multitask rollback: the first run and its checkpoints are gone", async () => {
  const { thread, run } = await startSlow();
  const second = await client.runs.create(thread.thread_id, "steps", slow(2, 0, { multitaskStrategy: "rollback" }));
  await client.runs.join(thread.thread_id, second.run_id);
  await assert.rejects(client.runs.get(thread.thread_id, run.run_id), (e) => e.status === 404);
  assert.equal((await client.runs.get(thread.thread_id, second.run_id)).status, "success");
  const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  assert.ok(history.length > 0);
  for (const s of history) assert.notEqual(s.metadata.run_id, run.run_id, "a checkpoint of the rolled-back run remains");
  assert.deepEqual(doneOf(await client.threads.getState(thread.thread_id)), [1, 2]);
});

test("rejoining a live run with the last id seen: no duplicates, no gaps", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "steps", slow(6, 150));
  const ctrl = new AbortController();
  const before = await read(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1", signal: ctrl.signal }), ctrl,
    (p, all) => all.filter((q) => q.event === "custom").length >= 2);
  const lastId = before.at(-1).id;
  assert.ok(lastId, "events carry no id");
  const after = await read(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: lastId }));
  const all = await read(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
  const key = (p) => `${p.id} ${p.event} ${JSON.stringify(p.data)}`;
  assert.deepEqual([...before, ...after].map(key), all.map(key));
  assert.equal(all.filter((p) => p.event === "custom").length, 6);
});

test("cancel a running run with wait: interrupt keeps its steps, rollback removes it", async () => {
  {
    const { thread, run } = await startSlow(20, 200, 2); // its first step is done
    await client.runs.cancel(thread.thread_id, run.run_id, true, "interrupt");
    assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "interrupted");
    assert.ok(doneOf(await client.threads.getState(thread.thread_id)).length >= 1);
  }
  {
    const { thread, run } = await startSlow();
    await client.runs.cancel(thread.thread_id, run.run_id, true, "rollback");
    await assert.rejects(client.runs.get(thread.thread_id, run.run_id), (e) => e.status === 404);
    const history = await client.threads.getHistory(thread.thread_id);
    for (const s of history) assert.notEqual(s.metadata.run_id, run.run_id);
  }
});

test("cancelMany cancels a thread's runs", async () => {
  const { thread, run } = await startSlow();
  const queued = await client.runs.create(thread.thread_id, "steps", slow(1, 0, { multitaskStrategy: "enqueue" }));
  await client.runs.cancelMany({ threadId: thread.thread_id, runIds: [run.run_id, queued.run_id], action: "interrupt" });
  await client.runs.join(thread.thread_id, run.run_id);
  for (const id of [run.run_id, queued.run_id]) {
    assert.equal((await client.runs.get(thread.thread_id, id)).status, "interrupted");
  }
  // By status: every live run of a thread, running and pending.
  const other = await startSlow();
  const waiting = await client.runs.create(other.thread.thread_id, "steps", slow(1, 0, { multitaskStrategy: "enqueue" }));
  await client.runs.cancelMany({ threadId: other.thread.thread_id, status: "all" });
  await client.runs.join(other.thread.thread_id, other.run.run_id);
  const left = await client.runs.list(other.thread.thread_id);
  assert.deepEqual(left.map((r) => r.status), ["interrupted", "interrupted"]);
  assert.deepEqual(left.map((r) => r.run_id).sort(), [other.run.run_id, waiting.run_id].sort());
});

test("onDisconnect cancel: a client that leaves mid-stream interrupts its run", async () => {
  const thread = await client.threads.create();
  const ctrl = new AbortController();
  let runId = null;
  await read(client.runs.stream(thread.thread_id, "steps", slow(20, 200, {
    onDisconnect: "cancel", signal: ctrl.signal, onRunCreated: (m) => { runId = m.run_id; },
  })), ctrl, (p) => p.event === "custom");
  assert.ok(runId);
  await client.runs.join(thread.thread_id, runId);
  assert.equal((await client.runs.get(thread.thread_id, runId)).status, "interrupted");
});

test("runs.list filters by status", async () => {
  const { thread, run } = await startSlow();
  const done = await client.runs.create(thread.thread_id, "steps", slow(1, 0, { multitaskStrategy: "interrupt" }));
  await client.runs.join(thread.thread_id, done.run_id);
  const ok = await client.runs.list(thread.thread_id, { status: "success" });
  assert.deepEqual(ok.map((r) => r.run_id), [done.run_id]);
  const stopped = await client.runs.list(thread.thread_id, { status: "interrupted" });
  assert.deepEqual(stopped.map((r) => r.run_id), [run.run_id]);
});

test("stateless runs: wait and stream without a thread; a batch of runs", async () => {
  const out = await client.runs.wait(null, "steps", slow(2, 0));
  assert.deepEqual(out.done, [1, 2]);
  const parts = await read(client.runs.stream(null, "steps", slow(3, 0)));
  assert.equal(parts.filter((p) => p.event === "custom").length, 3);
  assert.deepEqual(parts.filter((p) => p.event === "values").at(-1).data.done, [1, 2, 3]);

  const batch = await client.runs.createBatch([
    { assistantId: "steps", input: { steps: 1 }, config: { configurable: { step_ms: 0 } } },
    { assistantId: "steps", input: { steps: 2 }, config: { configurable: { step_ms: 0 } } },
  ]);
  assert.equal(batch.length, 2);
  for (const r of batch) assert.ok(r.run_id && r.thread_id, `batch answered ${JSON.stringify(r)}`);
  assert.notEqual(batch[0].run_id, batch[1].run_id);
});
