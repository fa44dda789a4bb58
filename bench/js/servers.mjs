// Starting and stopping the servers the benchmarks drive: LangGraph's JS dev
// server (langgraphjs dev, from this folder's node_modules) and
// examples/servegraphs (Trellis's service with the echo graph) on SQLite or
// PostgreSQL. Each listens on 127.0.0.1 on a free port, runs in its own
// process group (its PID is the group's id) and is stopped by that PID.
import { spawn, execFileSync } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** here is bench/js; root is the repository. */
export const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, "..", "..");

// live holds the process groups started and not yet stopped: when this
// process ends early (an error, SIGINT or SIGTERM, e.g. from CI's timeout)
// they are killed too, so no server outlives the benchmark.
const live = new Set();
function killLive(sig) {
  for (const pid of live) {
    try {
      process.kill(-pid, sig);
    } catch {
      // gone
    }
  }
}
process.on("exit", () => killLive("SIGKILL"));
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    process.stderr.write(`stopping ${live.size} server(s) on ${sig}\n`);
    killLive("SIGTERM");
    process.exit(130);
  });
}

/** freePort asks the kernel for a free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** scratch makes a fresh temporary folder. */
export function scratch(prefix) {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * buildServegraphs compiles examples/servegraphs into dir and returns the
 * binary's path; go must be on PATH.
 */
export function buildServegraphs(dir) {
  const bin = join(dir, "servegraphs");
  try {
    execFileSync("go", ["build", "-o", bin, "./examples/servegraphs"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  } catch (e) {
    throw new Error(`go build ./examples/servegraphs failed: ${e.message}`);
  }
  return bin;
}

/**
 * start runs cmd args in its own process group with its output in log,
 * then waits until GET url/ok answers 200. It returns {pid, url, stop}.
 * When the process exits or does not answer within timeoutS, it is stopped
 * and start throws with the log's tail.
 */
export async function start(name, cmd, args, { cwd, env, port, log, timeoutS = 120 }) {
  const out = createWriteStream(log);
  await new Promise((r) => out.once("open", r));
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ["ignore", out, out] });
  if (child.pid) live.add(child.pid);
  let exited = null;
  const exit = new Promise((resolve) => {
    child.once("exit", (code, sig) => {
      exited = sig ? `signal ${sig}` : `status ${code}`;
      resolve();
    });
    child.once("error", (e) => {
      exited = e.message;
      resolve();
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      const t = setTimeout(() => {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // gone
        }
      }, 10_000);
      await exit;
      clearTimeout(t);
    }
    // The group may hold workers its leader did not wait for.
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // none left
    }
    live.delete(child.pid);
    out.end();
  };
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    if (exited !== null) {
      await stop();
      throw new Error(`${name} exited (${exited}) before it answered ${url}/ok; its log ${log} ends:\n${tail(log)}`);
    }
    try {
      const res = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return { pid: child.pid, url, stop };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} did not answer ${url}/ok within ${timeoutS} s; its log ${log} ends:\n${tail(log)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function tail(path) {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-25).join("\n");
  } catch {
    return "(no log)";
  }
}

/** langgraphCLI is the path of the installed langgraphjs command, or throws with what to run. */
export function langgraphCLI() {
  const cli = join(here, "node_modules", "@langchain", "langgraph-cli", "dist", "cli", "cli.mjs");
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npm ci\` in ${here}`);
  return cli;
}

/** startLangGraph starts `langgraphjs dev` (in-memory) on this folder's langgraph.json. */
export async function startLangGraph(dir) {
  const port = await freePort();
  // The dev server reloads what it saved in .langgraph_api at its last
  // exit; every round starts empty, like Trellis's fresh database.
  rmSync(join(here, ".langgraph_api"), { recursive: true, force: true });
  const args = [langgraphCLI(), "dev", "--host", "127.0.0.1", "--port", String(port), "--no-browser", "--no-reload", "--config", join(here, "langgraph.json")];
  // No tracing and no telemetry: the benchmark has no network beyond loopback.
  const env = { LANGSMITH_TRACING: "false", LANGCHAIN_TRACING_V2: "false", LANGGRAPH_CLI_NO_ANALYTICS: "1" };
  return start("langgraphjs dev", process.execPath, args, { cwd: here, env, port, log: join(dir, `langgraph-${port}.log`), timeoutS: 180 });
}

/** startTrellis starts servegraphs on database (a SQLite file or a postgres:// URL). */
export async function startTrellis(bin, database, dir) {
  const port = await freePort();
  const env = { OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "" };
  return start("servegraphs", bin, ["--addr", `127.0.0.1:${port}`, "--database", database], { cwd: dir, env, port, log: join(dir, `trellis-${port}.log`) });
}

/**
 * freshDatabase creates an empty PostgreSQL database next to the one dsn
 * names and returns its DSN and a function that drops it.
 */
export function freshDatabase(dsn, name) {
  const u = new URL(dsn);
  const psql = (sql) => execFileSync("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", sql], { stdio: ["ignore", "ignore", "pipe"] });
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`bad database name ${name}`);
  try {
    psql(`DROP DATABASE IF EXISTS ${name}`);
    psql(`CREATE DATABASE ${name}`);
  } catch (e) {
    throw new Error(`cannot create PostgreSQL database ${name} through ${u.host}: ${e.stderr?.toString() || e.message}`);
  }
  u.pathname = `/${name}`;
  return {
    dsn: u.toString(),
    drop() {
      try {
        psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch {
        // left behind; the next round's DROP IF EXISTS takes it
      }
    },
  };
}
