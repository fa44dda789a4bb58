#!/usr/bin/env node
// The side-by-side run: in interleaved rounds, start each server on
// 127.0.0.1 (LangGraph's JS dev server in memory; Trellis's servegraphs echo
// on embedded SQLite; the same on PostgreSQL, a fresh database per round),
// warm it, drive it with 1, 10 and 50 clients (loadgen.mjs), time the first
// SSE event, read its RSS, stop it by its PID. Prints a markdown table of
// the medians over rounds with ratios to LangGraph's server, the load
// average and the CPU model.
//
//   npm ci && node sidebyside.mjs --rounds 3 --seconds 10
//   node sidebyside.mjs --rounds 1 --seconds 3 --check   # CI
//
// PostgreSQL comes from TRELLIS_TEST_PG_DSN (psql creates a database per
// round beside the one it names); without it that server is left out
// unless --check, which then fails.
import { writeFileSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { execFileSync } from "node:child_process";
import { load, line } from "./loadgen.mjs";
import { median } from "./lib.mjs";
import { buildServegraphs, freshDatabase, scratch, startLangGraph, startTrellis } from "./servers.mjs";

const { values: opt } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "10" },
    warm: { type: "string", default: "3" },
    clients: { type: "string", default: "1,10,50" },
    stream: { type: "string", default: "20" },
    servers: { type: "string", default: "langgraph,sqlite,postgres" },
    servegraphs: { type: "string" },
    json: { type: "string" },
    check: { type: "boolean", default: false },
  },
});

const rounds = Number(opt.rounds);
const seconds = Number(opt.seconds);
const warm = Number(opt.warm);
const levels = opt.clients.split(",").map(Number);
if (!(rounds >= 1) || !(seconds > 0) || levels.some((n) => !(n >= 1))) {
  throw new Error("--rounds, --seconds and --clients must be positive numbers");
}

const dir = scratch("trellis-sidebyside-");
const pgDSN = process.env.TRELLIS_TEST_PG_DSN;
let names = opt.servers.split(",");
if (names.includes("postgres") && !pgDSN) {
  if (opt.check) throw new Error("TRELLIS_TEST_PG_DSN is not set: the PostgreSQL server cannot run");
  console.error("TRELLIS_TEST_PG_DSN is not set: leaving PostgreSQL out");
  names = names.filter((n) => n !== "postgres");
}
const labels = {
  langgraph: "LangGraph's own JS server (`langgraphjs dev` 1.5.1, in-memory, no durability)",
  sqlite: "`trellis serve` (`examples/servegraphs` echo), embedded SQLite",
  postgres: "`trellis serve`, PostgreSQL on the same box",
};
for (const n of names) if (!labels[n]) throw new Error(`unknown server ${n}; known: ${Object.keys(labels).join(", ")}`);

const bin = names.some((n) => n !== "langgraph") ? (opt.servegraphs ?? buildServegraphs(dir)) : "";

/** startServer starts server name for round r and returns {pid, url, stop}. */
async function startServer(name, r) {
  switch (name) {
    case "langgraph":
      return startLangGraph(dir);
    case "sqlite":
      return startTrellis(bin, join(dir, `round${r}.db`), dir);
    case "postgres": {
      const db = freshDatabase(pgDSN, `trellis_sbs_${process.pid}_${r}`);
      try {
        const s = await startTrellis(bin, db.dsn, dir);
        return { ...s, stop: async () => (await s.stop(), db.drop()) };
      } catch (e) {
        db.drop();
        throw e;
      }
    }
  }
}

const results = {}; // name -> list of per-round {levels: {n: figures}, first_event_p50_ms, rss_mib}
const load0 = loadavg();
const t0 = Date.now();
const failed = [];
for (let r = 1; r <= rounds; r++) {
  // Rotate the order each round so no server always runs first or last.
  const order = names.map((_, i) => names[(i + r - 1) % names.length]);
  for (const name of order) {
    console.error(`round ${r}: ${name}: starting`);
    const s = await startServer(name, r);
    try {
      await load({ url: s.url, clients: 4, seconds: warm });
      const row = { levels: {} };
      for (const [i, n] of levels.entries()) {
        const fig = await load({
          url: s.url,
          clients: n,
          seconds,
          stream: i === 0 ? Number(opt.stream) : 0,
          pid: i === levels.length - 1 ? s.pid : undefined,
        });
        console.error(`round ${r}: ${name}: ${line(fig)}`);
        row.levels[n] = fig;
        if (fig.first_event_p50_ms !== undefined) row.first_event_p50_ms = fig.first_event_p50_ms;
        if (fig.rss_mib !== undefined) {
          row.rss_mib = fig.rss_mib;
          row.rss_largest_mib = fig.rss_largest_mib;
        }
        if (fig.runs === 0 || fig.errors > 0) failed.push(`${name} round ${r} at ${n} clients: ${fig.runs} runs, ${fig.errors} errors (${fig.first_error ?? ""})`);
      }
      (results[name] ??= []).push(row);
    } finally {
      await s.stop();
    }
  }
}
const load1 = loadavg();

// Medians over rounds.
const med = {};
for (const name of names) {
  const rows = results[name] ?? [];
  const m = { rounds: rows.length, levels: {} };
  for (const n of levels) {
    const figs = rows.map((x) => x.levels[n]);
    m.levels[n] = { runs_per_s: median(figs.map((f) => f.runs_per_s)), p50_ms: median(figs.map((f) => f.p50_ms)), p99_ms: median(figs.map((f) => f.p99_ms)) };
  }
  m.first_event_p50_ms = median(rows.map((x) => x.first_event_p50_ms));
  m.rss_mib = median(rows.map((x) => x.rss_mib));
  m.rss_largest_mib = median(rows.map((x) => x.rss_largest_mib));
  med[name] = m;
}

const cpu = (() => {
  const m = /^model name\s*:\s*(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
  return `${m ? m[1] : cpus()[0]?.model ?? "unknown"}, ${cpus().length} CPUs`;
})();
const goVersion = (() => {
  try {
    return execFileSync("go", ["env", "GOVERSION"]).toString().trim();
  } catch {
    return "go ?";
  }
})();

const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + " ms";
const rps = (x) => x.toFixed(1) + " runs/s";
const lg = med.langgraph;
// times: how many times better Trellis is (throughput: T/L; latency: L/T).
const times = (t, l, lower) => (lg && Number.isFinite(t) && Number.isFinite(l) && t > 0 && l > 0 ? ` (${(lower ? l / t : t / l).toFixed(2)}×)` : "");
const hi = levels[levels.length - 1];
const lo = levels[0];
const cols = [`${lo} client p50`, ...levels.slice(1).map((n) => `${n} clients`), "first SSE event p50", "RSS after load"];
const out = [];
out.push(`| server (medians of ${rounds} interleaved round${rounds === 1 ? "" : "s"}, ${seconds} s a point) | ${cols.join(" | ")} |`);
out.push(`|---|${cols.map(() => "---").join("|")}|`);
for (const name of names) {
  const m = med[name];
  const isT = name !== "langgraph";
  const cells = [ms(m.levels[lo].p50_ms) + (isT ? times(m.levels[lo].p50_ms, lg?.levels[lo].p50_ms, true) : "")];
  for (const n of levels.slice(1)) {
    let c = rps(m.levels[n].runs_per_s) + (isT ? times(m.levels[n].runs_per_s, lg?.levels[n].runs_per_s, false) : "");
    if (n === hi) c += ` (p50 ${ms(m.levels[n].p50_ms)})`;
    cells.push(c);
  }
  cells.push(ms(m.first_event_p50_ms) + (isT ? times(m.first_event_p50_ms, lg?.first_event_p50_ms, true) : ""));
  cells.push(`${m.rss_mib.toFixed(1)} MiB`);
  out.push(`| ${labels[name]} | ${cells.join(" | ")} |`);
}
out.push("");
out.push("Ratios in parentheses are Trellis against LangGraph's server: runs/s as Trellis/LangGraph, latencies as LangGraph/Trellis (how many times sooner); RSS is the server's whole process tree (VmRSS).");
out.push(`Load average ${load0.map((x) => x.toFixed(2)).join(" ")} at the start, ${load1.map((x) => x.toFixed(2)).join(" ")} at the end; CPU: ${cpu}; node ${process.version}, ${goVersion}; ${((Date.now() - t0) / 1000).toFixed(0)} s in all.`);
console.log(out.join("\n"));

if (opt.json) writeFileSync(opt.json, JSON.stringify({ rounds, seconds, levels, cpu, loadavg: [load0, load1], medians: med, results }, null, 2));
rmSync(dir, { recursive: true, force: true });
if (opt.check && failed.length) {
  console.error("side-by-side check failed:\n" + failed.join("\n"));
  process.exit(1);
}
