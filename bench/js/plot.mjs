#!/usr/bin/env node
// plot renders the soak's CSV (soak.mjs) as a self-contained SVG: resident
// memory and Go heap in use over runs served, and goroutines over runs.
//
//   node plot.mjs soak.csv soak.svg
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** parseCSV reads a header line and numeric rows into objects. */
export function parseCSV(text) {
  const lines = text.trim().split("\n");
  const head = lines[0].split(",");
  return lines.slice(1).map((l) => Object.fromEntries(l.split(",").map((v, i) => [head[i], Number(v)])));
}

/** niceMax rounds x up to 1, 2 or 5 times a power of ten. */
function niceMax(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;");

/**
 * panel draws one chart at (x, y) of size w × h: series is a list of
 * {key, label, color, scale}; rows supply x from "runs".
 */
function panel(rows, { x, y, w, h, title, unit, series }) {
  const xmax = niceMax(Math.max(...rows.map((r) => r.runs)));
  const ymax = niceMax(Math.max(...series.flatMap((s) => rows.map((r) => r[s.key] * (s.scale ?? 1)))) * 1.1);
  const px = (v) => x + (v / xmax) * w;
  const py = (v) => y + h - (v / ymax) * h;
  const o = [];
  o.push(`<text x="${x}" y="${y - 10}" font-size="14" font-weight="bold">${esc(title)}</text>`);
  o.push(`<rect x="${x}" y="${y}" width="${w}" height="${h}" fill="none" stroke="#444"/>`);
  for (let i = 0; i <= 5; i++) {
    const yv = (ymax * i) / 5;
    const xv = (xmax * i) / 5;
    o.push(`<line x1="${x}" x2="${x + w}" y1="${py(yv)}" y2="${py(yv)}" stroke="#ddd"/>`);
    o.push(`<text x="${x - 6}" y="${py(yv) + 4}" font-size="11" text-anchor="end">${+yv.toPrecision(4)}</text>`);
    o.push(`<line x1="${px(xv)}" x2="${px(xv)}" y1="${y}" y2="${y + h}" stroke="#eee"/>`);
    o.push(`<text x="${px(xv)}" y="${y + h + 16}" font-size="11" text-anchor="middle">${xv.toLocaleString("en-US")}</text>`);
  }
  o.push(`<text x="${x + w / 2}" y="${y + h + 34}" font-size="12" text-anchor="middle">runs served</text>`);
  o.push(`<text x="${x - 48}" y="${y + h / 2}" font-size="12" text-anchor="middle" transform="rotate(-90 ${x - 48} ${y + h / 2})">${esc(unit)}</text>`);
  series.forEach((s, i) => {
    const pts = rows.map((r) => `${px(r.runs).toFixed(1)},${py(r[s.key] * (s.scale ?? 1)).toFixed(1)}`).join(" ");
    o.push(`<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    o.push(`<line x1="${x + 12}" x2="${x + 32}" y1="${y + 16 + i * 16}" y2="${y + 16 + i * 16}" stroke="${s.color}" stroke-width="2"/>`);
    o.push(`<text x="${x + 38}" y="${y + 20 + i * 16}" font-size="12">${esc(s.label)}</text>`);
  });
  return o.join("\n");
}

/** svg renders rows (runs, rss_mib, heap_inuse_mib, goroutines, …) with a title. */
export function svg(rows, title) {
  if (rows.length === 0) throw new Error("no samples to plot");
  const W = 900;
  const H = 640;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="24" font-size="15" text-anchor="middle">${esc(title)}</text>`,
    panel(rows, {
      x: 90, y: 60, w: 770, h: 220, title: "memory", unit: "MiB",
      series: [
        { key: "rss_mib", label: "resident (VmRSS)", color: "#c0392b" },
        { key: "heap_inuse_mib", label: "Go heap in use", color: "#2471a3" },
      ],
    }),
    panel(rows, {
      x: 90, y: 360, w: 770, h: 220, title: "goroutines", unit: "goroutines",
      series: [{ key: "goroutines", label: "go_goroutines (sampled under load)", color: "#1e8449" }],
    }),
    "</svg>",
    "",
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [csv, out, title] = process.argv.slice(2);
  if (!csv || !out) {
    process.stderr.write("usage: node plot.mjs soak.csv soak.svg [title]\n");
    process.exit(2);
  }
  writeFileSync(out, svg(parseCSV(readFileSync(csv, "utf8")), title ?? "trellis serve soak"));
}
