// The OpenAI wire's acceptance suite: the openai npm client (5.12.0), which
// nobody here wrote, against a real `trellis serve` (scripted models) at
// TRELLIS_URL. Run by .ci/serve-sdk:
//
//   TRELLIS_URL=http://127.0.0.1:PORT node --test server/testdata/js/openai.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";

const apiUrl = process.env.TRELLIS_URL;
if (!apiUrl) throw new Error("set TRELLIS_URL to a running `trellis serve`");
const client = new OpenAI({ apiKey: "unused", baseURL: `${apiUrl}/v1`, maxRetries: 0 });

// chat keeps a conversation as a chat app does: the whole history each
// time, no thread ID.
function chat(model) {
  const messages = [{ role: "system", content: "You are helpful." }];
  return {
    messages,
    async say(content, extra = {}) {
      messages.push({ role: "user", content });
      const { data, response } = await client.chat.completions.create({ model, messages, ...extra }).withResponse();
      messages.push({ role: "assistant", content: data.choices[0].message.content });
      return { data, headers: response.headers };
    },
  };
}

test("the assistants are listed as models", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  for (const g of ["planner", "scheduler", "sqlrouter"]) assert.ok(ids.includes(g), `${g} not in ${ids}`);
});

test("a non-streamed completion answers with usage and the thread", async () => {
  const { data, headers } = await chat("sqlrouter").say("How many loans per genre in 2025?");
  assert.equal(data.object, "chat.completion");
  assert.equal(data.choices[0].finish_reason, "stop");
  assert.match(data.choices[0].message.content, /fiction/);
  assert.ok(data.usage.prompt_tokens > 0 && data.usage.completion_tokens > 0, JSON.stringify(data.usage));
  assert.equal(data.usage.total_tokens, data.usage.prompt_tokens + data.usage.completion_tokens);
  assert.ok(headers.get("x-thread-id"));
  assert.equal(data.trellis.thread_id, headers.get("x-thread-id"));
  assert.equal(data.trellis.status, "done");
});

test("a streamed completion streams the answer, then the usage", async () => {
  const stream = await client.chat.completions.create({
    model: "sqlrouter", stream: true, stream_options: { include_usage: true },
    messages: [{ role: "user", content: "How many loans per genre in 2025?" }],
  });
  let text = "", finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    role ??= c.delta.role;
    if (c.delta.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(role, "assistant");
  assert.match(text, /fiction/);
  assert.equal(finish, "stop");
  assert.ok(usage?.total_tokens > 0, JSON.stringify(usage));
});

test("a streamed turn that stops for a person sends progress aside and the interaction last", async () => {
  const stream = await client.chat.completions.create({
    model: "planner", stream: true, messages: [{ role: "user", content: "Organise our team offsite" }],
  });
  let text = "", events = 0, last = null;
  for await (const chunk of stream) {
    if (chunk.trellis?.event) events++;
    if (chunk.choices[0]?.delta.content) text += chunk.choices[0].delta.content;
    last = chunk;
  }
  assert.ok(events > 0, "no progress events");
  assert.match(text, /1\. Lisbon/);
  assert.equal(last.choices[0].finish_reason, "stop");
  assert.equal(last.trellis.status, "waiting");
  assert.equal(last.trellis.interaction.mode, "select");
});

test("the planner's question, form, plan and write approval are answered by plain messages", async () => {
  const c = chat("planner");
  let r = await c.say("Organise our team offsite");
  assert.equal(r.headers.get("x-trellis-status"), "waiting");
  assert.equal(r.data.choices[0].finish_reason, "stop");
  assert.equal(r.data.trellis.interaction.mode, "select");
  assert.match(r.data.choices[0].message.content, /1\. Lisbon/);
  const thread = r.data.trellis.thread_id;

  r = await c.say("1");
  assert.equal(r.data.trellis.interaction.mode, "form");
  r = await c.say("people: 12\nlength: 2 days\nnotes: vegetarian");
  assert.equal(r.data.trellis.interaction.kind, "plan_review");
  assert.match(r.data.choices[0].message.content, /Find venues/);
  r = await c.say("yes");
  // Once the venues are known the plan is revised, and shown again for review.
  assert.equal(r.data.trellis.interaction.kind, "plan_review");
  assert.match(r.data.choices[0].message.content, /The plan changed while it ran/);
  r = await c.say("yes");
  assert.equal(r.data.trellis.interaction.kind, "tool_approval");
  assert.equal(r.data.trellis.interaction.tool, "book_venue");
  assert.match(r.data.choices[0].message.content, /Quinta Verde/);
  assert.ok(r.data.trellis.events.some((e) => e.type === "tool_call"), "no tool calls among the events");
  r = await c.say("approve");
  assert.equal(r.data.trellis.status, "done");
  assert.match(r.data.choices[0].message.content, /Your offsite is booked/);
  assert.equal(r.data.trellis.thread_id, thread, "the conversation changed threads");
});

test("an answer that does not fit is asked again, and a structured answer skips the parsing", async () => {
  const c = chat("planner");
  let r = await c.say("Organise our team offsite");
  r = await c.say("9");
  assert.equal(r.data.trellis.status, "reasked");
  assert.equal(r.headers.get("x-trellis-status"), "reasked");
  assert.match(r.data.choices[0].message.content, /9 is not an option/);
  assert.ok(r.data.trellis.interaction.problems.length > 0);
  r = await c.say("(chosen in the app)", { trellis: { answer: { choice: "Berlin" } } });
  assert.equal(r.data.trellis.interaction.mode, "form");
});

test("an answer sent to a thread that waits for none is refused in OpenAI's error shape", async () => {
  const c = chat("sqlrouter");
  const first = await c.say("How many loans per genre in 2025?");
  await assert.rejects(
    client.chat.completions.create({
      model: "sqlrouter", messages: [{ role: "user", content: "yes" }],
      metadata: { thread_id: first.data.trellis.thread_id }, trellis: { answer: true },
    }),
    (e) => e.status === 409 && e.code === "thread_not_waiting",
  );
  await assert.rejects(
    client.chat.completions.create({ model: "nosuch", messages: [{ role: "user", content: "hi" }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found",
  );
});

test("ten turns without a thread ID leave ten user messages in one thread", async () => {
  const c = chat("sqlrouter");
  const threads = new Set();
  for (let i = 1; i <= 10; i++) threads.add((await c.say(`Question ${i}: loans per genre?`)).data.trellis.thread_id);
  assert.equal(threads.size, 1, `the conversation used ${threads.size} threads`);
  const [thread] = threads;
  const state = await (await fetch(`${apiUrl}/threads/${thread}/state`)).json();
  const users = state.values.messages.filter((m) => m.type === "human").map((m) => m.content);
  assert.equal(users.length, 10, JSON.stringify(users));
  assert.equal(users[9], "Question 10: loans per genre?");
});

test("client tools: the reply ends with tool_calls and the tool message answers them", async () => {
  const exampleUrl = process.env.TRELLIS_EXAMPLE_URL;
  assert.ok(exampleUrl, "set TRELLIS_EXAMPLE_URL to examples/servegraphs (its helper graph accepts client tools)");
  const ex = new OpenAI({ apiKey: "unused", baseURL: `${exampleUrl}/v1`, maxRetries: 0 });
  const tools = [{ type: "function", function: { name: "get_location", description: "Where the user is.", parameters: { type: "object", properties: { precision: { type: "string" } } } } }];
  const messages = [{ role: "user", content: "Where am I?" }];
  const first = await ex.chat.completions.create({ model: "helper", messages, tools });
  assert.equal(first.choices[0].finish_reason, "tool_calls");
  const call = first.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, "get_location");
  assert.deepEqual(JSON.parse(call.function.arguments), { precision: "city" });
  messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "Lisbon" });
  const second = await ex.chat.completions.create({ model: "helper", messages, tools });
  assert.equal(second.choices[0].finish_reason, "stop");
  assert.equal(second.choices[0].message.content, "Thanks: your app told me where you are.");
  assert.equal(second.trellis.thread_id, first.trellis.thread_id);

  // Streamed: the SDK's stream helper assembles the call from the chunks.
  const stream = ex.chat.completions.stream({ model: "helper", messages: [{ role: "user", content: "And now?" }], tools });
  const done = await stream.finalChatCompletion();
  assert.equal(done.choices[0].finish_reason, "tool_calls");
  assert.equal(done.choices[0].message.tool_calls[0].function.name, "get_location");

  // An assistant that runs its own tools refuses them, naming itself.
  await assert.rejects(ex.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hi" }], tools }),
    (e) => e.status === 400 && /graph echo\) does not accept client tools/.test(e.message));
});
