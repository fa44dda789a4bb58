// transcript.js — how the chat shows what the agent did, in the order it
// happened: an agent message's reasoning in a folded block before its
// text, each tool call as a block that opens to its arguments and result,
// errors where they happened, and status lines for a plan's steps (the
// run's custom events). Saved messages (LangChain JSON from the thread's
// state) and streamed ones (messages-tuple chunks) render alike.
//
// A failed tool call or step carries the class "failed" and an empty
// span.retry-slot, where a retry control can be put.

import { clear, h } from './dom.js';
import { setMarkdown } from './markdown.js';
import { fold, hopKey, hopView, isHopEvent } from './hop.js';

/** textOf returns the text of a message's content (a string or parts). */
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : p.type === 'text' ? p.text : '')).join('');
  return '';
}

function reasoningOf(m) {
  const r = m && m.additional_kwargs && m.additional_kwargs.reasoning_content;
  return typeof r === 'string' ? r : '';
}

/** reasoningBlock is the folded block of a message's reasoning; set(text)
 * fills it as it streams. */
export function reasoningBlock(text = '') {
  const body = h('div', { class: 'md' });
  const el = h('details', { class: 'reasoning', hidden: !text }, h('summary', {}, 'Reasoning'), body);
  const set = (t) => { el.hidden = !t; setMarkdown(body, t); };
  if (text) set(text);
  return { el, set };
}

function pretty(args) {
  if (typeof args === 'string') {
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch { return args; }
  }
  return JSON.stringify(args ?? {}, null, 2);
}

/** toolCallBlock shows one call: its name in the summary, its arguments
 * and, once known, its result (setResult). */
export function toolCallBlock(name, args, callId) {
  const state = h('span', { class: 'call-state' }, 'running');
  const argsPre = h('pre', { class: 'call-args' }, pretty(args));
  const result = h('div', { class: 'call-result' });
  const el = h('details', { class: 'tool-call', 'data-call': callId || null },
    h('summary', {}, 'Called ', h('code', {}, name || 'a tool'), ' ', state),
    h('p', { class: 'hint' }, 'Arguments'), argsPre, result);
  return {
    el,
    setArgs(a) { argsPre.textContent = pretty(a); },
    setResult(text, isError) {
      state.textContent = isError ? 'failed' : 'done';
      el.classList.toggle('failed', !!isError);
      // replaceChildren would write a null as the text "null": clear and
      // append through h's rules instead.
      clear(result).append(...[h('p', { class: 'hint' }, isError ? 'Error' : 'Result'),
        h('pre', { class: isError ? 'call-error' : null }, text),
        isError ? h('span', { class: 'retry-slot' }) : null].filter(Boolean));
    },
  };
}

/** messageNodes renders saved messages. A tool result is shown inside the
 * call it answers (matched by tool_call_id); one without its call stands
 * alone. shared ({results, called}), when given, spans several calls, so a
 * call and its result split by an answer (an approval) still meet. */
export function messageNodes(messages, shared) {
  const results = (shared && shared.results) || new Map();
  if (!shared) for (const m of messages) if (m.type === 'tool' && m.tool_call_id) results.set(m.tool_call_id, m);
  const called = (shared && shared.called) || new Set();
  const out = [];
  for (const m of messages) {
    const text = textOf(m.content);
    if (m.type === 'human') {
      out.push(h('div', { class: 'msg human', 'data-id': m.id }, h('span', { class: 'who' }, 'You'), h('div', { class: 'text' }, text)));
    } else if (m.type === 'ai' || m.type === 'AIMessageChunk') {
      const reasoning = reasoningOf(m);
      const body = h('div', { class: 'text md' });
      setMarkdown(body, text);
      const calls = (m.tool_calls || []).map((c) => {
        called.add(c.id);
        const b = toolCallBlock(c.name, c.args, c.id);
        const r = results.get(c.id);
        if (r) b.setResult(textOf(r.content), r.status === 'error');
        return b.el;
      });
      if (text || calls.length || reasoning) {
        out.push(h('div', { class: 'msg ai', 'data-id': m.id }, h('span', { class: 'who' }, 'Agent'),
          reasoning ? reasoningBlock(reasoning).el : null, text ? body : null, calls));
      }
    } else if (m.type === 'tool' && !called.has(m.tool_call_id)) {
      out.push(h('details', { class: `msg tool${m.status === 'error' ? ' failed' : ''}`, 'data-id': m.id },
        h('summary', {}, 'Result of ', h('code', {}, m.name || 'a tool')), h('pre', {}, text)));
    }
  }
  return out;
}

const idOfTurn = (t) => (t.message && typeof t.message === 'object' ? t.message.id : t.message);
const liveStatus = new Set(['pending', 'running']);

/** answerNode shows what the person (or a client) answered, in their
 * words as the server read them: a choice, a form's values, a plan or a
 * call approved, edited or rejected with the reason. */
export function answerNode(t) {
  return h('div', { class: `msg human answer ${t.outcome || ''}`, 'data-outcome': t.outcome || null, 'data-run': t.run_id || null },
    h('span', { class: 'who' }, 'You'), h('div', { class: 'text' }, t.text || ''));
}

/** transcriptNodes renders a thread's transcript (GET
 * /threads/{id}/transcript, server/internal/transcript): its messages, the
 * person's answers where they were given, and between them each run's
 * timeline (status lines, a plan's tool calls with their results, the
 * reasoning of its steps, waits, errors) in a "What the agent did" block,
 * folded once the run is done. messages are the state's latest messages:
 * a message is shown in its latest version, one the transcript does not
 * have yet goes at the end. The timeline of the run being streamed (live)
 * is left to the live log, the last run's error to the failure line
 * (run.js); the block of openRun (the run the thread waits on) stays open. It returns the nodes and the IDs of the messages shown. */
export function transcriptNodes(turns, messages, live, openRun) {
  const byId = new Map(messages.filter((m) => m && m.id).map((m) => [m.id, m]));
  const status = new Map();
  let lastRun = null; // its error is the failure run.js shows, with Retry, at the end
  for (const t of turns) if (t.kind === 'run') { status.set(t.run_id, t.status); lastRun = t.run_id; }
  const items = []; // {msgs: [...]} | {turn}
  const shown = new Set();
  const push = (m) => {
    const last = items[items.length - 1];
    if (last && last.msgs) last.msgs.push(m); else items.push({ msgs: [m] });
  };
  for (const t of turns) {
    if (t.kind === 'message') {
      const id = idOfTurn(t);
      if (!id || shown.has(id)) continue;
      const m = byId.size ? byId.get(id) : t.message;
      if (!m || typeof m !== 'object') continue;
      shown.add(id);
      push(m);
    } else if (t.kind === 'note') { // the agent's working: a reviewer's critique, a draft it replaced
      const id = idOfTurn(t);
      if (id) shown.add(id);
      items.push({ turn: t });
    } else if (t.kind !== 'run' && !(live && t.run_id === live && t.kind !== 'answer') && !(t.kind === 'error' && t.run_id === lastRun)) {
      items.push({ turn: t });
    }
  }
  for (const m of messages) {
    if (!m || shown.has(m.id)) continue;
    if (m.id) shown.add(m.id);
    // An internal voice's message (a reviewer's) the transcript does not
    // have yet is the agent's working too: a note of the run under way.
    if (m.type === 'ai' && m.name) items.push({ turn: { kind: 'note', author: m.name, text: textOf(m.content), run_id: live || '' } });
    else push(m);
  }
  const shared = { results: new Map(), called: new Set() };
  for (const m of byId.size ? messages : items.flatMap((i) => i.msgs || [])) {
    if (m.type === 'tool' && m.tool_call_id) shared.results.set(m.tool_call_id, m);
  }
  const out = [];
  let log = null; // the timeline block being filled, with its run
  for (const it of items) {
    if (it.msgs) { log = null; out.push(...messageNodes(it.msgs, shared)); continue; }
    const t = it.turn;
    if (t.kind === 'answer') { log = null; out.push(answerNode(t)); continue; }
    if (!log || log.run !== t.run_id) {
      log = { run: t.run_id, l: runLog(liveStatus.has(status.get(t.run_id)) || t.run_id === openRun || (!!live && t.run_id === live)) };
      log.l.el.dataset.run = t.run_id || '';
      log.l.el.summarizeLog = log.l.summarize;
      out.push(log.l.el);
    }
    if (t.kind === 'event') log.l.add(t.data);
    else if (t.kind === 'reasoning') log.l.attach(reasoningBlock(t.text).el);
    else if (t.kind === 'wait') log.l.wait(t.text);
    else if (t.kind === 'error') log.l.error(t.text);
    else if (t.kind === 'note') log.l.note(t.author, t.text);
    else if (t.kind === 'hop') log.l.hop(t.data);
  }
  for (const n of out) if (n.summarizeLog) n.summarizeLog();
  // A block left empty (events it does not show) is not drawn.
  return { nodes: out.filter((n) => !n.classList.contains('run-log') || n.querySelector('li')), ids: shown };
}

/** liveMessage is an agent message being streamed: add(chunk) takes a
 * messages-tuple chunk (text, reasoning or tool-call pieces) and reports
 * whether it added anything. With a run log, the reasoning goes into the
 * log where it happens (between the steps' lines): the messages of a plan's
 * steps are not saved in the thread, so the log is where it stays. */
export function liveMessage(id, nodeName, log) {
  const reasoning = reasoningBlock();
  const body = h('div', { class: 'text md' });
  const callsEl = h('div', { class: 'calls' });
  const el = h('div', { class: 'msg ai live', 'data-id': id },
    h('span', { class: 'who' }, 'Agent ', nodeName ? h('span', { class: 'node' }, nodeName) : null),
    reasoning.el, body, callsEl);
  let text = '';
  let thought = '';
  const calls = new Map(); // index -> {block, name, args}
  return {
    el,
    add(chunk) {
      let added = false;
      const t = textOf(chunk.content);
      if (t) { text += t; setMarkdown(body, text); added = true; }
      const r = reasoningOf(chunk);
      if (r) {
        thought += r;
        reasoning.set(thought);
        if (log && !log.el.contains(reasoning.el)) log.attach(reasoning.el);
        added = true;
      }
      for (const c of chunk.tool_call_chunks || []) {
        const i = c.index ?? calls.size;
        let call = calls.get(i);
        if (!call) {
          call = { name: c.name || '', args: '', block: toolCallBlock(c.name, '', c.id) };
          calls.set(i, call);
          callsEl.append(call.block.el);
        }
        call.args += c.args || '';
        call.block.setArgs(call.args);
        added = true;
      }
      return added;
    },
  };
}

/** runLog collects a run's status lines and the tool calls of its steps
 * (planexec's custom events), in the order they arrive; open says whether
 * it starts unfolded (the run under way). */
export function runLog(open = true) {
  const list = h('ol', { class: 'run-log-lines' });
  const summary = h('summary', {}, 'What the agent did');
  const el = h('details', { class: 'run-log', open }, summary, list);
  const calls = new Map();
  const titles = new Map(); // step ID -> title, for events that carry only the ID
  const hops = new Map(); // a remote call's key -> {hop, li}, as its events arrive
  const line = (cls, ...content) => { const li = h('li', { class: cls }, ...content); list.append(li); return li; };
  return {
    el,
    /** attach puts an element (a reasoning block) in the log, now. */
    attach(child) { line('thought', child); },
    /** summarize adds the block's last line to its summary, so a folded
     * block says where the run got to. */
    summarize() {
      const last = list.lastElementChild;
      if (!last) return;
      const head = last.querySelector(':scope > details > summary');
      let text = (head || last).textContent.trim().replace(/\s+/g, ' ');
      if (text.length > 90) text = `${text.slice(0, 89)}…`;
      summary.append(h('span', { class: 'run-log-last' }, ` · ${text}`));
    },
    /** wait is a line for the run stopping to ask the person (text: what
     * it asked). */
    wait(text) {
      for (const q of String(text || 'a question').split('\n')) line('status wait', 'Asked you: ', h('strong', {}, q));
    },
    /** note is a line for the agent's working: an internal voice's
     * message (author: "reviewer") or a draft it replaced (no author). */
    note(author, text) {
      const who = author ? `${author[0].toUpperCase()}${author.slice(1)}: ` : 'Draft: ';
      line('note', h('strong', {}, who), h('span', { class: 'note-text' }, text || ''));
    },
    /** hop is a line for a call to a remote agent, as a saved transcript
     * has it (a "hop" turn's data). */
    hop(data) { if (data && data.agent) list.append(hopView(h('li'), data)); },
    /** error is a line for the run's error. */
    error(text) { line('status failed', 'Error: ', text || 'the run failed'); },
    /** add takes one custom event's data; it returns false for events it
     * does not show. */
    add(ev) {
      if (!ev || typeof ev !== 'object' || !ev.kind) return false;
      if (isHopEvent(ev)) { // a remote call's update: its line, redrawn
        const key = hopKey(ev);
        let it = hops.get(key);
        if (!it) { it = { hop: null, li: h('li') }; hops.set(key, it); list.append(it.li); }
        it.hop = fold(it.hop, ev);
        hopView(it.li, it.hop);
        return true;
      }
      if (ev.step_id && ev.title) titles.set(ev.step_id, ev.title);
      const title = ev.title || titles.get(ev.step_id) || ev.step_id || '';
      switch (ev.kind) {
        case 'plan_ready': line('status', `The plan is ready (${(ev.plan && ev.plan.steps || []).length} steps).`); break;
        case 'replanned': line('status', 'The rest of the plan was revised.'); break;
        case 'step_started': line('status', 'Started: ', h('strong', {}, title)); break;
        case 'step_finished': // with an error, a required call did not happen: not done
          if (ev.error) line('status undone failed', 'Not done: ', h('strong', {}, title), ` — ${ev.error}`);
          else line('status done', 'Done: ', h('strong', {}, title));
          break;
        case 'step_skipped': line('status', 'Skipped: ', h('strong', {}, title), ev.error ? ` (${ev.error})` : ''); break;
        case 'step_failed': line('status failed', 'Failed: ', h('strong', {}, title), ev.error ? ` — ${ev.error}` : '', h('span', { class: 'retry-slot', 'data-step': ev.step_id || '' })); break;
        case 'waiting': // the card says so; a step's wait is worth a line
          if (!ev.step_id) return false;
          line('status', 'Waiting for you: ', h('strong', {}, title));
          break;
        case 'tool_call': {
          if (!ev.tool) return false;
          const b = toolCallBlock(ev.tool.name, ev.tool.arguments, ev.tool.call_id);
          calls.set(ev.tool.call_id, b);
          line('call', b.el);
          break;
        }
        case 'tool_result': {
          if (!ev.tool) return false;
          let b = calls.get(ev.tool.call_id);
          if (!b) { b = toolCallBlock(ev.tool.name, ev.tool.arguments, ev.tool.call_id); line('call', b.el); }
          b.setResult(ev.tool.result || '', ev.tool.is_error);
          break;
        }
        case 'delivered': line('status done', 'The answer is ready.'); break;
        default: return false;
      }
      return true;
    },
  };
}

/** errorLine marks where a run failed, in the conversation: a title (the
 * step that failed, if known), the error, and an empty retry slot that the
 * caller fills with its retry control (run.js). */
export function errorLine(title, message) {
  return h('div', { class: 'msg run-error failed', role: 'alert' },
    h('span', { class: 'who' }, 'Error'),
    h('p', { class: 'failure-title' }, title),
    h('pre', { class: 'failure-text' }, message),
    h('div', { class: 'retry-slot' }));
}
