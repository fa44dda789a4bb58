// Drives a keyed server with @langchain/langgraph-sdk's own client (the
// package whose directory is argv[2]) against the server at argv[3]:
// tenant A's key is argv[4], tenant B's argv[5]. Prints what each client
// saw as JSON on stdout.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, apiUrl, keyA, keyB] = process.argv.slice(2);
const { Client } = await import(pathToFileURL(join(sdkDir, "dist", "client.js")).href);
const a = new Client({ apiUrl, apiKey: keyA });
const b = new Client({ apiUrl, apiKey: keyB });
const anon = new Client({ apiUrl, apiKey: null, defaultHeaders: {} });
const out = {};

// errorOf runs fn and returns the status the SDK's error carries (or the
// message when it has none), or null when fn succeeded.
async function errorOf(fn) {
  try {
    await fn();
    return null;
  } catch (e) {
    return e.status ?? String(e.message ?? e);
  }
}

const thread = await a.threads.create({ metadata: { owner: "a" } });
out.thread = thread.thread_id;
out.wait = await a.runs.wait(thread.thread_id, "echo", { input: { log: ["hi"] } });
out.parts = [];
for await (const p of a.runs.stream(thread.thread_id, "echo", { input: { log: ["again"] }, streamMode: ["values"] })) {
  out.parts.push(p.event);
}
out.aSearch = (await a.threads.search({ metadata: { owner: "a" } })).map((t) => t.thread_id);
out.bSearch = (await b.threads.search({ metadata: { owner: "a" } })).map((t) => t.thread_id);
out.bGet = await errorOf(() => b.threads.get(thread.thread_id));
out.bState = await errorOf(() => b.threads.getState(thread.thread_id));
out.bStream = await errorOf(async () => {
  for await (const _ of b.runs.stream(thread.thread_id, "echo", { input: { log: ["b"] } })) { /* none */ }
});
out.anonSearch = await errorOf(() => anon.threads.search({}));
console.log(JSON.stringify(out));
