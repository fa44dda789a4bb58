// Feeds an SSE byte stream through @langchain/langgraph-sdk's own line and
// event decoders (dist/utils/sse.js of the package whose directory is
// argv[2]) and prints what the SDK's streaming client would see.
//
// stdin: {"stream": base64, "chunk": n} — the stream is fed in n-byte
// chunks, as a socket might deliver it. stdout: {"events": [{id, event,
// data}], "heartbeats": n}, where heartbeats counts the comment lines the
// SDK's idle watchdog treats as keep-alives and events are the parts the
// client yields (control parts — an id alone — are left out, as the
// client does).
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const sdkDir = process.argv[2];
const { BytesLineDecoder, SSEDecoder, isSSEControlPart } = await import(
  pathToFileURL(join(sdkDir, "dist", "utils", "sse.js")).href
);

let input = "";
for await (const c of process.stdin) input += c;
const { stream, chunk } = JSON.parse(input);
const bytes = Buffer.from(stream, "base64");

let heartbeats = 0;
const source = new ReadableStream({
  start(controller) {
    for (let i = 0; i < bytes.length; i += chunk) {
      controller.enqueue(new Uint8Array(bytes.subarray(i, i + chunk)));
    }
    controller.close();
  },
});
const countComments = new TransformStream({
  transform(line, controller) {
    if (line.length > 0 && line[0] === 0x3a) heartbeats += 1;
    controller.enqueue(line);
  },
});
const events = [];
const parts = source
  .pipeThrough(BytesLineDecoder())
  .pipeThrough(countComments)
  .pipeThrough(SSEDecoder(undefined));
for await (const part of parts) {
  if (isSSEControlPart(part)) continue;
  events.push({ id: part.id ?? null, event: part.event, data: part.data });
}
process.stdout.write(JSON.stringify({ events, heartbeats }));
