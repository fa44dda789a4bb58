// Captures the requests @ag-ui/client 1.0.0's HttpAgent sends to the
// AG-UI wire (POST /ag-ui/{assistant}), as fixtures beside the LangGraph
// SDK's: the agent's fetch records each request and answers a minimal
// run (RUN_STARTED, RUN_FINISHED). Copy it into server/testdata/js (where
// @ag-ui/client is installed) and run:
//   node agui-capture.mjs ../../api/spec/testdata/sdk
import { HttpAgent } from "@ag-ui/client";
import { writeFileSync } from "node:fs";

const out = process.argv[2];
let current = "";
async function fakeFetch(url, init) {
  const u = new URL(url);
  const headers = new Headers(init?.headers);
  const body = JSON.parse(init.body);
  const rec = { method: init.method, path: u.pathname, query: "", content_type: headers.get("content-type"), body };
  writeFileSync(`${out}/${current}.json`, JSON.stringify(rec, null, 2) + "\n");
  const evs = [
    { type: "RUN_STARTED", threadId: body.threadId, runId: body.runId },
    { type: "RUN_FINISHED", threadId: body.threadId, runId: body.runId },
  ];
  return new Response(evs.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(""), { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

const agent = new HttpAgent({ url: "http://127.0.0.1:2024/ag-ui/planner", threadId: "6f1c2a0e-0000-4000-8000-000000000002", fetch: fakeFetch });
agent.addMessage({ id: "m1", role: "user", content: "Organise our offsite" });
agent.addMessage({ id: "m2", role: "assistant", content: "", toolCalls: [{ id: "call_1", type: "function", function: { name: "get_location", arguments: "{}" } }] });
agent.addMessage({ id: "m3", role: "tool", toolCallId: "call_1", content: "Lisbon" });
current = "agui_run";
await agent.runAgent({
  runId: "r1",
  tools: [{ name: "get_location", description: "Where the user is.", parameters: { type: "object", properties: {} } }],
  context: [{ description: "timezone", value: "Europe/Lisbon" }],
  forwardedProps: { source: "capture" },
});
current = "agui_resume";
await agent.runAgent({ runId: "r2", resume: [{ interruptId: "task:0", status: "resolved", payload: { choice: "Lisbon" } }] });
