// feedback.js — a person's thumbs up or down, and an optional comment, on
// each agent answer in the chat, stored with the run that wrote it through
// the run feedback route (POST /threads/{id}/runs/{run}/feedback, key
// "user_score", score 1 or 0, the message's ID). The latest entry on a
// message is its choice; a new choice replaces it (the old entry is
// deleted), so a reload shows what was chosen last.

import * as api from './api.js';
import { h, uid } from './dom.js';

const KEY = 'user_score';
const SVG = 'http://www.w3.org/2000/svg';

// thumb draws a thumb (up, or turned down), as an inline SVG that does
// not depend on an emoji font.
function thumb(down) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '18');
  svg.setAttribute('height', '18');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  if (down) svg.setAttribute('class', 'thumb-down');
  for (const d of ['M2 10h4v11H2z', 'M8 21h9.5a2 2 0 0 0 2-1.6l1.4-7A2 2 0 0 0 19 10h-5.5l.9-4.3A1.8 1.8 0 0 0 12.6 3.5L8 9.5z']) {
    const p = document.createElementNS(SVG, 'path');
    p.setAttribute('d', d);
    svg.append(p);
  }
  return svg;
}
let thread = null; // the thread the cache is for
let byRun = new Map(); // run ID -> Promise of its feedback list

function listOf(threadId, run) {
  if (thread !== threadId) { thread = threadId; byRun = new Map(); }
  if (!byRun.has(run)) {
    byRun.set(run, api.json('GET', `/threads/${threadId}/runs/${run}/feedback`).catch(() => []));
  }
  return byRun.get(run);
}

/** latest is the message's latest user_score entry from a person (or a
 * client that did not say), or null: an evaluator's score is not the
 * person's choice. */
function latest(list, messageId) {
  const mine = (list || []).filter((f) => f.key === KEY && f.message_id === messageId && f.source !== 'evaluator');
  return mine.length ? mine[mine.length - 1] : null;
}

const idOfTurn = (t) => (t.message && typeof t.message === 'object' ? t.message.id : t.message);

/** decorate adds a feedback bar to every agent answer (a .msg.ai with
 * text) of a finished run in container: turns (the thread's transcript)
 * say which run wrote which message; live is the run being streamed, whose
 * answers get their bar once it ends. */
export function decorate(container, threadId, turns, live) {
  const runOf = new Map();
  for (const t of turns || []) {
    if (t.kind === 'message' && t.run_id) { const id = idOfTurn(t); if (id) runOf.set(id, t.run_id); }
  }
  for (const el of container.querySelectorAll('.msg.ai[data-id]')) {
    const run = runOf.get(el.dataset.id);
    if (!run || run === live || !el.querySelector(':scope > .text') || el.querySelector(':scope > .feedback')) continue;
    el.append(bar(threadId, run, el.dataset.id));
  }
}

// bar is one answer's controls: two toggle buttons and a comment form.
function bar(threadId, run, messageId) {
  const base = `/threads/${threadId}/runs/${run}/feedback`;
  let current = null; // the stored entry
  const up = h('button', { type: 'button', class: 'icon small fb-up', 'aria-pressed': 'false', 'aria-label': 'Good answer', title: 'Good answer' }, thumb(false));
  const down = h('button', { type: 'button', class: 'icon small fb-down', 'aria-pressed': 'false', 'aria-label': 'Bad answer', title: 'Bad answer' }, thumb(true));
  const note = h('span', { class: 'fb-note hint', role: 'status' });
  const areaId = uid('fb-comment');
  const area = h('textarea', { id: areaId, rows: '2', class: 'fb-text' });
  const save = h('button', { type: 'submit', class: 'small primary' }, 'Save the comment');
  const form = h('form', { class: 'fb-form', hidden: true }, h('label', { for: areaId }, 'Comment on this answer'), area, h('div', { class: 'actions' }, save));
  const toggle = h('button', { type: 'button', class: 'small fb-comment', 'aria-expanded': 'false' }, 'Comment');
  const show = () => {
    const s = current && current.score;
    up.setAttribute('aria-pressed', String(s === 1));
    down.setAttribute('aria-pressed', String(s === 0));
    if (current && current.comment && !area.value) area.value = current.comment;
  };
  // store replaces the entry with one of this score and comment.
  const store = async (score, comment) => {
    note.textContent = 'Saving…';
    try {
      const body = { key: KEY, message_id: messageId, comment, source: 'person' };
      if (score !== null && score !== undefined) body.score = score;
      const made = await api.json('POST', base, body);
      if (current) await api.request('DELETE', `${base}/${current.feedback_id}`).catch(() => {});
      const list = (await listOf(threadId, run)).filter((f) => !current || f.feedback_id !== current.feedback_id);
      list.push(made);
      byRun.set(run, Promise.resolve(list));
      current = made;
      note.textContent = 'Thanks, saved.';
    } catch (e) {
      note.textContent = `Not saved: ${e.message}`;
    }
    show();
  };
  const choose = (score) => {
    const s = current && current.score === score ? null : score; // pressing it again takes it back
    store(s, current ? current.comment : '');
  };
  up.addEventListener('click', () => choose(1));
  down.addEventListener('click', () => choose(0));
  toggle.addEventListener('click', () => {
    form.hidden = !form.hidden;
    toggle.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) area.focus();
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    store(current ? current.score : null, area.value.trim());
  });
  listOf(threadId, run).then((list) => { current = latest(list, messageId); show(); });
  return h('div', { class: 'feedback', role: 'group', 'aria-label': 'Feedback on this answer' }, up, down, toggle, note, form);
}
