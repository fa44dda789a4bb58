// run.js — the run being watched: its status and usage (tokens, model
// calls, time; the run resource's "usage", a Trellis extension), and a
// failure shown once, in the conversation where it happened (transcript.js's
// error line), with Retry in its retry slot.
//
// Retry follows LangGraph: a new run on the thread with no input goes on
// from the thread's last checkpoint, so the step that failed runs again
// and the steps before it do not.

import * as api from './api.js';
import { clear, h } from './dom.js';
import { errorLine } from './transcript.js';

let ui = null; // {summary, messages}
let onRetry = () => {};
let failedNode = ''; // the node whose task failed in the stream, if any
let failure = null; // {key, el}: the error line shown, if any

/** mount sets where the summary goes, the conversation the failure is
 * shown in (at its end, after what the run wrote), and what Retry does. */
export function mount(summary, messages, retry) {
  ui = { summary, messages };
  onRetry = retry;
}

const statusWords = {
  pending: 'waiting to start', running: 'running', success: 'done', error: 'failed',
  timeout: 'timed out', interrupted: 'waiting for you', cancelled: 'cancelled',
};

// A run that stopped for a question and one that was cancelled both end
// "interrupted"; only the first leaves the thread waiting for an answer.
function word(r, waiting) {
  if (r.status === 'interrupted' && !waiting) return 'cancelled';
  return statusWords[r.status] || r.status;
}

function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

/** usageText is one line of a run's usage. */
export function usageText(u) {
  if (!u) return '';
  const tokens = (u.input_tokens || 0) + (u.output_tokens || 0);
  const secs = (u.duration_ms || 0) / 1000;
  return `${plural(tokens, 'token', 'tokens')} (${u.input_tokens || 0} in, ${u.output_tokens || 0} out) · ` +
    `${plural(u.model_calls || 0, 'model call', 'model calls')} · ${secs < 10 ? secs.toFixed(2) : secs.toFixed(1)}\u00a0s`; // the unit stays with its number
}

function showRun(r, waiting) {
  if (!ui) return;
  clear(ui.summary);
  if (!r) {
    ui.summary.append(h('span', { class: 'hint' }, 'No run yet.'));
    return;
  }
  ui.summary.dataset.status = r.status;
  ui.summary.append(
    h('span', { class: `badge run-${r.status}` }, word(r, waiting)),
    r.usage ? h('span', { class: 'usage' }, usageText(r.usage)) : '');
}

/** started shows a run that has just begun. */
export function started(runId) {
  failedNode = '';
  showFailure(null);
  showRun({ run_id: runId, status: 'running' });
}

/** onTask notes the node of a task that ended with an error. */
export function onTask(t) {
  if (t && t.error) failedNode = t.name || '';
}

/** latest reads the thread's newest run (or the given one) and shows its
 * status and usage; waiting says whether the thread waits for an answer. */
export async function latest(threadId, runId, waiting) {
  if (!threadId) { showRun(null); return null; }
  const r = runId
    ? await api.json('GET', `/threads/${threadId}/runs/${runId}`)
    : (await api.json('GET', `/threads/${threadId}/runs?limit=1`))[0];
  showRun(r || null, waiting);
  return r || null;
}

/** showFailure shows (or, with null, hides) a failed run's error at the
 * end of the conversation, after the messages the run wrote before it
 * failed, with Retry; node names the step that failed when the stream did
 * not. The same failure shown again keeps its element (no second alert). */
export function showFailure(message, node) {
  if (!ui) return;
  if (node) failedNode = node;
  if (!message) {
    if (failure) failure.el.remove();
    failure = null;
    failedNode = '';
    return;
  }
  const title = failedNode ? `The step ${failedNode} failed` : 'The run failed';
  const key = `${title}\n${message}`;
  if (!failure || failure.key !== key) {
    if (failure) failure.el.remove();
    const el = errorLine(title, message);
    const retry = h('button', { type: 'button', class: 'primary', onclick: () => { retry.disabled = true; onRetry(); } }, 'Retry');
    el.querySelector('.retry-slot').append(
      h('p', { class: 'hint' }, 'Retry runs again from the last checkpoint: the steps that succeeded are kept.'),
      h('div', { class: 'actions' }, retry));
    failure = { key, el };
  }
  placeFailure();
}

/** isFailure says whether el is the failure shown (patched around, not
 * removed, when the conversation is drawn again). */
export function isFailure(el) {
  return !!failure && failure.el === el;
}

/** placeFailure puts the failure shown, if any, back at the end of the
 * conversation (after the messages were drawn again). */
export function placeFailure() {
  if (failure && ui && ui.messages.lastElementChild !== failure.el) ui.messages.append(failure.el);
}
