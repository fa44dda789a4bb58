// dag.js — a plan's steps as a small dependency graph in SVG, drawn by the
// page itself (no library): a layered layout, one column per level (a
// step sits one column right of its deepest dependency), edges from a
// dependency to the step that needs it. Colours come from style.css, so
// light and dark both work, and the drawing scales to the card's width.

import { uid } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const BOX_W = 150;
const BOX_H = 40;
const GAP_X = 50;
const GAP_Y = 14;

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** levels assigns each step ({id, depends_on}) its column: 0 for a step
 * that depends on nothing known, else one more than its deepest
 * dependency. Unknown dependencies are ignored and a cycle cannot loop
 * forever (a step on a cycle is placed where the walk first meets it), so
 * an edit in progress still draws. */
export function levels(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const level = new Map();
  const visiting = new Set();
  const depth = (s) => {
    if (level.has(s.id)) return level.get(s.id);
    if (visiting.has(s.id)) return 0;
    visiting.add(s.id);
    let d = 0;
    for (const dep of s.depends_on || []) {
      const t = byId.get(dep);
      if (t && t !== s) d = Math.max(d, depth(t) + 1);
    }
    visiting.delete(s.id);
    level.set(s.id, d);
    return d;
  };
  for (const s of steps) depth(s);
  return level;
}

// shorten fits a title into a box: about 20 characters a line.
function shorten(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** renderDag returns an SVG drawing of the steps ({id, title,
 * depends_on}). Its accessible name counts the steps and levels; the list
 * beside it carries the detail. */
export function renderDag(steps) {
  const level = levels(steps);
  const columns = [];
  for (const s of steps) {
    const l = level.get(s.id) || 0;
    (columns[l] = columns[l] || []).push(s);
  }
  const rows = Math.max(1, ...columns.map((c) => (c ? c.length : 0)));
  const width = Math.max(1, columns.length) * (BOX_W + GAP_X) - GAP_X + 8;
  const height = rows * (BOX_H + GAP_Y) - GAP_Y + 8;
  const pos = new Map();
  columns.forEach((col, x) => {
    if (!col) return;
    // Centre each column on the tallest one.
    const top = ((rows - col.length) * (BOX_H + GAP_Y)) / 2;
    col.forEach((s, y) => pos.set(s.id, { x: 4 + x * (BOX_W + GAP_X), y: 4 + top + y * (BOX_H + GAP_Y) }));
  });
  const arrow = uid('arrow');
  const title = `Dependency graph: ${steps.length} step${steps.length === 1 ? '' : 's'} in ${columns.length} level${columns.length === 1 ? '' : 's'}`;
  const root = svg('svg', { class: 'dag', viewBox: `0 0 ${width} ${height}`, width, role: 'img', 'aria-label': title },
    svg('title', {}, title),
    svg('defs', {}, svg('marker', { id: arrow, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'dag-arrow' }))));
  for (const s of steps) {
    const to = pos.get(s.id);
    for (const d of s.depends_on || []) {
      const from = pos.get(d);
      if (!from || d === s.id) continue;
      const x1 = from.x + BOX_W;
      const y1 = from.y + BOX_H / 2;
      const x2 = to.x;
      const y2 = to.y + BOX_H / 2;
      const mid = (x1 + x2) / 2;
      root.append(svg('path', { class: 'dag-edge', d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`, 'marker-end': `url(#${arrow})`, 'data-from': d, 'data-to': s.id }));
    }
  }
  for (const s of steps) {
    const p = pos.get(s.id);
    root.append(svg('g', { class: 'dag-node', 'data-step': s.id, transform: `translate(${p.x} ${p.y})` },
      svg('rect', { width: BOX_W, height: BOX_H, rx: 6 }),
      svg('text', { x: BOX_W / 2, y: BOX_H / 2, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, shorten(s.title || s.id || '(untitled)', 20))));
  }
  return root;
}
