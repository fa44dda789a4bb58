// timeline.js — travel in time: the thread's checkpoints (POST
// /threads/{id}/history) as a tree grouped by parent checkpoint, so every
// branch stays visible; open one to see its state (values, next, tasks);
// fork from it with edited values and run on from the fork.
//
// A fork is LangGraph's: POST /threads/{id}/state with the checkpoint to
// branch from writes a new checkpoint whose parent is that one; a run
// with that checkpoint_id and no input goes on from it. Only the top-level
// keys the person changed are sent, as the update a node would make, so
// the state's reducers apply: a message with the ID of an old one
// replaces it, anything else is added.

import * as api from './api.js';
import { clear, h } from './dom.js';

let ui = null; // {list, detail}
let onFork = async () => {}; // (checkpointId) => runs from the fork
let threadId = null;
let byId = new Map(); // checkpoint ID -> state
let openId = null; // the checkpoint shown in the detail
let loads = 0; // numbers each load, so an older answer never wins
let soon = 0; // the timer of refreshSoon

/** mount sets the list and the detail elements and what runs a fork. */
export function mount(els, fork) {
  ui = els;
  onFork = fork;
  // Up and Down move between checkpoints (Tab reaches them too).
  ui.list.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const all = [...ui.list.querySelectorAll('button[data-checkpoint]')];
    const i = all.indexOf(document.activeElement);
    if (i < 0) return;
    e.preventDefault();
    const next = all[Math.min(all.length - 1, Math.max(0, i + (e.key === 'ArrowDown' ? 1 : -1)))];
    next.focus();
  });
}

const idOf = (st) => st.checkpoint && st.checkpoint.checkpoint_id;
const parentOf = (st) => (st.parent_checkpoint && st.parent_checkpoint.checkpoint_id) || null;

/** tree groups checkpoints by parent: it returns the roots and a map of
 * each checkpoint's children, oldest first. */
export function tree(states) {
  const children = new Map();
  const roots = [];
  const known = new Set(states.map(idOf));
  const sorted = [...states].sort((a, b) => (idOf(a) < idOf(b) ? -1 : 1)); // IDs are time-ordered
  for (const st of sorted) {
    const p = parentOf(st);
    if (p && known.has(p)) {
      if (!children.has(p)) children.set(p, []);
      children.get(p).push(st);
    } else {
      roots.push(st);
    }
  }
  return { roots, children };
}

function describe(st) {
  const md = st.metadata || {};
  const src = { input: 'input', loop: 'step', update: 'edit', fork: 'fork', resume: 'resume' }[md.source] || md.source || 'checkpoint';
  const next = st.next && st.next.length ? `next: ${st.next.join(', ')}` : 'done';
  return { head: `Step ${md.step ?? '?'} · ${src}`, tail: next };
}

const msgsOf = (st) => (st && st.values && Array.isArray(st.values.messages) ? st.values.messages : []);

function short(text, n = 60) {
  const t = String(text || '').trim().replace(/\s+/g, ' ');
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

function contentText(c) {
  return typeof c === 'string' ? c : Array.isArray(c) ? c.map((p) => (p && p.text) || '').join('') : '';
}

// asked is what an interrupt's value asks, in a few words.
function asked(v) {
  if (!v || typeof v !== 'object') return short(typeof v === 'string' ? v : JSON.stringify(v));
  if (v.kind === 'tool_approval') return `approve ${v.tool}?`;
  if (v.kind === 'planexec_plan_review') return 'review the plan';
  if (v.kind === 'client_tool_call') return `the result of ${v.tool}`;
  return short(v.question || JSON.stringify(v));
}

/** happened says what a checkpoint's step did, from the state before it
 * (parent) and after it: the nodes that ran, the answer it resumed with
 * (answers: run ID -> the person's answers, from the transcript), the
 * messages it added (what was said, the tools called and what they
 * returned), and what it then asked. */
export function happened(st, parent, answers) {
  const md = st.metadata || {};
  const parts = [];
  if (md.source === 'input') parts.push('New input');
  else if (md.source === 'update') parts.push('The state was edited');
  else if (md.source === 'fork') parts.push('Forked');
  const ran = parent && Array.isArray(parent.next) ? parent.next.filter((n) => n !== '__start__') : [];
  if (md.source === 'resume') {
    const a = answers && answers.get(md.run_id);
    parts.push(a ? `Your answer: ${short(a)}` : 'Resumed with your answer');
  } else if (md.source === 'loop' && ran.length) parts.push(`${ran.join(', ')} ran`);
  const before = new Set(msgsOf(parent).map((m) => m && m.id));
  for (const m of msgsOf(st)) {
    if (!m || before.has(m.id)) continue;
    const text = short(contentText(m.content));
    if (m.type === 'human') parts.push(`You: “${text}”`);
    else if (m.type === 'ai') {
      const calls = (m.tool_calls || []).map((c) => c.name);
      if (calls.length) parts.push(`called ${calls.join(', ')}`);
      if (text) parts.push(`said “${text}”`);
    } else if (m.type === 'tool') parts.push(`${m.name || 'a tool'} ${m.status === 'error' ? 'failed' : 'returned'}`);
  }
  const waits = (st.interrupts && st.interrupts.length ? st.interrupts : (st.tasks || []).flatMap((t) => t.interrupts || []));
  const seen = new Set();
  for (const i of waits) {
    if (seen.has(i.id)) continue;
    seen.add(i.id);
    parts.push(`asks: ${asked(i.value)}`);
  }
  return parts.join(' · ');
}

function time(st) {
  return st.created_at ? new Date(st.created_at).toLocaleTimeString() : '';
}

/** load reads the thread's history and draws it (newest 200). */
export async function load(id) {
  clearTimeout(soon); // a refresh due for the thread shown before is moot
  threadId = id;
  if (!ui) return;
  if (!id) {
    byId = new Map();
    clear(ui.list).append(h('p', { class: 'hint' }, 'No history yet.'));
    clear(ui.detail);
    return;
  }
  const seq = ++loads;
  const [states, turns] = await Promise.all([
    api.json('POST', `/threads/${id}/history`, { limit: 200 }),
    api.json('GET', `/threads/${id}/transcript`).catch(() => []),
  ]);
  if (id !== threadId || seq !== loads) return;
  const answers = new Map(); // run ID -> what the person answered, for the steps that resumed with it
  for (const t of turns || []) {
    if (t.kind === 'answer') answers.set(t.run_id, answers.has(t.run_id) ? `${answers.get(t.run_id)}; ${t.text}` : t.text);
  }
  byId = new Map(states.map((s) => [idOf(s), s]));
  const head = states.length ? idOf(states[0]) : null; // the thread's latest
  const { roots, children } = tree(states);
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.checkpoint : null;
  clear(ui.list);
  if (!states.length) { ui.list.append(h('p', { class: 'hint' }, 'No history yet.')); return; }
  let branches = 0;
  // chain draws a line of checkpoints, starting a nested list of
  // branches wherever a checkpoint has more than one child.
  const chain = (first) => {
    const ol = h('ol', { class: 'timeline' });
    let st = first;
    while (st) {
      const id2 = idOf(st);
      const d = describe(st);
      const what = happened(st, byId.get(parentOf(st)), answers);
      const kids = children.get(id2) || [];
      const li = h('li', { class: 'cp' },
        h('button', {
          type: 'button', class: 'cp-open', 'data-checkpoint': id2, 'aria-pressed': id2 === openId ? 'true' : 'false', onclick: () => open(id2),
        }, h('span', { class: 'cp-head' }, d.head), ' ', h('span', { class: 'cp-tail' }, d.tail),
        id2 === head ? h('span', { class: 'badge' }, 'latest') : null, h('span', { class: 'cp-time' }, time(st)),
        what ? h('span', { class: 'cp-said cp-what' }, what) : null));
      ol.append(li);
      if (kids.length > 1) {
        const ul = h('ul', { class: 'branches' });
        kids.forEach((k, i) => {
          branches += 1;
          ul.append(h('li', { class: 'branch', 'data-branch': i + 1 }, h('span', { class: 'branch-label' }, `Branch ${i + 1} of ${kids.length}`), chain(k)));
        });
        li.append(ul);
        break;
      }
      st = kids[0];
    }
    return ol;
  };
  for (const r of roots) ui.list.append(chain(r));
  ui.list.dataset.branches = String(branches);
  if (focused) {
    const again = ui.list.querySelector(`[data-checkpoint="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
  // The open checkpoint's detail stays as it is (a fork being edited is
  // not thrown away when a run ends); one gone from the history closes.
  if (!openId || !byId.has(openId)) { openId = null; clear(ui.detail); }
}

/** forkStep is the step of the checkpoint a fork branched from, as the
 * list names it ("Step N"), given the checkpoint a run went on from (the
 * fork's own, whose parent is the one the person opened); null when the
 * history loaded does not hold it. */
export function forkStep(checkpointId) {
  const st = byId.get(checkpointId);
  if (!st) return null;
  const md = st.metadata || {};
  const from = (md.source === 'fork' || md.source === 'update') && byId.get(parentOf(st)) || st;
  const step = (from.metadata || {}).step;
  return typeof step === 'number' ? step : null;
}

/** refreshSoon reloads the thread's history shortly (a run wrote a
 * checkpoint); several calls close together load once. */
export function refreshSoon(id) {
  clearTimeout(soon);
  soon = setTimeout(() => { if (id && (threadId === id || threadId === null)) load(id).catch(() => {}); }, 300);
}

/** open shows a checkpoint's state, with the fork form. */
function open(id, focus = true) {
  const st = byId.get(id);
  if (!st) return;
  openId = id;
  for (const b of ui.list.querySelectorAll('button[data-checkpoint]')) b.setAttribute('aria-pressed', b.dataset.checkpoint === id ? 'true' : 'false');
  const d = describe(st);
  const values = JSON.stringify(st.values ?? {}, null, 2);
  const editor = h('textarea', { id: 'fork-values', rows: 10, spellcheck: 'false' });
  editor.value = values;
  const problem = h('p', { class: 'field-error', id: 'fork-problem', role: 'alert' });
  const go = h('button', { type: 'submit', class: 'primary' }, 'Fork and run from here');
  const form = h('form', { class: 'fork', onsubmit: (e) => { e.preventDefault(); fork(st, editor, problem, go); } },
    h('label', { for: 'fork-values' }, 'State to fork with (JSON; edit it, e.g. a message’s text)'),
    editor, problem, h('div', { class: 'actions' }, go));
  editor.setAttribute('aria-describedby', 'fork-problem');
  const tasks = (st.tasks || []).map((t) => h('li', {}, h('code', {}, t.name),
    t.error ? ` failed: ${t.error}` : '', (t.interrupts || []).length ? ' (waiting for an answer)' : ''));
  const heading = h('h3', { tabindex: '-1' }, `Checkpoint: ${d.head}`);
  clear(ui.detail).append(
    heading,
    h('dl', { class: 'cp-facts' },
      h('dt', {}, 'Next'), h('dd', {}, st.next && st.next.length ? st.next.join(', ') : 'nothing (done until new input)'),
      h('dt', {}, 'Tasks'), h('dd', {}, tasks.length ? h('ul', {}, tasks) : 'none'),
      h('dt', {}, 'Checkpoint'), h('dd', {}, h('code', {}, id))),
    h('details', { class: 'cp-values' }, h('summary', {}, 'Values'), h('pre', {}, values)),
    form);
  if (focus) heading.focus();
}

/** changed returns the top-level keys of edited whose JSON differs from
 * before's. */
export function changed(before, edited) {
  const out = {};
  for (const [k, v] of Object.entries(edited)) {
    if (JSON.stringify(v) !== JSON.stringify(before ? before[k] : undefined)) out[k] = v;
  }
  return out;
}

async function fork(st, editor, problem, go) {
  problem.textContent = '';
  editor.removeAttribute('aria-invalid');
  let edited;
  try {
    edited = JSON.parse(editor.value);
  } catch (e) {
    return bad(editor, problem, `Not JSON: ${e.message}`);
  }
  if (!edited || typeof edited !== 'object' || Array.isArray(edited)) return bad(editor, problem, 'The state is a JSON object of its keys.');
  const values = changed(st.values || {}, edited);
  go.disabled = true;
  try {
    const res = await api.json('POST', `/threads/${threadId}/state`, {
      checkpoint_id: idOf(st), values: Object.keys(values).length ? values : null,
    });
    openId = null;
    await onFork(res.checkpoint.checkpoint_id);
  } catch (e) {
    bad(editor, problem, e.message);
  } finally {
    go.disabled = false;
  }
}

function bad(editor, problem, msg) {
  problem.textContent = msg;
  editor.setAttribute('aria-invalid', 'true');
  editor.focus();
}
