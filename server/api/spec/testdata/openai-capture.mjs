// Captures the requests the openai npm SDK 5.12.0 sends to the chat wire
// (/v1/models, /v1/chat/completions), as fixtures beside the LangGraph
// SDK's: the client's fetch records each request and answers a minimal
// success. Copy it into server/testdata/js (where openai is installed) and run:
//   node openai-capture.mjs ../../api/spec/testdata/sdk
import OpenAI from "openai";
import { writeFileSync } from "node:fs";

const out = process.argv[2];
let current = "";
const seen = new Set();
async function fakeFetch(url, init) {
  const u = new URL(url);
  const headers = new Headers(init?.headers);
  const rec = {
    method: init?.method ?? "GET",
    path: u.pathname,
    query: u.search ? u.search.slice(1) : "",
    content_type: headers.get("content-type"),
    body: typeof init?.body === "string" ? JSON.parse(init.body) : null,
  };
  if (!seen.has(current)) {
    seen.add(current);
    writeFileSync(`${out}/${current}.json`, JSON.stringify(rec, null, 2) + "\n");
  }
  if (rec.body?.stream) {
    return new Response("data: [DONE]\n\n", { status: 200, headers: { "Content-Type": "text/event-stream" } });
  }
  const body = u.pathname.endsWith("/models") ? { object: "list", data: [] } : { id: "c", object: "chat.completion", created: 0, model: "planner", choices: [] };
  return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
}
const client = new OpenAI({ apiKey: "unused", baseURL: "http://127.0.0.1:2024/v1", fetch: fakeFetch, maxRetries: 0 });
async function run(name, fn) { current = name; try { const r = await fn(); if (r && r[Symbol.asyncIterator]) { for await (const _ of r); } } catch (e) { console.error(name, e.message); } }

await run("openai_models_list", () => client.models.list());
await run("openai_chat_completions", () => client.chat.completions.create({
  model: "planner",
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Organise our offsite" },
    { role: "assistant", content: "Which city should the offsite be in?" },
    { role: "user", content: [{ type: "text", text: "1" }] },
  ],
  metadata: { thread_id: "6f1c2a0e-0000-4000-8000-000000000001" },
  temperature: 0.2, max_completion_tokens: 512, user: "u1",
}));
await run("openai_chat_completions_stream", () => client.chat.completions.create({
  model: "planner", stream: true, stream_options: { include_usage: true },
  messages: [{ role: "user", content: "Organise our offsite" }],
  trellis: { answer: { choice: "Lisbon" } },
}));
