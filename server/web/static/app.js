// app.js — the page: pick an assistant and a thread, chat, answer what the
// run asks. Everything goes through the public HTTP API (api.js).
//
// Messages are keyed by their ID everywhere: the saved ones come from the
// thread's state (values.messages), the one being written from
// messages-tuple events. A token for a message already shown as saved is
// ignored, so replaying a run's whole stream after a reload (rejoin with
// Last-Event-ID -1) rebuilds the text being written without doubling it.

import * as api from './api.js';
import { ago, clear, h, patch } from './dom.js';
import { approvalGroup, isApproval } from './approvals.js';
import * as datasets from './datasets.js';
import * as experiments from './experiments.js';
import * as feedback from './feedback.js';
import * as files from './files.js';
import * as graph from './graph.js';
import * as inputForm from './inputform.js';
import { renderInterrupt } from './interrupts.js';
import { setMarkdown } from './markdown.js';
import * as run from './run.js';
import * as shell from './shell.js';
import * as threads from './threads.js';
import * as timeline from './timeline.js';
import * as todos from './todos.js';
import { liveMessage, runLog, transcriptNodes } from './transcript.js';
import * as welcome from './welcome.js';

const $ = (id) => document.getElementById(id);
const ui = {
  assistant: $('assistant'), threads: $('threads'), newThread: $('new-thread'),
  title: $('thread-title'), status: $('thread-status'), messages: $('messages'),
  live: $('live'), cards: $('cards'), composer: $('composer'), input: $('input'),
  inputForm: $('input-form'), send: $('send'), cancel: $('cancel'), banner: $('banner'), error: $('error'),
  keyDialog: $('key-dialog'), keyForm: $('key-form'), keyInput: $('key-input'),
  welcome: $('welcome'), about: $('assistant-about'), log: $('log'),
  addCase: $('add-to-dataset'), datasetsView: $('datasets-view'), experimentsView: $('experiments-view'),
};
let closeDrawers = () => {};
let scroller = { end() {}, top() {} };
const toEnd = () => scroller.end();

const state = {
  assistants: [],
  threadId: null,
  runId: null, // the run this page is streaming, if any
  saved: new Set(), // IDs of the messages shown from the state
  live: new Map(), // message ID -> liveMessage of messages being written
  log: null, // the runLog of the run being streamed (status lines, step calls)
  turns: [], // the thread's transcript (answers, timeline), from the server
  messages: [], // the state's latest messages
  openRun: null, // the run whose timeline stays open (the thread waits on it)
  pickedFor: null, // the thread whose assistant the picker was set to
  runError: '', // why the stream being read failed (its error event)
  abort: null, // stops the current stream
  formFor: null, // the assistant whose input form (or message box) shows
  inputReader: null, // reads the input form; null for a chat assistant
};

// ---- assistants and threads ---------------------------------------------

async function loadAssistants() {
  state.assistants = welcome.sortAssistants(await api.json('POST', '/assistants/search', { limit: 100 }));
  clear(ui.assistant);
  const saved = localStorage.getItem('trellis.assistant');
  for (const a of state.assistants) {
    ui.assistant.append(h('option', { value: a.assistant_id, selected: a.assistant_id === saved, title: welcome.aboutOf(a) || null }, welcome.nameOf(a)));
  }
}

const currentAssistant = () => state.assistants.find((x) => x.assistant_id === assistantId());

// showWelcome fills the empty thread's welcome (welcome.js): shown only
// while no thread is open.
function showWelcome() {
  ui.welcome.hidden = !!state.threadId;
  if (ui.welcome.hidden) return;
  welcome.render(ui.welcome, state.assistants, assistantId(), {
    asForm: !!state.inputReader,
    onPick: (id) => { ui.assistant.value = id; localStorage.setItem('trellis.assistant', id); showGraph(); },
    onExample: (text) => { if (!ui.send.disabled) sendMessage(text).catch((e) => showError(e.message)); },
  });
}

function assistantId() { return ui.assistant.value; }

// The list, its search and delete live in threads.js.
const loadThreads = () => threads.load();
const statusText = threads.statusText;

// showGraph draws the picked assistant's graph (graph.js).
function showGraph() {
  const a = currentAssistant();
  ui.about.textContent = welcome.aboutOf(a);
  ui.input.placeholder = a ? `Message ${welcome.nameOf(a)}` : 'Message the assistant';
  graph.show(assistantId(), a && welcome.nameOf(a)).catch((e) => showError(e.message));
  showWelcome();
  showInput().catch((e) => showError(e.message));
}

// showInput shows the message box for a chat assistant, or the form built
// from the assistant's input schema for any other (inputform.js). A form
// already showing for the same assistant keeps what was typed in it.
async function showInput() {
  const id = assistantId();
  if (!id || state.formFor === id) return;
  state.formFor = id;
  let schema = null;
  try {
    schema = inputForm.formSchema(await inputForm.inputSchema(id), welcome.declaredInput(currentAssistant()));
  } finally {
    if (id === assistantId()) {
      state.inputReader = inputForm.mount(ui.inputForm, schema);
      ui.inputForm.hidden = !schema;
      ui.input.hidden = !!schema;
      ui.composer.classList.toggle('as-form', !!schema);
      showWelcome();
    } else if (state.formFor === id) state.formFor = null;
  }
}

// ---- the chat view --------------------------------------------------------

// renderMessages shows the saved messages (LangChain message JSON) in the
// thread's transcript, with the person's answers and what each run did
// where it happened (transcript.js), and the log of the run being
// streamed after the last thing the person said.
function renderMessages(messages = state.messages) {
  state.messages = messages;
  const { nodes, ids } = transcriptNodes(state.turns, messages, state.runId, state.openRun);
  state.saved = ids;
  // Only what changed is redrawn: a full redraw would reset the reader's
  // scroll and selection, and race the following of the end (shell.js).
  patch(ui.messages, nodes, (el) => (state.log && el === state.log.el) || run.isFailure(el));
  feedback.decorate(ui.messages, state.threadId, state.turns, state.runId);
  placeLog();
  run.placeFailure();
  // Messages now saved are no longer being written.
  for (const [id, l] of state.live) {
    if (state.saved.has(id)) { l.el.remove(); state.live.delete(id); }
  }
}

function placeLog() {
  if (!state.log) return;
  const humans = ui.messages.querySelectorAll('.msg.human');
  const last = humans[humans.length - 1];
  if (last) { if (last.nextElementSibling !== state.log.el) last.after(state.log.el); } else if (ui.messages.lastElementChild !== state.log.el) ui.messages.append(state.log.el);
}

// onToken adds a messages-tuple chunk to the message being written.
// A subgraph's (a plan step's) tool calls show in the run's log instead.
function onToken(chunk, meta, nested) {
  const id = chunk && chunk.id;
  // An internal voice's tokens (a reviewer's) are not the agent's reply:
  // its message shows as a note of the run once it lands.
  if (!id || state.saved.has(id) || chunk.name) return;
  let l = state.live.get(id);
  if (!l) {
    l = liveMessage(id, meta && meta.langgraph_node, state.log);
    state.live.set(id, l);
  }
  if (l.add(nested ? { ...chunk, tool_call_chunks: [] } : chunk) && !l.el.isConnected) ui.live.append(l.el);
}

function clearLive() {
  for (const l of state.live.values()) l.el.remove();
  state.live.clear();
}

function setStatus(s) {
  ui.status.textContent = statusText(s);
  ui.status.className = `badge ${s}`;
}

function setRunning(on) {
  ui.send.disabled = on;
  ui.addCase.disabled = on;
  ui.cancel.hidden = !on;
  document.body.classList.toggle('running', on);
}

function showError(msg) {
  ui.error.textContent = msg || '';
  ui.error.hidden = !msg;
}

// Reads of the transcript can answer out of order (the one asked as a run
// starts may come back after the one asked as it ends): each is numbered,
// and one older than the transcript shown is dropped.
let turnsAsked = 0;
let turnsShown = 0;

async function fetchTurns(id) {
  const n = ++turnsAsked;
  return { n, turns: await api.json('GET', `/threads/${id}/transcript`) };
}

// takeTurns keeps a transcript read unless a newer one is shown already.
function takeTurns({ n, turns }) {
  if (n < turnsShown) return false;
  turnsShown = n;
  state.turns = turns || [];
  return true;
}

// loadTurns reads the thread's transcript (what was answered, what the
// runs did), and draws it when redraw is set.
async function loadTurns(redraw) {
  const id = state.threadId;
  const read = await fetchTurns(id);
  if (id !== state.threadId || !takeTurns(read)) return;
  if (redraw) renderMessages();
}

// refresh reads the thread's state (messages, pending interrupts) and its
// transcript; the log of a run no longer streamed gives way to the stored
// one.
async function refresh() {
  const id = state.threadId;
  const [thread, st, read] = await Promise.all([
    api.json('GET', `/threads/${id}`),
    api.json('GET', `/threads/${id}/state`),
    fetchTurns(id),
  ]);
  if (id !== state.threadId) return null;
  takeTurns(read);
  // The last run's block stays open while the thread waits on it.
  state.openRun = thread.status === 'interrupted' ? (state.turns.filter((t) => t.kind === 'run').pop() || {}).run_id : null;
  if (!state.runId && state.log) { state.log.el.remove(); state.log = null; }
  showTitle(thread);
  // The picker shows the thread's assistant when the thread is opened,
  // not on every refresh: one the person picked since stays picked.
  const aid = thread.metadata && thread.metadata.assistant_id;
  if (state.pickedFor !== id && aid && state.assistants.some((a) => a.assistant_id === aid)) ui.assistant.value = aid;
  state.pickedFor = id;
  showGraph();
  setStatus(threads.statusOf(thread));
  renderMessages((st.values && st.values.messages) || []);
  todos.show(st.values); files.load(id).catch(() => {}); // a deep agent's work
  renderCards(st.interrupts || []);
  graph.waitingAt((st.tasks || []).filter((t) => (t.interrupts || []).length).map((t) => t.name));
  const failed = (st.tasks || []).find((t) => t.error);
  // One failure display, in the conversation (run.js): the thread's error,
  // or the stream's when the thread does not say.
  const why = thread.status === 'error' ? String(thread.error || (failed && failed.error) || state.runError || 'The last run failed.') : state.runError || null;
  run.showFailure(why, failed && failed.name);
  timeline.load(id).then(() => { if (id === state.threadId) showTitle(thread); }).catch((e) => showError(e.message));
  return thread;
}

// showTitle names the thread in the header and, while the branch shown is
// a fork (a run on it went on from a checkpoint the person forked), which
// one: "· fork from step N", N as the timeline lists the checkpoint forked
// from. The thread list keeps the title alone: a thread has one title,
// its branches are the timeline's.
function showTitle(thread) {
  const fork = state.turns.filter((t) => t.kind === 'run' && t.checkpoint_id).pop();
  let title = threads.titleOf(thread);
  if (fork) {
    const n = timeline.forkStep(fork.checkpoint_id);
    title += n === null ? ' · a fork' : ` · fork from step ${n}`;
  }
  ui.title.textContent = title;
}

function renderCards(interrupts) {
  clear(ui.cards);
  const group = approvalGroup(interrupts, resumeAll);
  if (group) ui.cards.append(group.el);
  for (const intr of interrupts) {
    const together = group && isApproval(intr) ? (decide) => group.register(intr.id, decide) : null;
    ui.cards.append(renderInterrupt(intr, (value) => resume(intr, interrupts, value), together));
  }
  if (group) ui.cards.append(group.footer);
  // The first card's own control, not the answer-all bar's: Enter answers one call.
  const first = ui.cards.querySelector('.interrupt :is(button, input, select, textarea)');
  if (first && document.activeElement === document.body) first.focus();
}

// ---- runs -----------------------------------------------------------------

// consume reads a run's events: saved messages from values, tokens from
// messages, the run ID from metadata, errors where they happen.
async function consume(events) {
  setRunning(true);
  setStatus('busy');
  try {
    for await (const ev of events) {
      const kind = ev.event.split('|')[0];
      if (ev.event === 'values' && ev.data) { todos.show(ev.data); files.refreshSoon(state.threadId); }
      if (kind === 'metadata' && ev.data && ev.data.run_id) {
        state.runId = ev.data.run_id;
        sessionStorage.setItem(`trellis.run.${state.threadId}`, state.runId);
        run.started(state.runId);
        loadTurns(true).catch(() => {}); // the answer this run goes on with
        loadThreads().catch(() => {}); // the list shows the thread running
      } else if (ev.event === 'tasks' && ev.data) { // the root graph's steps
        graph.onTask(ev.data);
        run.onTask(ev.data);
        if ('input' in ev.data) timeline.refreshSoon(state.threadId); // a step begins after its checkpoint
      } else if (kind === 'tasks' && ev.data) { // a subgraph's steps: "tasks|<namespace>"
        graph.onSubTask(ev.event.slice(kind.length + 1), ev.data);
      } else if (ev.event === 'values' && ev.data && Array.isArray(ev.data.messages)) {
        renderMessages(ev.data.messages);
        timeline.refreshSoon(state.threadId); // a values event follows each step
      } else if (kind === 'messages' && Array.isArray(ev.data)) {
        onToken(ev.data[0], ev.data[1], ev.event !== kind);
      } else if (kind === 'custom') {
        if (!state.log) state.log = runLog();
        if (state.log.add(ev.data) && !state.log.el.isConnected) placeLog();
      } else if (ev.event === 'error') { // the run's own; a step's shows in the log
        const msg = (ev.data && (ev.data.message || ev.data.error)) || 'unknown error';
        state.runError = String(msg);
        run.showFailure(state.runError);
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') showError(e.message);
  } finally {
    setRunning(false);
    graph.idle();
    const ran = state.runId;
    state.runId = null;
    clearLive();
    if (state.threadId) {
      sessionStorage.removeItem(`trellis.run.${state.threadId}`);
      await refresh().catch((e) => showError(e.message));
      await run.latest(state.threadId, ran, waiting()).catch(() => {});
    }
    state.runError = '';
    loadThreads().catch(() => {});
  }
}

function streamRun(body) {
  state.abort = new AbortController();
  const req = { assistant_id: assistantId(), stream_mode: ['values', 'messages-tuple', 'custom', 'tasks'], stream_subgraphs: true, stream_resumable: true, on_disconnect: 'continue', ...body };
  return api.stream('POST', `/threads/${state.threadId}/runs/stream`, req, { signal: state.abort.signal });
}

async function sendMessage(text) {
  toEnd();
  ui.messages.append(h('div', { class: 'msg human pending' }, h('span', { class: 'who' }, 'You'), h('div', { class: 'text' }, text)));
  await startRun({ messages: [{ type: 'human', content: text }] });
}

// startRun starts a run of the assistant with an input, on a new thread
// when none is open.
async function startRun(input) {
  showError('');
  if (!state.threadId) {
    const t = await api.json('POST', '/threads', { metadata: { assistant_id: assistantId() } });
    state.threadId = t.thread_id;
    history.replaceState(null, '', `#/thread/${t.thread_id}`);
    ui.welcome.hidden = true;
    loadThreads().catch(() => {});
  }
  state.log = null;
  clear(ui.cards);
  const events = streamRun({ input });
  await consume(events);
}

// resume answers one interrupt. With several pending, the answer goes in a
// map by interrupt ID. A refused answer throws before any event, so the
// card can show the problem.
async function resume(intr, all, value) {
  showError('');
  const command = all.length > 1 ? { resume: { [intr.id]: value } } : { resume: value };
  const events = streamRun({ command });
  const first = await events.next(); // throws the 4xx problem, if any
  clear(ui.cards);
  await consume((async function* rest() { if (!first.done) yield first.value; yield* events; })());
}

// resumeAll answers several interrupts in one resume: a map from
// interrupt ID to answer.
async function resumeAll(answers) {
  showError('');
  const events = streamRun({ command: { resume: answers } });
  const first = await events.next(); // throws the 4xx problem, if any
  clear(ui.cards);
  await consume((async function* rest() { if (!first.done) yield first.value; yield* events; })());
}

// waiting says whether the thread waits for an answer (a card shows).
const waiting = () => !!ui.cards.querySelector('.card');

// retry runs the thread again with no input: LangGraph goes on from the
// last checkpoint, so the failed step runs again (run.js).
async function retry() {
  showError('');
  run.showFailure(null);
  await consume(streamRun({ input: null }));
}

// forkRun goes on from a checkpoint the timeline forked (timeline.js).
async function forkRun(checkpointId) {
  showError('');
  clear(ui.cards);
  await consume(streamRun({ input: null, checkpoint_id: checkpointId }));
}

// rejoin follows a run already under way (after a reload): it replays the
// run's events from the first, which rebuilds the message being written.
async function rejoin() {
  const id = state.threadId;
  const runs = await api.json('GET', `/threads/${id}/runs?limit=5`);
  const run = runs.find((r) => r.status === 'running' || r.status === 'pending');
  if (!run || id !== state.threadId) return;
  state.abort = new AbortController();
  const events = api.stream('GET', `/threads/${state.threadId}/runs/${run.run_id}/stream`, undefined,
    { signal: state.abort.signal, headers: { 'Last-Event-ID': '-1' } });
  await consume(events);
}

async function openThread(id) {
  if (state.abort) state.abort.abort();
  state.threadId = id;
  state.pickedFor = null;
  state.log = null;
  state.turns = [];
  state.messages = [];
  clearLive();
  clear(ui.messages);
  clear(ui.cards);
  showError('');
  run.showFailure(null);
  todos.show(null); files.load(null);
  ui.welcome.hidden = !!id;
  ui.addCase.hidden = !id;
  if (id) toEnd(); else scroller.top();
  if (!id) {
    ui.title.textContent = 'New thread';
    graph.waitingAt([]);
    setStatus('idle');
    showGraph();
    timeline.load(null);
    await run.latest(null);
    return;
  }
  const thread = await refresh();
  toEnd();
  await run.latest(id, undefined, waiting()).catch(() => {});
  // The thread's status can lag its run (a run that has not written a
  // checkpoint yet leaves it idle), so ask the runs whether one is going.
  if (thread && thread.status !== 'interrupted') await rejoin();
}

// ---- wiring -----------------------------------------------------------------

function route() {
  const m = /^#\/thread\/([\w-]+)$/.exec(location.hash);
  const d = /^#\/datasets(?:\/([\w-]+))?$/.exec(location.hash);
  const x = /^#\/experiments(?:\/([\w-]+))?$/.exec(location.hash);
  closeDrawers();
  experiments.stop();
  document.body.classList.toggle('datasets-mode', !!(d || x));
  ui.datasetsView.hidden = !d;
  ui.experimentsView.hidden = !x;
  if (d || x) {
    if (state.abort) state.abort.abort();
    state.threadId = null;
    threads.mark();
    (d ? datasets.show(d[1] || null) : experiments.show(x[1] || null)).catch((e) => showError(e.message));
    return;
  }
  openThread(m ? m[1] : null).catch((e) => showError(e.message));
  threads.mark();
}

function askKey() {
  ui.keyInput.value = api.apiKey();
  if (!ui.keyDialog.open) ui.keyDialog.showModal();
}

async function main() {
  api.whenUnauthorized(askKey);
  closeDrawers = shell.drawers();
  scroller = shell.follow(ui.log);
  ui.keyForm.addEventListener('submit', () => { api.setApiKey(ui.keyInput.value.trim()); setTimeout(start, 0); });
  ui.assistant.addEventListener('change', () => { localStorage.setItem('trellis.assistant', assistantId()); showGraph(); });
  threads.mount({ list: ui.threads, search: $('thread-search'), dialog: $('delete-dialog'), dialogText: $('delete-text'), confirm: $('delete-confirm') },
    () => state.threadId, (id) => { if (id === state.threadId) location.hash = '#/new'; });
  graph.mount($('graph'));
  todos.mount($('work')); files.mount($('work'), $('file-dialog'));
  run.mount($('run-summary'), ui.messages, () => retry().catch((e) => showError(e.message)));
  timeline.mount({ list: $('timeline'), detail: $('checkpoint') }, (cp) => forkRun(cp));
  datasets.mount({ view: ui.datasetsView, dialog: $('case-dialog') });
  experiments.mount({ view: ui.experimentsView });
  ui.addCase.addEventListener('click', () => datasets.addThread(state.threadId, ui.title.textContent).catch((e) => showError(e.message)));
  ui.newThread.addEventListener('click', () => { closeDrawers(); location.hash = '#/new'; ui.input.focus(); });
  ui.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    if (state.inputReader) {
      const input = ui.send.disabled ? null : state.inputReader.read();
      if (input) startRun(input).catch((err) => showError(err.message));
      return;
    }
    const text = ui.input.value.trim();
    if (!text || ui.send.disabled) return;
    ui.input.value = '';
    sendMessage(text).catch((err) => showError(err.message));
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); ui.composer.requestSubmit(); }
  });
  ui.cancel.addEventListener('click', async () => {
    const run = state.runId || sessionStorage.getItem(`trellis.run.${state.threadId}`);
    if (run) await api.request('POST', `/threads/${state.threadId}/runs/${run}/cancel`).catch((e) => showError(e.message));
  });
  window.addEventListener('hashchange', route);
  await start();
}

async function start() {
  showError('');
  try {
    const info = await api.json('GET', '/info');
    ui.banner.hidden = !info.scripted_models;
    await loadAssistants();
    await loadThreads();
    route();
  } catch (e) {
    showError(e.message);
  }
}

main();
