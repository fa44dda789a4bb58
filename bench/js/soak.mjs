#!/usr/bin/env node
// The soak: N runs (a fresh thread, then runs/wait on the echo graph)
// through Trellis's service (examples/servegraphs on embedded SQLite, on
// loopback) with bounded concurrency, sampling the server's resident
// memory (/proc), Go heap in use and goroutines (/metrics) every --every
// runs into a CSV, and plotting it (plot.mjs). It then waits for the
// server to go idle and compares goroutines with the idle count before the
// load.
//
//   node soak.mjs --runs 100000 --clients 8 --every 1000 --csv soak.csv --svg soak.svg
//   node soak.mjs --runs 3000 --every 250 --check     # CI
//
// --minutes bounds the load in time: no run starts after it (the figures
// then say how many ran). The CSV is written as samples come, so a soak cut
// short still leaves its series.
//
// With --check it fails when the idle goroutines do not return to within
// --goroutine-slack of the baseline, or RSS grows more than --max-growth-mib
// from the end of the warm-up (the first --warmup fraction of the runs) to
// the largest sample after it. The idle baseline is taken after at least
// --settle seconds (default 10) of load, once the server's background
// goroutines have all started.
import { appendFileSync, statSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadavg } from "node:os";
import { client, metric, oneRun, rssMiB } from "./lib.mjs";
import { svg } from "./plot.mjs";
import { buildServegraphs, scratch, startTrellis } from "./servers.mjs";

const { values: opt } = parseArgs({
  options: {
    runs: { type: "string", default: "100000" },
    clients: { type: "string", default: "8" },
    every: { type: "string", default: "1000" },
    warmup: { type: "string", default: "0.2" },
    settle: { type: "string", default: "10" },
    minutes: { type: "string" },
    csv: { type: "string" },
    svg: { type: "string" },
    servegraphs: { type: "string" },
    check: { type: "boolean", default: false },
    "max-growth-mib": { type: "string", default: "64" },
    "goroutine-slack": { type: "string", default: "8" },
  },
});
const total = Number(opt.runs);
const clients = Number(opt.clients);
const every = Number(opt.every);
const warmup = Number(opt.warmup);

if (!(total > 0 && clients > 0 && every > 0 && warmup >= 0 && warmup < 1)) {
  throw new Error("--runs, --clients and --every must be positive, --warmup in [0, 1)");
}

const dir = scratch("trellis-soak-");
const bin = opt.servegraphs ?? buildServegraphs(dir);
const dbPath = join(dir, "soak.db");
const s = await startTrellis(bin, dbPath, dir);
// c carries the load; probe, on its own single connection, reads /metrics,
// so that the idle goroutine counts are taken with the load's keep-alive
// connections closed (each open one holds a goroutine in the server).
let c = client(s.url, clients);
const probe = client(s.url, 1);
const load0 = loadavg();

const fileMiB = (p) => {
  try {
    return statSync(p).size / 2 ** 20;
  } catch {
    return 0;
  }
};

/** sample reads the server's figures now. */
async function sample(runs, t0) {
  const page = await probe.get("/metrics");
  return {
    runs,
    seconds: (performance.now() - t0) / 1000,
    rss_mib: rssMiB(s.pid).total,
    heap_inuse_mib: metric(page, "go_memstats_heap_inuse_bytes") / 2 ** 20,
    goroutines: metric(page, "go_goroutines"),
    threads: metric(page, "go_threads"),
    open_fds: metric(page, "process_open_fds"),
    db_mib: fileMiB(dbPath) + fileMiB(dbPath + "-wal"),
  };
}

/** idleGoroutines waits until the goroutine count stops falling (at most maxS) and returns it. */
async function idleGoroutines(maxS) {
  let last = Infinity;
  const end = Date.now() + maxS * 1000;
  for (;;) {
    const g = metric(await probe.get("/metrics"), "go_goroutines");
    if (g >= last || Date.now() > end) return Math.min(g, last);
    last = g;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

let status = 0;
try {
  // Warm the server at the soak's concurrency (its pools grow to their
  // working size) for at least --settle seconds, then take the idle
  // baseline. The time matters as much as the runs: the queue's leader is
  // elected a few seconds after start and only then starts its maintenance
  // goroutines, which a baseline taken sooner would count as a leak.
  const settleEnd = Date.now() + Number(opt.settle) * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    for (let i = 0; i < 10 || Date.now() < settleEnd; i++) await oneRun(c, "echo");
  }));
  await c.close();
  const baseline = await idleGoroutines(5);
  c = client(s.url, clients);
  const t0 = performance.now();
  const until = opt.minutes ? Date.now() + Number(opt.minutes) * 60_000 : Infinity;
  const rows = [await sample(0, t0)];
  const head = Object.keys(rows[0]);
  const csvLine = (r) => head.map((k) => +r[k].toFixed(3)).join(",") + "\n";
  if (opt.csv) writeFileSync(opt.csv, head.join(",") + "\n" + csvLine(rows[0]));
  let started = 0;
  let done = 0;
  let errors = 0;
  let firstError = "";
  let next = every;
  let sampling = Promise.resolve();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (started < total && Date.now() < until) {
        started++;
        try {
          await oneRun(c, "echo");
        } catch (e) {
          errors++;
          firstError ||= String(e.message ?? e);
          if (errors > 100) throw new Error(`more than 100 failed runs; the first: ${firstError}`);
        }
        done++;
        if (done >= next) {
          next += every;
          const n = done;
          sampling = sampling.then(async () => {
            const row = await sample(n, t0);
            rows.push(row);
            if (opt.csv) appendFileSync(opt.csv, csvLine(row));
            if (rows.length % 10 === 0 || n >= total) {
              console.error(`${n} runs, ${(n / row.seconds).toFixed(1)} runs/s, RSS ${row.rss_mib.toFixed(1)} MiB, heap ${row.heap_inuse_mib.toFixed(1)} MiB, ${row.goroutines} goroutines`);
            }
          });
        }
      }
    }),
  );
  await sampling;
  const seconds = (performance.now() - t0) / 1000;
  await c.close();
  const after = await idleGoroutines(15);
  const last = await sample(done, t0);

  if (opt.svg) writeFileSync(opt.svg, svg(rows, `trellis serve (servegraphs echo, SQLite): ${done.toLocaleString("en-US")} runs, ${clients} clients`));

  // Flatness: RSS at the end of the warm-up against the largest after it,
  // and the least-squares slope of RSS and heap after it, per 10,000 runs.
  let post = rows.filter((r) => r.runs >= warmup * done);
  if (post.length === 0) post = rows.slice(-1);
  const atWarm = post[0] ?? rows[rows.length - 1];
  const growth = Math.max(...post.map((r) => r.rss_mib)) - atWarm.rss_mib;
  const slope = (k) => {
    const n = post.length;
    if (n < 2) return 0;
    const mx = post.reduce((a, r) => a + r.runs, 0) / n;
    const my = post.reduce((a, r) => a + r[k], 0) / n;
    const num = post.reduce((a, r) => a + (r.runs - mx) * (r[k] - my), 0);
    const den = post.reduce((a, r) => a + (r.runs - mx) ** 2, 0);
    return den ? (num / den) * 10_000 : 0;
  };
  const summary = {
    runs: done,
    errors,
    first_error: firstError || undefined,
    clients,
    seconds: +seconds.toFixed(1),
    runs_per_s: +(done / seconds).toFixed(1),
    goroutines_baseline: baseline,
    goroutines_after: after,
    rss_at_warmup_mib: +atWarm.rss_mib.toFixed(1),
    rss_max_after_warmup_mib: +(atWarm.rss_mib + growth).toFixed(1),
    rss_end_mib: +last.rss_mib.toFixed(1),
    rss_growth_mib: +growth.toFixed(1),
    rss_slope_mib_per_10k: +slope("rss_mib").toFixed(2),
    heap_slope_mib_per_10k: +slope("heap_inuse_mib").toFixed(2),
    heap_end_mib: +last.heap_inuse_mib.toFixed(1),
    db_mib: +last.db_mib.toFixed(1),
    loadavg: [load0, loadavg()].map((l) => l.map((x) => +x.toFixed(2))),
  };
  console.log(JSON.stringify(summary));
  console.error(
    `soak: ${done} runs in ${seconds.toFixed(0)} s (${summary.runs_per_s} runs/s, ${errors} errors); goroutines idle ${baseline} before, ${after} after; ` +
      `RSS ${summary.rss_at_warmup_mib} MiB after warm-up, max ${summary.rss_max_after_warmup_mib}, end ${summary.rss_end_mib} (slope ${summary.rss_slope_mib_per_10k} MiB/10k runs; heap ${summary.heap_slope_mib_per_10k} MiB/10k runs)`,
  );
  if (opt.check) {
    const bad = [];
    if (errors > 0) bad.push(`${errors} runs failed: ${firstError}`);
    if (after > baseline + Number(opt["goroutine-slack"])) bad.push(`goroutines did not return to baseline: ${after} idle after the load, ${baseline} before (slack ${opt["goroutine-slack"]})`);
    if (growth > Number(opt["max-growth-mib"])) bad.push(`RSS grew ${growth.toFixed(1)} MiB after the warm-up (bound ${opt["max-growth-mib"]} MiB)`);
    if (bad.length) {
      console.error("soak check failed:\n" + bad.join("\n"));
      status = 1;
    }
  }
} finally {
  await c.close();
  await probe.close();
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
