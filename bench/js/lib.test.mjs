// Unit tests of the benchmark helpers that need no server:
//   node --test bench/js/lib.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { median, metric, quantile, rssMiB } from "./lib.mjs";
import { parseCSV, svg } from "./plot.mjs";

test("quantile takes the nearest rank and median averages the middle pair", () => {
  const xs = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
  assert.equal(quantile(xs, 0.5), 5);
  assert.equal(quantile(xs, 0.99), 10);
  assert.equal(quantile(xs, 0), 1);
  assert.ok(Number.isNaN(quantile([], 0.5)));
  assert.equal(median(xs), 5.5);
  assert.equal(median([3, NaN, 1, 2]), 2);
});

test("metric reads an unlabelled sample and not a longer name's", () => {
  const page = "# HELP go_goroutines x\ngo_goroutines_total 9\ngo_goroutines 42\ngo_memstats_heap_inuse_bytes 1.5e+06\n";
  assert.equal(metric(page, "go_goroutines"), 42);
  assert.equal(metric(page, "go_memstats_heap_inuse_bytes"), 1.5e6);
  assert.ok(Number.isNaN(metric(page, "go_threads")));
});

test("rssMiB measures this process and refuses a PID that is not running", () => {
  const r = rssMiB(process.pid);
  assert.ok(r.total > 5 && r.total < 4096, `rss ${r.total}`);
  assert.ok(r.largest <= r.total);
  assert.throws(() => rssMiB(2 ** 22 + 12345), /not running/);
});

test("the plot has one polyline per series and refuses no samples", () => {
  const rows = parseCSV("runs,rss_mib,heap_inuse_mib,goroutines\n0,40,4,30\n1000,41,5,31\n2000,41.5,4.5,30\n");
  assert.equal(rows.length, 3);
  assert.equal(rows[1].rss_mib, 41);
  const out = svg(rows, "a & b");
  assert.equal(out.match(/<polyline /g).length, 3);
  assert.match(out, /a &amp; b/);
  assert.throws(() => svg([], "none"), /no samples/);
});
