// Reads Trellis's LangChain message JSON with @langchain/langgraph-sdk's
// own code, in the package directory given as argv[2] (installed with its
// peer @langchain/core beside it): the messages-tuple chunks go through
// the SDK's MessageTupleManager, as useStream does, and state messages
// through its message coercion, as values/getState are read.
//
// stdin: {"tuples": [[chunk, metadata], ...], "values": [message, ...]}
// stdout: {"assembled": {id: message dict}, "values": [message dict]}
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const sdkDir = process.argv[2];
const load = (p) => import(pathToFileURL(join(sdkDir, "dist", ...p.split("/"))).href);
const { MessageTupleManager, toMessageDict } = await load("ui/messages.js");
const { tryCoerceMessageLikeToMessage } = await load("stream/message-coercion.js");

let input = "";
for await (const c of process.stdin) input += c;
const { tuples, values } = JSON.parse(input);

const manager = new MessageTupleManager();
const ids = new Set();
for (const [chunk, metadata] of tuples) {
  const id = manager.add(chunk, metadata);
  if (!id) throw new Error("the SDK found no message id in a chunk");
  ids.add(id);
}
const assembled = {};
for (const id of ids) {
  const entry = manager.get(id);
  const dict = toMessageDict(entry.chunk);
  assembled[id] = {
    type: dict.type,
    id: dict.id,
    content: dict.content,
    reasoning: dict.additional_kwargs?.reasoning_content ?? null,
    tool_calls: entry.chunk.tool_calls,
    node: entry.metadata?.langgraph_node ?? null,
  };
}

const out = values.map((v) => {
  const m = tryCoerceMessageLikeToMessage(v);
  return {
    type: m.getType(),
    id: m.id ?? null,
    text: m.text,
    tool_calls: m.tool_calls ?? null,
    invalid_tool_calls: m.invalid_tool_calls ?? null,
    tool_call_id: m.tool_call_id ?? null,
    status: m.status ?? null,
    reasoning: m.additional_kwargs?.reasoning_content ?? null,
  };
});
process.stdout.write(JSON.stringify({ assembled, values: out }));
