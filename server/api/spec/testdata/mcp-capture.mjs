// Captures the requests @modelcontextprotocol/sdk 1.32.2's streamable HTTP
// client sends to /mcp (POST messages, GET stream, DELETE session), as
// fixtures beside the other SDKs': its fetch records each request and
// passes it on to a running `trellis serve`. Copy it into server/testdata/js
// (where the SDK is installed) and run:
//   node mcp-capture.mjs http://127.0.0.1:PORT ../../api/spec/testdata/sdk
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { writeFileSync } from "node:fs";

const [base, out] = process.argv.slice(2);
const names = { "POST initialize": "mcp_initialize", "POST tools/call": "mcp_tools_call", GET: "mcp_stream", DELETE: "mcp_delete_session" };
async function recordingFetch(url, init) {
  const u = new URL(url);
  const headers = new Headers(init?.headers);
  const body = typeof init?.body === "string" ? JSON.parse(init.body) : null;
  const method = init?.method ?? "GET";
  const name = names[method === "POST" ? `POST ${body?.method}` : method];
  if (name) {
    const rec = { method, path: u.pathname, query: u.search ? u.search.slice(1) : "", content_type: headers.get("content-type"), body };
    writeFileSync(`${out}/${name}.json`, JSON.stringify(rec, null, 2) + "\n");
  }
  return fetch(url, init);
}
const client = new Client({ name: "capture", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { fetch: recordingFetch });
await client.connect(transport);
await client.listTools();
await client.callTool({ name: "sqlrouter", arguments: { message: "How many loans per genre in 2025?" } }, undefined, { onprogress: () => {} });
await new Promise((r) => setTimeout(r, 200)); // the GET stream opens after initialized
await transport.terminateSession();
await client.close();
