// welcome.js — what an empty thread shows: the assistants to choose from,
// each with its name and what it does, and example requests for the one
// chosen (or, for an assistant that does not chat, a pointer to its input
// form). Apps declare their examples and input keys once (apps.Start);
// trellis serve puts them in the default assistant's metadata.

import { clear, h } from './dom.js';

/** sortAssistants orders the picker: assistants someone configured first,
 * then each graph's default one, by name within each group. */
export function sortAssistants(list) {
  const rank = (a) => (a.metadata && a.metadata.created_by === 'system' ? 1 : 0);
  return [...list].sort((a, b) => rank(a) - rank(b) || nameOf(a).localeCompare(nameOf(b)));
}

/** nameOf is the assistant's name, or its graph's ID. */
export const nameOf = (a) => (a && (a.name || a.graph_id)) || '';

/** aboutOf is the assistant's description, or ''. */
export const aboutOf = (a) => (a && typeof a.description === 'string' ? a.description : '');

/** examplesOf returns the assistant's example requests (metadata
 * "examples"), strings only. */
export function examplesOf(a) {
  const ex = a && a.metadata && a.metadata.examples;
  return Array.isArray(ex) ? ex.filter((x) => typeof x === 'string' && x.trim()) : [];
}

/** declaredInput returns the assistant's declared input keys (metadata
 * "input"), or null. */
export function declaredInput(a) {
  const inp = a && a.metadata && a.metadata.input;
  return Array.isArray(inp) ? inp : null;
}

/** render fills slot with the welcome for the assistants, the chosen one
 * marked; onPick(id) chooses another, onExample(text) sends a request.
 * asForm says the chosen assistant starts from a form, not a message. */
export function render(slot, assistants, chosen, { onPick, onExample, asForm }) {
  clear(slot);
  const current = assistants.find((a) => a.assistant_id === chosen);
  const cards = h('ul', { class: 'assistant-cards' }, assistants.map((a) => h('li', {},
    h('button', {
      type: 'button', class: 'assistant-card', 'data-assistant': a.assistant_id,
      'aria-pressed': String(a.assistant_id === chosen), onclick: () => onPick(a.assistant_id),
    }, h('strong', {}, nameOf(a)), aboutOf(a) ? h('span', {}, aboutOf(a)) : null))));
  const examples = examplesOf(current);
  let tryIt = null;
  if (asForm) {
    tryIt = h('p', { class: 'hint' }, `${nameOf(current)} starts from the input below: fill it in and press Send.`);
  } else if (examples.length) {
    tryIt = h('ul', { class: 'examples' }, examples.map((text) => h('li', {},
      h('button', { type: 'button', class: 'example', onclick: () => onExample(text) }, text))));
  }
  slot.append(
    h('h3', { id: 'welcome-title' }, current ? `Start a thread with ${nameOf(current)}` : 'Start a thread'),
    tryIt ? h('h4', {}, asForm ? 'How to start' : 'Try one of these') : null,
    tryIt,
    h('h4', { id: 'welcome-assistants' }, 'Assistants'),
    cards);
}
