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

// said is the start of the state's last message, so branches that
// differ in what was said can be told apart at a glance.
function said(st) {
  const msgs = st.values && Array.isArray(st.values.messages) ? st.values.messages : [];
  const last = msgs[msgs.length - 1];
  if (!last) return '';
  const c = last.content;
  const text = (typeof c === 'string' ? c : Array.isArray(c) ? c.map((p) => (p && p.text) || '').join('') : '').trim().replace(/\s+/g, ' ');
  return text.length > 48 ? `${text.slice(0, 47)}…` : text;
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
  const states = await api.json('POST', `/threads/${id}/history`, { limit: 200 });
  if (id !== threadId || seq !== loads) return;
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
      const kids = children.get(id2) || [];
      const li = h('li', { class: 'cp' },
        h('button', {
          type: 'button', class: 'cp-open', 'data-checkpoint': id2, 'aria-pressed': id2 === openId ? 'true' : 'false', onclick: () => open(id2),
        }, h('span', { class: 'cp-head' }, d.head), ' ', h('span', { class: 'cp-tail' }, d.tail),
        id2 === head ? h('span', { class: 'badge' }, 'latest') : null, h('span', { class: 'cp-time' }, time(st)),
        said(st) ? h('span', { class: 'cp-said' }, `“${said(st)}”`) : null));
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
