// Drives the store API of a server with a semantic index using
// @langchain/langgraph-sdk's own client (the package whose directory is
// argv[2]) against the server at argv[3]: puts memories (one with
// index: false, one indexed on another field) and searches them with a
// query. Prints the results as JSON on stdout.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, apiUrl] = process.argv.slice(2);
const { Client } = await import(pathToFileURL(join(sdkDir, "dist", "client.js")).href);
const c = new Client({ apiUrl, apiKey: null, defaultHeaders: {} });
const ns = ["memories", "ann"];
await c.store.putItem(ns, "food", { text: "Ann likes Italian food, pasta above all" });
await c.store.putItem(ns, "work", { text: "Ann works night shifts as a nurse" });
await c.store.putItem(ns, "trucks", { text: "Ann likes food trucks" }, { index: false });
await c.store.putItem(ns, "plans", { title: "weekend food plans", text: "none" }, { index: ["title"] });
const found = await c.store.searchItems(["memories"], { query: "what food does Ann like?", limit: 3 });
const plans = await c.store.searchItems(ns, { query: "weekend plans", limit: 1 });
const all = await c.store.searchItems(ns, { limit: 10 });
console.log(JSON.stringify({
  found: found.items.map((i) => ({ key: i.key, score: i.score, namespace: i.namespace })),
  plans: plans.items.map((i) => i.key),
  all: all.items.map((i) => i.key),
}));
