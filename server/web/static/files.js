// files.js — a deep agent's files (agent/deep keeps each thread's files in
// the long-term store, one item per file under the namespace
// ["deep_files", "threads", <run thread>], keyed by path, valued {content,
// modified}). The page lists them (path, size) under the to-do list and
// opens one read-only in a dialog, as Markdown when it ends in .md. It
// reads them through the public store routes, as any client would.
//
// The server runs a thread under the key "<tenant>/<thread ID>"
// (runs.ThreadKey), and that key is the namespace's last label; the
// store routes already keep each tenant to its own items, so the page
// learns its "<tenant>/" from any thread's files (one namespace listed).

import * as api from './api.js';
import { clear, h } from './dom.js';
import { setMarkdown } from './markdown.js';

// LIST_LIMIT bounds one listing: each item found carries its content, so
// the page asks for a page of files, never all of a large filesystem.
const LIST_LIMIT = 200;

let root = null;
let list = null;
let count = null;
let note = null;
let dialog = null;
let threadId = null;
let asked = 0; // listings are numbered, so a late answer never wins
let again = null; // a listing waiting for the one under way
let fileLabel = null; // the label of the files listed
let shown = ''; // what render last drew: an unchanged list keeps its buttons (and the focus on one)
let opened = null; // the path of the file shown in the dialog

const ROOT = ['deep_files', 'threads'];

/** namespaceOf is where the deep agent keeps the files of a thread, given
 * the thread's label (labelOf). */
export const namespaceOf = (label) => [...ROOT, label];

// The tenant part of the labels, per API key: null until known.
let tenant = null;
let tenantKey = '';

/** labelOf returns the namespace label of a thread's files, or null when
 * no thread has files yet. */
async function labelOf(thread) {
  if (tenant === null || tenantKey !== api.apiKey()) {
    const res = await api.json('POST', '/store/namespaces', { prefix: ROOT, max_depth: ROOT.length + 1, limit: 1 });
    const ns = ((res && res.namespaces) || [])[0];
    if (!ns || typeof ns[ROOT.length] !== 'string') return null;
    const l = ns[ROOT.length];
    tenant = l.includes('/') ? l.slice(0, l.indexOf('/') + 1) : '';
    tenantKey = api.apiKey();
  }
  return tenant + thread;
}

/** mount builds the list inside el and the reading dialog in dlg. */
export function mount(el, dlg) {
  list = h('ul', { class: 'file-list' });
  count = h('span', { class: 'work-count' });
  note = h('p', { class: 'hint', hidden: true });
  root = h('details', { class: 'work-part files', open: true },
    h('summary', {}, h('span', { class: 'work-title' }, 'Files'), ' ', count), list, note);
  root.hidden = true;
  el.append(root);
  dialog = dlg;
  // Closing a file puts the focus back on its line (the list may have
  // been redrawn while it was open).
  dialog.addEventListener('close', () => {
    if (opened !== null) list.querySelector(`.file-open[data-path="${CSS.escape(opened)}"]`)?.focus();
  });
}

/** load lists the files of a thread (null hides the list). */
export async function load(thread) {
  if (!root) return;
  if (thread !== threadId) { threadId = thread; again = null; render([], false); }
  if (!thread) return;
  const n = ++asked;
  let res;
  let label = null;
  try {
    label = await labelOf(thread);
    res = label === null ? { items: [] } : await api.json('POST', '/store/items/search', { namespace_prefix: namespaceOf(label), limit: LIST_LIMIT });
  } catch (e) {
    if (n !== asked || thread !== threadId) return;
    // A server without a store has no files to show; any other failure
    // is said where the list would be.
    if (e.status === 404) { render([], false); return; }
    shown = ''; // the note below is drawn over the list: the next listing redraws
    root.hidden = false;
    note.hidden = false;
    note.textContent = `The files could not be read: ${e.message}`;
    return;
  }
  if (n !== asked || thread !== threadId) return;
  const want = JSON.stringify(namespaceOf(label));
  const files = ((res && res.items) || [])
    .filter((it) => JSON.stringify(it.namespace) === want && it.value && typeof it.value.content === 'string')
    .map((it) => ({ path: it.key, size: byteLength(it.value.content), modified: it.value.modified || it.updated_at }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  fileLabel = label;
  render(files, files.length >= LIST_LIMIT);
}

/** refreshSoon lists the thread's files again while a run writes them:
 * one listing at a time, the last asked for following the one under way. */
export function refreshSoon(thread) {
  if (!thread) return;
  if (again) { again.thread = thread; return; }
  again = { thread };
  setTimeout(async () => {
    const t = again && again.thread;
    again = null;
    if (t) await load(t).catch(() => {});
  }, 300);
}

function render(files, truncated) {
  const key = JSON.stringify([files.map((f) => [f.path, f.size]), truncated]);
  if (key === shown && list.childElementCount === files.length) return;
  shown = key;
  root.hidden = files.length === 0;
  count.textContent = files.length === 1 ? '1 file' : `${files.length}${truncated ? '+' : ''} files`;
  note.hidden = !truncated;
  note.textContent = truncated ? `Only the first ${LIST_LIMIT} files are listed.` : '';
  clear(list).append(...files.map((f) => h('li', {},
    h('button', { type: 'button', class: 'file-open', 'data-path': f.path, onclick: () => open(f.path).catch(() => {}) },
      h('span', { class: 'file-path' }, f.path),
      h('span', { class: 'file-size' }, sizeText(f.size))))));
}

/** byteLength is the size of a text in UTF-8 bytes. */
export function byteLength(s) { return new TextEncoder().encode(s).length; }

/** sizeText says a size in bytes for a person. */
export function sizeText(n) {
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1000).toFixed(1)} kB`;
  return `${(n / 1e6).toFixed(1)} MB`;
}

// open reads a file afresh (it may have changed since the listing) and
// shows it in the dialog; focus returns to its button on close.
async function open(path) {
  const ns = namespaceOf(fileLabel);
  opened = path;
  const title = h('h2', { id: 'file-title' }, path);
  const meta = h('p', { class: 'hint' }, 'Reading…');
  const body = h('div', { class: 'file-body' });
  clear(dialog).append(title, meta, body,
    h('form', { method: 'dialog', class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Close')));
  if (!dialog.open) dialog.showModal();
  let it;
  try {
    it = await readItem(ns, path);
  } catch (e) {
    meta.textContent = `The file could not be read: ${e.message}`;
    return;
  }
  if (!it || !it.value || typeof it.value.content !== 'string') {
    meta.textContent = 'This file is gone: the agent removed or moved it since the list was read.';
    return;
  }
  const text = it.value.content;
  const when = it.value.modified || it.updated_at;
  meta.textContent = `${sizeText(byteLength(text))}${when ? ` · saved ${new Date(when).toLocaleString()}` : ''} · read-only`;
  if (/\.md$/i.test(path)) {
    body.className = 'file-body md';
    setMarkdown(body, text);
  } else {
    body.className = 'file-body';
    body.append(h('pre', {}, text));
  }
}

// readItem reads one store item. GET /store/items joins the namespace with
// dots, so a label holding one (a tenant such as "acme.io") is read
// through a search of its namespace instead.
async function readItem(ns, key) {
  if (!ns.some((l) => l.includes('.'))) {
    return api.json('GET', `/store/items?${new URLSearchParams({ namespace: ns.join('.'), key })}`);
  }
  const want = JSON.stringify(ns);
  const res = await api.json('POST', '/store/items/search', { namespace_prefix: ns, limit: LIST_LIMIT });
  return ((res && res.items) || []).find((it) => it.key === key && JSON.stringify(it.namespace) === want) || null;
}
