// threads.js — the thread list: title, status (idle, running, waiting for
// you, error), last activity; search; delete with a confirmation.
//
// Search sends POST /threads/search: words of the form key=value filter
// on metadata, a thread ID (a UUID) on ids, the rest on the title (the
// server's "title" filter, a Trellis extension: part of metadata.title,
// any case).

import * as api from './api.js';
import { ago, clear, h } from './dom.js';

let ui = null; // {list, search, dialog, dialogText, confirm}
let opened = () => null; // the ID of the thread the page shows
let onDeleted = () => {};
let pending = null; // the thread the dialog asks about

/** statusOf is the word for a thread's status; a thread with pending
 * interrupts is waiting for the person whatever its status says. */
export function statusOf(t) {
  if (t.interrupts && Object.keys(t.interrupts).length && t.status !== 'busy') return 'interrupted';
  return t.status;
}

/** statusText is the word the page shows for a status. */
export function statusText(s) {
  return { idle: 'idle', busy: 'running', interrupted: 'waiting for you', error: 'error' }[s] || s;
}

/** titleOf is the thread's title; before the server gives it one (after
 * its first successful run), the start of its first message, else "New
 * thread". */
export function titleOf(t) {
  if (t && t.metadata && typeof t.metadata.title === 'string' && t.metadata.title) return t.metadata.title;
  const msgs = (t && t.values && Array.isArray(t.values.messages)) ? t.values.messages : [];
  const first = msgs.find((m) => m && m.type === 'human' && typeof m.content === 'string' && m.content.trim());
  if (first) {
    const text = first.content.trim().replace(/\s+/g, ' ');
    return text.length > 60 ? `${text.slice(0, 59)}…` : text;
  }
  return 'New thread';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** query turns the search box's text into a threads/search body. */
export function query(text) {
  const body = { limit: 50, sort_by: 'updated_at', sort_order: 'desc' };
  const words = [];
  for (const w of text.trim().split(/\s+/).filter(Boolean)) {
    const eq = w.indexOf('=');
    if (eq > 0) (body.metadata = body.metadata || {})[w.slice(0, eq)] = w.slice(eq + 1);
    else if (UUID.test(w)) (body.ids = body.ids || []).push(w);
    else words.push(w);
  }
  if (words.length) body.title = words.join(' ');
  return body;
}

/** mount wires the list, its search box and the delete dialog. current
 * returns the open thread's ID; deleted is called after a delete. */
export function mount(els, current, deleted) {
  ui = els;
  opened = current;
  onDeleted = deleted;
  let timer = 0;
  ui.search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => load().catch(() => {}), 200);
  });
  ui.search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); clearTimeout(timer); load().catch(() => {}); }
  });
  ui.confirm.addEventListener('click', async (e) => {
    e.preventDefault();
    const id = pending;
    ui.dialog.close();
    if (!id) return;
    await api.request('DELETE', `/threads/${id}`);
    await load();
    onDeleted(id);
  });
}

/** load lists the threads that match the search box. */
export async function load() {
  const text = ui.search.value;
  const threads = await api.json('POST', '/threads/search', query(text));
  if (ui.search.value !== text) return; // a newer search is under way
  // The list is drawn again after every run: a thread's link or delete
  // button that had the focus gets it back, so Tab goes on from there.
  const had = document.activeElement && ui.list.contains(document.activeElement) ? document.activeElement : null;
  const hadRow = had && had.closest('.thread-row');
  const hadThread = hadRow && hadRow.querySelector('a[data-thread]') ? hadRow.querySelector('a[data-thread]').dataset.thread : null;
  const hadDelete = had && had.tagName === 'BUTTON';
  clear(ui.list);
  if (!threads.length) ui.list.append(h('li', { class: 'hint' }, text.trim() ? 'No thread matches.' : 'No threads yet.'));
  for (const t of threads) {
    const title = titleOf(t);
    const st = statusOf(t);
    ui.list.append(h('li', { class: 'thread-row' },
      h('a', { href: `#/thread/${t.thread_id}`, 'aria-current': t.thread_id === opened() ? 'page' : 'false', 'data-thread': t.thread_id },
        h('span', { class: 'thread-title' }, title),
        h('span', { class: 'thread-meta' }, h('span', { class: `badge ${st}` }, statusText(st)), ' · ',
          h('time', { datetime: t.updated_at, title: new Date(t.updated_at).toLocaleString() }, ago(t.updated_at)))),
      h('button', { type: 'button', class: 'icon danger', 'aria-label': `Delete ${title}`, title: 'Delete', onclick: () => ask(t.thread_id, title) }, '×')));
  }
  if (hadThread) {
    const a = ui.list.querySelector(`a[data-thread="${CSS.escape(hadThread)}"]`);
    const again = a && (hadDelete ? a.closest('.thread-row').querySelector('button') : a);
    if (again) again.focus();
  }
}

function ask(id, title) {
  pending = id;
  ui.dialogText.textContent = `Delete “${title}”? Its messages, runs and history are removed for good.`;
  ui.dialog.showModal();
}

/** mark shows which thread is open. */
export function mark() {
  for (const a of ui.list.querySelectorAll('a[data-thread]')) {
    a.setAttribute('aria-current', a.dataset.thread === opened() ? 'page' : 'false');
  }
}
