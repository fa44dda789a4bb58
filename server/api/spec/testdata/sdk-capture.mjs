// Captures the requests @langchain/langgraph-sdk 1.15.0 sends, as fixtures.
import { Client } from "@langchain/langgraph-sdk";
import { writeFileSync } from "node:fs";

const out = process.argv[2];
let current = "";
const seen = new Set();
async function fakeFetch(url, init) {
  const u = new URL(url);
  const rec = {
    method: init?.method ?? "GET",
    path: u.pathname,
    query: u.search ? u.search.slice(1) : "",
    content_type: init?.headers?.["content-type"] ?? null,
    body: typeof init?.body === "string" ? JSON.parse(init.body) : null,
  };
  if (!seen.has(current)) {
    seen.add(current);
    writeFileSync(`${out}/${current}.json`, JSON.stringify(rec, null, 2) + "\n");
  }
  if (u.pathname.endsWith("/stream")) {
    return new Response("event: end\ndata: null\n\n", { status: 200, headers: { "Content-Type": "text/event-stream" } });
  }
  return new Response(u.pathname.endsWith("/search") || u.pathname.endsWith("/history") || u.pathname.endsWith("/versions") ? "[]" : '{"items": []}', { status: 200, headers: { "Content-Type": "application/json" } });
}
const client = new Client({ apiUrl: "http://127.0.0.1:2024", callerOptions: { fetch: fakeFetch, maxRetries: 0 } });
const T = "6f1c2a0e-0000-4000-8000-000000000001";
const R = "1f0c2a0e-0000-4000-8000-000000000002";
async function run(name, fn) { current = name; try { const r = fn(); if (r && r[Symbol.asyncIterator]) { for await (const _ of r); } else { await r; } } catch (e) { console.error(name, e.message); } }
async function drain(gen) { for await (const _ of gen); }

await run("assistants_create", () => client.assistants.create({ graphId: "planner", assistantId: "a-planner-2", config: { configurable: { model: "scripted" }, tags: ["demo"], recursion_limit: 40 }, context: { locale: "zh-CN" }, metadata: { team: "ops" }, ifExists: "do_nothing", name: "Planner (scripted)", description: "plans a trip" }));
await run("assistants_update", () => client.assistants.update("a-planner-2", { graphId: "planner", config: { configurable: { model: "other" } }, context: { locale: "en" }, metadata: { v: 2 }, name: "Planner 2", description: "d" }));
await run("assistants_search", () => client.assistants.search({ graphId: "planner", name: "Plan", metadata: { team: "ops" }, limit: 20, offset: 5, sortBy: "updated_at", sortOrder: "desc", select: ["assistant_id", "name"] }));
await run("assistants_search_default", () => client.assistants.search());
await run("assistants_count", () => client.assistants.count({ graphId: "planner", metadata: { team: "ops" }, name: "P" }));
await run("assistants_versions", () => client.assistants.getVersions("a-planner-2", { metadata: { v: 2 }, limit: 3, offset: 1 }));
await run("assistants_latest", () => client.assistants.setLatest("a-planner-2", 2));
await run("assistants_graph", () => client.assistants.getGraph("a-planner-2", { xray: 2 }));
await run("assistants_graph_xray_true", () => client.assistants.getGraph("a-planner-2", { xray: true }));
await run("assistants_subgraphs", () => client.assistants.getSubgraphs("a-planner-2", { namespace: "research", recurse: true }));
await run("assistants_delete", () => client.assistants.delete("a-planner-2", { deleteThreads: true }));

await run("threads_create", () => client.threads.create({ threadId: T, ifExists: "do_nothing", graphId: "planner", metadata: { user: "u1" }, ttl: 60, supersteps: [{ updates: [{ values: { messages: [{ role: "user", content: "hi" }] }, asNode: "__input__" }] }, { updates: [{ values: null, command: { goto: "plan" }, asNode: "router" }] }] }));
await run("threads_create_empty", () => client.threads.create());
await run("threads_update", () => client.threads.update(T, { metadata: { title: "Trip" }, ttl: { ttl: 30, strategy: "delete" }, returnMinimal: true }));
await run("threads_search", () => client.threads.search({ metadata: { user: "u1" }, ids: [T], limit: 5, offset: 0, status: "interrupted", sortBy: "updated_at", sortOrder: "asc", select: ["thread_id", "values"], values: { step: 2 }, extract: { last: "values.messages[-1]" } }));
await run("threads_count", () => client.threads.count({ metadata: { user: "u1" }, values: { step: 2 }, status: "idle" }));
await run("threads_copy", () => client.threads.copy(T));
await run("threads_prune", () => client.threads.prune([T, R], { strategy: "keep_latest" }));
await run("threads_get", () => client.threads.get(T, { include: ["ttl"] }));
await run("threads_get_state", () => client.threads.getState(T, undefined, { subgraphs: true, select: ["values.messages", "next"] }));
await run("threads_get_state_at", () => client.threads.getState(T, "1ef-ckpt", { subgraphs: false }));
await run("threads_get_state_checkpoint", () => client.threads.getState(T, { thread_id: T, checkpoint_ns: "", checkpoint_id: "1ef-ckpt", checkpoint_map: null }, { subgraphs: true, select: ["values"] }));
await run("threads_update_state", () => client.threads.updateState(T, { values: { messages: [{ type: "human", content: "edit" }] }, checkpointId: "1ef-ckpt", asNode: "ask" }));
await run("threads_update_state_checkpoint", () => client.threads.updateState(T, { values: { topic: "x" }, checkpoint: { thread_id: T, checkpoint_ns: "", checkpoint_id: "1ef-ckpt", checkpoint_map: null } }));
await run("threads_patch_state", () => client.threads.patchState(T, { reviewed: true }));
await run("threads_history", () => client.threads.getHistory(T, { limit: 20, before: { configurable: { checkpoint_id: "1ef-ckpt" } }, metadata: { source: "loop" }, checkpoint: { checkpoint_ns: "" }, select: ["values", "checkpoint"] }));
await run("threads_join_stream", () => client.threads.joinStream(T, { lastEventId: "7", streamMode: ["run_modes", "state_update"] }));
await run("threads_delete", () => client.threads.delete(T));

const full = {
  input: { messages: [{ role: "user", content: "Plan a trip to Hangzhou" }] },
  config: { configurable: { user_id: "u1" }, tags: ["t"], recursion_limit: 50 },
  context: { locale: "zh-CN" }, metadata: { source: "test" },
  streamMode: ["values", "updates", "messages-tuple"], streamSubgraphs: true, streamResumable: true,
  feedbackKeys: ["score"], interruptBefore: ["approve"], interruptAfter: "*",
  checkpointId: "1ef-ckpt", webhook: "https://example.com/hook", strictResume: true,
  multitaskStrategy: "enqueue", onCompletion: "keep", onDisconnect: "continue", afterSeconds: 2,
  ifNotExists: "create", checkpointDuring: true, durability: "sync", streamNamespaces: ["", "research"],
};
await run("runs_stream", () => client.runs.stream(T, "planner", full));
await run("runs_stream_resume", () => client.runs.stream(T, "planner", { command: { resume: "approve" }, streamMode: "values" }));
await run("runs_stream_goto_sends", () => client.runs.stream(T, "planner", { command: { goto: [{ node: "worker", input: { item: 1 } }, "summarize"], update: [["topic", "x"], ["topic", "y"]] } }));
await run("runs_stream_stateless", () => client.runs.stream(null, "planner", { input: { messages: [{ type: "human", content: "hi" }] }, streamMode: "messages-tuple" }));
await run("runs_create", () => client.runs.create(T, "planner", { ...full, checkpoint: { checkpoint_ns: "", checkpoint_id: "1ef-ckpt", checkpoint_map: null }, checkpointId: undefined }));
await run("runs_create_stateless", () => client.runs.create(null, "planner", { input: { q: 1 }, onCompletion: "delete" }));
await run("runs_wait", () => client.runs.wait(T, "planner", { ...full, command: { resume: { "int-1": { choice: "b" } }, update: { topic: "x" }, goto: "plan" }, input: null }));
await run("runs_wait_stateless", () => client.runs.wait(null, "planner", { input: { q: 2 }, raiseError: false }));
await run("runs_batch", () => client.runs.createBatch([{ assistantId: "planner", input: { q: 1 }, streamMode: "values", multitaskStrategy: "reject" }, { assistantId: "builder", input: null, metadata: { n: 2 }, afterSeconds: 1 }]));
await run("runs_list", () => client.runs.list(T, { limit: 7, offset: 2, status: "success", select: ["run_id", "status"] }));
await run("runs_get", () => client.runs.get(T, R));
await run("runs_cancel", () => client.runs.cancel(T, R, true, "rollback"));
await run("runs_cancel_taken", () => client.runs.cancel(T, R, false, "interrupt", { reason: "taken" }));
await run("runs_cancel_many", () => client.runs.cancelMany({ threadId: T, runIds: [R], action: "interrupt" }));
await run("runs_cancel_many_status", () => client.runs.cancelMany({ status: "all", action: "rollback" }));
await run("runs_join", () => client.runs.join(T, R, { cancelOnDisconnect: true }));
await run("runs_join_stream", () => client.runs.joinStream(T, R, { lastEventId: "-1", streamMode: ["values", "custom"], cancelOnDisconnect: true, streamNamespaces: ["research"] }));
await run("runs_delete", () => client.runs.delete(T, R));

await run("store_put", () => client.store.putItem(["users", "u1", "prefs"], "theme", { color: "dark", size: 3 }, { index: ["color"], ttl: 60 }));
await run("store_put_noindex", () => client.store.putItem(["users"], "k", { a: 1 }, { index: false, ttl: null }));
await run("store_get", () => client.store.getItem(["users", "u1", "prefs"], "theme", { refreshTtl: true }));
await run("store_delete", () => client.store.deleteItem(["users", "u1", "prefs"], "theme"));
await run("store_search", () => client.store.searchItems(["users"], { filter: { color: "dark" }, limit: 5, offset: 1, query: "dark theme", refreshTtl: false }));
await run("store_namespaces", () => client.store.listNamespaces({ prefix: ["users"], suffix: ["prefs"], maxDepth: 2, limit: 50, offset: 0 }));
await run("assistants_get", () => client.assistants.get("a-planner-2"));
await run("assistants_schemas", () => client.assistants.getSchemas("a-planner-2"));
await run("assistants_subgraphs_all", () => client.assistants.getSubgraphs("a-planner-2"));
await run("threads_get_state_latest", () => client.threads.getState(T));
await run("runs_join_stream_stateless", () => client.runs.joinStream(null, R, { lastEventId: "3" }));
await run("runs_stream_interrupt_strategy", () => client.runs.stream(T, "planner", { input: { messages: [{ role: "user", content: "actually, Suzhou" }] }, multitaskStrategy: "interrupt", onDisconnect: "cancel", durability: "exit", checkpointDuring: false }));

await run("crons_create", () => client.crons.create("planner", { schedule: "*/5 * * * *", input: { messages: [{ role: "user", content: "status?" }] }, config: { tags: ["cron"] }, context: { locale: "en" }, metadata: { team: "ops" }, interruptBefore: ["plan"], interruptAfter: "*", webhook: "https://example.com/hook", onRunCompleted: "keep", multitaskStrategy: "enqueue", checkpointDuring: true, durability: "async", enabled: true, timezone: "Europe/Paris", streamMode: ["values", "updates"], streamSubgraphs: true, streamResumable: true, endTime: "2030-01-01T00:00:00Z" }));
await run("crons_create_for_thread", () => client.crons.createForThread(T, "planner", { schedule: "0 9 * * mon-fri", input: { messages: [{ role: "user", content: "daily" }] }, metadata: { team: "ops" }, multitaskStrategy: "enqueue", enabled: false, endTime: "2030-01-01T00:00:00Z" }));
await run("crons_update", () => client.crons.update("c-1", { schedule: "0 * * * *", timezone: "UTC", endTime: "2031-01-01T00:00:00Z", input: { n: 2 }, metadata: { v: 2 }, config: { tags: ["x"] }, context: { locale: "fr" }, webhook: "https://example.com/h2", interruptBefore: ["a"], interruptAfter: ["b"], onRunCompleted: "delete", enabled: false, streamMode: "values", streamSubgraphs: false, streamResumable: false, durability: "sync" }));
await run("crons_delete", () => client.crons.delete("c-1"));
await run("crons_search", () => client.crons.search({ assistantId: "planner", threadId: T, enabled: true, limit: 5, offset: 1, sortBy: "next_run_date", sortOrder: "asc", select: ["cron_id", "schedule", "now"], metadata: { team: "ops" } }));
await run("crons_search_default", () => client.crons.search());
await run("crons_count", () => client.crons.count({ assistantId: "planner", threadId: T, metadata: { team: "ops" } }));
