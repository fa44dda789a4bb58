#!/usr/bin/env node
// The load generator: drives a LangGraph-API server with C concurrent
// clients, each looping "create a thread, POST /threads/{id}/runs/wait" on
// a one-node graph for D seconds (or N runs in all), then times the first
// SSE event of K streamed runs, then reads the server's resident memory.
//
//   node loadgen.mjs --url http://127.0.0.1:2025 --assistant echo \
//     --clients 10 --seconds 10 --stream 20 --pid 1234
//
// It prints one JSON object on stdout and a readable line on stderr.
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { client, firstEvent, oneRun, quantile, rssMiB } from "./lib.mjs";

/**
 * load runs one measurement and returns its figures:
 * runs, errors, seconds, runs_per_s, p50_ms/p99_ms (runs/wait),
 * cycle_p50_ms (thread + run), first_event_p50_ms, rss_mib.
 * @param {{url: string, assistant?: string, clients?: number, seconds?: number,
 *          runs?: number, stream?: number, pid?: number}} o
 */
export async function load(o) {
  const clients = o.clients ?? 1;
  const assistant = o.assistant ?? "echo";
  if (!(clients >= 1)) throw new Error(`clients must be at least 1, got ${o.clients}`);
  if (!(o.seconds > 0) && !(o.runs > 0)) throw new Error("give --seconds or --runs (more than 0)");
  const c = client(o.url, clients + 1);
  const waits = [];
  const cycles = [];
  let errors = 0;
  let firstError = "";
  let started = 0;
  const t0 = performance.now();
  const deadline = o.seconds > 0 ? t0 + o.seconds * 1000 : Infinity;
  const more = () => performance.now() < deadline && (!(o.runs > 0) || started < o.runs);
  try {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (more()) {
          started++;
          try {
            const r = await oneRun(c, assistant);
            waits.push(r.waitMs);
            cycles.push(r.cycleMs);
          } catch (e) {
            errors++;
            firstError ||= String(e.message ?? e);
            if (errors > 20 && errors > waits.length) throw new Error(`mostly errors: ${firstError}`);
          }
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const firsts = [];
    for (let i = 0; i < (o.stream ?? 0); i++) {
      try {
        firsts.push((await firstEvent(c, assistant)).firstMs);
      } catch (e) {
        errors++;
        firstError ||= String(e.message ?? e);
      }
    }
    const out = {
      url: o.url,
      assistant,
      clients,
      runs: waits.length,
      errors,
      first_error: firstError || undefined,
      seconds: round(seconds, 3),
      runs_per_s: round(waits.length / seconds, 2),
      p50_ms: round(quantile(waits, 0.5), 3),
      p99_ms: round(quantile(waits, 0.99), 3),
      cycle_p50_ms: round(quantile(cycles, 0.5), 3),
      first_event_p50_ms: firsts.length ? round(quantile(firsts, 0.5), 3) : undefined,
      first_events: firsts.length,
    };
    if (o.pid) {
      const rss = rssMiB(o.pid);
      out.rss_mib = round(rss.total, 1);
      out.rss_largest_mib = round(rss.largest, 1);
    }
    return out;
  } finally {
    await c.close();
  }
}

/** line is the readable one-line summary of load's figures. */
export function line(r) {
  const parts = [
    `${r.clients} client${r.clients === 1 ? "" : "s"}`,
    `${r.runs} runs in ${r.seconds.toFixed(1)} s = ${r.runs_per_s.toFixed(1)} runs/s`,
    `wait p50 ${r.p50_ms.toFixed(2)} ms p99 ${r.p99_ms.toFixed(2)} ms`,
  ];
  if (r.first_event_p50_ms !== undefined) parts.push(`first SSE event p50 ${r.first_event_p50_ms.toFixed(2)} ms`);
  if (r.rss_mib !== undefined) parts.push(`RSS ${r.rss_mib.toFixed(1)} MiB`);
  if (r.errors) parts.push(`${r.errors} errors (${r.first_error})`);
  return parts.join(", ");
}

function round(x, d) {
  if (!Number.isFinite(x)) return null;
  const f = 10 ** d;
  return Math.round(x * f) / f;
}

async function main() {
  const { values } = parseArgs({
    options: {
      url: { type: "string" },
      assistant: { type: "string", default: "echo" },
      clients: { type: "string", default: "1" },
      seconds: { type: "string" },
      runs: { type: "string" },
      stream: { type: "string", default: "0" },
      pid: { type: "string" },
    },
  });
  if (!values.url) throw new Error("--url is required (the server's base URL)");
  const r = await load({
    url: values.url,
    assistant: values.assistant,
    clients: Number(values.clients),
    seconds: values.seconds ? Number(values.seconds) : undefined,
    runs: values.runs ? Number(values.runs) : undefined,
    stream: Number(values.stream),
    pid: values.pid ? Number(values.pid) : undefined,
  });
  process.stdout.write(JSON.stringify(r) + "\n");
  process.stderr.write(line(r) + "\n");
  if (r.runs === 0 || r.errors > 0) process.exitCode = 1;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e) => {
    process.stderr.write(`loadgen: ${e.message ?? e}\n`);
    process.exit(2);
  });
}
