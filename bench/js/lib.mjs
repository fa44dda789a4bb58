// Shared pieces of the load generator, the side-by-side script and the soak:
// a keep-alive HTTP client for a LangGraph-API server, one run (a fresh
// thread, then runs/wait), time to the first SSE event of runs/stream,
// percentiles, and the resident memory of a process tree read from /proc.
import { readFileSync, readdirSync } from "node:fs";
import { Agent, request } from "undici";

/** The input every run sends: one user message, which the echo graphs answer. */
export const INPUT = { messages: [{ role: "user", content: "hi" }] };

/**
 * Client is a keep-alive connection pool to one server.
 * @param {string} base URL such as http://127.0.0.1:2025
 * @param {number} connections at most this many sockets (one per client)
 */
export function client(base, connections) {
  const dispatcher = new Agent({ connections, keepAliveTimeout: 30_000, pipelining: 1 });
  const u = new URL(base);
  return {
    base: u.origin,
    dispatcher,
    /** post sends JSON and returns the parsed JSON answer; a non-2xx status throws with the body. */
    async post(path, body) {
      const res = await request(u.origin + path, {
        method: "POST",
        dispatcher,
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
      });
      const text = await res.body.text();
      if (res.statusCode < 200 || res.statusCode > 299) {
        throw new Error(`POST ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
      }
      return text === "" ? null : JSON.parse(text);
    },
    /** get returns the body as text; a non-2xx status throws. */
    async get(path) {
      const res = await request(u.origin + path, { method: "GET", dispatcher });
      const text = await res.body.text();
      if (res.statusCode < 200 || res.statusCode > 299) {
        throw new Error(`GET ${path}: ${res.statusCode} ${text.slice(0, 300)}`);
      }
      return text;
    },
    /** close ends the pool's connections; closing twice is harmless. */
    close() {
      return dispatcher.closed || dispatcher.destroyed ? Promise.resolve() : dispatcher.close();
    },
  };
}

/**
 * oneRun creates a thread and waits for a run of assistant on it. It returns
 * the milliseconds the runs/wait request took and the whole cycle took, and
 * throws when the answer does not carry the echo.
 */
export async function oneRun(c, assistant) {
  const t0 = performance.now();
  const thread = await c.post("/threads", {});
  if (!thread || typeof thread.thread_id !== "string") {
    throw new Error(`POST /threads: no thread_id in ${JSON.stringify(thread).slice(0, 200)}`);
  }
  const t1 = performance.now();
  const out = await c.post(`/threads/${thread.thread_id}/runs/wait`, { assistant_id: assistant, input: INPUT });
  const t2 = performance.now();
  const msgs = out && out.messages;
  if (!Array.isArray(msgs) || msgs.length < 2) {
    throw new Error(`runs/wait: want the echo in messages, got ${JSON.stringify(out).slice(0, 300)}`);
  }
  return { waitMs: t2 - t1, cycleMs: t2 - t0 };
}

/**
 * firstEvent starts a streamed run on a fresh thread and returns the
 * milliseconds from sending runs/stream to the end of the first SSE event
 * (a blank line); it reads the stream to its end so the run finishes.
 */
export async function firstEvent(c, assistant) {
  const thread = await c.post("/threads", {});
  const t0 = performance.now();
  const res = await request(`${c.base}/threads/${thread.thread_id}/runs/stream`, {
    method: "POST",
    dispatcher: c.dispatcher,
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ assistant_id: assistant, input: INPUT, stream_mode: ["values"] }),
  });
  if (res.statusCode !== 200) {
    throw new Error(`runs/stream: ${res.statusCode} ${(await res.body.text()).slice(0, 300)}`);
  }
  let first = -1;
  let buf = "";
  let events = 0;
  for await (const chunk of res.body) {
    buf += chunk.toString("utf8").replaceAll("\r\n", "\n");
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (/^(event|data):/m.test(block)) {
        events++;
        if (first < 0) first = performance.now() - t0;
      }
    }
  }
  if (first < 0) throw new Error("runs/stream: the stream ended without an event");
  return { firstMs: first, events };
}

/** quantile returns the q-quantile (0..1) of xs by the nearest rank; NaN for none. */
export function quantile(xs, q) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const k = Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1));
  return s[k];
}

/** median of xs; NaN for none. */
export function median(xs) {
  const v = xs.filter((x) => Number.isFinite(x));
  if (v.length === 0) return NaN;
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** children maps each PID in /proc to its parent's. */
function parents() {
  const pp = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      // The command name sits in parentheses and may hold spaces: read after the last ')'.
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      pp.set(Number(d), Number(rest[1]));
    } catch {
      // the process ended while we looked
    }
  }
  return pp;
}

/**
 * rssMiB returns the resident memory (VmRSS) of pid and every process
 * below it, in MiB, as total and largest (one process): a dev server that
 * forks its worker is measured whole. It throws when pid is not running.
 */
export function rssMiB(pid) {
  const pp = parents();
  if (!pp.has(pid)) throw new Error(`process ${pid} is not running`);
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, parent] of pp) {
      if (!tree.has(p) && tree.has(parent)) {
        tree.add(p);
        grew = true;
      }
    }
  }
  let kib = 0;
  let largest = 0;
  for (const p of tree) {
    try {
      const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, "utf8"));
      if (m) {
        kib += Number(m[1]);
        largest = Math.max(largest, Number(m[1]));
      }
    } catch {
      // gone meanwhile
    }
  }
  return { total: kib / 1024, largest: largest / 1024 };
}

/** metric reads one unlabelled value from a Prometheus text page; NaN when absent. */
export function metric(page, name) {
  const m = new RegExp(`^${name} ([0-9.eE+-]+)$`, "m").exec(page);
  return m ? Number(m[1]) : NaN;
}
