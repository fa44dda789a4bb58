// graph.js — the assistant's graph, drawn as our own SVG from the JSON
// graph (GET /assistants/{id}/graph), with the nodes that run now
// highlighted from the stream's tasks events. The drawing is the top level
// only: while a subgraph runs (its tasks events come with a namespace,
// stream_subgraphs), the top-level node that runs it is highlighted and
// marked "in-subgraph", and the status line names the path inside it
// ("Running: step › think").
//
// Why not Mermaid: the graph is small (a handful of nodes), and the
// Mermaid bundle is megabytes of script the page would have to ship and
// allow; a layered drawing of a few boxes is a few dozen lines. See
// docs/architecture.md ("Watch, retry, time travel").

import * as api from './api.js';
import { clear } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 100; // node box width
const H = 30; // node box height
const GX = 16; // gap between boxes of a layer
const GY = 48; // gap between layers
const LANE = 14; // gap between the side lanes of edges that go up or skip layers

let box = null; // the container the drawing goes in
let current = { id: null, names: [], nodes: new Map() }; // drawn graph
const active = new Map(); // task ID -> node name, of the tasks running now
const inner = new Map(); // subgraph task ID -> its path of node names, top first
let waiting = new Set(); // the nodes where the thread waits for the person

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** layers places every node in a layer: __start__ first, each other node
 * one below its nearest predecessor (breadth first, so loops do not push
 * nodes down), unreachable ones under the start, __end__ last. Exported
 * for reading; the page uses it through show. */
export function layers(nodes, edges) {
  const out = new Map();
  const next = new Map();
  for (const e of edges) {
    if (!next.has(e.source)) next.set(e.source, []);
    next.get(e.source).push(e.target);
  }
  const queue = ['__start__'];
  out.set('__start__', 0);
  while (queue.length) {
    const n = queue.shift();
    for (const m of next.get(n) || []) {
      if (out.has(m) || m === '__end__') continue;
      out.set(m, out.get(n) + 1);
      queue.push(m);
    }
  }
  let deepest = 0;
  for (const n of nodes) {
    if (n.id === '__end__') continue;
    if (!out.has(n.id)) out.set(n.id, 1);
    deepest = Math.max(deepest, out.get(n.id));
  }
  out.set('__end__', deepest + 1);
  return out;
}

function label(id) {
  return id === '__start__' ? 'start' : id === '__end__' ? 'end' : id;
}

/** order sorts each layer's nodes to cut edge crossings: a few sweeps
 * down and up, each putting a layer's nodes at the mean position
 * (barycenter) of their neighbours in the layer before; a node without
 * such neighbours keeps its place. rows is changed in place. Exported for
 * reading. */
export function order(rows, edges, layer) {
  const near = (up) => {
    const m = new Map();
    for (const e of edges) {
      const [a, b] = up ? [e.target, e.source] : [e.source, e.target];
      if (layer.get(b) - layer.get(a) !== (up ? -1 : 1)) continue;
      if (!m.has(b)) m.set(b, []);
      m.get(b).push(a);
    }
    return m;
  };
  const down = near(false);
  const up = near(true);
  const sweep = (l, from, nb) => {
    const r = rows[l];
    const prev = rows[from];
    if (!r || !prev) return;
    const at = new Map(prev.map((id, i) => [id, i]));
    const key = new Map(r.map((id, i) => {
      const ps = (nb.get(id) || []).filter((p) => at.has(p));
      return [id, ps.length ? ps.reduce((sum, p) => sum + at.get(p), 0) / ps.length : i];
    }));
    r.sort((a, b) => key.get(a) - key.get(b));
  };
  for (let k = 0; k < 4; k++) {
    for (let l = 1; l < rows.length; l++) sweep(l, l - 1, down);
    for (let l = rows.length - 2; l >= 0; l--) sweep(l, l + 1, up);
  }
  return rows;
}

/** draw returns the SVG of the graph {nodes, edges}: layers top down,
 * ordered to cut crossings; an edge to the next layer is a straight line,
 * one that goes up (a loop) or skips layers runs in its own lane on the
 * side — loops on the right, long edges down on the left — so no edge
 * crosses a box. */
function draw(g, title) {
  const layer = layers(g.nodes, g.edges);
  const rows = [];
  for (const n of g.nodes) {
    const l = layer.get(n.id);
    (rows[l] = rows[l] || []).push(n.id);
  }
  order(rows, g.edges, layer);
  const col = new Map(rows.flatMap((r) => (r || []).map((id, i) => [id, i])));
  const side = (e) => {
    const d = layer.get(e.target) - layer.get(e.source);
    if (d === 0 && Math.abs(col.get(e.target) - col.get(e.source)) === 1) return 'across'; // neighbours: straight across
    return d === 1 ? null : d > 1 ? 'left' : 'right';
  };
  const lanes = { left: 0, right: 0 };
  const laneOf = new Map();
  for (const e of g.edges) {
    const sd = side(e);
    if (sd === 'left' || sd === 'right') laneOf.set(e, (lanes[sd] += 1));
  }
  const widest = Math.max(1, ...rows.filter(Boolean).map((r) => r.length));
  const left = lanes.left * LANE + (lanes.left ? GX : 0);
  const inner = widest * (W + GX) + GX;
  const width = left + inner + Math.max(40, lanes.right * LANE + GX);
  const label2 = (id) => (label(id).length > 13 ? `${label(id).slice(0, 12)}…` : label(id));
  const pos = new Map();
  rows.forEach((r, l) => {
    if (!r) return;
    const span = r.length * (W + GX) - GX;
    r.forEach((id, i) => pos.set(id, { x: left + (inner - span) / 2 + i * (W + GX), y: GX / 2 + l * (H + GY) }));
  });
  const height = rows.length * (H + GY) - GY + GX;
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-labelledby': 'graph-title', class: 'graph-svg' });
  svg.append(s('title', { id: 'graph-title' }, title));
  svg.append(s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'graph-arrowhead' }))));
  const r = 8; // the corners of a lane
  for (const e of g.edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    let d;
    const sd = side(e);
    if (!sd) {
      d = `M${a.x + W / 2},${a.y + H} L${b.x + W / 2},${b.y}`;
    } else if (sd === 'across') {
      d = b.x > a.x ? `M${a.x + W},${a.y + H / 2} L${b.x},${b.y + H / 2}` : `M${a.x},${a.y + H / 2} L${b.x + W},${b.y + H / 2}`;
    } else if (sd === 'left') { // down past the layers between, on the left
      const x = left - GX / 2 - (laneOf.get(e) - 1) * LANE;
      d = `M${a.x},${a.y + H / 2} L${x + r},${a.y + H / 2} Q${x},${a.y + H / 2} ${x},${a.y + H / 2 + r} L${x},${b.y + H / 2 - r} Q${x},${b.y + H / 2} ${x + r},${b.y + H / 2} L${b.x},${b.y + H / 2}`;
    } else { // a loop back up (or within a layer), on the right
      const x = left + inner + (laneOf.get(e) - 1) * LANE + GX / 2;
      const dir = b.y < a.y ? -1 : 1;
      d = `M${a.x + W},${a.y + H / 2} L${x - r},${a.y + H / 2} Q${x},${a.y + H / 2} ${x},${a.y + H / 2 + dir * r} L${x},${b.y + H / 2 - dir * r} Q${x},${b.y + H / 2} ${x - r},${b.y + H / 2} L${b.x + W},${b.y + H / 2}`;
    }
    svg.append(s('path', { d, class: e.conditional ? 'graph-edge conditional' : 'graph-edge', 'marker-end': 'url(#arrow)', 'data-from': e.source, 'data-to': e.target, 'data-route': sd || 'down' }));
  }
  const nodes = new Map();
  for (const n of g.nodes) {
    const p = pos.get(n.id);
    const special = n.id === '__start__' || n.id === '__end__';
    const el = s('g', { class: special ? 'graph-node terminal' : 'graph-node', 'data-node': n.id, transform: `translate(${p.x},${p.y})` },
      s('rect', { width: W, height: H, rx: special ? H / 2 : 6 }),
      s('title', {}, label(n.id)),
      s('text', { x: W / 2, y: H / 2, 'dominant-baseline': 'central', 'text-anchor': 'middle' }, label2(n.id)));
    nodes.set(n.id, el);
    svg.append(el);
  }
  return { svg, nodes };
}

/** mount sets the element the graph is drawn in. */
export function mount(el) { box = el; }

/** show draws the graph of the assistant (once per assistant). */
export async function show(assistantId, name) {
  if (!box || !assistantId || current.id === assistantId) return;
  current = { id: assistantId, names: [], nodes: new Map() };
  let g;
  try {
    g = await api.json('GET', `/assistants/${assistantId}/graph`);
  } catch (e) {
    if (current.id === assistantId) current.id = null; // try again next time
    throw e;
  }
  if (current.id !== assistantId) return;
  const { svg, nodes } = draw(g, `The graph of ${name || 'the assistant'}: ${g.nodes.map((n) => label(n.id)).join(', ')}`);
  current.nodes = nodes;
  clear(box).append(svg, Object.assign(document.createElement('p'), { id: 'graph-running', className: 'hint', role: 'status' }));
  paint();
}

function paint() {
  const running = new Set(active.values());
  const parents = new Set([...inner.values()].map((p) => p[0]));
  for (const [id, el] of current.nodes) {
    el.classList.toggle('active', running.has(id) || parents.has(id));
    el.classList.toggle('in-subgraph', parents.has(id));
    el.classList.toggle('waiting', waiting.has(id) && !running.has(id));
  }
  const says = [...running].filter((n) => !parents.has(n));
  const paths = new Set([...inner.values()].map((p) => p.join(' › ')));
  const line = document.getElementById('graph-running');
  if (!line) return;
  if (says.length || paths.size) line.textContent = `Running: ${[...says, ...paths].join(', ')}`;
  else if (waiting.size) line.textContent = `Waiting for you at: ${[...waiting].map(label).join(', ')}`;
  else line.textContent = '';
}

/** waitingAt marks the nodes where the thread waits for an answer (the
 * state's tasks with interrupts); an empty list clears the mark. */
export function waitingAt(names) {
  waiting = new Set(names || []);
  paint();
}

/** onTask follows a tasks event: a task with input starts (its node is
 * highlighted), one with a result or an error has ended. */
export function onTask(t) {
  if (!t || !t.id) return;
  if ('input' in t) {
    active.set(t.id, t.name);
  } else {
    active.delete(t.id);
    // A node that ended has no subgraph running in it any more.
    for (const [id, p] of inner) if (p[0] === t.name) inner.delete(id);
  }
  paint();
}

/** onSubTask follows a subgraph's tasks event; ns is the event's namespace
 * ("node:task_id|node:task_id", top first). */
export function onSubTask(ns, t) {
  if (!t || !t.id) return;
  const path = String(ns).split('|').map((seg) => {
    const i = seg.lastIndexOf(':');
    return i > 0 ? seg.slice(0, i) : seg;
  });
  if ('input' in t) inner.set(t.id, [...path, t.name]);
  else inner.delete(t.id);
  paint();
}

/** idle clears the highlight (the run ended). */
export function idle() {
  active.clear();
  inner.clear();
  paint();
}
