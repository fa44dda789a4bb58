// What LangGraph's Agent Chat UI does against `trellis serve` (TRELLIS_URL),
// with the SDK it locks (1.8.x, as the npm alias langgraph-sdk-1-8) and the
// newest one this suite pins (1.15.0): stream a run with the UI's stream
// modes and options (no error at the end, no reconnect loop), list threads
// by graph_id, regenerate from a checkpoint, and answer a tool approval in
// LangChain's human-in-the-loop shape with {decisions}.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client as Client115 } from "@langchain/langgraph-sdk";
import { Client as Client18 } from "langgraph-sdk-1-8";

const apiUrl = process.env.TRELLIS_URL;
if (!apiUrl) throw new Error("set TRELLIS_URL to a running `trellis serve`");

const sdks = [["1.8.10", Client18], ["1.15.0", Client115]];

// uiStream streams a run as Agent Chat UI's submit does, counting the
// SDK's reconnects; it returns the parts.
async function uiStream(client, threadId, payload, reconnects) {
  const parts = [];
  for await (const p of client.runs.stream(threadId, "planner", {
    streamMode: ["values"], streamSubgraphs: true, streamResumable: true,
    onReconnect: () => { reconnects.n++; },
    ...payload,
  })) parts.push(p);
  return parts;
}

function lastInterrupt(parts) {
  const vals = parts.filter((p) => p.event === "values" && p.data?.__interrupt__);
  return vals.at(-1)?.data.__interrupt__?.[0];
}

// answerFor answers the planner's question, then its form, then its plan
// review, so the run reaches its write approval.
function answerFor(value, i) {
  if (Array.isArray(value?.options)) return { choice: value.options[0] };
  return i === 1 ? { people: 12, length: "2 days" } : true;
}

for (const [version, Client] of sdks) {
  const client = new Client({ apiUrl });

  test(`SDK ${version}: a streamed run ends without an error or a reconnect; every event has its own id`, async () => {
    const thread = await client.threads.create({ metadata: { graph_id: "planner" } });
    const reconnects = { n: 0 };
    const parts = await uiStream(client, thread.thread_id, { input: {} }, reconnects);
    assert.equal(reconnects.n, 0, "the SDK reconnected a stream that ended");
    assert.equal(parts[0].event, "metadata");
    const ids = parts.map((p) => p.id);
    assert.ok(ids.every((id) => id !== undefined && id !== ""), `an event without an id: ${JSON.stringify(ids)}`);
    assert.equal(new Set(ids).size, ids.length, `an id repeats: ${ids}`);
    const end = parts.at(-1);
    if (end.event === "end") assert.equal(end.data, null);
  });

  // The UI creates threads bare and lists them by graph_id: a run merges
  // graph_id and assistant_id into its thread's metadata.
  test(`SDK ${version}: threads.search by graph_id finds the UI's threads`, async () => {
    const thread = await client.threads.create();
    const reconnects = { n: 0 };
    await uiStream(client, thread.thread_id, { input: {} }, reconnects);
    const found = await client.threads.search({ metadata: { graph_id: "planner" }, limit: 100 });
    assert.ok(found.some((t) => t.thread_id === thread.thread_id), "the run's thread is not found by its graph_id");
  });

  test(`SDK ${version}: regenerate forks from a checkpoint of the history`, async () => {
    const thread = await client.threads.create();
    const reconnects = { n: 0 };
    await uiStream(client, thread.thread_id, { input: {} }, reconnects);
    const history = await client.threads.getHistory(thread.thread_id, { limit: 50 });
    assert.ok(history.length >= 2, `history has ${history.length} states`);
    const parent = history.at(-1).checkpoint; // the first state of the thread
    const parts = await uiStream(client, thread.thread_id, { input: undefined, checkpoint: parent }, reconnects);
    assert.equal(reconnects.n, 0);
    assert.ok(lastInterrupt(parts), "the regenerated run did not reach the question again");
  });

  // The UI edits a message by sending the new text from the parent of the
  // oldest checkpoint that holds the message; for the first message that
  // parent is the pre-input checkpoint, so the edit branches.
  test(`SDK ${version}: editing the first message branches instead of appending`, async () => {
    const thread = await client.threads.create();
    const send = async (payload) => {
      for await (const _ of client.runs.stream(thread.thread_id, "agent", { streamMode: ["values"], ...payload }));
    };
    const human = (text) => ({ messages: [{ type: "human", content: text }] });
    await send({ input: human("first question") });
    await send({ input: human("second question") });
    const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    const holds = (s) => (s.values?.messages ?? []).some((m) => m.content === "first question");
    const firstWith = history.filter(holds).at(-1); // history is newest first
    assert.ok(firstWith?.parent_checkpoint, `the first message's checkpoint has no parent: ${JSON.stringify(firstWith?.metadata)}`);
    await send({ input: human("edited question"), checkpoint: firstWith.parent_checkpoint });
    const state = await client.threads.getState(thread.thread_id);
    const asked = state.values.messages.filter((m) => m.type === "human").map((m) => m.content);
    assert.deepEqual(asked, ["edited question"]);
  });

  test(`SDK ${version}: a tool approval in LangChain's HITL shape is answered with decisions`, async () => {
    const thread = await client.threads.create();
    const reconnects = { n: 0 };
    let parts = await uiStream(client, thread.thread_id, { input: {} }, reconnects);
    let it = lastInterrupt(parts);
    for (let i = 0; i < 6 && it && !it.value?.action_requests; i++) {
      parts = await uiStream(client, thread.thread_id, { command: { resume: answerFor(it.value, i) } }, reconnects);
      it = lastInterrupt(parts);
    }
    assert.ok(it?.value?.action_requests, `no tool approval reached: ${JSON.stringify(it)}`);
    const v = it.value;
    // What Agent Chat UI's isAgentInboxInterruptSchema checks.
    assert.equal(v.kind, "tool_approval");
    assert.equal(v.action_requests.length, 1);
    assert.equal(typeof v.action_requests[0].name, "string");
    assert.equal(typeof v.action_requests[0].args, "object");
    assert.deepEqual(v.review_configs[0].allowed_decisions, ["approve", "edit", "reject"]);
    assert.equal(v.review_configs[0].action_name, v.action_requests[0].name);
    // Two decisions for one action request: refused, the thread waits.
    await assert.rejects(
      client.runs.wait(thread.thread_id, "planner", { command: { resume: { decisions: [{ type: "approve" }, { type: "approve" }] } } }),
      /4\d\d/,
    );
    await assert.rejects(
      client.runs.wait(thread.thread_id, "planner", { command: { resume: { decisions: [{ type: "maybe" }] } } }),
      /4\d\d/,
    );
    assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
    parts = await uiStream(client, thread.thread_id, { command: { resume: { decisions: [{ type: "approve" }] } } }, reconnects);
    assert.equal(reconnects.n, 0);
    const after = lastInterrupt(parts);
    assert.ok(!after || after.id !== it.id, "the same approval was asked again");
  });
}
