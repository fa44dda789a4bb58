// The MCP endpoint's acceptance suite: @modelcontextprotocol/sdk (1.32.2),
// which nobody here wrote, over streamable HTTP against a real
// `trellis serve` (scripted models) at TRELLIS_URL and examples/servegraphs
// at TRELLIS_EXAMPLE_URL. Run by .ci/serve-sdk:
//
//   TRELLIS_URL=http://127.0.0.1:PORT TRELLIS_EXAMPLE_URL=http://127.0.0.1:PORT2 node --test server/testdata/js/mcp.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const apiUrl = process.env.TRELLIS_URL;
const exampleUrl = process.env.TRELLIS_EXAMPLE_URL;
if (!apiUrl || !exampleUrl) throw new Error("set TRELLIS_URL and TRELLIS_EXAMPLE_URL to a running `trellis serve` and examples/servegraphs");

// connect opens a session; with answer, the client offers elicitation and
// answer(params) returns the elicitation's result.
async function connect(url, answer) {
  const caps = answer ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "trellis-acceptance", version: "1.0.0" }, { capabilities: caps });
  if (answer) client.setRequestHandler(ElicitRequestSchema, async (req) => answer(req.params));
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  return client;
}

test("the assistants are listed as tools with object input schemas", async () => {
  const client = await connect(apiUrl);
  try {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ["planner", "scheduler", "sqlrouter"]) {
      assert.ok(byName[name], `${name} not in ${Object.keys(byName)}`);
      assert.equal(byName[name].inputSchema.type, "object");
      assert.ok(byName[name].inputSchema.properties.message, `${name} takes no message`);
      assert.ok(byName[name].description.length > 0);
    }
    for (const t of tools) assert.match(t.name, /^[A-Za-z0-9_-]{1,64}$/);
  } finally {
    await client.close();
  }
});

test("calling an assistant returns its answer and thread, with progress on the way", async () => {
  const client = await connect(apiUrl);
  try {
    const progress = [];
    const res = await client.callTool({ name: "sqlrouter", arguments: { message: "How many loans per genre in 2025?" } },
      undefined, { onprogress: (p) => progress.push(p), timeout: 120000 });
    assert.equal(res.isError, undefined);
    assert.match(res.content[0].text, /fiction/);
    assert.equal(res.structuredContent.status, "done");
    assert.ok(res.structuredContent.thread_id);
    assert.ok(progress.length > 0, "no progress notifications");
    assert.ok(progress.some((p) => /step router done/.test(p.message)), JSON.stringify(progress.slice(0, 5)));
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
  } finally {
    await client.close();
  }
});

test("a graph that is not a chat takes its state and answers with structured content", async () => {
  const client = await connect(exampleUrl);
  try {
    const progress = [];
    const res = await client.callTool({ name: "steps", arguments: { steps: 2 } }, undefined, { onprogress: (p) => progress.push(p) });
    assert.deepEqual(res.structuredContent.values.done, [1, 2]);
    assert.ok(progress.some((p) => p.message === '{"of":2,"step":1}'), JSON.stringify(progress));
  } finally {
    await client.close();
  }
});

test("a run that waits for a person asks through elicitation and resumes with the answers", async () => {
  const asked = [];
  const client = await connect(apiUrl, (params) => {
    asked.push(params);
    const content = {};
    for (const [k, p] of Object.entries(params.requestedSchema.properties)) {
      if (p.enum) content[k] = p.enum.includes("approve") ? "approve" : p.enum[0];
      else if (p.type === "number" || p.type === "integer") content[k] = 12;
      else if (p.type === "boolean") content[k] = true;
      else if (params.requestedSchema.required?.includes(k)) content[k] = "vegetarian food";
    }
    return { action: "accept", content };
  });
  try {
    const res = await client.callTool({ name: "planner", arguments: { message: "Organise our team offsite" } },
      undefined, { timeout: 120000 });
    assert.match(asked[0].message, /Which city/);
    assert.deepEqual(asked[0].requestedSchema.properties.choice.enum, ["Lisbon", "Berlin", "Prague"]);
    assert.ok(asked.some((a) => /Run this plan/.test(a.message)), "the plan was not put for review");
    assert.ok(!asked.some((a) => /did not fit/.test(a.message)), `an answer was refused: ${asked.map((a) => a.message).join(" | ")}`);
    assert.equal(res.structuredContent.status, "done", JSON.stringify(res).slice(0, 500));
    assert.ok(res.content[0].text.length > 0);
  } finally {
    await client.close();
  }
});

test("without elicitation the result says the run waits, and answer resumes it", async () => {
  const client = await connect(apiUrl);
  try {
    const first = await client.callTool({ name: "planner", arguments: { message: "Organise our team offsite" } });
    const s = first.structuredContent;
    assert.equal(s.status, "waiting");
    assert.match(s.question.text, /Which city/);
    assert.match(first.content[0].text, /call planner again/);
    const next = await client.callTool({ name: "planner", arguments: { thread_id: s.thread_id, answer: { choice: "Lisbon" } } });
    assert.equal(next.structuredContent.thread_id, s.thread_id);
    assert.equal(next.structuredContent.status, "waiting");
    assert.match(next.structuredContent.question.text, /details about the group/);
  } finally {
    await client.close();
  }
});

test("an unknown tool is a protocol error", async () => {
  const client = await connect(apiUrl);
  try {
    await assert.rejects(client.callTool({ name: "no_such_assistant", arguments: {} }), /unknown tool/);
  } finally {
    await client.close();
  }
});
