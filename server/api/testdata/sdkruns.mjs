// Drives the run routes with @langchain/langgraph-sdk's own client (the
// package whose directory is argv[2]) against the server at argv[3], and
// prints what the client saw as JSON on stdout.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const sdkDir = process.argv[2];
const apiUrl = process.argv[3];
const { Client } = await import(pathToFileURL(join(sdkDir, "dist", "client.js")).href);
const client = new Client({ apiUrl });
const out = {};

// stream: the run's events as the SDK yields them, and onRunCreated.
out.created = null;
out.stream = [];
for await (const part of client.runs.stream("sdk-t1", "steps-a", {
  input: { log: ["go"] },
  streamMode: ["values", "updates"],
  ifNotExists: "create",
  onRunCreated: (m) => { out.created = m; },
})) {
  out.stream.push({ event: part.event, id: part.id ?? null, data: part.data });
}

// joinStream replays the whole finished run with Last-Event-ID -1.
out.replay = [];
for await (const part of client.runs.joinStream("sdk-t1", out.created.run_id, { lastEventId: "-1" })) {
  out.replay.push(part.event);
}

// wait: the final values; a stateless one too.
out.wait = await client.runs.wait("sdk-t1", "steps-a", { input: { log: ["again"] } });
out.statelessWait = await client.runs.wait(null, "steps-a", { input: { log: ["s"] } });

// wait on a failing run throws "error: message".
try {
  await client.runs.wait("sdk-t2", "steps-a", { input: { log: ["fail"] }, ifNotExists: "create" });
  out.waitError = null;
} catch (e) {
  out.waitError = String(e.message);
}

// interrupt, then resume with a command.
out.interrupted = await client.runs.wait("sdk-t3", "steps-a", { input: { log: ["ask"] }, ifNotExists: "create" });
out.resumed = await client.runs.wait("sdk-t3", "steps-a", { command: { resume: "yes" } });

// list and get.
out.list = await client.runs.list("sdk-t1");
out.get = await client.runs.get("sdk-t1", out.created.run_id);

process.stdout.write(JSON.stringify(out));
