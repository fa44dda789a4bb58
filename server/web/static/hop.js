// hop.js — a call to a remote agent in a run's timeline: which agent,
// which remote task (A2A) or thread and run (LangGraph API), the status
// updates it streamed, the question it asked and its answer. A saved
// transcript gives the hop already folded (the "hop" turn's data, built by
// the server); a live run gives the remote call's custom events one by
// one, which fold here into the same shape.

import { clear, h } from './dom.js';

// The LangGraph-API hop's events (tool/remotegraph): its run's lifecycle
// and what the remote run streamed.
const lgKinds = new Set(['remote_run', 'remote_node', 'remote_message', 'remote_custom']);

/** isHopEvent says whether a custom event's data is a remote call's. */
export function isHopEvent(ev) {
  return !!ev && !!ev.agent && (lgKinds.has(ev.kind) || ev.kind === 'remote_status' || ev.kind === 'remote_artifact');
}

/** hopKey names the hop an event belongs to. */
export function hopKey(ev) {
  return lgKinds.has(ev.kind) ? `langgraph|${ev.agent}|${ev.thread_id}` : `a2a|${ev.agent}|${ev.task_id || ''}`;
}

const waits = new Set(['input-required', 'interrupted', 'auth-required']);

/** fold adds one event to a hop (null: a new one) and returns it. */
export function fold(hop, ev) {
  const hp = hop || (lgKinds.has(ev.kind)
    ? { agent: ev.agent, via: 'langgraph', thread_id: ev.thread_id, state: '', updates: [] }
    : { agent: ev.agent, via: 'a2a', task_id: ev.task_id, context_id: ev.context_id, state: '', updates: [] });
  if (ev.kind === 'remote_artifact' || ev.kind === 'remote_message') {
    hp.outcome = (ev.append ? hp.outcome || '' : '') + (ev.text || '');
    return hp;
  }
  // A status text's first line: an A2A agent may append its question's data.
  const line = (t) => String(t || '').split('\n')[0].slice(0, 500);
  const up = ev.kind === 'remote_run' ? { state: ev.status, run_id: ev.run_id }
    : ev.kind === 'remote_node' ? { state: 'working', text: `node ${ev.node} finished`, run_id: ev.run_id }
      : ev.kind === 'remote_custom' ? { state: 'working', text: line(ev.data !== undefined ? JSON.stringify(ev.data) : ev.text), run_id: ev.run_id }
        : { state: ev.state, text: line(ev.text) };
  if (hp.updates.some((u) => u.state === up.state && (u.text || '') === (up.text || '') && (u.run_id || '') === (up.run_id || ''))) return hp;
  hp.updates.push(up);
  hp.state = up.state;
  if (up.run_id) hp.run_id = up.run_id;
  if (waits.has(up.state) && up.text) hp.question = up.text;
  return hp;
}

/** hopView draws a hop into a list item (li), replacing what it held. */
export function hopView(li, hp) {
  clear(li);
  li.className = `hop ${hp.state || ''}`;
  const where = hp.via === 'langgraph'
    ? `LangGraph thread ${hp.thread_id}${hp.run_id ? `, run ${hp.run_id}` : ''}`
    : hp.task_id ? `A2A task ${hp.task_id}` : 'A2A';
  li.append(...[
    h('div', { class: 'hop-head' }, 'Asked remote agent ', h('strong', { class: 'hop-agent' }, hp.agent), ' ',
      h('span', { class: 'hop-where' }, `(${where})`), hp.state ? h('span', { class: 'hop-state' }, ` — ${hp.state}`) : null),
    h('ol', { class: 'hop-updates' }, ...(hp.updates || []).map((u) =>
      h('li', {}, u.state || '', u.run_id && hp.via === 'langgraph' ? ` (run ${u.run_id})` : '', u.text ? `: ${u.text}` : ''))),
    hp.question ? h('div', { class: 'hop-question' }, 'It asked: ', h('strong', {}, hp.question)) : null,
    hp.outcome ? h('div', { class: 'hop-outcome' }, 'Its answer: ', h('span', {}, hp.outcome)) : null,
  ].filter(Boolean));
  return li;
}
